"""Test processes start their kernels on ports no other test process offers."""

import os

from jupyter_client.connect import LocalPortCache


def test_kernels_here_take_ports_from_this_process_own_slot():
    """The port cache in use is the per-process one, and its ports stay inside one slot."""
    cache = LocalPortCache.instance()
    assert type(cache).__name__ == "ProcessPortCache"  # installed by the root conftest.py
    ports = [cache.find_available_port("127.0.0.1") for _ in range(10)]
    assert len(set(ports)) == 10 and len({_slot(cache, p) for p in ports}) == 1
    assert all(cache.FIRST_PORT <= p < 32768 for p in ports)


def _slot(cache, port: int) -> int:
    return (port - cache.FIRST_PORT) // cache.SLOT_SIZE


def test_a_forked_process_gets_a_slot_of_its_own():
    """A fork (a grading worker) never offers the ports of the process it came from."""
    cache = LocalPortCache.instance()
    mine = _slot(cache, cache.find_available_port("127.0.0.1"))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        port = cache.find_available_port("127.0.0.1")
        os.write(write_end, str(port).encode())
        os._exit(0)
    os.waitpid(pid, 0)
    theirs = _slot(cache, int(os.read(read_end, 20)))
    assert theirs != mine
