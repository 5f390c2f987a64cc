"""An alarm: a signal handler that runs after some seconds, in the main thread."""

import contextlib
import signal


@contextlib.contextmanager
def alarm_after(seconds: float, handler):
    """Run `handler` (a signal handler) if the block is still running after `seconds`."""
    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
