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
        drawn, observed = [], []
        for _ in range(7):  # seven submissions, each judged before the next draws its seed
            drawn.append(seeds.draw(lesson, after))
            observed.append(seeds.observations(lesson, drawn[-1]))
        assert len(set(drawn)) == 7
        assert [len(asked) for _, asked, _ in counting.asked] == [3, 3, 3]  # 7 seeds, 3 asked
        assert {then for _, _, then in counting.asked} == {after}
        assert observed == [reference_server.observe(lesson, seed) for seed in drawn]
    finally:
        counting.real.stop()


def test_a_lesson_draws_from_its_own_batch():
    observer = Scripted({}, {})
    seeds = Seeds(observer, batch=4)
    first = seeds.draw("a")
    assert seeds.observations("a", first) == {"test": [[str(first)]]}
    second = seeds.draw("b")
    assert seeds.observations("b", second) == {"test": [[str(second)]]}
    third = seeds.draw("a")
    assert seeds.observations("a", third) == {"test": [[str(third)]]}
    assert len(observer.asked) == 2  # a's batch still had seeds
    assert third in observer.asked[0] and third != first


def test_a_batch_asks_for_no_more_seeds_than_the_process_expects_to_use():
    """Two submissions of lesson a left to this process: a batch of two, not four; without a
    count, a full batch."""
    observer = Scripted({}, {})
    seeds = Seeds(observer, batch=4)
    first = seeds.draw("a", wanted=2)
    seeds.draw("a", wanted=1)
    assert [len(asked) for asked in observer.asked] == [2]
    seeds.observations("a", first)
    seeds.draw("b")
    assert [len(asked) for asked in observer.asked] == [2, 4]


def test_a_seed_the_solution_fails_on_fails_alone():
    observer = Scripted()
    seeds = Seeds(observer, batch=2)
    bad = seeds.draw("a")
    observer.outcomes = [{bad: "test_x fails on the solution: ValueError"}]
    with pytest.raises(ReferenceRunError, match="probes of a failed: test_x fails"):
        seeds.observations("a", bad)
    good = seeds.draw("a")
    assert seeds.observations("a", good) == {"test": [[str(good)]]}
    assert len(observer.asked) == 1


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


def test_a_seed_whose_answer_was_passed_over_is_not_drawn(reference_server):
    """A submission that failed between drawing its seed and judging leaves its question's
    answer unread; collecting another answer passes it over, so the rest of that batch is not
    drawn from again."""
    first, second = lessons()[:2]
    seeds = Seeds(ReferenceServer(), batch=3)
    try:
        seeds.draw(first)  # its submission failed: the answer is never collected
        other = seeds.draw(second)
        observed = seeds.observations(second, other, timeout=30)
        assert observed == reference_server.observe(second, other)
        again = seeds.draw(first)
        observed = seeds.observations(first, again, timeout=30)
        assert observed == reference_server.observe(first, again)
    finally:
        seeds.stop()
