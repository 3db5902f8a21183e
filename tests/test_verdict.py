"""A verdict that holds where users run it (issue 62): one figure per process (the median of its calls) everywhere,
each look's interval at its group-sequential boundary, rounds in an order drawn afresh, a warm-up that ends when
steady, the timed worker's cores kept apart, and every undecided reading saying the smallest effect it could see.
The H200's recording (tests/data/h200-quick.db, the quick suite of 2026-11-27) is read under these rules."""

from __future__ import annotations

import gc
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import fakeresults as fr
import numpy as np
import pytest
from fakeclock import FakeClock

from compilebench.core import pairing, sequential, speedups, stats
from compilebench.core.vocab import Verdict
from compilebench.measure import cores, timing, warmup
from compilebench.report import data, flat, stability
from compilebench.report.view import View
from compilebench.run import devices, dispatch, rounds

H200_QUICK = Path(__file__).parent / "data" / "h200-quick.db"


# -- one figure per process ------------------------------------------------------------------------------------


def test_a_process_is_read_by_the_median_of_its_calls_and_the_guides_mean_stays_beside_it():
    slow_start = [6.0] * 30 + [3.5] * 270  # a process whose first 30 calls ran in another state
    assert stats.per_process(slow_start) == 3.5
    est = stats.case_summary([slow_start, [3.5] * 300])
    assert est.mean == pytest.approx(3.5)  # the latency: the geometric mean of the per-process medians
    assert est.mean_of_means == pytest.approx(math.sqrt(3.75 * 3.5))  # the guide's mean of the calls
    assert est.row()["latency_ms"] == est.mean and est.row()["mean_ms"] == est.mean_of_means


def test_the_speed_up_and_its_verdict_come_from_the_per_process_medians():
    e = fr.result("vit", 1, "eager", 10.0, processes=[10.0, 10.0, 10.0])
    c = fr.result("vit", 1, "default", 5.0, processes=[5.0, 5.0, 5.0])
    for rep in e.repeats:  # each process: 90 calls of 10 ms, 10 of 40 ms (mean 13 ms, median 10 ms)
        rep.set_samples([10_000_000] * 90 + [40_000_000] * 10)
    e.derive()
    assert set(e.process_figures().values()) == {10.0} and e.mean == pytest.approx(10.0)
    assert e.stats.mean_of_means == pytest.approx(13.0)
    assert speedups.speedup(e, c).value == pytest.approx(2.0)


# -- the looks' boundaries --------------------------------------------------------------------------------------


def test_each_looks_confidence_is_its_group_sequential_boundary():
    """The boundaries make the chance of crossing by each look exactly what the spending function allows, the looks
    correlated as a Brownian motion observed at their shares of the information: checked against the multivariate
    normal's own rectangle probabilities (scipy), an independent computation."""
    from scipy.stats import multivariate_normal, norm

    for design in ([3, 5, 7], [3, 5, 7, 9, 11], [5, 7]):
        t = [n / design[-1] for n in design]
        bounds = [norm.ppf(0.5 + c / 2) for c in sequential.look_confidences(tuple(design))]
        for k in range(len(design)):
            cov = [[math.sqrt(min(t[i], t[j]) / max(t[i], t[j])) for j in range(k + 1)] for i in range(k + 1)]
            lim = np.array(bounds[:k + 1])
            inside = multivariate_normal(np.zeros(k + 1), cov).cdf(lim, lower_limit=-lim)
            assert 1 - inside == pytest.approx(sequential.spent(t[k]), abs=2e-4)
    # the union bound's last look of 3, 5, 7 was 99.0%: the exact boundary is narrower, first look unchanged
    assert [round(c, 4) for c in sequential.look_confidences((3, 5, 7))] == [0.9724, 0.979, 0.9794]
    assert sequential.confidence([3, 5, 7], 4) == sequential.confidence([3, 5, 7], 3)  # between looks: the last look's


# -- what an undecided reading could see --------------------------------------------------------------------------


def test_an_undecided_reading_says_the_smallest_effect_it_could_see_and_the_rounds_that_would_decide():
    s = speedups.of_means([10.0, 10.4, 9.7, 10.3, 9.8], [9.5, 9.9, 9.2, 9.6, 9.5], pair=True, paired_by="round")
    assert s.verdict == Verdict.inconclusive and s.n == 5 and s.df == 4
    half = (math.log(s.high) - math.log(s.low)) / 2
    assert s.reach == pytest.approx(math.expm1(half))
    more = s.rounds_to_decide(0.05)
    assert more > 5
    # at that many rounds, with the same estimate and spread, the interval would clear the nearer edge of ±5%
    gap = min(abs(math.log(s.value) - math.log(1.05)), abs(math.log(s.value) + math.log(1.05)))
    spread = half * math.sqrt(5) / stats.t_critical(4, s.confidence)
    assert stats.t_critical(more - 1, s.confidence) * spread / math.sqrt(more) <= gap
    assert stats.t_critical(more - 2, s.confidence) * spread / math.sqrt(more - 1) > gap
    words = speedups.out_of_reach(s, 0.05)
    assert words == (f"differences under ±{s.reach:.0%} are out of this run's reach; about {more - 5} more rounds "
                     "would decide it, at the same spread")
    on_the_edge = speedups.Speedup(1.05, 1.0, 1.05 ** 2, Verdict.inconclusive, True, paired_by="round", n=5, df=4)
    assert on_the_edge.rounds_to_decide(0.05) is None
    assert "more rounds would not decide it (it sits at the ±5% margin)" in speedups.out_of_reach(on_the_edge, 0.05)
    decided = speedups.of_means([10.0] * 3 + [10.1], [5.0] * 3 + [5.1])
    assert decided.verdict == Verdict.faster and speedups.out_of_reach(decided, 0.05) == ""


def test_drift_between_runs_that_alone_is_wider_than_the_minimum_effect_is_out_of_reach_of_more_rounds():
    from compilebench.core.drift import Drift

    s = speedups.of_means([10.0, 10.1, 9.9], [9.0, 9.1, 8.9], drift=Drift(0.08, "given"))
    assert s.verdict == Verdict.inconclusive and s.rounds_to_decide(0.05) is None
    assert "more rounds would not decide it (the drift between runs alone is wider)" in speedups.out_of_reach(s, 0.05)


def test_every_output_of_an_undecided_case_carries_its_reach(tmp_path):
    eager = fr.result("resnet-50", 1, "eager", 10.0, env=fr.CPU, processes=[10.0, 11.0, 9.0])
    compiled = fr.result("resnet-50", 1, "default", 9.3, env=fr.CPU, processes=[9.0, 10.5, 8.4])
    view = View([eager, compiled], 0.05)
    s = view.speedup(eager, compiled)
    assert s.verdict == Verdict.inconclusive
    (row,) = [r for r in flat.rows(view) if r["variant"] != "eager"]
    assert row["reach_pct"] == pytest.approx(s.reach * 100) and row["rounds_to_decide"] == s.rounds_to_decide(0.05)
    (note,) = [n for n in stability.notes(view) if n.startswith("undecided")]
    assert speedups.out_of_reach(s, 0.05) in note and "inconclusive after 3 repeats" in note


def test_a_generation_case_is_decided_everywhere_by_its_time_per_token():
    """Its table reads its time per decoded token against eager's; so do the run's looks at its verdicts, its
    undecided line and the suite's summary (they read whole generate() calls, so one tiny SmolLM2 run printed
    `faster` at 1.25x in its table and `undecided` at 1.23x beneath it)."""
    from collections import Counter

    from compilebench.report import suite
    from compilebench.run.rounds import Comparison, Side

    calls_e, calls_c = [50.0, 62.0, 44.0], [47.0, 55.0, 41.0]  # whole calls: their prefills wander
    eager = fr.generation("smollm2-135m", "eager", calls_e, [10.0, 10.1, 9.9])
    decided = fr.generation("smollm2-135m", "default", calls_c, [8.0, 8.1, 7.9])
    wandering = fr.generation("smollm2-135m", "reduce-overhead", calls_c, [9.0, 10.6, 8.5])
    view = View([eager, decided, wandering], 0.05)
    assert view.speedup(eager, decided).verdict == Verdict.inconclusive  # whole calls cannot tell
    per_token = view.verdict(decided)
    assert per_token.verdict == Verdict.faster and per_token.value == pytest.approx(1.25, rel=0.01)
    (note,) = [n for n in stability.notes(view) if n.startswith("undecided")]
    assert "b1 reduce-overhead" in note and ": per token 1.0" in note
    (compiled,) = [s for s in suite.summaries(view) if s.column.variant.mode == "default"]
    assert compiled.verdicts == Counter({Verdict.faster: 1})
    assert (f"geomean speed-up per token {per_token.value:.2f}x [{per_token.low:.2f}-{per_token.high:.2f}] over 1 "
            "model(s)") in compiled.sentence()
    target = SimpleNamespace(resume_id="here")
    sides = [Side(r.case, target, 0) for r in (eager, decided, wandering)]
    stored = {side.key: r for side, r in zip(sides, (eager, decided, wandering))}
    found = [Comparison(sides[0], sides[1]), Comparison(sides[0], sides[2])]
    (still,) = rounds.undecided(found, stored, 0.05)  # the run measures on only where the table cannot tell
    assert still.comparison.other.case.variant.mode == "reduce-overhead"
    assert still.comparison.describe().endswith(", per token")


def test_the_speed_up_table_reads_a_language_model_per_token_and_its_break_even_in_whole_calls():
    """The report's speed-up table read whole generate() calls, so one tiny SmolLM2 run's compile was
    `inconclusive` there at 1.155x and `faster` at 1.176x per token in the recommendation above it; and the
    recommendation's break-even took its range from the per-token interval applied to whole calls, so the two tables
    gave one compile two ranges. Now the table reads per token, and both break-evens count whole calls at the ends
    of the calls' own interval."""
    from compilebench.core import drift, stats
    from compilebench.report import tables

    calls_e, calls_c = [50.0, 62.0, 44.0], [47.0, 55.0, 41.0]  # whole calls: their prefills wander
    eager = fr.generation("smollm2-135m", "eager", calls_e, [10.0, 10.1, 9.9])
    compiled = fr.generation("smollm2-135m", "default", calls_c, [8.0, 8.1, 7.9], compile_s=20.0)
    view = View([eager, compiled], 0.05)
    per_token, calls = view.verdict(compiled), view.speedup(eager, compiled)
    (row,) = tables.speedup_table(view).records()
    assert (row["speed-up"], row["verdict"]) == (f"{per_token.value:.3f}x", "faster")
    ends = stats.break_even_range(20.0, eager.mean, calls.low, calls.high, drift.COMPILE_DEFAULT)
    assert calls.low < 1 and ends[1] is None  # the calls' interval reaches below 1x: at that end it never pays
    assert row["break-even range"] == f"{ends[0]:,}-never"
    (rec,) = tables.recommendation_table(view).records()
    assert rec["break-even (inferences)"].endswith(f"[{ends[0]:,}-never]")


def test_compare_and_history_read_a_language_model_by_its_time_per_token():
    """`compare` and `history` (and so `check --history`) read a language model as its verdict does: a decode 30%
    slower, its whole generate() calls unchanged (their prefills wander), is `slower` in `compare` and fails the
    history gate; both read whole calls until 2026-11-29."""
    import datetime

    from compilebench.core.drift import Drift
    from compilebench.core.run import Run
    from compilebench.report import compare, history

    calls, tokens = [50.0, 62.0, 44.0], [10.0, 10.05, 9.95]

    def measured(mode, per_token, i=0):
        at = (datetime.datetime(2026, 11, 1) + datetime.timedelta(days=i)).isoformat()
        r = fr.generation("smollm2-135m", mode, calls, [t * per_token for t in tokens],
                          run=Run(run_id=f"run{i}", tag=f"commit{i}", started=at),
                          compile_s=None if mode == "eager" else 20.0)
        for rep in r.repeats:
            rep.created_at = at
        return r

    table = compare.compare([measured("eager", 1.0)], [measured("eager", 1.3)], "A", "B",
                            given=Drift(0.02, "given"))
    (row,) = table.rows
    said = dict(zip(table.header, row))
    assert said["A ms"] == "10.000 per token" and said["B ms"] == "13.000 per token"
    assert said["B/A"] == "1.300" and said["B vs A"].startswith("slower")
    assert any(n.startswith("text generation: its ms are per decoded token") for n in table.notes)

    runs = [measured(mode, (1.3 if i > 8 and mode == "default" else 1.0) * (0.5 if mode == "default" else 1.0), i)
            for i in range(1, 11) for mode in ("eager", "default")]
    series = {s.metric: s for s in history.series(runs, 0.05, gate=True) if s.case.endswith("default")}
    assert history.SPEEDUP not in series and not series[history.LATENCY].steps  # whole calls: nothing moved
    flagged = {s.metric for s, _, bad in history.gate(runs, 0.05, 0.05, 0.15, list(series.values())) if bad}
    assert flagged == {history.SPEEDUP_PER_TOKEN, history.TOKENS}


def test_a_side_comparison_left_undecided_says_its_reach_in_its_cell():
    """Quantized against float, or an engine against compile: no undecided note speaks for such a comparison, so
    its terminal cell says the smallest effect it could see (a tiny ViT's int8-dynamic compiled read
    '0.95x inconclusive' against eager float, its interval ±19% wide)."""
    from compilebench.report import quantization, terminal

    def res(mode, processes, q="none"):
        r = fr.result("vit", 1, mode, processes[1], env=fr.CPU, processes=processes, quantize=q)
        for rep in r.repeats:
            rep.quality = {"top1": 1.0} if q != "none" else {}
        r.derive()
        return r

    view = View([res("eager", [10.0, 10.1, 9.9]), res("default", [8.0, 8.1, 7.9]),
                 res("eager", [6.0, 6.1, 5.9], "int8-dynamic"), res("default", [9.0, 10.6, 8.7], "int8-dynamic")], 0.05)
    text = "\n".join(terminal.quantization_summary(view, 200))
    (row,) = [line for line in text.split("\n") if line.startswith("int8-dynamic  default")]
    against_float = speedups.speedup(view.latest[0], view.latest[3])
    assert against_float.verdict == Verdict.inconclusive
    assert f"{against_float.value:.2f}x inconclusive (±{against_float.reach:.0%} reach)" in row
    assert text.count("reach") == 1 and "1.25x faster\n" in text  # a decided one reads as before
    (table,) = quantization.tables(view)  # the report's cell too (until 2026-11-29 it read "... inconclusive)")
    cells = [c for row in table.rows for c in row if "inconclusive" in c]
    assert cells == [f"{against_float.value:.3f}x ({against_float.low:.3f}x to {against_float.high:.3f}x, "
                     f"inconclusive, ±{against_float.reach:.0%} reach)"]


# -- the H200's recording under these rules -------------------------------------------------------------------------


def test_the_h200_quick_suite_reads_decided_with_intervals_narrower_than_its_run_printed(tmp_path):
    """Its run printed DETR 2.05x [1.23-3.42], ResNet 1.16x [1.01-1.33] inconclusive after 7 repeats, MobileNet
    1.67x [1.23-2.27]: read now, from the same processes, every model is decided, every interval narrower."""
    path = tmp_path / "quick.db"
    shutil.copy(H200_QUICK, path)
    rs = data.load([str(path)])
    printed = {"detr": (1.23, 3.42), "resnet-50": (1.01, 1.33), "deeplabv3-mobilenet": (1.23, 2.27)}
    read = {r.case.model: speedups.speedup(base, r) for r, base in pairing.Pairing(rs).pairs(rs)}
    assert set(read) == set(printed)
    for model, s in read.items():
        assert s.verdict == Verdict.faster, (model, s)
        low, high = printed[model]
        assert math.log(s.high / s.low) < math.log(high / low), (model, s)
        assert s.paired_by == "round"


# -- rounds in an order drawn afresh --------------------------------------------------------------------------------


def test_each_odd_round_draws_its_order_and_the_next_reverses_it_the_same_on_every_machine_and_resume():
    units = ["eager", "default", "reduce-overhead"]
    orders = [tuple(rounds.within_round(units, i, "vit|b1")) for i in range(1, 41)]
    assert orders == [tuple(rounds.within_round(units, i, "vit|b1")) for i in range(1, 41)]  # deterministic
    assert all(sorted(o) == sorted(units) for o in orders)
    assert all(orders[i + 1] == orders[i][::-1] for i in range(0, 40, 2))  # each pair of rounds balanced
    assert {o[0] for o in orders[::2]} == set(units)  # every unit drawn first in some odd round
    assert len(set(orders)) >= 4  # not a fixed order, nor a strict alternation of two
    assert orders != [tuple(rounds.within_round(units, i, "detr|b1")) for i in range(1, 41)]


# -- a warm-up that ends when steady ----------------------------------------------------------------------------


class Settling:
    """A call that takes 2 ms at first and 1 ms once settled, getting faster call by call over its first
    `ramp` calls; a fake GPU SM clock that steps up every 100 calls through `mhz`."""

    def __init__(self, clock, ramp=300, mhz=None):
        self.clock, self.calls, self.ramp, self.mhz = clock, 0, ramp, mhz or []

    def __call__(self):
        self.clock.advance(int(1_000_000 * (1 + max(0.0, 1 - self.calls / self.ramp)) if self.ramp else 1_000_000))
        self.calls += 1

    def sm_clock(self):
        return self.mhz[min(len(self.mhz) - 1, self.calls // 100)] if self.mhz else None


def test_a_warm_up_goes_on_until_its_calls_stop_getting_faster():
    clock = FakeClock()
    fn = Settling(clock, ramp=300)
    w = warmup.warm_up(fn, 2, clock, cap_s=10)
    assert w.ended == warmup.STEADY
    assert w.calls > 300  # past the ramp: two windows no faster than each other only after it
    assert w.windows_ms[-1] == pytest.approx(1.0) and w.windows_ms[-2] == pytest.approx(1.0, abs=0.02)
    assert w.windows_ms[0] > 1.5 and w.windows_ms == sorted(w.windows_ms, reverse=True)


def test_a_warm_up_waits_for_the_gpu_clock_to_stop_rising_and_records_where_it_ended():
    clock = FakeClock()
    fn = Settling(clock, ramp=0, mhz=[345, 900, 1500, 1980])  # calls steady at once; the clock rises
    w = warmup.warm_up(fn, 2, clock, cap_s=10, sm_clock=fn.sm_clock)
    assert w.ended == warmup.STEADY and w.sm_clock_mhz == 1980 and fn.calls >= 300
    same = warmup.warm_up(Settling(clock, ramp=0), 2, clock, cap_s=10)  # no clock read: the calls alone
    assert same.ended == warmup.STEADY and same.calls == 102 and same.sm_clock_mhz is None  # the asked calls: window 1


def test_a_warm_up_that_never_settles_ends_at_its_cap_and_says_so():
    clock = FakeClock()

    def faster_and_faster():  # 10% faster every 50 ms: each 0.1 s window about 19% faster than the one before
        clock.advance(int(10_000_000 * 0.9 ** (clock.t // 50_000_000)))

    w = warmup.warm_up(faster_and_faster, 1, clock, cap_s=0.5)
    assert w.ended == warmup.CAP and 0.5e9 <= w.ns < 0.6e9
    fixed = warmup.warm_up(Settling(clock), 3, clock)  # no cap: the calls asked for, no more
    assert fixed.ended == warmup.FIXED and fixed.calls == 3 and fixed.windows_ms == []


def _counting_frozen(clock):
    """A call that notes how many objects the garbage collector holds frozen as it runs."""
    seen = []

    def fn():
        seen.append(gc.get_freeze_count())
        clock.advance(1_000)

    return fn, seen


def test_the_timed_loop_runs_with_the_heap_it_built_frozen_and_gives_it_back_after():
    clock = FakeClock()
    fn, seen = _counting_frozen(clock)
    gc.unfreeze()  # as a worker process starts: nothing frozen (this session's fixture froze its heap)
    timing.measure(fn, iters=5, warmup=1, clock=clock)
    assert seen[0] == 0  # the first call (the compile) runs as it would
    assert all(n > 0 for n in seen[1:])  # warm-up and the timed loop: what was built is frozen
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_its_heap_keeps_it_frozen_through_a_timed_loop():
    clock = FakeClock()
    fn, seen = _counting_frozen(clock)
    gc.freeze()
    before = gc.get_freeze_count()
    assert before > 0
    timing.measure(fn, iters=5, warmup=1, clock=clock)
    assert all(n >= before for n in seen) and gc.get_freeze_count() >= before


# -- the timed worker's cores ----------------------------------------------------------------------------------


def test_a_machine_with_cores_to_spare_keeps_whole_cores_for_the_runs_own_processes():
    siblings = {c: (0, c % 8) for c in range(16)}  # 8 physical cores, two hyperthreads each (c and c + 8)
    house, timed = devices.set_aside(set(range(16)), core=siblings.__getitem__)
    assert house == [0, 8] and timed == [c for c in range(16) if c not in (0, 8)]
    assert devices.set_aside({0, 1}) == ([], [0, 1])  # this project's 2-core VM: nothing to spare
    assert devices.cpus_env(timed, house) == {"COMPILEBENCH_CPUS": ",".join(map(str, timed)),
                                              cores.HOUSE_ENV: "0,8"}
    assert devices.cpus_env([0, 1], []) == {}


def test_the_driver_keeps_to_the_housekeeping_cores_while_its_workers_time_then_gets_its_own_back():
    """Its launchers start before it keeps to the house's cores, on every core (room for a later look's counts them
    all: on the house's two of an H200's 16 a named GPU's run had none), and are kept to the house's once ready."""
    allowed = os.sched_getaffinity(0)
    seen = []

    class Slot:
        name = "one"

        def prepare(self, repeats, environments):
            seen.append(("prepare", os.sched_getaffinity(0)))

        def keep_to(self, cpus):
            seen.append(("keep_to", cpus))

        def execute(self, unit, work, progress):
            seen.append(("execute", os.sched_getaffinity(0)))
            return []

    unit = SimpleNamespace(repeat=1, target=SimpleNamespace(environment=None))
    pool = dispatch.LocalPool([Slot()], house=[min(allowed)])
    pool.run([unit], lambda unit: SimpleNamespace(job=None), None, lambda *a: None)
    assert seen == [("prepare", allowed), ("keep_to", {min(allowed)}), ("execute", {min(allowed)})]
    assert os.sched_getaffinity(0) == allowed
    seen.clear()
    dispatch.LocalPool([Slot()]).run([unit], lambda unit: SimpleNamespace(job=None), None, lambda *a: None)
    assert seen == [("prepare", allowed), ("execute", allowed)]  # no house (under 4 cores): nothing kept apart


def test_a_worker_moves_the_processes_it_started_to_the_housekeeping_cores(monkeypatch):
    """A child that waits (as inductor's compile workers do once the compile is over), told apart by a handshake:
    it is moved, every thread of it; with no housekeeping cores named, nothing moves."""
    cpu = min(os.sched_getaffinity(0))
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        monkeypatch.delenv(cores.HOUSE_ENV, raising=False)
        assert cores.set_aside() == 0
        monkeypatch.setenv(cores.HOUSE_ENV, str(cpu))
        assert child.pid in cores.descendants(os.getpid())
        assert cores.set_aside() >= 1
        threads = os.listdir(f"/proc/{child.pid}/task")
        assert all(os.sched_getaffinity(int(t)) == {cpu} for t in threads)
    finally:
        child.stdin.close()
        child.wait(timeout=60)


def test_a_slots_launchers_are_kept_to_the_housekeeping_cores_every_thread_of_each():
    """A launcher that waits (as one does, ready, between the workers it forks), told apart by a handshake."""
    from compilebench.run import executors

    allowed = os.sched_getaffinity(0)
    child = subprocess.Popen([sys.executable, "-c", "import sys; print('up', flush=True); sys.stdin.read()"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "up"
        assert os.sched_getaffinity(child.pid) == allowed  # started on every core
        ex = executors.ProcessExecutor(10)
        ex._launchers[(None, 1)] = SimpleNamespace(pid=child.pid)
        slot = devices.slot(0, ex, None)
        slot.keep_to({min(allowed)})
        assert all(os.sched_getaffinity(int(t)) == {min(allowed)} for t in os.listdir(f"/proc/{child.pid}/task"))
        ex._launchers.clear()
    finally:
        child.stdin.close()
        child.wait(timeout=60)


def test_the_timed_loops_conditions_say_which_core_it_ran_on():
    """What tells a process's state apart on the next GPU: the core its loop's thread ran on, before and after."""
    from compilebench.measure import conditions

    reading = conditions.read_cpu()
    assert reading.core in os.sched_getaffinity(0)
    c = conditions.Watch(energy=None)
    c.start()
    got = c.stop()
    assert len(got.cpu_core) == 2 and all(core in os.sched_getaffinity(0) for core in got.cpu_core)
