"""Runs inside the sandbox, in each submission's process: modules are found as in a kernel
started in the submission's folder, the folder first.

The template imported more than a kernel has when its first cell runs (torch, matplotlib, the
grader itself), and Python takes a module it has imported over any file: a helper module of the
assignment named like one of them (`grader.py`) would lose to it, where a kernel imports the
helper. Those are forgotten in the submission's process; the code already holding them keeps
them.
"""

import importlib.machinery
import os
import sys

# What an IPython kernel has imported before its first cell, besides the standard library
# (ipykernel 6): a file of the same name beside the notebook does not replace these in a kernel
# either, and the cell runner is built on them.
KERNEL_PACKAGES = frozenset(
    {
        "IPython", "comm", "dateutil", "debugpy", "ipykernel", "jupyter_client", "jupyter_core",
        "packaging", "platformdirs", "psutil", "pygments", "tornado", "traitlets",
        "typing_extensions", "zmq",
    }
)  # fmt: skip
SUFFIXES = tuple(importlib.machinery.all_suffixes())


def search_folder_first(folder: str) -> None:
    """Put `folder` first on the module search path, and forget the modules imported already
    that a module in it names (but the standard library's and a kernel's own)."""
    sys.path.insert(0, folder)
    shadowed = folder_modules(folder) - KERNEL_PACKAGES - sys.stdlib_module_names
    for name in [name for name in sys.modules if name.partition(".")[0] in shadowed]:
        del sys.modules[name]


def folder_modules(folder: str) -> set[str]:
    """The top-level modules `folder` holds: a module file, or a package with an __init__.
    (A folder without one is a namespace package, which any installed module of its name wins
    over.)"""
    found = set()
    with os.scandir(folder) as entries:
        for entry in entries:
            name = entry.name.partition(".")[0]
            module = entry.is_file() and entry.name.endswith(SUFFIXES)
            package = entry.is_dir() and name == entry.name and _is_package(entry.path)
            if name.isidentifier() and (module or package):
                found.add(name)
    return found


def _is_package(path: str) -> bool:
    return any(os.path.isfile(os.path.join(path, f"__init__{suffix}")) for suffix in SUFFIXES)
