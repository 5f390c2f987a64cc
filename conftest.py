"""Kernels that start every time under pytest-xdist.

Two test workers start Jupyter kernels at the same moment (nbval over the solutions, the stock
nbgrader engine, the wrong-answer runs). jupyter_client picks a kernel's five ports by binding
port 0 and letting go; another process can take the same port before the kernel binds it, and
the kernel dies before replying. Here each test process picks its kernels' ports from a range of
its own, below the kernel's ephemeral range, so no two processes ever offer the same port, and a
kernel that still dies at start (nbval's) is started again.
"""

import fcntl
import itertools
import os
import random
import socket
import tempfile
from pathlib import Path

import pytest
from jupyter_client.connect import LocalPortCache

PORT_SLOTS, SLOT_SIZE, FIRST_PORT = 22, 1000, 10000  # 10000-31999: below 32768, Linux's ephemeral
START_ATTEMPTS = 3


class ProcessPortCache(LocalPortCache):
    """LocalPortCache whose ports come from this process's own slot of ports."""

    FIRST_PORT, SLOT_SIZE = FIRST_PORT, SLOT_SIZE

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._owner, self._ports = None, iter(())

    def find_available_port(self, ip: str) -> int:
        """The next port of this process's slot that is free and not handed out already."""
        if self._owner != os.getpid():  # a fork (a grading worker) gets a slot of its own
            self._owner = os.getpid()
            start = FIRST_PORT + _claim_slot() * SLOT_SIZE
            offset = random.randrange(SLOT_SIZE)
            ring = [start + (offset + i) % SLOT_SIZE for i in range(SLOT_SIZE)]
            self._ports = itertools.cycle(ring)
            self.currently_used_ports = set()
        for _ in range(SLOT_SIZE):
            port = next(self._ports)
            if port not in self.currently_used_ports and _free(ip, port):
                self.currently_used_ports.add(port)
                return port
        return super().find_available_port(ip)


_CLAIMS: list[int] = []  # open lock files: a slot is ours while its lock is held


def _claim_slot() -> int:
    """A slot no other live process holds: its lock file, locked until this process ends."""
    # one folder per user: another user's lock files (root's, on a shared /tmp) are not ours to open
    folder = Path(tempfile.gettempdir()) / f"kernel-port-slots-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    for slot in range(PORT_SLOTS):
        fd = os.open(folder / f"{slot}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _CLAIMS.append(fd)
        return slot
    return random.randrange(PORT_SLOTS)


def _free(ip: str, port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((ip, port))
        except OSError:
            return False
    return True


def _retrying(kernel_class):
    class RetryingKernel(kernel_class):
        """nbval's kernel, started again if it dies before its first reply."""

        def __init__(self, *args, **kwargs):
            for attempt in range(START_ATTEMPTS):
                try:
                    super().__init__(*args, **kwargs)
                    return
                except RuntimeError:
                    if attempt == START_ATTEMPTS - 1:
                        raise

    return RetryingKernel


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    """Install the port slots and nbval's retry before any kernel starts."""
    ProcessPortCache.instance()
    import nbval.plugin

    nbval.plugin.RunningKernel = _retrying(nbval.plugin.RunningKernel)
