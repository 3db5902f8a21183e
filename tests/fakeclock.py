"""A clock for timing logic under test: it only moves when told to, so no test sleeps or depends on the machine."""

from compilebench.measure.timing import HostClock


class FakeClock(HostClock):
    """A clock that only moves when told to: the function under test calls advance(ns)."""

    name = "fake"

    def __init__(self, start_ns: int = 0):
        self.t = start_ns
        self.cpu = 0  # the calling thread's CPU time: moves only when a call spends it (spend)

    def now_ns(self) -> int:
        return self.t

    def cpu_ns(self) -> int:
        return self.cpu

    def advance(self, ns: int) -> None:
        self.t += ns

    def spend(self, ns: int) -> None:
        """The calling thread's CPU time moves by ns (a launch), the wall clock with it."""
        self.cpu += ns
        self.t += ns
