"""A clock for timing logic under test: it only moves when told to, so no test sleeps or depends on the machine."""

from compilebench.measure.timing import HostClock


class FakeClock(HostClock):
    """A clock that only moves when told to: the function under test calls advance(ns)."""

    name = "fake"

    def __init__(self, start_ns: int = 0):
        self.t = start_ns

    def now_ns(self) -> int:
        return self.t

    def advance(self, ns: int) -> None:
        self.t += ns
