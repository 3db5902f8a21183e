"""The only code that touches a clock. measure() times a callable: the first call on its own, then warm-up,
then the timed loop. Clocks are injectable so the logic is tested with FakeClock, without sleeping."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable


class HostClock:
    """perf_counter_ns around each call. Right for CPU work, where a call returns when its work is done."""

    name = "perf_counter"

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    def sync(self) -> None:
        """Wait until queued device work is done. Nothing is queued on the host."""

    def recorder(self, iters: int) -> _HostRecorder:
        return _HostRecorder(self.now_ns, iters)


class _HostRecorder:
    __slots__ = ("_now", "_starts", "_ends")

    def __init__(self, now: Callable[[], int], iters: int):
        self._now = now
        self._starts = [0] * iters
        self._ends = [0] * iters

    def start(self, i: int) -> None:
        self._starts[i] = self._now()

    def stop(self, i: int) -> None:
        self._ends[i] = self._now()

    def samples_ns(self, n: int) -> list[int]:
        return [e - s for s, e in zip(self._starts[:n], self._ends[:n])]


class CudaClock(HostClock):
    """A CUDA event pair per iteration (device time, no sync inside the loop); the host clock still gives
    the first call and the wall time of the whole loop, after a synchronize."""

    name = "cuda_events"

    def __init__(self, device):
        import torch

        self._torch = torch
        self._device = device

    def sync(self) -> None:
        self._torch.cuda.synchronize(self._device)

    def recorder(self, iters: int) -> _CudaRecorder:
        return _CudaRecorder(self._torch, iters)


class _CudaRecorder:
    def __init__(self, torch, iters: int):
        self._starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        self._ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]

    def start(self, i: int) -> None:
        self._starts[i].record()

    def stop(self, i: int) -> None:
        self._ends[i].record()

    def samples_ns(self, n: int) -> list[int]:
        # Called after a synchronize; elapsed_time is in milliseconds.
        return [round(s.elapsed_time(e) * 1e6) for s, e in zip(self._starts[:n], self._ends[:n])]


class FakeClock(HostClock):
    """A clock that only moves when told to: the function under test calls advance(ns)."""

    name = "fake"

    def __init__(self, start_ns: int = 0):
        self.t = start_ns

    def now_ns(self) -> int:
        return self.t

    def advance(self, ns: int) -> None:
        self.t += ns


@dataclass
class Measurement:
    first_call_ns: int
    warmup_iters: int
    iters_requested: int
    samples_ns: list[int]
    loop_wall_ns: int  # host wall time of the whole timed loop, synchronized at both ends
    stopped_early: bool  # the max-time budget ended the loop before iters_requested
    recompiles: int | None  # new graphs compiled during the timed loop; None when not tracked


def measure(
    fn: Callable[[], object],
    *,
    iters: int,
    warmup: int,
    clock: HostClock,
    max_time_s: float | None = None,
    graph_count: Callable[[], int] | None = None,
    on_phase: Callable[[str], None] = lambda phase: None,
) -> Measurement:
    """Time fn. The first call is timed alone (for a compiled model it holds the compilation) and never joins
    the steady-state samples. graph_count, when given, is read around the timed loop: any growth is a
    recompile inside it, which the caller must treat as voiding the numbers."""
    now, sync = clock.now_ns, clock.sync

    on_phase("first call")
    sync()
    t0 = now()
    fn()
    sync()
    first_call_ns = now() - t0

    on_phase("warm-up")
    for _ in range(warmup):
        fn()
    sync()

    on_phase("timing")
    graphs_before = graph_count() if graph_count else None
    budget_ns = None if max_time_s is None else int(max_time_s * 1e9)
    rec = clock.recorder(iters)
    n = 0
    loop_start = now()
    while n < iters:
        rec.start(n)
        fn()
        rec.stop(n)
        n += 1
        if budget_ns is not None and now() - loop_start >= budget_ns:
            break
    sync()
    loop_wall_ns = now() - loop_start
    recompiles = graph_count() - graphs_before if graph_count else None
    return Measurement(
        first_call_ns=first_call_ns,
        warmup_iters=warmup,
        iters_requested=iters,
        samples_ns=rec.samples_ns(n),
        loop_wall_ns=loop_wall_ns,
        stopped_early=n < iters,
        recompiles=recompiles,
    )


def measure_interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    iters: int,
    warmup: dict[str, int],
    clock: HostClock,
    block: int = 10,
    max_time_s: float | None = None,
    graph_count: Callable[[], int] | None = None,
    on_phase: Callable[[str], None] = lambda phase: None,
) -> dict[str, Measurement]:
    """Time several callables in one process, alternating blocks of `block` calls, so that drift (clocks,
    temperature, other load) falls on all of them alike. Each first call is timed alone and each is warmed up
    before any timing; the budget max_time_s is per callable. Recompiles are counted over the whole loop."""
    now, sync = clock.now_ns, clock.sync
    first: dict[str, int] = {}
    for name, fn in fns.items():
        on_phase(f"first call ({name})")
        sync()
        t0 = now()
        fn()
        sync()
        first[name] = now() - t0
    for name, fn in fns.items():
        on_phase(f"warm-up ({name})")
        for _ in range(warmup[name]):
            fn()
    sync()

    on_phase("timing (interleaved)")
    graphs_before = graph_count() if graph_count else None
    budget_ns = None if max_time_s is None else int(max_time_s * 1e9) * len(fns)
    recorders = {name: clock.recorder(iters) for name in fns}
    done = dict.fromkeys(fns, 0)
    wall = dict.fromkeys(fns, 0)
    loop_start = now()
    while any(n < iters for n in done.values()):
        if budget_ns is not None and now() - loop_start >= budget_ns:
            break
        for name, fn in fns.items():
            rec, n = recorders[name], done[name]
            sync()
            t0 = now()
            for i in range(n, min(iters, n + block)):
                rec.start(i)
                fn()
                rec.stop(i)
            sync()
            wall[name] += now() - t0
            done[name] = min(iters, n + block)
    recompiles = graph_count() - graphs_before if graph_count else None
    return {
        name: Measurement(
            first_call_ns=first[name],
            warmup_iters=warmup[name],
            iters_requested=iters,
            samples_ns=recorders[name].samples_ns(done[name]),
            loop_wall_ns=wall[name],
            stopped_early=done[name] < iters,
            recompiles=recompiles,
        )
        for name in fns
    }
