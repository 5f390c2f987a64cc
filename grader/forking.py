"""Making the forks of a warm process cheap: it forks a child per submission or seed.

A full garbage collection in a child visits every object the parent made (some 50 MiB after
importing torch) and writes to each one's header, so the child copies every page of them.
Objects frozen before the fork (`gc.freeze`) are never visited.

Forking a process copies a page-table entry for each 4 KiB page of its memory, and its exit
tears them down: some 20 ms for a warm process of 250 MiB. Backed by huge pages
(`MADV_COLLAPSE`), the same memory takes one entry per 2 MiB, until a process writes to one:
then that process alone maps it by 4 KiB pages again. The sandbox template and the reference
server back their memory so once before their first fork (about 0.5 s each). Their lesson
processes write across their memory as they run their first cells, so collapsing there too
gained nothing and made each of their copies private (peak memory 1.6 GB instead of 1.0).
A full collection also visits every object the process holds, frozen ones aside: importing
torch and its tracing modules set off four of them in the grading process and five in the sandbox
template (0.6-0.9 s of CPU before the first notebook), and a grading process that had not frozen
what it imported spent 0.3-0.7 s in each one it met while grading. Imports and warming up run
with the collector paused (`collector_paused`), then everything alive is frozen.
"""

import contextlib
import ctypes
import gc

MADV_COLLAPSE = 25  # Linux 6.1; older kernels refuse it (EINVAL) and nothing changes
HUGE_PAGE = 2 * 1024**2


def prepare_to_fork() -> None:
    """Collect the garbage, then freeze every object left, for the forks that follow and this
    process's own collections."""
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def collector_paused():
    """Run the block (imports, warming up: what it makes lives as long as the process) with the
    cyclic garbage collector off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def back_with_huge_pages() -> int:
    """Back this process's private writable memory (heap and anonymous mappings) with huge
    pages where the kernel can; the bytes it collapsed. Memory allocated later is left as it
    comes (the regions are not marked for huge pages)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    collapsed = 0
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    for fields in regions:
        perms, path = fields[1], fields[5] if len(fields) > 5 else ""
        if not perms.startswith("rw") or perms[3] != "p" or path not in ("", "[heap]"):
            continue
        low, high = (int(end, 16) for end in fields[0].split("-"))
        start = -(-low // HUGE_PAGE) * HUGE_PAGE
        length = (high - start) // HUGE_PAGE * HUGE_PAGE
        if length > 0 and libc.madvise(start, length, MADV_COLLAPSE) == 0:
            collapsed += length
    return collapsed
