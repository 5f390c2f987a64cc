"""A grading process's seeds: one per submission, never drawn twice, asked of the reference a
batch at a time, and each answered with its own observations."""

import pytest

from grader.course import lessons
from grader.judging.reference import (
    Answers,
    ReferenceRunError,
    ReferenceServer,
    ReferenceStopped,
    Seeds,
)


class Counting:
    """An observer that passes questions to a real one and counts them."""

    def __init__(self, real):
        self.real = real
        self.asked: list[tuple[str, list[int], str | None]] = []

    def ask(self, lesson, seeds, then=None):
        self.asked.append((lesson, list(seeds), then))
        self.real.ask(lesson, seeds, then)

    def answer(self, lesson, seeds, timeout=600):
        return self.real.answer(lesson, seeds, timeout)


class Scripted:
    """An observer whose answers are given: an exception to raise, or the problems per seed."""

    def __init__(self, *outcomes):
        self.outcomes = list(outcomes)
        self.asked: list[list[int]] = []

    def ask(self, lesson, seeds, then=None):
        self.asked.append(list(seeds))

    def answer(self, lesson, seeds, timeout=600):
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return Answers(lesson, {seed: {"test": [[str(seed)]]} for seed in seeds}, outcome)


def test_each_submission_gets_a_seed_of_its_own_and_its_own_observations(reference_server):
    lesson, after = lessons()[:2]
    counting = Counting(ReferenceServer())  # a server of its own: the fixture's checks them
    seeds = Seeds(counting, batch=3)
    try:
        drawn = [seeds.draw(lesson, after) for _ in range(7)]
        assert len(set(drawn)) == 7
        assert [len(asked) for _, asked, _ in counting.asked] == [3, 3, 3]  # 7 seeds, 3 asked
        assert {then for _, _, then in counting.asked} == {after}
        observed = [seeds.observations(lesson, seed) for seed in drawn[:4]]  # 2 batches read
        assert observed == [reference_server.observe(lesson, seed) for seed in drawn[:4]]
    finally:
        counting.real.stop()


def test_a_lesson_draws_from_its_own_batch():
    observer = Scripted({}, {})
    seeds = Seeds(observer, batch=4)
    first, second = seeds.draw("a"), seeds.draw("b")
    assert len(observer.asked) == 2
    assert seeds.observations("b", second) == {"test": [[str(second)]]}
    assert seeds.observations("a", first) == {"test": [[str(first)]]}
    seeds.draw("a")
    assert len(observer.asked) == 2  # a's batch still has seeds


def test_a_seed_the_solution_fails_on_fails_alone():
    observer = Scripted(None)
    seeds = Seeds(observer, batch=2)
    bad, good = seeds.draw("a"), seeds.draw("a")
    observer.outcomes = [{bad: "test_x fails on the solution: ValueError"}]
    with pytest.raises(ReferenceRunError, match="probes of a failed: test_x fails"):
        seeds.observations("a", bad)
    assert seeds.observations("a", good) == {"test": [[str(good)]]}


def test_a_batch_left_unanswered_is_not_handed_out_again():
    observer = Scripted(ReferenceStopped("the reference server stopped"), {})
    seeds = Seeds(observer, batch=3)
    lost = seeds.draw("a")
    with pytest.raises(ReferenceStopped):
        seeds.observations("a", lost)
    fresh = seeds.draw("a")
    assert len(observer.asked) == 2 and fresh in observer.asked[1]
    assert fresh not in observer.asked[0]
    assert seeds.observations("a", fresh) == {"test": [[str(fresh)]]}
