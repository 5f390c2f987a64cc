"""The instructor's command line: `python -m grader <command>` (also installed as `grader`)."""

import argparse
import sys
import warnings
from pathlib import Path

from grader.commands.release import ReleaseError
from grader.course import Course, CourseError, known_lessons, lessons, solution_notebook
from grader.safe_output.text import terminal_safe

INTERRUPTED = "interrupted: what was done is kept; run the same command again to continue"
COURSE_HELP = "course folder (default: the current folder, if it is a course)"


def _course(args) -> Course:
    """The course the command works on, named on stderr before anything is written."""
    course = Course.at(args.course_dir)
    print(terminal_safe(f"course {course.root}"), file=sys.stderr)
    return course


def _init(args) -> int:
    from grader.commands.init import init_course
    from grader.lms.late_policy import describe_late_policy

    course = init_course(
        args.folder,
        roster=args.roster,
        due_dates=args.due_dates,
        db_url=args.db_url,
        id_column=args.id_column,
        time_zone=args.time_zone,
        late_policy=args.late_policy,
        variants=args.variants,
    )
    print(
        f"{course.root} is a course for {len(course.lessons)} lessons;"
        f" put submissions in {course.root}/submitted"
    )
    print(describe_late_policy(course))
    return 0


def _extend(args) -> int:
    from grader.commands.extend import extend

    course = _course(args)
    given = extend(course, args.student, args.lesson, args.until)
    with course.api().gradebook as gb:
        due = gb.find_assignment(args.lesson).duedate  # nbgrader keeps it in UTC, naive
    hours = given.total_seconds() / 3600
    print(
        terminal_safe(
            f"{args.student}: {args.lesson} now due {due + given:%Y-%m-%d %H:%M} UTC"
            f" ({hours:g} h after its due date); run `grader autograde {args.lesson}` to"
            " recompute a graded submission's penalty"
        )
    )
    return 0


def _release(args) -> int:
    from grader.commands.release import release

    if args.course_dir is not None:  # the course's own assignments, as nbgrader releases them
        from grader.commands.init import enter_lessons

        course = _course(args)
        chosen = course.known(args.lessons) if args.lessons else course.lessons
        enter_lessons(course, chosen)
        for lesson in chosen:
            print(f"released {lesson} to {course.root / 'release' / lesson}")
        return 0
    for path in release(args.lessons or None):
        print(f"wrote {path}")
    return 0


def _outputs(args) -> int:
    from grader.commands.outputs import store_outputs
    from grader.commands.release import keep_colab_cells_in_step

    chosen = known_lessons(args.lessons) if args.lessons else lessons()
    keep_colab_cells_in_step(chosen)  # release writes them: store outputs of the final code
    paths = [solution_notebook(lesson) for lesson in chosen]
    written = store_outputs(paths, force=bool(args.lessons) or args.all)
    for path in written:
        print(f"wrote {path}")
    print(f"{len(written)} of {len(paths)} lessons run; the others' code has not changed")
    return 0


def _check(args) -> int:
    from grader.commands.check import check

    return check(known_lessons(args.lessons))


def _collect(args) -> int:
    from grader.commands.collect import collect

    run = collect(
        args.source, _course(args), args.lesson, args.pattern, args.time_zone,
        replace_by_name=args.replace_by_name, other_platform=args.other_platform,
        worksheet=args.worksheet,
    )  # fmt: skip
    for line in run.lines():
        print(terminal_safe(line))
    return 0 if run.ok else 1


def _autograde(args) -> int:
    from grader.commands.init import ensure_entered
    from grader.commands.score_table import score_table
    from grader.grading.class_run import autograde
    from grader.judging.reference import IN_PROCESS, verdicts_of
    from grader.lms.late_policy import describe_late_policy
    from grader.sandbox.outside.isolation import Limits

    if args.all == bool(args.lessons):
        raise CourseError("name the lessons to grade, or give --all")
    course = _course(args)
    chosen = course.lessons if args.all else course.known(args.lessons)
    for lesson in ensure_entered(course, chosen):
        print(f"entered {lesson} in the course's gradebook (new since the course was made)")
    limits = Limits(
        cell_seconds=args.cell_timeout,
        notebook_seconds=args.notebook_timeout,
        memory_bytes=int(args.memory_gib * 1024**3),
    )
    if args.engine == "fast":
        from grader.sandbox.outside.isolation import detect_protections

        print(detect_protections()[0].describe(), file=sys.stderr)
        print(describe_late_policy(course), file=sys.stderr)
        for lesson in chosen:
            if verdicts_of(lesson) == IN_PROCESS:
                print(f"{lesson}: verdicts {IN_PROCESS}", file=sys.stderr)
    results = autograde(
        course,
        chosen,
        args.student or None,
        engine=args.engine,
        jobs=args.jobs,
        limits=limits,
        force=args.force,
        progress=True,
    )
    print(score_table(results, course))
    return 0


def _feedback(args) -> int:
    from grader.commands.feedback import generate_feedback

    course = _course(args)
    course.known([args.lesson])
    run = generate_feedback(course, args.lesson)
    for path in run.pages:
        print(terminal_safe(f"wrote {path}"))
    for student, reason in run.missing.items():
        print(terminal_safe(f"no feedback for {student}: {reason}"))
    if args.bundle:
        from grader.lms.feedback_bundle import bundle

        made = bundle(course, args.lesson, args.bundle, args.bundle_to, args.ids_from)
        print(terminal_safe(f"wrote {made.path} (for {args.bundle}'s bulk upload)"))
        for student, why in made.placeholders.items():
            print(terminal_safe(f"a page saying why for {student}: {why}"))
        for student, why in made.unmatched.items():
            print(terminal_safe(f"{args.bundle} will not match {student}'s file: {why}"))
    return 0


def _export(args) -> int:
    from grader.commands.export import export

    if args.lms in (None, "moodle") and (args.column or args.gradebook):
        option = "--column" if args.column else "--gradebook"
        raise ValueError(f"{option}: for --lms canvas, blackboard or brightspace")
    course = _course(args)
    lessons = course.known(args.lesson) if args.lesson else None
    if args.lms is None:
        print(f"wrote {export(course, args.to or course.root / 'grades.csv')}")
        return 0
    from grader.lms import grade_import as imports

    to = args.to or course.root / f"grades-{args.lms}.csv"
    if args.lms == "moodle":
        written = imports.moodle_import(course, to, lessons, args.match_on)
    else:
        write = {
            "canvas": imports.canvas_import,
            "blackboard": imports.blackboard_import,
            "brightspace": imports.brightspace_import,
        }[args.lms]
        known = imports.gradebook_headers(args.gradebook) if args.gradebook else None
        written = write(course, to, lessons, imports.parse_columns(args.column), known)
    print(f"wrote {written} (for {args.lms}'s grade import)")
    print(f"wrote {imports.notes_for(written)} (why, for each student not simply graded)")
    return 0


def _report(args) -> int:
    from grader.commands.report import write_report

    course = _course(args)
    print(f"wrote {write_report(course, args.out or course.root / 'report')}")
    return 0


def _keys(args) -> int:
    from grader.commands.tasks import write_keys

    course = _course(args)
    path, count = write_keys(course, args.to or course.root / "course_keys.csv")
    print(terminal_safe(f"wrote {path}: the course keys of {count} students, one each to hand out"))
    return 0


def _tasks(args) -> int:
    from grader.commands.tasks import student_tasks

    course = _course(args)
    for line in student_tasks(course, args.student, args.lesson):
        print(terminal_safe(line))
    return 0


def _demo(args) -> int:
    from grader.commands.demo import run_demo
    from grader.commands.score_table import score_table
    from grader.sandbox.outside.isolation import detect_protections

    print(detect_protections()[0].describe(), file=sys.stderr)
    results = run_demo(args.out, progress=True)
    print(score_table(results))
    print(f"\nIn {args.out}: gradebook.db, autograded/, feedback/, grades.csv, report/index.html")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per instructor task."""
    from grader.commands.demo import DEFAULT_OUT
    from grader.grading.tasks import GradingEngine

    top = argparse.ArgumentParser(prog="grader", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name, run, help_text):
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(run=run)
        return sub

    init = command("init", _init, "make a folder a course for these lessons")
    init.add_argument("folder", type=Path)
    init.add_argument("--roster", type=Path, help="CSV of students (id, first_name, …)")
    init.add_argument("--due-dates", type=Path, help="CSV of due dates (lesson, due)")
    init.add_argument(
        "--db-url", help="gradebook database URL (default: sqlite gradebook.db in the folder)"
    )
    init.add_argument(
        "--id-column",
        metavar="COLUMN",
        help="roster column holding the ids (default: id; Canvas: SIS Login ID, SIS User ID or"
        " ID; Moodle: Username, ID number or the email's name)",
    )
    init.add_argument(
        "--time-zone",
        metavar="ZONE",
        help="the course's IANA time zone, e.g. America/Toronto: due dates with no offset are"
        " read in it",
    )
    init.add_argument(
        "--late-policy",
        metavar="POLICY",
        help="none (default), zero, per-hour:AMOUNT or per-day:AMOUNT, then optionally"
        " ,cap:AMOUNT; AMOUNT is points or N%% of the score",
    )

    init.add_argument(
        "--variants",
        metavar="LESSONS",
        help="give each student their own tasks in these lessons (comma-separated ids, or all);"
        " off (default) gives everyone the class-wide tasks",
    )

    rel = command(
        "release", _release, "regenerate notebooks/ from solutions/, or release a course's own"
    )
    rel.add_argument("lessons", nargs="*", help="lesson or assignment ids (default: all)")
    rel.add_argument(
        "--course-dir",
        type=Path,
        help="release these assignments of this course (its source/<id>/) into its release/",
    )

    out = command("outputs", _outputs, "re-run solutions whose code changed; store their outputs")
    out.add_argument("lessons", nargs="*", help="lesson ids to run whatever changed")
    out.add_argument("--all", action="store_true", help="run every lesson")

    chk = command("check", _check, "check lessons before release (solution, blank, wrong answers)")
    chk.add_argument("lessons", nargs="+", help="lesson ids")

    col = command("collect", _collect, "bring in submissions from a folder or zip export")
    col.add_argument("source", type=Path)
    col.add_argument(
        "--lesson", help="the only lesson to take, and the lesson of files that name none"
    )
    col.add_argument(
        "--pattern",
        help="regular expression for the files' paths, with named groups as nbgrader's"
        " zip_collect takes them (student_id, file_id, timestamp; also student, lesson or"
        " assignment, notebook, first_name, last_name, email, login, lms_id); overrides"
        " detection",
    )
    col.add_argument(
        "--time-zone",
        metavar="ZONE",
        help="IANA zone for times the platform writes without one, where its record states"
        " none (default: the course's, else this computer's)",
    )
    col.add_argument(
        "--replace-by-name",
        action="store_true",
        help="let a file matched to its student by name alone replace what they have already",
    )
    col.add_argument(
        "--other-platform",
        action="store_true",
        help="take a download of another platform than the one the course's roster came from",
    )
    col.add_argument(
        "--worksheet",
        type=Path,
        metavar="CSV",
        help="Moodle's grading worksheet of the assignment: its participant numbers tell apart"
        " students who share a name",
    )
    col.add_argument("--course-dir", type=Path, help=COURSE_HELP)

    auto = command("autograde", _autograde, "grade every submission of one or more lessons")
    auto.add_argument("lessons", nargs="*", metavar="lesson")
    auto.add_argument("--all", action="store_true", help="every lesson")
    auto.add_argument("--course-dir", type=Path, help=COURSE_HELP)
    auto.add_argument("--student", action="append", help="only this student (repeatable)")
    auto.add_argument("--engine", choices=[e.value for e in GradingEngine], default="fast")
    auto.add_argument("--jobs", type=int, help="submissions graded at once (default: cores)")
    auto.add_argument("--force", action="store_true", help="regrade already graded work")
    auto.add_argument("--cell-timeout", type=float, default=30.0, help="seconds per cell")
    auto.add_argument("--notebook-timeout", type=float, default=120.0, help="seconds per notebook")
    auto.add_argument("--memory-gib", type=float, default=2.0, help="memory per submission")

    feed = command("feedback", _feedback, "HTML feedback for every graded submission")
    feed.add_argument("lesson")
    feed.add_argument("--course-dir", type=Path, help=COURSE_HELP)
    feed.add_argument(
        "--bundle", choices=["canvas", "moodle"], help="also zip the pages for the bulk upload"
    )
    feed.add_argument("--bundle-to", type=Path, help="the zip (default: COURSE/feedback-L-P.zip)")
    feed.add_argument(
        "--ids-from",
        type=Path,
        help="the platform's submissions download (Canvas) or grading worksheet (Moodle):"
        " the ids its upload matches files by",
    )

    exp = command("export", _export, "grades CSV (nbgrader's columns + one per exercise)")
    exp.add_argument("--course-dir", type=Path, help=COURSE_HELP)
    exp.add_argument("--to", type=Path, help="CSV file (default: COURSE/grades.csv)")
    exp.add_argument(
        "--lms",
        choices=["canvas", "moodle", "blackboard", "brightspace"],
        help="the platform's import format",
    )
    exp.add_argument("--lesson", action="append", help="only this lesson (repeatable; --lms)")
    exp.add_argument(
        "--column",
        action="append",
        metavar="LESSON=ID",
        help="the platform's assignment for LESSON (repeatable): Canvas's assignment id,"
        " Blackboard's Grade Center column id, Brightspace's grade item name",
    )
    exp.add_argument(
        "--gradebook",
        type=Path,
        help="the platform's grade export, whose headers name its assignments and their ids"
        " (Canvas: default, the roster's export)",
    )
    exp.add_argument(
        "--match-on",
        choices=["auto", "email", "username", "idnumber"],
        default="auto",
        help="Moodle's field that identifies students (default: the first all students have)",
    )

    rep = command("report", _report, "HTML report with figures of what the class missed")
    rep.add_argument("--course-dir", type=Path, help=COURSE_HELP)
    rep.add_argument("--out", type=Path, help="folder (default: COURSE/report)")

    ext = command("extend", _extend, "give one student more time for one lesson")
    ext.add_argument("student")
    ext.add_argument("lesson")
    ext.add_argument(
        "--until", required=True, metavar="WHEN", help="new deadline, e.g. 2026-10-08T23:59-04:00"
    )
    ext.add_argument("--course-dir", type=Path, help=COURSE_HELP)

    keys = command("keys", _keys, "each student's course key, for their own tasks (a CSV)")
    keys.add_argument("--to", type=Path, help="CSV file (default: COURSE/course_keys.csv)")
    keys.add_argument("--course-dir", type=Path, help=COURSE_HELP)

    tasks = command("tasks", _tasks, "a student's own tasks, as their notebook shows them")
    tasks.add_argument("student")
    tasks.add_argument("--lesson", action="append", help="only this lesson (repeatable)")
    tasks.add_argument("--course-dir", type=Path, help=COURSE_HELP)

    demo = command("demo", _demo, "the whole pipeline on the bundled example class")
    demo.add_argument("--out", type=Path, default=DEFAULT_OUT, help="course folder to create")
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one command; expected errors are printed as one clear line, with exit status 2."""
    try:
        args = parser().parse_args(argv)
        warnings.filterwarnings("ignore", module="nbgrader")  # its SQLAlchemy session warnings
        return args.run(args)
    except (CourseError, ReleaseError, FileNotFoundError, ValueError, RuntimeError) as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:  # Ctrl-C; grading says what it kept
        print(f"\ngrader: {stop or INTERRUPTED}", file=sys.stderr)
        return 130
