"""Runs inside the sandbox, in the template and its forks (and, trusted, in the reference server's
processes, which use the cell runner too): ipykernel's cell compiler, remembering what it parsed
and compiled from each cell source, so that every fork finds the lesson's and the tests' cells
compiled by its warm parent.

Importing this module changes nothing; `install()` (called by each `CellRunner`) caches
ipykernel's hash of a cell's source.
"""

import __future__

import ast
import functools
import os

from ipykernel import compiler
from ipykernel.compiler import XCachingCompiler

REMEMBERED_TREES = 10_000  # cell sources whose syntax tree a process keeps
FUTURE_FLAGS = [getattr(__future__, name).compiler_flag for name in __future__.all_feature_names]

_installed = False


def install() -> None:
    """Cache ipykernel's hash of a cell's source, which names the cell's file: it is computed in
    pure Python, about half a millisecond per cell, and the same source always has the same
    hash. Only the first call changes anything."""
    global _installed
    if _installed:
        return
    _installed = True
    compiler.murmur2_x86 = functools.lru_cache(maxsize=None)(compiler.murmur2_x86)


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
