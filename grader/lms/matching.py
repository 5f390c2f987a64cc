"""Which student on the roster a file belongs to, from what its name says (`exports.Claim`).

Tried in order, the first that matches anyone deciding: the platform's user id (lms_id: a file
whose user id is on the roster is that student's, whatever else its name says), the course's
id, the login, the SIS id, the email (or its local part), a number the platform put in the name
that is a student's user id, SIS id or id (Brightspace's folder names: unless the name there is
another student's), then the full name, compared without
case or accents, first-last or last-first, or in Canvas's squashed form (`garciamaria`, a name:
never taken for an id). Two students matched by the same step is no match: the reason names
both and says how to place the file.
"""

import re
import unicodedata
from collections.abc import Callable
from functools import cache

from grader.lms.exports import BY_HAND, PATTERN_HELP, Claim
from grader.lms.roster import Student


def plain(text: str) -> str:
    """`text` without case, accents or punctuation, words one space apart: `garcia maria`."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.sub(r"[\W_]+", " ", bare).split())


@cache
def _squashed_forms(student: Student) -> set[str]:
    """The ways Canvas may write a student's sortable name ("Garcia, Maria") as one word: without
    accents (`garciamaria`), with them, or with the non-ASCII letters dropped."""
    forms = set()
    for words in ((student.last_name, student.first_name), (student.first_name, student.last_name)):
        text = "".join(words)
        forms |= {plain(text).replace(" ", ""), re.sub(r"[\W_]", "", text.casefold())}
        forms.add(re.sub(r"[^a-z0-9]", "", text.casefold()))
    return forms - {""}


@cache
def full_names(student: Student) -> set[str]:
    first, last = plain(student.first_name), plain(student.last_name)
    if not first or not last:
        return {plain(student.full_name)} - {""}
    return {f"{first} {last}", f"{last} {first}"}


def _email_matches(email: str, token: str) -> bool:
    email, token = email.casefold(), token.casefold()
    return bool(email) and (email == token or ("@" not in token and email.split("@")[0] == token))


class Ambiguous(str):
    """The reason a file names no one student: several match (`students`)."""

    students: tuple[Student, ...] = ()


AMBIGUOUS_HELP = f"{PATTERN_HELP}, or {BY_HAND}"


NAME = "name"  # the step that matches by name alone, which two students may share
NUMBER = "platform number"  # a number in the name that may be the student's (Brightspace's)


def find_student(
    claim: Claim, students: list[Student], help: str = AMBIGUOUS_HELP
) -> Student | str:
    """The one student of `students` that `claim` names, or why there is none (the reason opens
    with the student the file seems to be, and a question mark; an `Ambiguous` one when
    several match, saying what to do: `help`)."""
    return match_student(claim, students, help)[0]


def match_student(
    claim: Claim, students: list[Student], help: str = AMBIGUOUS_HELP
) -> tuple[Student | str, str]:
    """`find_student`'s answer, and what matched (`lms id`, `id`, …, NAME; "" for none)."""
    tokens = [token for token in claim.ids if token]
    folded = {token.casefold() for token in tokens}
    names = {plain(name) for name in claim.names} - {""}
    squashed = plain(claim.squashed).replace(" ", "")
    steps: list[tuple[str, Callable[[Student], bool]]] = [
        ("lms id", lambda s: bool(claim.lms_id) and s.lms_id == claim.lms_id),
        ("id", lambda s: s.id.casefold() in folded),
        ("login", lambda s: bool(s.login) and s.login.casefold() in folded),
        ("SIS id", lambda s: bool(s.sis_id) and s.sis_id.casefold() in folded),
        ("email", lambda s: any(_email_matches(s.email, token) for token in tokens)),
        (NUMBER, lambda s: any(n in (s.lms_id, s.sis_id, s.id) for n in claim.numbers if n)),
        (NAME, lambda s: bool(names & full_names(s))),
        (NAME, lambda s: bool(squashed) and squashed in _squashed_forms(s)),
    ]
    for what, matches in steps:
        found = [student for student in students if matches(student)]
        if len(found) == 1 and what == NUMBER and names:
            return _number_and_name_agree(claim, found[0], students, names), what
        if len(found) == 1:
            return found[0], what
        if found:
            both = ", ".join(f"{s.id} ({s.full_name or 'no name'})" for s in found)
            reason = Ambiguous(
                f"{claim.seems}? {len(found)} students on the roster have this {what}: {both};"
                f" {help}"
            )
            reason.students = tuple(found)
            return reason, ""
    return f"{claim.seems}? no roster entry with {_looked_for(claim, tokens)}", ""


def _number_and_name_agree(
    claim: Claim, student: Student, students: list[Student], names: set[str]
) -> Student | str:
    """`student`, whom a number in the file's name gives, unless its name is someone else's
    on the roster (the number may be the platform's submission number): then why not."""
    if names & full_names(student):
        return student
    others = [s.id for s in students if s is not student and names & full_names(s)]
    if not others:
        return student
    return (
        f"{claim.seems}? the number in its name is {student.id}'s, its name {', '.join(others)}'s:"
        f" {BY_HAND}"
    )


def doubt(claim: Claim, student: Student) -> str:
    """What to check when `claim` names a platform user id that is not `student`'s on the
    roster (it was matched by something else, such as the name), else ""."""
    if not claim.lms_id or not student.lms_id or student.lms_id == claim.lms_id:
        return ""
    return (
        f"the file's platform user id {claim.lms_id} is not on the roster, which gives"
        f" {student.id} the user id {student.lms_id}: check that the file is theirs"
    )


def _looked_for(claim: Claim, tokens: list[str]) -> str:
    said = []
    if tokens:
        said.append(f"id, login, SIS id or email {' or '.join(tokens)}")
    if claim.lms_id:
        said.append(f"lms id {claim.lms_id}")
    said += [f"name {name!r}" for name in (*claim.names, claim.squashed) if name]
    if not said:
        return "anything the file's name says"
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
