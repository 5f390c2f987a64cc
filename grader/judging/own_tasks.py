"""The reference for a submission whose course gives each student their own tasks: for each
test of an exercise whose task is the student's own, the probe run here, in the grading process,
on the solution's formula for the submitting student's task (`grader.course_keys.Variant`), on
the same drawn inputs as the submission's probe. Nothing of the student's runs here: the formula
is the course's own, as the family of the exercise writes it (`grader.variants.families`)."""

import functools
from dataclasses import dataclass

from grader.course_keys import Variant, worked_under
from grader.judging import by_hand


@dataclass(frozen=True)
class OwnTasks:
    """What grading uses of a submission's own tasks, found once: the submitter's tasks, the
    tests whose task is theirs (test -> the function it asks for), and what to say of the key
    the notebook was worked under (None: the submitter's own, or none)."""

    variant: Variant
    tests: dict[str, str]
    said: str | None

    @classmethod
    def of(cls, nb, variant: Variant, probes_source: str) -> "OwnTasks":
        return cls(variant, varied_tests(probes_source, variant), worked_under(nb, variant))


def varied_tests(probes_source: str, variant) -> dict[str, str]:
    """The tests whose exercise is the student's own task: test -> the function it asks for."""
    return {
        test: function
        for test, functions in by_hand.declared(probes_source).items()
        for function in functions
        if variant.solution(function) is not None
    }


def own_references(probes_source: str, own: OwnTasks, seed: int) -> dict[str, list]:
    """The observations of each varied test's probe on the solution for the student's task."""
    from grader.probing import run_probe

    probes = _probes(probes_source)
    found = {}
    for test, function in own.tests.items():
        namespace: dict = {}
        solution = own.variant.solution(function)
        exec(compile(solution, f"<{function} for the task>", "exec"), namespace)
        found[test] = run_probe(probes, test, namespace, seed)
    return found


@functools.lru_cache(maxsize=16)
def _probes(source: str) -> dict:
    from grader.probing import load_probes

    return load_probes(source)
