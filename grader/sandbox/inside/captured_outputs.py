"""Runs inside the sandbox, in the template and its forks (and, trusted, in the reference server's
processes, which use the cell runner too): capture a cell's outputs as an IPython kernel sends
them (stdout and stderr buffered as ipykernel's streams, the cell's value as execute_result,
display() calls as display_data), merged and cut to a limit as a notebook client keeps them.
"""

from typing import TYPE_CHECKING

from IPython.core.displayhook import DisplayHook
from IPython.core.displaypub import DisplayPublisher

from grader.sandbox.wire import MAX_OUTPUTS

if TYPE_CHECKING:
    from grader.sandbox.inside.cell_runner import CellRunner

OUTPUT_OVERHEAD = 64  # bytes an output costs however little it holds


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
