"""Making the forks of a warm process cheap: it forks a child per submission or seed.

Two costs of a fork grow with the parent's memory, not with what the child does:

- **Page tables.** A fork copies one page-table entry per 4 KiB page of the parent's private
  memory, and the child's exit drops them all again: for a process that imported torch
  (~300 MiB) that is most of the cost of a fork. Backed by 2 MiB pages, the same memory takes
  512 times fewer entries. The kernel collapses a range on request (`MADV_COLLAPSE`, Linux
  6.1); a child that writes to a huge page still copies only the 4 KiB it writes to.
- **The garbage collector.** A full collection in a child visits, and so writes to and copies,
  every object the parent made (some 50 MiB after importing torch). Frozen objects are not
  visited (`gc.freeze`).
"""

import ctypes
import gc
from dataclasses import dataclass

MADV_COLLAPSE = 25
HUGE = 2 * 1024**2
DENSE = 0.5  # a mapping is collapsed only if at least this share of it is in memory already

_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def prepare_to_fork(huge_pages: bool = False) -> None:
    """Freeze the objects made so far, after collecting garbage, and with `huge_pages` back the
    process's memory with huge pages. Only a process whose memory no other process shares yet
    should collapse it: collapsing copies what is shared."""
    gc.collect()
    gc.freeze()
    if huge_pages:
        collapse_memory()


@dataclass(frozen=True)
class Mapping:
    """A private, writable, anonymous mapping of this process (the heap, or malloc's mmaps)."""

    start: int
    end: int
    resident: int  # bytes in memory
    no_huge: bool  # marked never to use huge pages (MADV_NOHUGEPAGE)

    def huge_span(self) -> tuple[int, int]:
        """The part of the mapping made of whole huge pages."""
        return -(-self.start // HUGE) * HUGE, self.end // HUGE * HUGE

    def dense(self) -> bool:
        """Whether most of it is in memory (collapsing fills what is not)."""
        return self.resident >= DENSE * (self.end - self.start)


def anonymous_mappings(smaps: str = "/proc/self/smaps") -> list[Mapping]:
    """The process's private writable anonymous mappings, read from `smaps`."""
    mappings, current = [], None
    with open(smaps) as lines:
        for line in lines:
            fields = line.split()
            if not fields[0].endswith(":"):  # a mapping's first line: range, permissions, …
                permissions, name = fields[1], fields[5] if len(fields) > 5 else ""
                current = None
                if permissions in ("rw-p", "rwxp") and name in ("", "[heap]"):
                    start, end = (int(part, 16) for part in fields[0].split("-"))
                    current = {"start": start, "end": end, "resident": 0}
            elif current is not None and fields[0] == "Rss:":
                current["resident"] = int(fields[1]) * 1024
            elif current is not None and fields[0] == "VmFlags:":
                mappings.append(Mapping(**current, no_huge="nh" in fields[1:]))
                current = None
    return mappings


def collapse_memory() -> int:
    """Back the process's dense anonymous memory with huge pages where the kernel can; return
    the bytes collapsed (0 where the kernel cannot, which changes nothing)."""
    collapsed = 0
    for mapping in anonymous_mappings():
        start, end = mapping.huge_span()
        wanted = end > start and mapping.dense() and not mapping.no_huge
        if wanted and _libc.madvise(start, end - start, MADV_COLLAPSE) == 0:
            collapsed += end - start
    return collapsed


def huge_page_bytes(pid: int | str = "self") -> int:
    """Bytes of a process's anonymous memory in huge pages."""
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        for line in rollup:
            if line.startswith("AnonHugePages:"):
                return int(line.split()[1]) * 1024
    return 0
