"""The timing engine on a fake clock: every duration is scripted, so every number is exact."""

import pytest

from compilebench import timing
from compilebench.timing import FakeClock, measure


class Scripted:
    """A function whose n-th call takes durations[n] fake nanoseconds."""

    def __init__(self, clock, durations):
        self.clock, self.durations, self.calls = clock, list(durations), 0

    def __call__(self):
        self.clock.advance(self.durations[self.calls])
        self.calls += 1


def test_first_call_is_timed_alone_and_warmup_is_excluded():
    clock = FakeClock()
    # first call 5 s (a compile), 3 warm-up calls of 1 ms, then 4 timed calls
    fn = Scripted(clock, [5_000_000_000, 1_000_000, 1_000_000, 1_000_000, 10, 20, 30, 40])
    m = measure(fn, iters=4, warmup=3, clock=clock)
    assert m.first_call_ns == 5_000_000_000
    assert m.samples_ns == [10, 20, 30, 40]
    assert m.warmup_iters == 3
    assert fn.calls == 8
    assert m.loop_wall_ns == 100
    assert not m.stopped_early


def test_iteration_count_is_honoured():
    clock = FakeClock()
    fn = Scripted(clock, [1] * 1000)
    m = measure(fn, iters=300, warmup=0, clock=clock)
    assert len(m.samples_ns) == 300
    assert fn.calls == 301


def test_max_time_stops_the_timed_loop_early_and_records_the_real_n():
    clock = FakeClock()
    fn = Scripted(clock, [7] + [100_000_000] * 300)  # 0.1 s per timed call
    m = measure(fn, iters=300, warmup=0, clock=clock, max_time_s=0.35)
    assert len(m.samples_ns) == 4  # 0.1, 0.2, 0.3, then 0.4 >= 0.35 ends the loop
    assert m.stopped_early
    assert m.iters_requested == 300


def test_max_time_larger_than_needed_changes_nothing():
    clock = FakeClock()
    fn = Scripted(clock, [1] * 20)
    m = measure(fn, iters=10, warmup=2, clock=clock, max_time_s=100.0)
    assert len(m.samples_ns) == 10 and not m.stopped_early


def test_graphs_compiled_during_the_timed_loop_are_counted():
    clock = FakeClock()
    graphs = {"n": 1}

    def fn():
        clock.advance(1)
        if clock.t == 5:  # a recompile on the third timed call (calls 1: first, 2: warm-up)
            graphs["n"] += 1

    m = measure(fn, iters=5, warmup=1, clock=clock, graph_count=lambda: graphs["n"])
    assert m.recompiles == 1


def test_graphs_compiled_before_the_timed_loop_do_not_count():
    clock = FakeClock()
    graphs = {"n": 0}

    def fn():
        clock.advance(1)
        if clock.t <= 2:  # first call and warm-up compile
            graphs["n"] += 1

    m = measure(fn, iters=5, warmup=1, clock=clock, graph_count=lambda: graphs["n"])
    assert m.recompiles == 0


def test_phases_are_reported_in_order():
    clock, seen = FakeClock(), []
    measure(Scripted(clock, [1] * 10), iters=2, warmup=1, clock=clock, on_phase=seen.append)
    assert seen == ["first call", "warm-up", "timing"]


def test_a_raising_function_propagates():
    clock = FakeClock()

    def boom():
        raise ValueError("x")

    with pytest.raises(ValueError):
        measure(boom, iters=2, warmup=0, clock=clock)


def test_interleaved_blocks_alternate_and_each_variant_gets_its_own_samples():
    clock = timing.FakeClock()
    calls = []

    def make(name, ns):
        def fn():
            calls.append(name)
            clock.advance(ns)
        return fn

    got = timing.measure_interleaved({"eager": make("e", 3_000_000), "compiled": make("c", 1_000_000)},
                                     iters=25, warmup={"eager": 1, "compiled": 3}, block=10, clock=clock)
    # first calls alone, then warm-up, then blocks of 10, 10, 5 alternating
    assert calls[:6] == ["e", "c", "e", "c", "c", "c"]
    timed = "".join(calls[6:])
    assert timed == "e" * 10 + "c" * 10 + "e" * 10 + "c" * 10 + "e" * 5 + "c" * 5
    assert got["eager"].samples_ns == [3_000_000] * 25 and got["compiled"].samples_ns == [1_000_000] * 25
    assert got["eager"].loop_wall_ns == 75_000_000 and got["compiled"].warmup_iters == 3
    assert not got["eager"].stopped_early


def test_interleaved_budget_is_per_variant_and_recompiles_are_counted():
    clock = timing.FakeClock()
    graphs = [1]

    def eager():
        clock.advance(10_000_000)

    def compiled():
        clock.advance(10_000_000)
        if clock.t > 300_000_000:
            graphs[0] = 2

    got = timing.measure_interleaved({"eager": eager, "compiled": compiled}, iters=1000, warmup={"eager": 0, "compiled": 0},
                                     block=5, clock=clock, max_time_s=0.2, graph_count=lambda: graphs[0])
    # 0.2 s each, 0.4 s in all: blocks of 5 x 10 ms alternate until 0.4 s of timing has passed
    assert len(got["eager"].samples_ns) == len(got["compiled"].samples_ns) == 20
    assert got["eager"].stopped_early and got["compiled"].recompiles == 1
