"""Runs inside the sandbox, in the template and its forks (and, trusted, in the reference server's
processes): run notebook cells in this process the way an IPython kernel does, collecting
nbformat outputs.

The engine forks a warm process per submission and runs its cells here: outputs, errors and
figures come out as a Jupyter kernel would send them (execute_result, display_data, stream,
error with its traceback), without starting a kernel and re-importing torch each time.
"""

import ast
import contextlib
import copy
import importlib
import sys

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

from grader.sandbox.inside import remembering_compiler, tracebacks
from grader.sandbox.inside.captured_outputs import (
    _DisplayHook,
    _DisplayPublisher,
    _Outputs,
    _Stream,
)
from grader.sandbox.inside.remembering_compiler import _RememberingCompiler
from grader.sandbox.wire import MAX_OUTPUTS


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


class CellRunner:
    """An IPython shell whose cell outputs are recorded in nbformat form."""

    def __init__(self, output_limit: int = 4_000_000):
        remembering_compiler.install()
        tracebacks.install()
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
        tracebacks._skip_module_scan_for_cells(self.shell.compile._filename_map)

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

    def import_kit_modules(self, sources: list[str]) -> None:
        """Import the kit's own modules (`grader.…`) that these cells import: every submission's
        test cells and probes import them, and a fork would compile and run each again (the
        sandbox keeps no bytecode).

        Only instructor code may come here, as for `warm_up`.
        """
        for source in sources:
            with contextlib.suppress(Exception):  # a cell that does not parse imports nothing
                for name in _imported(ast.parse(self.shell.transform_cell(source))):
                    if name.split(".")[0] == "grader":
                        with contextlib.suppress(Exception):  # e.g. a name, not a module
                            importlib.import_module(name)

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


def _imported(tree: ast.AST) -> list[str]:
    """The absolute module names a syntax tree's import statements name (with `from m import x`,
    both m and m.x, which may be a module)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return names
