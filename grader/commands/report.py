"""An HTML report of what the class got wrong: scores, pass rates and common failures."""

import html
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 -- the backend must be chosen first
import nbformat  # noqa: E402

from grader.cells import grade_id, is_graded  # noqa: E402
from grader.commands.export import (  # noqa: E402
    NBGRADER_COLUMNS,
    NO_SUBMISSION,
    OUR_COLUMNS,
    grade_rows,
)
from grader.course import Course  # noqa: E402


def failure_explanations(course: Course) -> Counter:
    """(lesson, exercise, explanation) -> how many submissions failed with it."""
    found: Counter = Counter()
    for path in sorted(course.root.glob("autograded/*/*/*.ipynb")):
        try:
            found.update(_explanations(path))
        except Exception:  # an unreadable or malformed notebook has no explanations to count
            continue
    return found


def _explanations(path: Path) -> Counter:
    """The failure explanations in one autograded notebook's test cells."""
    found: Counter = Counter()
    for cell in nbformat.read(path, as_version=4).cells:
        if not is_graded(cell) or cell.cell_type != "code":
            continue
        for out in cell.outputs:
            if out.output_type == "error":
                first = (out.evalue or out.ename).splitlines()[0] if out.evalue else out.ename
                found[(path.parent.name, grade_id(cell), f"{out.ename}: {first}")] += 1
    return found


def _score_figure(rows: list[dict], path: Path) -> None:
    lessons = sorted({r["assignment"] for r in rows})
    fig, axes = plt.subplots(1, len(lessons), figsize=(3.2 * len(lessons), 2.8), squeeze=False)
    for ax, lesson in zip(axes[0], lessons, strict=True):
        mine = [r for r in rows if r["assignment"] == lesson]
        ax.hist([float(r["score"]) for r in mine], bins=range(int(mine[0]["max_score"]) + 2))
        ax.set_title(lesson, fontsize=8)
        ax.set_xlabel("score")
    axes[0][0].set_ylabel("students")
    fig.suptitle("Score distribution per lesson")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _pass_rates(rows: list[dict], exercises: list[str]) -> dict[str, float]:
    """`assignment: exercise` -> the share of its graded submissions with the exercise's full
    points (the most any of them got), per assignment: two assignments' exercises of one name
    are two bars."""
    rates = {}
    for assignment in sorted({r["assignment"] for r in rows}):
        mine = [r for r in rows if r["assignment"] == assignment]
        for exercise in exercises:
            graded = [r for r in mine if exercise in r]
            if graded:
                best = max(float(r[exercise]) for r in graded)
                passed = sum(float(r[exercise]) >= best and best > 0 for r in graded)
                rates[f"{assignment}: {exercise}"] = passed / len(graded)
    return rates


def _pass_rate_figure(rates: dict[str, float], path: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(rates) + 1.2))
    names = list(rates)[::-1]
    ax.barh(names, [100 * rates[n] for n in names], color="tab:green")
    ax.set_xlim(0, 100)
    ax.set_xlabel("% of submissions with full points")
    ax.set_title("Pass rate per exercise")
    ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_report(course: Course, out: Path, *, top: int = 15) -> Path:
    """Write index.html and its PNG figures into `out`; return the page's path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    header, rows = grade_rows(course)
    submitted = [r for r in rows if r["outcome"] != NO_SUBMISSION and r["score"] != ""]
    exercises = header[len(NBGRADER_COLUMNS) + len(OUR_COLUMNS) :]
    rates = _pass_rates(submitted, exercises)
    if submitted:
        _score_figure(submitted, out / "scores.png")
        _pass_rate_figure(rates, out / "pass_rates.png")
    failures = failure_explanations(course).most_common(top)
    failure_rows = "".join(
        f"<tr><td>{n}</td><td>{html.escape(lesson)}</td><td>{html.escape(ex)}</td>"
        f"<td><code>{html.escape(text)}</code></td></tr>"
        for (lesson, ex, text), n in failures
    )
    figures = (
        '<img src="scores.png" alt="score distribution per lesson">\n'
        '<img src="pass_rates.png" alt="pass rate per exercise">'
        if submitted
        else "<p>No submissions have been graded yet.</p>"
    )
    not_final = sum(r["final"] != "yes" for r in rows)
    pending = (
        f" {not_final} grades are not final yet (grades.csv's why_not_final says why)."
        if not_final
        else ""
    )
    page = out / "index.html"
    page.write_text(
        "<!doctype html><html><head><meta charset='utf-8'><title>Class report</title>"
        "<style>body{font-family:sans-serif;max-width:70em;margin:auto}"
        "td,th{border-bottom:1px solid #ddd;padding:.3em;text-align:left}</style></head><body>"
        f"<h1>Class report</h1><p>{len(submitted)} graded submissions.{pending}</p>{figures}"
        "<h2>Most common failure explanations</h2><table>"
        "<tr><th>submissions</th><th>lesson</th><th>exercise</th><th>explanation</th></tr>"
        f"{failure_rows}</table></body></html>"
    )
    return page
