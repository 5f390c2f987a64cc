"""Runs inside the sandbox, in the template and its forks (and, trusted, in the reference server's
processes): run notebook cells in this process the way an IPython kernel does, collecting
nbformat outputs.

The engine forks a warm process per submission and runs its cells here: outputs, errors and
figures come out as a Jupyter kernel would send them (execute_result, display_data, stream,
error with its traceback), without starting a kernel and re-importing torch each time.
"""

import __future__

import ast
import contextlib
import copy
import functools
import inspect
import os
import sys

import pygments
import stack_data
import stack_data.core
from ipykernel import compiler
from ipykernel.compiler import XCachingCompiler
from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell
from pygments.formatters import terminal256
from pygments.lexers.python import PythonLexer
from traitlets.config import Config

from grader.sandbox.wire import MAX_OUTPUTS

OUTPUT_OVERHEAD = 64  # bytes an output costs however little it holds
REMEMBERED_TREES = 10_000  # cell sources whose syntax tree a process keeps
FUTURE_FLAGS = [getattr(__future__, name).compiler_flag for name in __future__.all_feature_names]


class _Outputs:
    """The outputs of the cell being run, merged as a notebook client merges kernel messages."""

    def __init__(self, limit: int):
        self.items: list[dict] = []
        self.size = 0
        self.limit = limit
        self.truncated = False

    def add(self, output: dict, size: int) -> None:
        self.size += size + OUTPUT_OVERHEAD
        if self.size > self.limit or len(self.items) >= MAX_OUTPUTS:
            self.truncated = True
            return
        self.items.append(output)

    def stream(self, name: str, text: str) -> None:
        last = self.items[-1] if self.items else None
        if not (last and last["output_type"] == "stream" and last["name"] == name):
            self.add({"output_type": "stream", "name": name, "text": text}, len(text))
            return
        self.size += len(text)
        if self.size > self.limit:
            self.truncated = True
            return
        last["text"] += text


class _Stream:
    """sys.stdout / sys.stderr replacement that buffers text as ipykernel's OutStream does.

    A kernel sends each stream's buffer when it flushes: before a display, a result or an
    error, and at the end of the cell (stdout first), so its outputs group the same way.
    """

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, runner: "CellRunner", name: str):
        self.runner, self.name, self.buffer = runner, name, []

    def write(self, text) -> int:
        text = str(text)
        self.buffer.append(text)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        """Record what is buffered as a stream output."""
        text, self.buffer = "".join(self.buffer), []
        if text:
            self.runner.outputs.stream(self.name, text)

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("this stream has no file descriptor")


class _DisplayHook(DisplayHook):
    """Records a cell's value as execute_result, as ipykernel's display hook does."""

    runner: "CellRunner"

    def write_output_prompt(self):
        """No prompt: the value is recorded, not printed."""

    def write_format_data(self, format_dict, md_dict=None):
        """Record the formatted value."""
        self.runner.flush_streams()
        self.runner.outputs.add(
            {
                "output_type": "execute_result",
                "data": format_dict,
                "metadata": md_dict or {},
                "execution_count": self.prompt_count,
            },
            sum(len(str(v)) for v in format_dict.values()),
        )


class _DisplayPublisher(DisplayPublisher):
    """Records display() calls (and inline figures) as display_data."""

    runner: "CellRunner"

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kw):
        """Record one display."""
        self.runner.flush_streams()
        self.runner.outputs.add(
            {"output_type": "display_data", "data": data, "metadata": metadata or {}},
            sum(len(str(v)) for v in data.values()),
        )

    def clear_output(self, wait=False):
        """Clear the outputs recorded so far for this cell, text still buffered included (a
        kernel flushes its streams before it sends clear_output)."""
        self.runner.flush_streams()
        self.runner.outputs.items.clear()


class _RememberingCompiler(XCachingCompiler):
    """ipykernel's compiler, remembering the syntax tree it parsed from each cell source and the
    code it compiled from each statement of such a tree: every submission's fork runs the same
    lesson and test cells, and parsing and compiling them again took a fifth of a submission's
    own time. A fork inherits what its warm parent remembered (instructor code only); what it
    remembers itself dies with it.

    ipykernel names a cell's file after a hash of its source, in a folder named after the
    process id; here the folder is the warm process's, so that a fork's cells keep the file
    names their remembered code carries (tracebacks show "Cell In[n]" either way).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._folder = compiler.get_tmp_directory()
        self._trees: dict[tuple, ast.Module] = {}
        self._statements: dict[int, ast.stmt] = {}  # kept, so that their ids stay theirs
        self._codes: dict[tuple, object] = {}

    def get_code_name(self, raw_code, code, number):
        """ipykernel's file name for the cell, in the warm process's folder."""
        name = os.environ.get("IPYKERNEL_CELL_NAME")
        if name is None:
            digest = compiler.murmur2_x86(raw_code, compiler.get_tmp_hash_seed())
            name = f"{self._folder}{os.sep}{digest}.py"
        return name

    def ast_parse(self, source: str, filename: str = "<unknown>", symbol: str = "exec"):
        """The cell's syntax tree, parsed once per source, file and flags. The tree returned
        is a new module around the remembered statements: IPython may add to its body."""
        key = (source, filename, symbol, self.flags)
        tree = self._trees.get(key)
        if tree is None:
            tree = super().ast_parse(source, filename, symbol)
            if not isinstance(tree, ast.Module) or len(self._trees) >= REMEMBERED_TREES:
                return tree
            self._trees[key] = tree
            self._statements.update((id(node), node) for node in tree.body)
        return ast.Module(list(tree.body), list(tree.type_ignores))

    def __call__(self, source, filename, symbol, **kwargs):
        """The code of one statement of a remembered tree, compiled once per mode, file and
        flags (and the __future__ features it uses turned on, as compiling it does)."""
        body = getattr(source, "body", None)
        statement = body[0] if type(body) is list and len(body) == 1 else None
        if kwargs or statement is None or self._statements.get(id(statement)) is not statement:
            return super().__call__(source, filename, symbol, **kwargs)
        key = (id(statement), type(source), filename, symbol, self.flags)
        code = self._codes.get(key)
        if code is None:
            code = self._codes[key] = super().__call__(source, filename, symbol)
        for flag in FUTURE_FLAGS:
            if code.co_flags & flag:
                self.flags |= flag
        return code

    def compile_ahead(self, source: str, filename: str, autoawait: bool) -> None:
        """Parse and compile a cell's statements as IPython will when it runs the cell (by
        default, its last statement alone as "single" if it is an expression), leaving the
        compiler's flags as they were."""
        flags = self.flags
        try:
            body = self.ast_parse(source, filename).body
            with self.extra_flags(ast.PyCF_ALLOW_TOP_LEVEL_AWAIT if autoawait else 0):
                for index, node in enumerate(body):
                    single = index == len(body) - 1 and isinstance(node, ast.Expr)
                    mod = ast.Interactive([node]) if single else ast.Module([node], [])
                    self(mod, filename, "single" if single else "exec")
        finally:
            self.flags = flags


class _Shell(InteractiveShell):
    """A kernel-less shell: the inline matplotlib backend needs no GUI event loop.

    It remembers what it worked out from a cell's source alone (IPython's transform, and whether
    the cell awaits): every submission's fork runs the same lesson and test cells, and
    tokenizing a cell line by line cost about a millisecond each time. A fork inherits what its
    warm parent remembered; what it remembers itself dies with it.
    """

    def __init__(self, **kwargs):
        self._transformed: dict[tuple, str] = {}
        self._awaits: dict[str, bool] = {}
        super().__init__(**kwargs)

    def transform_cell(self, raw_cell: str) -> str:
        """IPython's transform, remembered for this source and these transformers (a cell may
        register transformers of its own)."""
        manager = self.input_transformer_manager
        key = (
            raw_cell,
            tuple(manager.cleanup_transforms),
            tuple(manager.line_transforms),
            tuple(manager.token_transformers),
            tuple(self.input_transformers_post),
        )
        if key not in self._transformed:
            self._transformed[key] = super().transform_cell(raw_cell)
        return self._transformed[key]

    def should_run_async(self, raw_cell, *, transformed_cell=None, preprocessing_exc_tuple=None):
        """IPython's answer (it compiles the cell to find out), remembered per transformed cell."""
        if preprocessing_exc_tuple is not None or transformed_cell is None:
            return super().should_run_async(
                raw_cell,
                transformed_cell=transformed_cell,
                preprocessing_exc_tuple=preprocessing_exc_tuple,
            )
        if transformed_cell not in self._awaits:
            self._awaits[transformed_cell] = super().should_run_async(
                raw_cell, transformed_cell=transformed_cell
            )
        return self._awaits[transformed_cell]

    def transform_ast(self, node):
        """IPython's AST transformers (none unless a cell adds one) work on a copy: the
        remembered statements stay as parsed."""
        if self.ast_transformers:
            node = copy.deepcopy(node)
        return super().transform_ast(node)

    def enable_gui(self, gui=None):
        """Inline figures need no event loop."""

    def _format_exception_for_storage(self, exception, filename=None, running_compiled_code=False):
        """What the history keeps of an error, without formatting its traceback a second time
        (the error output has it already; formatting one costs tens of ms)."""
        return {"ename": type(exception).__name__, "evalue": str(exception), "traceback": []}


class _MarkedLexer(PythonLexer):
    """Python highlighting with the tokens that start inside `ranges` marked as the executing
    node's, as stack_data's own lexer does. stack_data makes that lexer a new class for every
    frame of a traceback, and pygments compiles a class's token rules on its first use: about
    10 ms per frame. This class is compiled once (in the warm process, for every fork)."""

    def __init__(self, ranges, **options):
        self.ranges = ranges
        super().__init__(**options)

    def get_tokens(self, text, unfiltered=False):
        """The tokens, marked where they start inside a range."""
        length = 0
        for ttype, value in super().get_tokens(text, unfiltered):
            if any(start <= length < end for start, end in self.ranges):
                ttype = ttype.ExecutingNode
            length += len(value)
            yield ttype, value


def _pygmented_with_ranges(formatter, code, ranges):
    """stack_data's highlighting of a frame's scope, line by line, with `_MarkedLexer`. The
    same scope, range and formatter always give the same lines, so they are remembered: the
    lesson's teaching errors are highlighted once, in the warm process, for every fork (a
    tenth of a submission's own time went to lexing the same torch and lesson code again)."""
    return list(_highlighted(formatter, code, tuple(map(tuple, ranges))))


@functools.lru_cache(maxsize=1024)
def _highlighted(formatter, code: str, ranges: tuple) -> tuple[str, ...]:
    try:
        highlighted = pygments.highlight(code, _MarkedLexer(ranges, stripnl=False), formatter)
    except Exception:  # noqa: BLE001 -- as stack_data does: plain code rather than no traceback
        highlighted = code
    return tuple(highlighted.splitlines())


class _ReusedTerminal256Formatter(terminal256.Terminal256Formatter):
    """pygments' 256-colour terminal formatter, made once per style when a style is all it is
    given: IPython makes a new style class and formatter for every error it formats, about 8 ms
    each time, though the style never changes. A formatter keeps no state between the codes it
    formats. It stays a class, for code that checks or extends it."""

    _made: dict = {}

    @classmethod
    def _kept_as(cls, options: dict):
        """The style this formatter is kept for, or None: only plain requests are kept."""
        style = options.get("style")
        plain = cls is _ReusedTerminal256Formatter and set(options) == {"style"}
        return style if plain and isinstance(style, type) else None

    def __new__(cls, **options):
        kept = cls._made.get(cls._kept_as(options))
        return kept if kept is not None else super().__new__(cls)

    def __init__(self, **options):
        if vars(self):
            return  # made before, for this style
        super().__init__(**options)
        if self._kept_as(options) is not None:
            self._made[options["style"]] = self


def _skip_module_scan_for_cells(cell_files: dict) -> None:
    """Make `inspect.getmodule` answer at once for a frame, code object or traceback of a
    notebook cell, as it would after scanning every loaded module for the cell's file: None.

    IPython calls it several times per frame when it formats an error, and each call walks all
    of sys.modules (thousands of modules with torch loaded), touching every one of them: in a
    fresh fork that cost tens of milliseconds per error cell. No module is loaded from a cell's
    file, so skipping the scan for those files changes no result.
    """
    scanning = inspect.getmodule

    def getmodule(object, _filename=None):
        if not (hasattr(object, "__module__") or hasattr(object, "__name__")):
            try:
                file = _filename or inspect.getfile(object)
            except TypeError:
                file = None
            if file in cell_files and file not in inspect.modulesbyfile:
                return None
        return scanning(object, _filename)

    inspect.getmodule = getmodule


# ipykernel names a cell's file after a hash of its source computed in pure Python, about half
# a millisecond per cell: the same source always has the same hash.
compiler.murmur2_x86 = functools.lru_cache(maxsize=None)(compiler.murmur2_x86)
stack_data.core._pygmented_with_ranges = _pygmented_with_ranges
# IPython makes its traceback style with this for every error, from the same two arguments.
stack_data.style_with_executing_node = functools.lru_cache(maxsize=8)(
    stack_data.style_with_executing_node
)
terminal256.Terminal256Formatter = _ReusedTerminal256Formatter


class CellRunner:
    """An IPython shell whose cell outputs are recorded in nbformat form."""

    def __init__(self, output_limit: int = 4_000_000):
        self.output_limit = output_limit
        self.outputs = _Outputs(output_limit)
        # No history database: forks would share one file and print "Session/line number was
        # not unique" into the first cell's output.
        config = Config({"HistoryManager": {"enabled": False}})
        self.shell = _Shell.instance(
            compiler_class=_RememberingCompiler, colors="neutral", config=config
        )
        hook = _DisplayHook(shell=self.shell, cache_size=1000)
        hook.runner = self
        self.shell.displayhook = hook
        self.shell.display_trap.hook = hook
        publisher = _DisplayPublisher(shell=self.shell)
        publisher.runner = self
        self.shell.display_pub = publisher
        self.shell._showtraceback = self._record_error
        self.shell.enable_matplotlib("inline")
        _skip_module_scan_for_cells(self.shell.compile._filename_map)

    def warm_up(self, sources: list[str]) -> None:
        """Run cells once so that their imports and first calls are paid before forking, then
        forget them: no variable, figure or execution count is left.

        Only instructor code may come here (the released lessons' cells): every fork inherits
        this process's memory.
        """
        for source in sources:
            self.run(source)
        import matplotlib.pyplot as plt

        plt.close("all")
        self.shell.reset(new_session=False)
        self.shell.execution_count = 1

    def remember(self, sources: list[str]) -> None:
        """Work out now, without running them, what running these cells needs from their source
        alone (transform, file name, syntax tree and code), so that every fork finds it done.

        Only instructor code may come here, as for `warm_up`.
        """
        for source in sources:
            try:
                transformed = self.shell.transform_cell(source)
            except Exception:  # noqa: BLE001 -- run_cell reports it when the cell is run
                continue
            self.shell.should_run_async(source, transformed_cell=transformed)
            name = self.shell.compile.get_code_name(source, transformed, 0)
            with contextlib.suppress(Exception):  # a cell that does not compile fails when run
                self.shell.compile.compile_ahead(transformed, name, self.shell.autoawait)

    def flush_streams(self) -> None:
        """Send the buffered stdout, then stderr, as a kernel does."""
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, _Stream):
                stream.flush()

    def _record_error(self, etype, evalue, stb):
        self.flush_streams()
        self.outputs.add(
            {
                "output_type": "error",
                "ename": str(etype.__name__),
                "evalue": str(evalue),
                "traceback": stb,
            },
            sum(len(line) for line in stb),
        )

    def run(self, source: str) -> tuple[list[dict], int | None, bool]:
        """Run one cell; return its outputs, its execution count, and whether it raised."""
        self.outputs = _Outputs(self.output_limit)
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Stream(self, "stdout"), _Stream(self, "stderr")
        try:
            result = self.shell.run_cell(source, store_history=True)
        finally:
            self.flush_streams()
            sys.stdout, sys.stderr = saved
        failed = result.error_before_exec is not None or result.error_in_exec is not None
        if self.outputs.truncated:
            del self.outputs.items[MAX_OUTPUTS - 1 :]  # the notice is one of the MAX_OUTPUTS
            self.outputs.items.append(
                {
                    "output_type": "stream",
                    "name": "stderr",
                    "text": "[output cut by the grader: over "
                    f"{self.output_limit} bytes or {MAX_OUTPUTS} outputs]\n",
                }
            )
        return self.outputs.items, result.execution_count, failed
