"""How an answer works its result out: one module per rule a lesson's probes declare (`HOW`),
each with the same signature, `flag(statements) -> str | None`, read from the answer's code and
every statement of the notebook it uses.

None of these decides a score. Where a rule matters, the exercise makes it inevitable instead:
derivatives by hand are formulas the grader evaluates (`grader.judging.by_hand`), and what a
"using autograd" exercise differentiates is drawn at grading time (`grader.drawn_functions`). The
readings here only tell the instructor where to look; a reading of arbitrary code can miss code
(a cell magic, a module written at run time) and so can never stand alone.
"""

from grader.judging.routes import (
    as_written,
    no_autograd,
    no_engine,
    no_torch,
    optimizers,
    using_autograd,
    with_a_hook,
)

BY_HAND, USING_AUTOGRAD, WITH_A_HOOK = "by hand", "using autograd", "with a hook"
AS_WRITTEN = "differentiated as written"  # no gradient of its own: no Function, hook, detach
WITH_OR_WITHOUT_AN_OPTIMIZER = "with or without an optimizer, as the solution"
WITH_AN_OPTIMIZER, WITHOUT_AN_OPTIMIZER = "with an optimizer", "without an optimizer"
WITHOUT_TORCH = "without torch"  # an engine of the student's own, in plain Python
WITHOUT_THE_ENGINE = "without torch's engine"  # a backward pass walked by hand

FLAGS = {
    BY_HAND: no_autograd.flag,  # by-hand work that is no formula: a gradient summed to a shape
    USING_AUTOGRAD: using_autograd.flag,
    WITH_A_HOOK: with_a_hook.flag,
    AS_WRITTEN: as_written.flag,
    WITH_AN_OPTIMIZER: optimizers.flag_without_one,
    WITHOUT_AN_OPTIMIZER: optimizers.flag_one,
    WITHOUT_TORCH: no_torch.flag,
    WITHOUT_THE_ENGINE: no_engine.flag,
}
DECLARED = {
    BY_HAND,
    USING_AUTOGRAD,
    WITH_A_HOOK,
    AS_WRITTEN,
    WITH_OR_WITHOUT_AN_OPTIMIZER,
    WITHOUT_TORCH,
    WITHOUT_THE_ENGINE,
}
