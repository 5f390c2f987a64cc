"""The instructor's command line: `python -m grader <command>`."""

import argparse
import sys
from pathlib import Path

from grader.demo import DEFAULT_OUT, run_demo, score_table
from grader.release import ReleaseError, release


def _release(args: argparse.Namespace) -> int:
    for path in release(args.lessons or None):
        print(f"wrote {path}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    results = run_demo(args.out)
    print(score_table(results))
    print(f"\nCourse folder with gradebook and autograded notebooks: {args.out}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser with one sub-command per instructor task."""
    top = argparse.ArgumentParser(prog="grader", description=__doc__)
    commands = top.add_subparsers(dest="command", required=True)
    rel = commands.add_parser("release", help="regenerate notebooks/ from solutions/")
    rel.add_argument("lessons", nargs="*", help="lesson ids (default: all)")
    rel.set_defaults(run=_release)
    demo = commands.add_parser("demo", help="grade the bundled example class")
    demo.add_argument("--out", type=Path, default=DEFAULT_OUT, help="course folder to create")
    demo.set_defaults(run=_demo)
    return top


def main(argv: list[str] | None = None) -> int:
    """Run one command; errors are printed as one clear line, with exit status 2."""
    args = parser().parse_args(argv)
    try:
        return args.run(args)
    except ReleaseError as error:
        print(f"grader: {error}", file=sys.stderr)
        return 2
