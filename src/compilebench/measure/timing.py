"""The only code that times a model's calls (the phases of a worker and of its start are timed beside them, never
inside a loop). measure() times a callable: the first call on its own, then warm-up, then the timed loop. Clocks are
injectable, so the logic is tested with a fake clock (tests/fakeclock.py), without sleeping."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from compilebench.core import sharing
from compilebench.core.conditions import Conditions
from compilebench.measure import compile_pool
from compilebench.measure.conditions import NoWatch, Watch
from compilebench.measure.warmup import WarmUp, after_switch as opening_calls, settled, sm_clock_of, warm_up


class HostClock:
    """perf_counter_ns around each call. Right for CPU work, where a call returns when its work is done."""

    name = "perf_counter"

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    def cpu_ns(self) -> int:
        """The calling thread's CPU time: what its calls cost the host (a GPU model's launches)."""
        return time.thread_time_ns()

    def sync(self) -> None:
        """Wait until queued device work is done. Nothing is queued on the host."""

    def recorder(self, iters: int, sync_each_call: bool = False) -> _HostRecorder:
        return _HostRecorder(self.now_ns, iters, self.sync if sync_each_call else None)


class _HostRecorder:
    """The host clock around each call; with `sync`, each call is waited for before its end is read (a request's
    latency, launch overhead and all)."""

    __slots__ = ("_now", "_sync", "_starts", "_ends")

    def __init__(self, now: Callable[[], int], iters: int, sync: Callable[[], None] | None = None):
        self._now, self._sync = now, sync
        self._starts, self._ends = [0] * iters, [0] * iters

    def start(self, i: int) -> None:
        self._starts[i] = self._now()

    def stop(self, i: int) -> None:
        if self._sync is not None:
            self._sync()
        self._ends[i] = self._now()

    def samples_ns(self, n: int) -> list[int]:
        return [e - s for s, e in zip(self._starts[:n], self._ends[:n])]


class CudaClock(HostClock):
    """A CUDA event pair per iteration on the stream the model runs on (device time, no sync inside the loop: the
    pipelined, throughput-style loop); the host clock still gives the first call and the wall time of the whole
    loop, after a synchronize. With sync_each_call, the host clock times each call to completion instead."""

    name = "cuda_events"

    def __init__(self, device: str):
        import torch

        self._torch = torch
        self._device = torch.device(device)

    def sync(self) -> None:
        self._torch.cuda.synchronize(self._device)

    def recorder(self, iters: int, sync_each_call: bool = False):
        if sync_each_call:
            return super().recorder(iters, sync_each_call)
        # The model's kernels go to its device's current stream (the device guard of its tensors), not to the
        # current stream of the current device: an event recorded there would time an idle stream.
        return _CudaRecorder(self._torch, iters, self._torch.cuda.current_stream(self._device))


class _CudaRecorder:
    def __init__(self, torch, iters: int, stream):
        self._stream = stream
        self._starts, self._ends = ([torch.cuda.Event(enable_timing=True) for _ in range(iters)] for _ in range(2))

    def start(self, i: int) -> None:
        self._starts[i].record(self._stream)

    def stop(self, i: int) -> None:
        self._ends[i].record(self._stream)

    def samples_ns(self, n: int) -> list[int]:
        # Called after a synchronize; elapsed_time is in milliseconds.
        return [round(s.elapsed_time(e) * 1e6) for s, e in zip(self._starts[:n], self._ends[:n])]


@dataclass
class Measurement:
    first_call_ns: int
    warmup: WarmUp
    iters_requested: int
    min_iters: int
    samples_ns: list[int]
    loop_wall_ns: int  # host wall time of the whole timed loop, synchronized at both ends
    stopped_early: bool  # the max-time budget ended the loop before iters_requested
    recompiles: int | None  # new graphs compiled during the timed loop; None when not tracked
    loop_started_at: float = 0.0  # wall clock (epoch seconds) at both ends of the timed loop
    loop_ended_at: float = 0.0
    conditions: Conditions = field(default_factory=Conditions)  # what else used the machine meanwhile (conditions.Watch)
    loop_cpu_ns: int | None = None  # the calling thread's CPU time over the timed calls, before their synchronize


def first_call(fn: Callable[[], object], clock: HostClock) -> int:
    """The first call, timed alone and synchronized at both ends: for a compiled model it holds the compilation."""
    clock.sync()
    t0 = clock.now_ns()
    fn()
    clock.sync()
    return clock.now_ns() - t0


class _Loop:
    """What every timed loop does around its calls, in one place: the conditions watched from its first call to its
    last (nothing else of ours runs meanwhile), the graphs compiled before and after (a recompile inside voids the
    numbers), the time budget (never before `floor` calls), and the wall clock at both ends. `scale`: callables
    sharing the loop, each with a budget of its own. `pool`: warmup.settled's wait, in the conditions."""

    def __init__(self, clock: HostClock, iters: int, min_iters: int, max_time_s: float | None,
                 graph_count: Callable[[], int] | None, watch: Watch | None, scale: int = 1, pool=None):
        self.clock, self.floor = clock, min(min_iters, iters)
        self.budget_ns = None if max_time_s is None else int(max_time_s * 1e9) * scale
        self.graph_count, self.watch, self.pool = graph_count, watch or NoWatch(), pool

    def __enter__(self) -> _Loop:
        self.graphs_before = self.graph_count() if self.graph_count else None
        self.watch.start()
        self.started_at, self.start_ns, self.start_cpu_ns = time.time(), self.clock.now_ns(), self.clock.cpu_ns()
        return self

    def spent(self, done: int) -> bool:
        """Whether the budget ends the loop now, `done` calls in (each callable's fewest)."""
        return self.budget_ns is not None and done >= self.floor and self.clock.now_ns() - self.start_ns >= self.budget_ns

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.ended_at = time.time()
            self.conditions = compile_pool.noted(self.watch.stop(), self.pool)  # warmup.settled's wait
            self.recompiles = self.graph_count() - self.graphs_before if self.graph_count else None


def measure(
    fn: Callable[[], object],
    *,
    iters: int,
    warmup: int,
    clock: HostClock,
    min_iters: int = 1,
    max_time_s: float | None = None,
    warmup_s: float = 0.0,
    warmup_cap_s: float | None = 0.0,
    sync_each_call: bool = False,
    graph_count: Callable[[], int] | None = None,
    watch: Watch | None = None,
    before_timing: Callable[[], None] = lambda: None,
    on_phase: Callable[[str], None] = lambda phase: None,
) -> Measurement:
    """Time fn. The first call is timed alone and never joins the steady-state samples; then, the process settled
    (warmup.settled), warm-up until steady (warm_up). The budget max_time_s ends the timed loop only once it has
    min_iters samples. graph_count, when given, is read around the timed loop: any growth is a recompile inside it,
    which voids the numbers. before_timing runs right before the loop (the steady state's memory peak starts)."""
    on_phase("first call")
    first_ns = first_call(fn, clock)
    with settled() as pool:
        on_phase("warm-up")
        warmed = warm_up(fn, warmup, clock, warmup_s, warmup_cap_s, sm_clock_of(watch))
        before_timing()

        on_phase("timing")
        rec = clock.recorder(iters, sync_each_call)
        n = 0
        with _Loop(clock, iters, min_iters, max_time_s, graph_count, watch, pool=pool) as loop:
            while n < iters:
                rec.start(n)
                fn()
                rec.stop(n)
                n += 1
                if loop.spent(n):
                    break
            loop_cpu_ns = clock.cpu_ns() - loop.start_cpu_ns
            clock.sync()
            loop_wall_ns = clock.now_ns() - loop.start_ns
    return Measurement(first_ns, warmed, iters, loop.floor, rec.samples_ns(n), loop_wall_ns, n < iters,
                       loop.recompiles, loop.started_at, loop.ended_at, loop.conditions, loop_cpu_ns)


def measure_interleaved(
    fns: dict[str, Callable[[], object]],
    *,
    iters: int,
    warmup: dict[str, int],
    clock: HostClock,
    block: int = 10,
    min_iters: int = 1,
    max_time_s: float | None = None,
    warmup_s: float = 0.0,
    warmup_cap_s: float | None = 0.0,
    sync_each_call: bool = False,
    graph_count: Callable[[], int] | None = None,
    watch: Watch | None = None,
    before_timing: Callable[[], None] = lambda: None,
    on_phase: Callable[[str], None] = lambda phase: None,
    after_switch: int | None = None,
) -> dict[str, Measurement]:
    """Time several callables in one process, alternating blocks of `block` calls, so that drift (clocks,
    temperature, other load) falls on all of them alike, each block opened by untimed calls (`after_switch`; None:
    as warmup.after_switch finds from each one's warm-up). Each first call is timed alone and each is warmed up
    before any timing (until steady; `warmup_s` is the process's: the first callable's warm-up lasts it, and the
    device is warm for the ones after, which end when steady, over sharing.SETTLED windows); the budget max_time_s
    is per callable and ends the loop only once every callable has min_iters samples. Recompiles are counted over
    the whole loop. The order of `fns` is the order of the warm-ups and of each round of blocks: the caller's (a
    run draws it per process: run/rounds.in_process)."""
    first = {}
    for name, fn in fns.items():
        on_phase(f"first call ({name})")
        first[name] = first_call(fn, clock)
    with settled() as pool:
        warmed = {}
        for i, (name, fn) in enumerate(fns.items()):
            on_phase(f"warm-up ({name})")
            # after the first, over sharing.SETTLED windows where the first had a floor (a GPU): their last windows
            # read each variant alone, against which the loop is checked (core/sharing.py)
            warmed[name] = warm_up(fn, warmup[name], clock, warmup_s if i == 0 else 0.0, warmup_cap_s,
                                   sm_clock_of(watch), sharing.SETTLED if i and warmup_s else 0)
        for w in warmed.values():
            w.after_switch = opening_calls(w) if after_switch is None else after_switch
        before_timing()

        on_phase("timing (interleaved)")
        recorders = {name: clock.recorder(iters, sync_each_call) for name in fns}
        done = dict.fromkeys(fns, 0)
        wall, cpu = dict.fromkeys(fns, 0), dict.fromkeys(fns, 0)
        with _Loop(clock, iters, min_iters, max_time_s, graph_count, watch, scale=len(fns), pool=pool) as loop:
            while min(done.values()) < iters and not loop.spent(min(done.values())):
                for name, fn in fns.items():
                    n = done[name]
                    done[name] = min(iters, n + block)
                    spent = _timed_block(fn, recorders[name], range(n, done[name]), clock, warmed[name].after_switch)
                    wall[name], cpu[name] = wall[name] + spent[0], cpu[name] + spent[1]
    return {
        name: Measurement(first[name], warmed[name], iters, loop.floor, recorders[name].samples_ns(done[name]),
                          wall[name], done[name] < iters, loop.recompiles, loop.started_at, loop.ended_at,
                          loop.conditions, cpu[name])
        for name in fns
    }


def _timed_block(fn: Callable[[], object], rec, calls: range, clock: HostClock, untimed: int = 0) -> tuple[int, int]:
    """One block of an interleaved loop: its untimed calls, then each call recorded, synchronized at both ends;
    returns its wall time (the timed calls', so that each callable's wall clock holds its own timed calls only) and
    the calling thread's CPU time over those calls, up to the closing synchronize."""
    for _ in range(untimed):
        fn()
    clock.sync()
    t0, c0 = clock.now_ns(), clock.cpu_ns()
    for i in calls:
        rec.start(i)
        fn()
        rec.stop(i)
    c1 = clock.cpu_ns()
    clock.sync()
    return clock.now_ns() - t0, c1 - c0


@dataclass
class CallTiming:
    """One generate() call: its whole duration, and when each new token arrived, from the call's start."""

    total_ns: int
    token_ns: list[int]


@dataclass
class GenerationMeasurement:
    first_calls: list[CallTiming]  # the first K calls, one by one: when does compiling stop costing anything?
    calls: list[CallTiming]  # the steady state
    iters_requested: int
    min_iters: int
    loop_wall_ns: int
    stopped_early: bool
    recompiles: int | None
    loop_started_at: float = 0.0
    loop_ended_at: float = 0.0
    conditions: Conditions = field(default_factory=Conditions)


Call = Callable[[Callable[[], None]], object]  # call(stamp) runs one generate(), calling stamp() as each token comes


def measure_generation(
    calls: dict[str, Call],
    *,
    first_calls: int,
    iters: int,
    clock: HostClock,
    min_iters: int = 1,
    max_time_s: float | None = None,
    graph_count: Callable[[], int] | None = None,
    watch: Watch | None = None,
    after_first_call: Callable[[str, int], None] = lambda name, i: None,
    before_timing: Callable[[], None] = lambda: None,
    on_phase: Callable[[str], None] = lambda phase: None,
) -> dict[str, GenerationMeasurement]:
    """Time generate() calls. Each variant's first `first_calls` calls are timed one by one (the first holds the
    compilation; later ones may compile again, or record CUDA graphs), then, the process settled, the steady state:
    a call of each variant in turn until `iters` calls each, or the budget max_time_s per variant once each has
    min_iters. A graph compiled in the steady state is a recompile."""

    def timed(call: Call) -> CallTiming:
        stamps: list[int] = []
        clock.sync()
        t0 = clock.now_ns()
        call(lambda: stamps.append(clock.now_ns() - t0))
        clock.sync()
        return CallTiming(clock.now_ns() - t0, stamps)

    firsts: dict[str, list[CallTiming]] = {name: [] for name in calls}
    for name, call in calls.items():
        suffix = "" if len(calls) == 1 else f" ({name})"
        for i in range(first_calls):
            on_phase(("first call" if i == 0 else f"call {i + 1} of the first {first_calls}") + suffix)
            firsts[name].append(timed(call))
            after_first_call(name, i)
    steady: dict[str, list[CallTiming]] = {name: [] for name in calls}
    wall = dict.fromkeys(calls, 0)
    with settled() as pool:
        before_timing()
        on_phase("timing")
        with _Loop(clock, iters, min_iters, max_time_s, graph_count, watch, scale=len(calls), pool=pool) as loop:
            while min(len(v) for v in steady.values()) < iters:
                for name, call in calls.items():
                    t = timed(call)
                    steady[name].append(t)
                    wall[name] += t.total_ns
                if loop.spent(min(len(v) for v in steady.values())):
                    break
    return {name: GenerationMeasurement(firsts[name], steady[name], iters, loop.floor, wall[name],
                                        len(steady[name]) < iters, loop.recompiles, loop.started_at, loop.ended_at,
                                        loop.conditions) for name in calls}
