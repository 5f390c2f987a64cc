"""Lesson 4 (retain_graph and accumulation): the visible checks of its test cells.

Each function compares what the student's function returned, or left behind, with the values the
test cell writes out; the cell calls the student's function itself (by hand or through autograd,
as the exercise asks). The visible tests hand the answers the lesson's examples (the mean squared
error, tanh, h**2 + 3*h); the hidden ones hand them functions drawn at random
(`grader.drawn_functions`), and a check told `drawn=...` says so when the values are wrong.
"""

import contextlib
import math

from grader.checks import (
    CheckFailed,
    as_number,
    call,
    check_drawn_tensor,
    check_grad,
    check_tensor,
    check_tracked_leaf,
    require,
)


class RowLimit:
    """A batch loss, loss(w, x, y), that takes at most `rows` rows of x at a time, as when memory
    allows no more; `shown`: how messages name it."""

    def __init__(self, loss, rows: int, shown: str):
        self._loss, self._rows, self._shown = loss, rows, shown

    def __call__(self, w, x, y):
        if x.dim() != 2 or y.dim() != 1:
            raise ValueError(
                f"this loss takes x of shape (rows, features) and y of shape (rows,), but it was "
                f"given x of shape {tuple(x.shape)} and y of shape {tuple(y.shape)}"
            )
        given = max(x.shape[0], y.shape[0])
        if given > self._rows:
            raise ValueError(
                f"this loss takes at most {self._rows} rows at a time, but it was given {given}: "
                "call it on one chunk at a time"
            )
        return self._loss(w, x, y)

    def __repr__(self):
        return self._shown


SUMMED = "the loss is the sum of the squared errors, but the exercise asks for their mean."
ADDED_UP = (
    "it is the sum of the gradients of this batch and the ones before it. Gradients "
    "accumulate (sections 4 and 5)."
)
OVERWRITTEN = (
    "it equals the gradient of the last batch: zero_() changed the tensor you stored, in place "
    "(section 5)."
)


def check_batch_gradients(
    gradients, w, right, *, added_up, overwritten, summed=None, drawn=None
) -> None:
    """Check `gradients`, what batch_gradients(w, batches, loss) returned, against `right` (one
    gradient per batch) and w.grad against the last of them, explaining the usual slips (each
    keyword: one value per batch, None where that slip shows nothing; `drawn`: for whom the loss
    was drawn at random, "batch_gradients a loss")."""
    require(
        isinstance(gradients, list) and len(gradients) == len(right),
        "batch_gradients(w, batches, loss) should return a list with one gradient per batch.",
    )
    summed = summed or [None] * len(right)
    for i, gradient in enumerate(gradients):
        mistakes = {ADDED_UP: added_up[i], OVERWRITTEN: overwritten[i], SUMMED: summed[i]}
        check_drawn_tensor(
            gradient,
            right[i],
            f"the gradient of batch {i}",
            atol=1e-5,
            mistakes={why: value for why, value in mistakes.items() if value is not None},
            drawn=drawn,
        )
    check_grad(w, right[-1], "w", atol=1e-5)


ONLY_LAST = (
    "it is the gradient of the last chunk only: each chunk's gradient replaced the ones "
    "before it, where the chunks' gradients must add up (sections 4 and 6)."
)
STALE = (
    "it still holds the old gradient: w.grad may hold one when the function is called, and "
    "backward() adds to it (section 5)."
)
SUMMED_CHUNKS = (
    "it is the gradient of the summed losses of the rows: use the mean over the full batch, "
    "as the exercise asks."
)


def _by_count(k: int, sizes: list[int]) -> str:
    return (
        f"it is what dividing each chunk's mean by the number of chunks, {k}, gives. That is right "
        f"only for chunks of equal size; these have {sizes} rows, so the short last chunk counts "
        "as much as a full one (section 6)."
    )


def _unscaled(k: int) -> str:
    return (
        f"it is the sum of the {k} chunks' gradients, unscaled: each chunk's mean averages over "
        "its own rows only, and the full batch's mean averages over all of them (section 6)."
    )


def check_accumulated_gradient(
    w,
    chunk_size: int,
    sizes: list[int],
    right,
    *,
    by_count,
    unscaled,
    only_last,
    only_last_unscaled,
    summed=None,
    stale=None,
    drawn=None,
) -> None:
    """Check that accumulated_gradient(w, x, y, chunk_size, loss) left `right` in w.grad (`sizes`:
    the chunks' row counts), explaining the usual slips (each keyword: the value that slip leaves;
    `summed` None where it shows nothing, `stale` None where w.grad held nothing; `drawn`: for
    whom the loss was drawn at random)."""
    k, rows = len(sizes), sum(sizes)
    name = f"accumulated_gradient(w, x, y, chunk_size={chunk_size}, loss) for {rows} rows"
    mistakes = {
        _by_count(k, sizes): by_count,
        _unscaled(k): unscaled,
        ONLY_LAST: only_last,
        ONLY_LAST + " The chunks' losses are not scaled by their share either.": only_last_unscaled,
    }
    if summed is not None:
        mistakes[SUMMED_CHUNKS] = summed
    if stale is not None:
        mistakes[STALE] = stale
    require(
        w.grad is not None,
        f"w.grad is None after {name}: either no backward() reached w, or w.grad was cleared "
        "after the last one, where the gradient must be left in it (sections 4 and 5).",
    )
    check_drawn_tensor(
        w.grad, right, f"w.grad after {name}", atol=1e-5, mistakes=mistakes, drawn=drawn
    )


FREED = (
    "The state s carries the graph of the step before, whose saved tensors that step's "
    "backward() freed, so this step's backward() goes back into it. The next step needs the "
    "state's value, not its history (sections 7 and 10)."
)
MODIFIED = (
    "retain_graph=True keeps the old steps' graphs, but optimizer.step() has changed w in place "
    "since they were recorded, so autograd cannot go back through them. Do not go back into "
    "earlier steps at all: the carried state should reach the next step as a constant "
    "(section 10)."
)
CUT = (
    "the loss no longer depends on w through anything autograd recorded: more was cut off "
    "than the history the state brings in from the step before (sections 7 and 10)."
)
UNCHANGED = (
    "w did not change. Either the state was not carried from step to step (with s = 0, w * s "
    "does not depend on w; section 7), or the update did not "
    "reach the caller's w (`w = w - ...` makes a new tensor; section 10 and lesson 2, "
    "section 9)."
)
NOT_CLEARED = (
    "each step used the sum of all the gradients so far: gradients accumulate (sections 4 and 5)."
)


@contextlib.contextmanager
def explain_graph_reuse():
    """Around the call of fit_sequence: explain the errors that reusing an old step's graph
    gives."""
    try:
        yield
    except CheckFailed as error:
        failure = str(error)
        for clue, why in [
            ("a second time", FREED),
            ("modified by an inplace operation", MODIFIED),
            ("does not require grad", CUT),
        ]:
            require(clue not in failure, f"{failure}\n{why}")
        raise


def check_fit_sequence(
    w, lr, start, right, *, unchanged, not_cleared, data: str = "", drawn=None
) -> None:
    """Check that w, after fit_sequence(w, xs, ys, lr, cell) from w = `start`, is still a tracked
    leaf holding `right`, explaining the usual slips (`data`: how the cell shows xs and ys;
    `drawn`: for whom the cell was drawn at random)."""
    check_tracked_leaf(w, "w after fit_sequence")
    check_drawn_tensor(
        w,
        right,
        f"w after fit_sequence(w, xs, ys, lr={lr}, cell) from w = {start}{data}",
        atol=1e-5,
        mistakes={UNCHANGED: unchanged, NOT_CLEARED: not_cleared},
        drawn=drawn,
    )


NOT_KEPT = (
    "hidden_gradient returned None: backward() filled no .grad for the tensor you read. It fills "
    ".grad only for leaves, unless a tensor is asked to keep its gradient before backward() "
    "runs, and only for tensors the loss was computed from: each call of torch.tanh(x) makes a "
    "new tensor, and only the one the loop started from is part of the chain. After the loop, "
    "the name h no longer refers to torch.tanh(x) (section 9)."
)
OF_LEAF = (
    "that is x.grad, the gradient with respect to the leaf x, one step further back than the "
    "tensor asked about. The exercise asks for the gradient with respect to torch.tanh(x) "
    "itself (section 9)."
)
LAST = (
    "it is the gradient with respect to the last h (all ones, since loss is its sum). Each step "
    "gave the name h to a new tensor; the exercise asks about the first tensor of the chain, "
    "torch.tanh(x) (section 9)."
)
LATER = (
    "it is the gradient with respect to a later tensor of the chain, g applied {times} to "
    "torch.tanh(x). The exercise asks about the first tensor, torch.tanh(x) itself, before any "
    "step of g (section 9)."
)


def check_hidden_gradient(gradient, right, *, of_leaf, later, drawn=None) -> None:
    """Check `gradient`, what hidden_gradient(x, g, steps) returned, against `right`, explaining
    the usual slips (`of_leaf`: the gradient with respect to x; `later`: those with respect to
    the later tensors of the chain, the last one last; `drawn`: for whom g was drawn at
    random)."""
    require(gradient is not None, NOT_KEPT)
    mistakes = {OF_LEAF: of_leaf}
    for step, value in enumerate(later[:-1], 1):
        mistakes[LATER.format(times="once" if step == 1 else f"{step} times")] = value
    mistakes[LAST] = later[-1]
    check_drawn_tensor(
        gradient, right, "hidden_gradient(x, g, steps)", atol=1e-5, mistakes=mistakes, drawn=drawn
    )


ONCE = (
    "grad_after_three(x) returns f'(x), the gradient after ONE backward(). Each of the three "
    "calls adds f'(x) to x.grad."
)


def plain_number(value, shown: str) -> float:
    """Check that `value`, what the call `shown` returned, is a finite plain Python number, and
    return it."""
    require(
        isinstance(value, int | float) and not isinstance(value, bool),
        f"{shown} returned a {type(value).__name__}, {value!r}: return a plain Python "
        "number (an int or a float), computed from x with plain arithmetic, not a tensor.",
    )
    number = as_number(value)
    require(
        number is not None and math.isfinite(number),
        f"{shown} returned {value!r}; it should return a finite number.",
    )
    return number


def check_df_and_grad_after_three(values, slopes, after_three) -> None:
    """Check `values` ((name, x): what df(x) and grad_after_three(x) returned) against autograd's
    f'(x), `slopes`, and x.grad after three backward() calls, `after_three` (both keyed by x)."""
    a, b = list(slopes)[:2]
    for name in ("df", "grad_after_three"):
        require(
            values[name, a] != values[name, b],
            f"{name} returns the same number, {values[name, a]!r}, at x = {a} and at x = {b}. "
            "The derivative of your task's f changes with x: return a formula in x, not a number.",
        )
    for x, slope in slopes.items():
        three = after_three[x]
        value = values["df", x]
        require(
            abs(value - slope) <= 1e-4 * slope,
            f"df({x}) returned {value:.6g}, but autograd says the derivative at x = {x} is "
            f"{slope:g}. Check your derivation (power rule, constant factors).",
        )
        value = values["grad_after_three", x]
        require(abs(value - slope) > 1e-4 * slope, ONCE)
        require(
            abs(value - three) <= 1e-4 * three,
            f"grad_after_three({x}) returned {value:.6g}, but x.grad after the three backward() "
            f"calls at x = {x} is {three:g}. Each call adds f'(x) to x.grad: check f'(x), then "
            "add it up three times.",
        )


NO_GRADIENT = (
    "A parameter that the loss did not use has p.grad = None: there is nothing to step it "
    "with, and an optimizer leaves such a parameter where it is (Exercise 7's text)."
)
NOT_MOVED = (
    "it did not change: the update never reached the caller's parameter. A new tensor under "
    "the same name (`p = p - ...`) leaves the caller's one as it was, and a gradient cleared "
    "before the step moves nothing (section 10 and lesson 2, section 9)."
)


def run_sgd_step(sgd_step, params, lr, shown: str) -> None:
    """Call sgd_step(params, lr); explain the usual errors (`shown`: the parameters, as the
    messages name them)."""
    failure = None
    try:
        call(sgd_step, params, lr, name="sgd_step")
    except CheckFailed as error:
        failure = str(error)
    require(
        failure is None or "in-place operation" not in failure,
        f"{failure}\nAutograd refuses to change a leaf that requires gradients in place while "
        "it records (lesson 2, section 9, and section 10 here).",
    )
    require(failure is None or "NoneType" not in failure, f"{failure}\n{NO_GRADIENT}")
    require(failure is None, f"{failure} (params: {shown})")


def check_sgd_step(
    w, b, unused, shown: str, *, right_w, right_b, right_unused, start_w, start_b, along_w
) -> None:
    """Check the parameters after the call `shown` of sgd_step: still tracked leaves, at
    `right_w`, `right_b` and `right_unused`, and w's and b's gradients cleared (`start_w`,
    `start_b`: where w and b started; `along_w`: where a step along the gradient leaves w)."""
    for name, p in [("w", w), ("b", b), ("unused", unused)]:
        check_tracked_leaf(p, f"{name} after sgd_step")
    check_tensor(
        w,
        right_w,
        f"w after {shown}",
        mistakes={NOT_MOVED: start_w, "w moved along the gradient: subtract it.": along_w},
    )
    check_tensor(b, right_b, f"b after {shown}", mistakes={NOT_MOVED: start_b})
    check_tensor(unused, right_unused, f"unused (its .grad was None) after {shown}")
    for name, p in [("w", w), ("b", b)]:
        require(
            p.grad is None or not p.grad.any(),
            f"sgd_step left {name}.grad = {p.grad}: the exercise asks for it cleared, or the "
            "next backward() adds to it (section 5).",
        )


# The visible examples of each student's own (grader.variants.examples.lesson_04): the right
# values and those of the usual slips, from each example's own closed forms (the gradient of
# `mse`, of tanh's step, of h**2 + b h), never from a function handed over.


def batches_case(example) -> dict:
    """batch_gradients' example (its Batches): the right gradients of `mse` for its two batches
    and, for check_batch_gradients, the slips' values (None where a slip shows nothing)."""
    g0, g1 = example.gradients
    return {
        "right": [g0, g1],
        "added_up": [None, [a + b for a, b in zip(g0, g1, strict=True)]],
        "overwritten": [g1, None],
        "summed": [[len(example.y0) * v for v in g0], [len(example.y1) * v for v in g1]],
    }


def accumulated_case(example) -> dict:
    """accumulated_gradient's example (its Chunks): the full batch's gradient of `mse` and, for
    check_accumulated_gradient, the slips' values."""
    full, means, sizes = example.gradient, example.chunk_gradients, example.sizes
    k, n = len(sizes), len(example.y)
    total = [sum(g[j] for g in means) for j in range(len(full))]
    return {
        "sizes": sizes,
        "right": full,
        "by_count": [v / k for v in total],
        "unscaled": total,
        "only_last": [v * sizes[-1] / n for v in means[-1]],
        "only_last_unscaled": means[-1],
        "summed": [v * n for v in full],
        "stale": [o + v for o, v in zip(example.old, full, strict=True)],
    }


def fit_sequence_case(example) -> dict:
    """fit_sequence's example (its Sequence): w after the right loop and, for check_fit_sequence,
    after the loops of the slips (no state carried in, gradients never cleared)."""
    return {
        "right": example.trained(),
        "unchanged": example.trained(carry=False),
        "not_cleared": example.trained(clear=False),
    }


def hidden_case(example) -> dict:
    """hidden_gradient's example (its Chain): the gradient with respect to tanh(x) and, for
    check_hidden_gradient, those with respect to x (one factor 1 - tanh(x)**2 more) and to the
    later tensors of the chain."""
    grads, first = example.gradients(), example.chain()[0]
    return {
        "right": grads[0],
        "of_leaf": [d * (1 - h * h) for d, h in zip(grads[0], first, strict=True)],
        "later": grads[1:],
    }
