"""How long each step of grading took: named durations, summed per step, for the benchmark."""

import contextlib
import time


class Timings(dict):
    """step name -> seconds spent in it (a step timed twice adds up)."""

    @contextlib.contextmanager
    def step(self, name: str):
        """Time the block as `name`."""
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def add(self, name: str, seconds: float) -> None:
        """Count `seconds` more for `name`."""
        self[name] = self.get(name, 0.0) + seconds

    @classmethod
    def summed(cls, each: list["Timings"]) -> "Timings":
        """The steps of several, added up."""
        total = cls()
        for timings in each:
            for name, seconds in timings.items():
                total.add(name, seconds)
        return total
