"""The timing engine on a fake clock: every duration is scripted, so every number is exact."""

import pytest
from fakeclock import FakeClock

from compilebench.core import sharing
from compilebench.measure import timing, warmup
from compilebench.measure.timing import measure


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
    assert m.warmup.calls == 3 and m.warmup.ns == 3_000_000 and m.warmup.ended == warmup.FIXED
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


def test_no_budget_ends_a_timed_loop_before_min_iters():
    # Issue 13: a 0.001 s budget once ended a DETR loop after 2 samples. Each call here takes 1 s.
    clock = FakeClock()
    fn = Scripted(clock, [1_000_000_000] * 400)
    m = measure(fn, iters=300, warmup=0, clock=clock, max_time_s=0.001, min_iters=10)
    assert len(m.samples_ns) == 10 and m.min_iters == 10 and m.stopped_early
    m = measure(Scripted(clock, [1] * 10), iters=5, warmup=0, clock=clock, max_time_s=0.001, min_iters=10)
    assert len(m.samples_ns) == 5 and m.min_iters == 5  # never more than --iters


def test_the_timed_loop_is_watched_and_placed_in_wall_clock_time():
    clock = FakeClock()
    seen = []

    class Watch:
        def start(self):
            seen.append(("start", clock.t))

        def stop(self):
            seen.append(("stop", clock.t))
            return {"other_cpu_share": 0.5}

    m = measure(Scripted(clock, [7, 1, 2, 3]), iters=3, warmup=0, clock=clock, watch=Watch())
    assert seen == [("start", 7), ("stop", 13)]  # around the timed calls only, not the first call
    assert m.conditions == {"other_cpu_share": 0.5}
    assert 0 < m.loop_started_at <= m.loop_ended_at


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
    clock = FakeClock()
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
    assert got["eager"].loop_wall_ns == 75_000_000 and got["compiled"].warmup.calls == 3
    assert not got["eager"].stopped_early


def test_each_interleaved_block_opens_with_untimed_calls_that_bear_the_switch():
    """A variant's first calls after the other's run slower (its caches taken by the other's calls): on this VM a
    tiny ResNet-50's compiled calls read +60% and +20% at a block's first two. Those are untimed; a large model's
    calls, each long beside a switch, are not repeated for it."""
    clock = FakeClock()
    calls, last = [], [None]

    def make(name, ns, after_switch=()):
        def fn():
            since = 0 if last[0] != name else since_switch[name] + 1
            since_switch[name], last[0] = since, name
            calls.append(name)
            clock.advance(after_switch[since] if since < len(after_switch) else ns)
        return fn

    since_switch = {}
    fns = {"eager": make("e", 3_000_000, (3_750_000,)), "compiled": make("c", 1_000_000, (1_600_000, 1_200_000))}
    got = timing.measure_interleaved(fns, iters=20, warmup={"eager": 2, "compiled": 2}, block=10, clock=clock,
                                     warmup_cap_s=10.0)
    assert got["eager"].warmup.after_switch == got["compiled"].warmup.after_switch == warmup.SWITCH_CALLS == 2
    assert got["compiled"].samples_ns == [1_000_000] * 20 and got["eager"].samples_ns == [3_000_000] * 20
    assert got["compiled"].loop_wall_ns == 20_000_000  # its timed calls' time alone
    timed = "".join(calls)[-(4 * 12):]
    assert timed == ("e" * 12 + "c" * 12) * 2  # each block: 2 untimed calls, then its 10
    calls.clear()
    raw = timing.measure_interleaved(fns, iters=20, warmup={"eager": 2, "compiled": 2}, block=10, clock=clock,
                                     warmup_cap_s=10.0, after_switch=0)
    assert raw["compiled"].samples_ns.count(1_600_000) == 2 and raw["compiled"].warmup.after_switch == 0
    slow = {"a": lambda: clock.advance(100_000_000), "b": lambda: clock.advance(30_000_000)}
    got = timing.measure_interleaved(slow, iters=4, warmup={"a": 1, "b": 1}, block=2, clock=clock, warmup_cap_s=10.0)
    assert (got["a"].warmup.after_switch, got["b"].warmup.after_switch) == (0, 1)  # at most SWITCH_S each block
    fixed = timing.measure_interleaved(fns, iters=20, warmup={"eager": 2, "compiled": 2}, block=10, clock=clock)
    assert fixed["compiled"].warmup.after_switch == 0  # a fixed warm-up (cap 0) times no window: as before


def test_interleaved_warmup_time_is_the_processs_so_the_variants_after_the_first_end_when_steady_and_settled():
    clock = FakeClock()
    got = timing.measure_interleaved({"eager": lambda: clock.advance(3_000_000), "compiled": lambda: clock.advance(1_000_000)},
                                     iters=10, warmup={"eager": 2, "compiled": 2}, clock=clock, warmup_s=1.0,
                                     warmup_cap_s=10.0)
    eager, compiled = got["eager"].warmup, got["compiled"].warmup
    assert eager.ended == compiled.ended == "steady"
    assert eager.ns >= 1_000_000_000  # the process's warm-up time, on the first variant: the device is warm after it
    # steady at once (the calls asked for, then windows alike), yet over SETTLED windows: its last ones read it alone
    assert compiled.ns < 600_000_000 and len(compiled.windows_ms) == sharing.SETTLED
    cpu = timing.measure_interleaved({"eager": lambda: clock.advance(3_000_000),
                                      "compiled": lambda: clock.advance(1_000_000)},
                                     iters=10, warmup={"eager": 2, "compiled": 2}, clock=clock, warmup_cap_s=10.0)
    assert len(cpu["compiled"].warmup.windows_ms) == 2  # no floor (a CPU): steady after one window, as before


def test_interleaved_budget_is_per_variant_and_recompiles_are_counted():
    clock = FakeClock()
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


def test_an_interleaved_budget_still_gives_every_variant_min_iters():
    clock = FakeClock()

    def slow():
        clock.advance(1_000_000_000)

    got = timing.measure_interleaved({"a": slow, "b": slow}, iters=100, warmup={"a": 0, "b": 0}, block=3, clock=clock,
                                     max_time_s=0.001, min_iters=10)
    assert len(got["a"].samples_ns) == len(got["b"].samples_ns) == 12  # blocks of 3 until both have 10


class Generate:
    """A fake generate(): each call's prefill, then its new tokens, scripted in fake nanoseconds."""

    def __init__(self, clock, prefill, per_token, tokens, graphs=None):
        self.clock, self.prefill, self.per_token, self.tokens, self.graphs = clock, list(prefill), per_token, tokens, graphs
        self.calls = 0

    def __call__(self, stamp):
        self.clock.advance(self.prefill[min(self.calls, len(self.prefill) - 1)])
        stamp()
        for _ in range(self.tokens - 1):
            self.clock.advance(self.per_token)
            stamp()
        self.calls += 1
        if self.graphs is not None and self.calls == 9:  # a recompile in the steady state
            self.graphs[0] += 1


def test_generation_times_the_first_calls_one_by_one_then_the_steady_state():
    clock = FakeClock()
    gen = Generate(clock, prefill=[30_000_000_000, 2_000_000_000, 5_000_000], per_token=1_000_000, tokens=4)
    compiled_so_far = []
    got = timing.measure_generation({"compile": gen}, first_calls=3, iters=4, clock=clock,
                                    after_first_call=lambda name, i: compiled_so_far.append((name, i)))["compile"]
    # call 1 compiles the prefill (30 s), call 2 the decode shapes (2 s), then 5 ms prefills
    assert [c.total_ns for c in got.first_calls] == [30_003_000_000, 2_003_000_000, 8_000_000]
    assert [c.token_ns for c in got.calls] == [[5_000_000, 6_000_000, 7_000_000, 8_000_000]] * 4
    assert compiled_so_far == [("compile", 0), ("compile", 1), ("compile", 2)]
    assert not got.stopped_early and got.recompiles is None


def test_generation_budget_keeps_min_iters_and_counts_steady_state_recompiles():
    clock = FakeClock()
    graphs = [2]
    gen = Generate(clock, prefill=[1_000_000_000], per_token=0, tokens=1, graphs=graphs)
    got = timing.measure_generation({"g": gen}, first_calls=2, iters=50, clock=clock, max_time_s=0.001, min_iters=10,
                                    graph_count=lambda: graphs[0])["g"]
    assert len(got.calls) == 10 and got.stopped_early and got.recompiles == 1


def test_generation_variants_alternate_call_by_call_after_their_first_calls():
    clock = FakeClock()
    order = []

    def named(name):
        def call(stamp):
            order.append(name)
            clock.advance(1)
            stamp()
        return call

    timing.measure_generation({"e": named("e"), "c": named("c")}, first_calls=2, iters=3, clock=clock)
    assert "".join(order) == "eecc" + "ececec"


def test_the_loops_cpu_time_holds_the_timed_calls_launches_and_nothing_before_them():
    """A GPU call: the host spends its launches (CPU time), then the device runs on; the thread's CPU time over the
    timed calls is the launches', whatever the first call, the warm-up and the blocks' untimed openers spent."""
    clock = FakeClock()

    def gpu_call(launch_ns, device_ns):
        def call():
            clock.spend(launch_ns)
            clock.advance(device_ns)
        return call

    alone = measure(gpu_call(400, 600), iters=5, warmup=3, clock=clock)
    assert alone.loop_cpu_ns == 5 * 400 and alone.loop_wall_ns == 5 * 1_000
    fns = {"eager": gpu_call(900, 100), "compiled": gpu_call(300, 200)}
    got = timing.measure_interleaved(fns, iters=20, warmup={"eager": 2, "compiled": 2}, block=10, clock=clock,
                                     after_switch=2)
    assert got["eager"].loop_cpu_ns == 20 * 900 and got["compiled"].loop_cpu_ns == 20 * 300  # openers left out
