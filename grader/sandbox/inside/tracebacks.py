"""Runs inside the sandbox, in the template and its forks (and, trusted, in the reference server's
processes, which use the cell runner too): format an error's traceback as IPython does, without
paying again for what every error costs the same (the highlighting lexer, the style and its
formatter, the highlighted lesson code, the scan of every module for a cell's file).

Importing this module changes nothing; `install()` (called by each `CellRunner`) puts these in
stack_data's and pygments' place, and `_skip_module_scan_for_cells` in `inspect.getmodule`'s.
"""

import functools
import inspect

import pygments
import stack_data
import stack_data.core
from pygments.formatters import terminal256
from pygments.lexers.python import PythonLexer

_installed = False


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


def install() -> None:
    """Make stack_data highlight with `_pygmented_with_ranges`, remember IPython's traceback
    style, and make pygments' 256-colour formatter `_ReusedTerminal256Formatter`. Only the first
    call changes anything."""
    global _installed
    if _installed:
        return
    _installed = True
    stack_data.core._pygmented_with_ranges = _pygmented_with_ranges
    # IPython makes its traceback style with this for every error, from the same two arguments.
    stack_data.style_with_executing_node = functools.lru_cache(maxsize=8)(
        stack_data.style_with_executing_node
    )
    terminal256.Terminal256Formatter = _ReusedTerminal256Formatter
