"""Outcomes are named once, stored one per submission, and say whether the notebook ran."""

import pytest

from grader.grading import outcomes
from grader.outcome import Outcome


@pytest.fixture
def db_url(tmp_path):
    """A fresh SQLite gradebook URL."""
    return f"sqlite:///{tmp_path / 'gradebook.db'}"


def test_a_recorded_outcome_reads_back_with_its_detail_and_fingerprint(db_url):
    """record() then read_all() gives (outcome, detail, fingerprint) by (lesson, student)."""
    outcomes.record(db_url, "01", "ann", Outcome.TIMED_OUT, "cell 3 ran over 30 s", "abc")
    assert outcomes.read_all(db_url) == {
        ("01", "ann"): ("timed out", "cell 3 ran over 30 s", "abc")
    }


def test_recording_again_replaces_the_earlier_outcome(db_url):
    """A submission has one outcome: the last one recorded."""
    outcomes.record(db_url, "01", "ann", Outcome.KERNEL_DIED, "first run")
    outcomes.record(db_url, "01", "ann", Outcome.GRADED)
    outcomes.record(db_url, "02", "ann", Outcome.MISSING, "no 02.ipynb")
    assert outcomes.read_all(db_url) == {
        ("01", "ann"): ("graded", "", ""),
        ("02", "ann"): ("missing notebook", "no 02.ipynb", ""),
    }


def test_an_outcome_that_is_not_named_is_refused(db_url):
    """Only the named outcomes can be stored: a misspelt one is an error, not a new outcome."""
    with pytest.raises(ValueError, match="graded!"):
        outcomes.record(db_url, "01", "ann", "graded!")
    assert outcomes.read_all(db_url) == {}


def test_only_outcomes_with_a_run_notebook_say_they_ran():
    """Missing, malformed and not graded submissions have no autograded notebook; the rest do."""
    assert {o for o in Outcome if not o.ran} == {
        Outcome.MISSING,
        Outcome.MALFORMED,
        Outcome.NOT_GRADED,
    }


def test_outcomes_compare_equal_to_the_words_stored_and_shown():
    """An outcome is its word: what the gradebook stores and the score table prints."""
    assert Outcome("memory limit") is Outcome.MEMORY_LIMIT
    assert f"{Outcome.OUTPUT_LIMIT}" == "output limit"
