"""The course's late-submission policy, one option (`grader init --late-policy POLICY`):

- `none`: no penalty (nbgrader's default, and the course's unless told otherwise);
- `zero`: a late notebook scores 0;
- `per-hour:AMOUNT` or `per-day:AMOUNT`: AMOUNT taken off for each hour (day) late, each one
  begun counting in full (a notebook 25 hours late is 2 days late). AMOUNT is points (`2`,
  `0.5`) or a share of the notebook's score (`5%`);
- either of those with a cap, `per-day:10%,cap:50%` or `per-hour:1,cap:3`: the penalty never
  exceeds the cap (a share of the score, or points).

A penalty is never more than the notebook's score, as nbgrader has it. Late means after the due
date plus any extension (`grader extend`). nbgrader computes the penalty per notebook, so for an
assignment of several notebooks a penalty in points (and a cap in points) applies to each.

`init` writes the policy into the course's nbgrader_config.py, so that both grading engines apply
it: `c.AssignLatePenalties.plugin_class` names `CourseLatePolicy`, nbgrader's late-penalty plugin
with one setting, `c.CourseLatePolicy.policy`.
"""

import math
import re
from dataclasses import dataclass

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import TraitError, Unicode, validate

PLUGIN_NAME = "grader.lms.late_policy.CourseLatePolicy"
FORMS = "none, zero, per-hour:AMOUNT or per-day:AMOUNT, optionally followed by ,cap:AMOUNT"
_AMOUNT = r"\d+(?:\.\d+)?%?"
_POLICY = re.compile(
    rf"(?P<method>none|zero)|(?P<rated>per-hour|per-day):(?P<rate>{_AMOUNT})"
    rf"(?:\s*,\s*cap:(?P<cap>{_AMOUNT}))?",
    re.ASCII,
)
SECONDS = {"per-hour": 3600, "per-day": 86400}


class LatePolicyError(ValueError):
    """A late policy that is not one of the forms this module reads."""


@dataclass(frozen=True)
class Amount:
    """Points, or a percentage of the notebook's score."""

    value: float
    percent: bool

    @classmethod
    def parse(cls, text: str, what: str) -> "Amount":
        """`2` (points) or `5%`; positive, a percentage at most 100."""
        amount = cls(float(text.rstrip("%")), text.endswith("%"))
        if amount.value <= 0:
            raise LatePolicyError(f"{what} {text!r} takes nothing off: give a positive amount")
        if amount.percent and amount.value > 100:
            raise LatePolicyError(f"{what} {text!r} is more than the whole score")
        return amount

    def of(self, score: float) -> float:
        """The points this amount is, for a notebook that scored `score`."""
        return score * self.value / 100 if self.percent else self.value

    def __str__(self) -> str:
        if self.percent:
            return f"{self.value:g}%"
        return f"{self.value:g}"

    def describe(self) -> str:
        """`10% of the score`, `2 points`."""
        if self.percent:
            return f"{self} of the score"
        return f"{self} point" + ("" if self.value == 1 else "s")


@dataclass(frozen=True)
class LatePolicy:
    """A parsed policy: its method (none, zero, per-hour, per-day), its rate and cap."""

    method: str = "none"
    rate: Amount | None = None
    cap: Amount | None = None

    def penalty(self, score: float, seconds_late: float) -> float | None:
        """The points taken off a notebook that scored `score` and came `seconds_late` late
        (None where nothing is: on time, or no penalty)."""
        if seconds_late <= 0 or self.method == "none":
            return None
        if self.method == "zero":
            return max(0.0, score)
        periods = math.ceil(seconds_late / SECONDS[self.method])
        penalty = periods * self.rate.of(score)
        if self.cap is not None:
            penalty = min(penalty, self.cap.of(score))
        return max(0.0, min(penalty, score))

    def __str__(self) -> str:
        """The policy as `--late-policy` writes it."""
        if self.rate is None:
            return self.method
        return f"{self.method}:{self.rate}" + (f",cap:{self.cap}" if self.cap else "")

    def describe(self) -> str:
        """One line for the instructor: what a late submission costs."""
        if self.method == "none":
            return "late policy: none (late submissions lose nothing)"
        if self.method == "zero":
            return "late policy: zero (a late notebook scores 0)"
        unit = self.method.removeprefix("per-")
        text = f"late policy: {self}: {self.rate.describe()} off per {unit} late, or part of one"
        return text + (f", at most {self.cap.describe()}" if self.cap else "")


def parse_policy(text: str) -> LatePolicy:
    """The policy `text` names (see the module's docstring); LatePolicyError for anything
    else."""
    found = _POLICY.fullmatch(text.strip())
    if not found:
        raise LatePolicyError(f"late policy {text!r} is not one of: {FORMS} (e.g. per-day:10%)")
    if found["method"]:
        return LatePolicy(found["method"])
    cap = Amount.parse(found["cap"], "the cap") if found["cap"] else None
    return LatePolicy(found["rated"], Amount.parse(found["rate"], "the rate"), cap)


class CourseLatePolicy(LateSubmissionPlugin):
    """nbgrader's late-penalty plugin, computing the penalty from one setting, `policy`. Where
    that is `none`, nbgrader's own setting, `LateSubmissionPlugin.penalty_method`, still holds
    (a course configured as nbgrader's documentation shows keeps its `zero`)."""

    policy = Unicode(
        "none",
        help=f"What a late notebook loses: {FORMS} (see grader/lms/late_policy.py).",
    ).tag(config=True)

    @validate("policy")
    def _a_policy(self, proposal):
        try:
            parse_policy(proposal["value"])
        except LatePolicyError as problem:
            raise TraitError(str(problem)) from None
        return proposal["value"]

    def late_submission_penalty(
        self, student_id: str, score: float, total_seconds_late: float
    ) -> float | None:
        """The points `student_id`'s notebook, scored `score`, loses for `total_seconds_late`."""
        return self.in_force().penalty(score, total_seconds_late)

    def in_force(self) -> "LatePolicy":
        """The policy this plugin applies: `policy`, else nbgrader's `penalty_method`."""
        policy = parse_policy(self.policy)
        return LatePolicy(self.penalty_method) if policy.method == "none" else policy


def late_penalty_plugin(config) -> LateSubmissionPlugin:
    """The late-penalty plugin that nbgrader's AssignLatePenalties makes from `config` (a
    course's nbgrader configuration): `AssignLatePenalties.plugin_class`, configured."""
    from nbgrader.preprocessors import AssignLatePenalties

    return AssignLatePenalties(config=config).plugin_class(config=config)


def policy_in_force(config) -> LatePolicy | None:
    """The policy `config` sets, whichever plugin it names (nbgrader's own reads its
    `penalty_method`, none or zero); None for a plugin of someone else's."""
    plugin = late_penalty_plugin(config)
    if isinstance(plugin, CourseLatePolicy):
        return plugin.in_force()
    if type(plugin) is LateSubmissionPlugin:
        return LatePolicy(plugin.penalty_method)
    return None


def describe_late_policy(course) -> str:
    """One line saying what a late submission costs in `course` (a Course), for the score
    table and reports."""
    config = course.config()
    policy = policy_in_force(config)
    if policy is None:
        return f"late policy: {type(late_penalty_plugin(config)).__name__} (the course's own)"
    return policy.describe()
