"""Late policies: one option, parsed strictly, and the penalty nbgrader's plugin computes."""

import pytest
from nbgrader.plugins import LateSubmissionPlugin
from traitlets import TraitError
from traitlets.config import Config

from grader.commands.init import init_course
from grader.lms.late_policy import (
    PLUGIN_NAME,
    CourseLatePolicy,
    LatePolicy,
    LatePolicyError,
    late_penalty_plugin,
    parse_policy,
    policy_in_force,
)

HOUR, DAY = 3600, 86400


@pytest.mark.parametrize(
    "written, canonical",
    [
        ("none", "none"),
        ("zero", "zero"),
        ("per-hour:2", "per-hour:2"),
        ("per-hour:0.5", "per-hour:0.5"),
        ("per-hour:5%", "per-hour:5%"),
        ("per-day:10%", "per-day:10%"),
        ("per-day:10%,cap:50%", "per-day:10%,cap:50%"),
        (" per-day:10% , cap:3 ", "per-day:10%,cap:3"),
    ],
)
def test_each_form_parses_and_writes_back(written, canonical):
    assert str(parse_policy(written)) == canonical


@pytest.mark.parametrize(
    "written, said",
    [
        ("", "is not one of"),
        ("None", "is not one of"),
        ("per-week:1", "is not one of"),
        ("per-day", "is not one of"),
        ("per-day:-1", "is not one of"),
        ("per-day:1e2", "is not one of"),
        ("per-day:10%,cap:", "is not one of"),
        ("zero,cap:3", "is not one of"),
        ("per-day:10,max:3", "is not one of"),
        ("per-day:١٠", "is not one of"),  # digits, but not ASCII ones
        ("per-day:0", "takes nothing off"),
        ("per-day:10%,cap:0", "takes nothing off"),
        ("per-hour:101%", "more than the whole score"),
    ],
)
def test_anything_else_is_refused_with_the_forms(written, said):
    with pytest.raises(LatePolicyError, match=said) as raised:
        parse_policy(written)
    if said == "is not one of":
        assert "per-hour:AMOUNT" in str(raised.value)


@pytest.mark.parametrize(
    "policy, score, late, penalty",
    [
        ("none", 8, DAY, None),
        ("zero", 8, 1, 8),
        ("zero", 8, 0, None),  # on time
        ("per-hour:2", 8, 1, 2),  # an hour begun counts
        ("per-hour:2", 8, HOUR, 2),
        ("per-hour:2", 8, HOUR + 1, 4),
        ("per-hour:2", 8, 10 * HOUR, 8),  # never more than the score
        ("per-hour:5%", 8, 3 * HOUR, 1.2),
        ("per-day:10%", 8, 25 * HOUR, 1.6),
        ("per-day:10%,cap:25%", 8, 5 * DAY, 2),
        ("per-day:1,cap:3", 8, 5 * DAY, 3),
        ("per-day:1,cap:3", 8, DAY, 1),
        ("per-day:1", 8, 0, None),
    ],
)
def test_penalties(policy, score, late, penalty):
    found = parse_policy(policy).penalty(score, late)
    assert found == (None if penalty is None else pytest.approx(penalty))


def test_descriptions_say_what_a_late_submission_costs():
    assert parse_policy("none").describe() == "late policy: none (late submissions lose nothing)"
    assert parse_policy("per-day:10%,cap:3").describe() == (
        "late policy: per-day:10%,cap:3: 10% of the score off per day late, or part of one,"
        " at most 3 points"
    )
    assert "1 point off per hour" in parse_policy("per-hour:1").describe()


def _config(policy: str | None = None) -> Config:
    config = Config()
    if policy is not None:
        config.AssignLatePenalties.plugin_class = PLUGIN_NAME
        config.CourseLatePolicy.policy = policy
    return config


def test_the_configured_plugin_is_the_one_nbgrader_makes():
    """AssignLatePenalties (the stock engine) and late_penalty_plugin (the fast one) both make
    the class the configuration names, with its policy."""
    from nbgrader.preprocessors import AssignLatePenalties

    stock = AssignLatePenalties(config=_config("per-hour:2"))
    stock.init_plugin()
    assert isinstance(stock.plugin_inst, CourseLatePolicy)
    assert stock.plugin_inst.late_submission_penalty("s", 8.0, HOUR + 1) == 4
    ours = late_penalty_plugin(_config("per-hour:2"))
    assert isinstance(ours, CourseLatePolicy)
    assert ours.late_submission_penalty("s", 8.0, HOUR + 1) == 4


def test_without_a_plugin_named_nbgrader_own_applies():
    plugin = late_penalty_plugin(_config())
    assert type(plugin) is LateSubmissionPlugin
    assert policy_in_force(_config()) == LatePolicy("none")
    zero = Config()
    zero.LateSubmissionPlugin.penalty_method = "zero"
    assert policy_in_force(zero) == LatePolicy("zero")


def test_a_bad_policy_in_the_configuration_is_refused():
    with pytest.raises(TraitError, match="is not one of"):
        late_penalty_plugin(_config("ten percent a day"))


def test_init_with_a_bad_policy_writes_nothing(tmp_path):
    with pytest.raises(LatePolicyError):
        init_course(tmp_path / "course", late_policy="10%/day")
    assert not (tmp_path / "course").exists()


def test_the_score_table_shows_the_score_after_the_penalty_beside_the_raw_score():
    """A late submission's row reads "after (raw - penalty late)"; one on time, its score."""
    from grader.commands.score_table import score_table
    from grader.grading.results import Result

    table = score_table(
        [
            Result("ann", "ps1", 10.0, 12.0, "graded", penalty=2.5),
            Result("ben", "ps1", 9.0, 12.0, "graded"),
        ]
    )
    rows = {line.split()[1]: line for line in table.splitlines()[1:3]}
    assert "7.5 (10 - 2.5 late)" in rows["ann"]
    assert rows["ben"].split()[2] == "9"
