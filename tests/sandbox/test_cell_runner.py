"""CellRunner records a cell's outputs as an IPython kernel would send them, within its limits.

One runner serves the whole module: its IPython shell is a process-wide singleton. The tests
do not depend on execution counts, except the ones that check them.
"""

import sys

import pytest
from forked import in_a_fork

from grader.sandbox.inside import cell_runner, tracebacks
from grader.sandbox.inside.captured_outputs import OUTPUT_OVERHEAD
from grader.sandbox.inside.cell_runner import CellRunner
from grader.sandbox.outside.reports import well_formed_outputs
from grader.sandbox.wire import MAX_OUTPUTS

LIMIT = 200  # a small output limit, for the tests of the limit


def _notice(limit: int) -> dict:
    return {
        "output_type": "stream",
        "name": "stderr",
        "text": f"[output cut by the grader: over {limit} bytes or {MAX_OUTPUTS} outputs]\n",
    }


def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


@pytest.fixture(scope="module")
def runner():
    """One CellRunner; afterwards the shell singleton, __main__ and matplotlib are put back."""
    from IPython.core.interactiveshell import InteractiveShell

    if InteractiveShell.initialized() and not isinstance(
        InteractiveShell.instance(), cell_runner._Shell
    ):
        InteractiveShell.clear_instance()  # another test's plain shell would refuse ours
    main = sys.modules["__main__"]
    import matplotlib
    import matplotlib.pyplot as plt

    backend, interactive = matplotlib.get_backend(), matplotlib.is_interactive()
    made = CellRunner()
    yield made
    plt.close("all")
    plt.switch_backend(backend)
    matplotlib.interactive(interactive)
    cell_runner._Shell.clear_instance()
    sys.modules["__main__"] = main


@pytest.fixture
def limited(runner):
    """The runner with an output limit of LIMIT bytes for one test."""
    default = runner.output_limit
    runner.output_limit = LIMIT
    yield runner
    runner.output_limit = default


def test_print_gives_one_stdout_stream(runner):
    """Several prints in a cell become a single stdout stream output, and the cell did not fail."""
    outputs, _, failed = runner.run("print('a')\nprint('b', end='')\nprint('c')")
    assert outputs == [_stream("stdout", "a\nbc\n")]
    assert failed is False


def test_explicit_flushes_merge_into_the_same_stream_output(runner):
    """Text flushed in several pieces with nothing between them is merged into one output."""
    outputs, _, _ = runner.run("import sys\nprint('a')\nsys.stdout.flush()\nprint('b')")
    assert outputs == [_stream("stdout", "a\nb\n")]


def test_stdout_is_sent_before_stderr_around_a_display(runner):
    """At a display and at the end, buffered stdout goes out before buffered stderr."""
    source = (
        "import sys\n"
        "from IPython.display import display\n"
        "print('e1', file=sys.stderr)\n"
        "print('o1')\n"
        "display('shown')\n"
        "print('e2', file=sys.stderr)\n"
        "print('o2')\n"
    )
    outputs, _, _ = runner.run(source)
    assert [(o["output_type"], o.get("name"), o.get("text")) for o in outputs] == [
        ("stream", "stdout", "o1\n"),
        ("stream", "stderr", "e1\n"),
        ("display_data", None, None),
        ("stream", "stdout", "o2\n"),
        ("stream", "stderr", "e2\n"),
    ]


def test_a_final_expression_gives_an_execute_result_with_the_cells_count(runner):
    """The value of the last line is an execute_result numbered with the cell's execution count."""
    outputs, count, failed = runner.run("print('first')\n6 * 7")
    assert isinstance(count, int)
    assert outputs == [
        _stream("stdout", "first\n"),
        {
            "output_type": "execute_result",
            "data": {"text/plain": "42"},
            "metadata": {},
            "execution_count": count,
        },
    ]
    assert failed is False


def test_execution_counts_go_up_by_one_per_cell(runner):
    """Each run cell takes the next execution count, as in a kernel."""
    counts = [runner.run("x = 1")[1] for _ in range(3)]
    assert counts == [counts[0], counts[0] + 1, counts[0] + 2]


@pytest.mark.parametrize(
    "source", ["6 * 7;", "None", "x = 6 * 7"], ids=["semicolon", "none", "assignment"]
)
def test_a_cell_without_a_shown_value_has_no_execute_result(runner, source):
    """A trailing semicolon, a None value or an assignment gives no output at all."""
    assert runner.run(source)[0] == []


def test_display_gives_display_data_with_every_format(runner):
    """display() of a rich object is one display_data holding its formats, without a count."""
    source = "from IPython.display import HTML, display\ndisplay(HTML('<b>bold</b>'))"
    outputs, _, _ = runner.run(source)
    assert len(outputs) == 1
    (shown,) = outputs
    assert shown["output_type"] == "display_data"
    assert shown["data"]["text/html"] == "<b>bold</b>"
    assert "text/plain" in shown["data"]
    assert shown["metadata"] == {} and "execution_count" not in shown


def test_an_exception_gives_an_error_output_and_a_failed_cell(runner):
    """A raised exception is an error output with its name, value and traceback, after the
    text printed before it, and the cell is reported as failed."""
    outputs, _, failed = runner.run("print('before')\nraise ValueError('bad value')\nprint('no')")
    assert failed is True
    assert outputs[0] == _stream("stdout", "before\n")
    error = outputs[1]
    assert (error["output_type"], error["ename"], error["evalue"]) == (
        "error",
        "ValueError",
        "bad value",
    )
    assert error["traceback"] and all(isinstance(line, str) for line in error["traceback"])
    assert len(outputs) == 2


def test_a_cells_frames_have_no_module_without_a_scan_of_every_module(runner, monkeypatch):
    """inspect.getmodule answers None for a cell's frame and code, as its full scan would,
    without walking sys.modules (a module added now is not looked at); anything else is still
    found as before."""
    import inspect
    import json

    runner.run("import sys\nframe = sys._getframe()\ndef defined_here(): pass")
    frame, defined = runner.shell.user_ns["frame"], runner.shell.user_ns["defined_here"]
    unseen = type(sys)("added_after")
    unseen.__file__ = "/nowhere/added_after.py"
    monkeypatch.setitem(sys.modules, "added_after", unseen)
    assert inspect.getmodule(frame) is None
    assert inspect.getmodule(frame.f_code) is None
    assert "/nowhere/added_after.py" not in inspect.modulesbyfile
    assert inspect.getmodule(defined) is sys.modules["__main__"]
    assert inspect.getmodule(json.dumps) is json
    assert inspect.getmodule(compile("1", "/nowhere/else.py", "eval")) is None
    assert "/nowhere/added_after.py" in inspect.modulesbyfile  # code from elsewhere: scanned


def test_a_syntax_error_fails_the_cell_before_anything_runs(runner):
    """A cell that does not compile gives one SyntaxError output and runs none of its lines."""
    outputs, _, failed = runner.run("print('never')\ndef broken(:\n    pass")
    assert failed is True
    assert [(o["output_type"], o.get("ename")) for o in outputs] == [("error", "SyntaxError")]


def test_output_up_to_the_limit_is_kept_without_a_notice(limited):
    """Text whose size plus the per-output overhead is exactly the limit is kept whole."""
    text = "x" * (LIMIT - OUTPUT_OVERHEAD - 1)  # print adds the newline
    outputs, _, failed = limited.run(f"print({text!r})")
    assert outputs == [_stream("stdout", text + "\n")]
    assert limited.outputs.truncated is False and failed is False


def test_output_one_byte_over_the_limit_is_cut_and_the_notice_appended(limited):
    """One byte more is dropped, and the grader's notice on stderr says the output was cut."""
    text = "x" * (LIMIT - OUTPUT_OVERHEAD)
    outputs, _, failed = limited.run(f"print({text!r})")
    assert outputs == [_notice(LIMIT)]
    assert limited.outputs.truncated is True and failed is False


def test_text_merged_past_the_limit_is_cut_after_what_fitted(limited):
    """Stream text that would grow an earlier output past the limit is dropped; the part that
    fitted stays, and the notice follows it."""
    source = "import sys\nprint('a' * 50)\nsys.stdout.flush()\nprint('b' * 200)"
    outputs, _, _ = limited.run(source)
    assert outputs == [_stream("stdout", "a" * 50 + "\n"), _notice(LIMIT)]


def test_each_cell_has_an_output_limit_of_its_own(limited):
    """After a cell that went over the limit, a small cell's output is kept with no notice."""
    assert limited.run("print('y' * 1000)")[0][-1] == _notice(LIMIT)
    assert limited.run("print('small')")[0] == [_stream("stdout", "small\n")]


def test_a_cell_with_max_outputs_displays_keeps_them_all(runner):
    """Exactly MAX_OUTPUTS displays are all kept, with no notice."""
    source = f"from IPython.display import display\nfor i in range({MAX_OUTPUTS}): display(i)"
    outputs, _, _ = runner.run(source)
    assert [o["data"]["text/plain"] for o in outputs] == [str(i) for i in range(MAX_OUTPUTS)]
    assert runner.outputs.truncated is False


def test_displays_past_max_outputs_are_dropped_and_the_notice_is_last(runner):
    """Displays after the first MAX_OUTPUTS are dropped, and the last output is the notice."""
    source = f"from IPython.display import display\nfor i in range({MAX_OUTPUTS + 5}): display(i)"
    outputs, _, _ = runner.run(source)
    shown = [o["data"]["text/plain"] for o in outputs if o["output_type"] == "display_data"]
    assert shown == [str(i) for i in range(len(shown))] and len(shown) <= MAX_OUTPUTS
    assert outputs[-1] == _notice(runner.output_limit)
    assert runner.outputs.truncated is True


def test_the_notice_of_a_flooded_cell_survives_the_grading_sides_output_cut(runner):
    """A cell over MAX_OUTPUTS returns at most MAX_OUTPUTS outputs, so that the grading side
    (which keeps only the first MAX_OUTPUTS) still shows the grader's notice."""
    source = f"from IPython.display import display\nfor i in range({MAX_OUTPUTS + 5}): display(i)"
    outputs, _, _ = runner.run(source)
    assert len(outputs) <= MAX_OUTPUTS, f"{len(outputs)} outputs, over MAX_OUTPUTS"
    kept = well_formed_outputs(outputs)
    assert kept[-1]["output_type"] == "stream" and "output cut by the grader" in kept[-1]["text"]


def test_clear_output_removes_the_outputs_shown_before_it(runner):
    """clear_output() drops the cell's earlier outputs; what comes after it is kept."""
    source = (
        "from IPython.display import clear_output, display\n"
        "display('old')\n"
        "clear_output()\n"
        "display('new')\n"
    )
    outputs, _, _ = runner.run(source)
    assert [o["data"]["text/plain"] for o in outputs] == ["'new'"]


def test_clear_output_also_clears_text_printed_just_before_it(runner):
    """Text printed before clear_output() is cleared too: ipykernel flushes the streams first."""
    source = (
        "from IPython.display import clear_output\nprint('old')\nclear_output()\nprint('new')\n"
    )
    outputs, _, _ = runner.run(source)
    assert outputs == [_stream("stdout", "new\n")]


def test_a_frames_highlighting_is_stack_datas_own():
    """The lexer compiled once marks and colours a frame's scope exactly as stack_data's
    lexer made anew for each frame does."""
    import stack_data
    import stack_data.utils
    from IPython.utils.PyColorize import theme_table
    from pygments.formatters.terminal256 import Terminal256Formatter

    code = "def f(x):\n    y = x * 2  # twice\n    return g(y) + 'text'\n"
    style = stack_data.style_with_executing_node(
        theme_table["linux"].as_pygments_style(), "bg:ansiyellow"
    )
    formatter = Terminal256Formatter(style=style)
    for ranges in ([], [(34, 38)], [(0, 3), (45, 49)]):
        ours = tracebacks._pygmented_with_ranges(formatter, code, ranges)
        assert ours == stack_data.utils._pygmented_with_ranges(formatter, code, ranges)
    assert "\x1b[" in "".join(ours)  # coloured, and the marked ranges with it


def test_a_scope_highlighted_once_is_not_lexed_again(monkeypatch):
    """The same scope and marked range (a lesson's teaching error, in every fork) is lexed
    once; the lines are stack_data's own each time, and a caller changing them changes no
    later answer."""
    import stack_data
    import stack_data.utils
    from pygments.formatters.terminal256 import Terminal256Formatter
    from pygments.styles.default import DefaultStyle

    formatter = Terminal256Formatter(
        style=stack_data.style_with_executing_node(DefaultStyle, "bg:ansiyellow")
    )
    lexed = []
    lexing = tracebacks._MarkedLexer.get_tokens

    def counted(self, text, unfiltered=False):
        lexed.append(text)
        return lexing(self, text, unfiltered)

    monkeypatch.setattr(tracebacks._MarkedLexer, "get_tokens", counted)
    code = "def halve_once_more(x):\n    return x / 0  # lexed once\n"
    first = tracebacks._pygmented_with_ranges(formatter, code, [(35, 40)])
    first.append("changed by the caller")
    again = tracebacks._pygmented_with_ranges(formatter, code, [(35, 40)])
    assert again == stack_data.utils._pygmented_with_ranges(formatter, code, [(35, 40)])
    other = tracebacks._pygmented_with_ranges(formatter, code, [(28, 40)])
    assert other != again and len(lexed) == 2  # a new range is lexed; the same one is not


def test_one_traceback_formatter_serves_every_error_of_a_style():
    """IPython asks for a style and a formatter per error: the same ones come back each time
    (two errors, one formatter); other requests, and subclasses, get a formatter of their own."""
    import stack_data
    from pygments.formatters import terminal256
    from pygments.styles.default import DefaultStyle

    tracebacks.install()  # as each CellRunner does

    style = stack_data.style_with_executing_node(DefaultStyle, "bg:ansiyellow")
    assert style is stack_data.style_with_executing_node(DefaultStyle, "bg:ansiyellow")
    first = terminal256.Terminal256Formatter(style=style)
    assert first is terminal256.Terminal256Formatter(style=style)
    numbered = terminal256.Terminal256Formatter(style=style, linenos=True)
    assert numbered is not first and numbered.linenos and not first.linenos

    class Extended(terminal256.Terminal256Formatter):  # a student's own, say
        pass

    own = Extended(style=style)
    assert own is not Extended(style=style) and isinstance(own, terminal256.Terminal256Formatter)


def test_two_errors_in_a_row_are_formatted_alike(runner):
    """The reused formatter keeps nothing of one error for the next."""
    import re

    source = "def f(x):\n    return x / 0\nf(1)"
    first, second = (
        [re.sub(r"In\[\d+\]", "In[n]", line) for line in runner.run(source)[0][0]["traceback"]]
        for _ in range(2)
    )
    assert first == second and len(first) > 2
    assert "ZeroDivisionError" in first[-1] and "\x1b[" in first[1]


def _values_and_compiles(runner, sources: list[str]) -> tuple[list, int]:
    """The plain-text values the cells show, and how often a cell's code was parsed or
    compiled while they ran."""
    import builtins

    compiled = []
    real = builtins.compile

    def counting(source, filename, *args, **kwargs):
        if "ipykernel_" in str(filename):
            compiled.append(filename)
        return real(source, filename, *args, **kwargs)

    builtins.compile = counting
    try:
        outputs = [runner.run(source)[0] for source in sources]
    finally:
        builtins.compile = real
    values = [[o["data"]["text/plain"] for o in out if "data" in o] for out in outputs]
    return values, len(compiled)


def test_a_cell_worked_out_in_the_warm_process_is_not_compiled_againin_a_fork(runner):
    known = "def twice_over(x):\n    return 2 * x\n\ntwice_over(21)"
    flags = runner.shell.compile.flags
    runner.remember([known])
    assert runner.shell.compile.flags == flags
    assert in_a_fork(lambda: _values_and_compiles(runner, [known])) == [[["42"]], 0]
    unknown = "twice_over(4)"  # defined in the fork: its own cell is parsed and compiled
    values, compiled = in_a_fork(lambda: _values_and_compiles(runner, [known, unknown]))
    assert values == [["42"], ["8"]] and compiled == 2


def test_a_future_import_in_a_remembered_cell_still_takes_effect(runner):
    future = "from __future__ import annotations"
    flags = runner.shell.compile.flags
    runner.remember([future])
    assert runner.shell.compile.flags == flags  # the warm process's own cells are unaffected
    annotated = "def shaped(x: no_such_name) -> None:\n    pass\n\nshaped.__annotations__"
    values, _ = in_a_fork(lambda: _values_and_compiles(runner, [future, annotated]))
    assert values == [[], ["{'x': 'no_such_name', 'return': 'None'}"]]


def test_an_ast_transformer_changes_what_it_runs_and_not_what_is_remembered(runner):
    import ast

    class Tenfold(ast.NodeTransformer):
        def visit_Constant(self, node):
            node.value = node.value * 10 if isinstance(node.value, int) else node.value
            return node

    def work():
        shell = runner.shell
        before, _ = _values_and_compiles(runner, ["3 + 4"])
        shell.ast_transformers.append(Tenfold())
        during, _ = _values_and_compiles(runner, ["3 + 4"])
        shell.ast_transformers.clear()
        after, compiled = _values_and_compiles(runner, ["3 + 4"])
        return before + during + after, compiled

    assert in_a_fork(work) == [[["7"], ["70"], ["7"]], 0]


def test_showing_the_last_assignment_adds_nothing_to_a_remembered_cell(runner):
    """IPython adds an expression to a cell's statements to show its last assignment: the cell
    run again without that setting shows nothing, as in a kernel."""

    def work():
        runner.shell.ast_node_interactivity = "last_expr_or_assign"
        shown = _values_and_compiles(runner, ["seven = 7", "seven = 7"])[0]
        runner.shell.ast_node_interactivity = "last_expr"
        return shown + _values_and_compiles(runner, ["seven = 7"])[0]

    assert in_a_fork(work) == [["7"], ["7"], []]


def test_importing_the_runner_patches_nothing_and_installing_twice_changes_nothing():
    """stack_data, pygments and ipykernel are patched by a CellRunner, not by an import; the
    patches are made once however many runners there are."""
    import subprocess

    check = """
import stack_data, stack_data.core
from ipykernel import compiler
from pygments.formatters import terminal256
before = (stack_data.core._pygmented_with_ranges, stack_data.style_with_executing_node,
          terminal256.Terminal256Formatter, compiler.murmur2_x86)
import grader.sandbox.inside.cell_runner
from grader.sandbox.inside import remembering_compiler, tracebacks
now = (stack_data.core._pygmented_with_ranges, stack_data.style_with_executing_node,
       terminal256.Terminal256Formatter, compiler.murmur2_x86)
assert now == before, now
tracebacks.install(); remembering_compiler.install()
once = (stack_data.core._pygmented_with_ranges, stack_data.style_with_executing_node,
        terminal256.Terminal256Formatter, compiler.murmur2_x86)
tracebacks.install(); remembering_compiler.install()
twice = (stack_data.core._pygmented_with_ranges, stack_data.style_with_executing_node,
         terminal256.Terminal256Formatter, compiler.murmur2_x86)
assert all(a is not b for a, b in zip(before, once)) and once == twice
assert terminal256.Terminal256Formatter is tracebacks._ReusedTerminal256Formatter
"""
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_kits_modules_that_cells_import_are_imported_ahead_and_no_other(
    runner, tmp_path, monkeypatch
):
    """The template imports the `grader` modules its lessons' test cells and probes import (a
    fork would compile each again), and nothing else those cells name, e.g. a course's own
    helper module beside an assignment."""
    (tmp_path / "course_helper_module.py").write_text("raise SystemExit('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "grader.lesson_checks.lesson_11", raising=False)
    runner.import_kit_modules(
        [
            "import course_helper_module",
            "%matplotlib inline\ndef probe():\n    from grader.lesson_checks.lesson_11 import Node",
            "not python (",
        ]
    )
    assert "grader.lesson_checks.lesson_11" in sys.modules
    assert "course_helper_module" not in sys.modules
