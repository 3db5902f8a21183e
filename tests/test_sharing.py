"""Whether sharing a process changed a speed-up (core/sharing.py): each interleaved variant's warm-up, timed alone,
against its timed loop, said in the notes and the CSV where the two disagree beyond the smallest effect."""

import dataclasses
import math
import random
import statistics

import fakeresults as fr
import pytest

from compilebench.core import sharing, speedups
from compilebench.core.repeat import Warmed
from compilebench.core.vocab import Verdict
from compilebench.report import cells, flat, stability
from compilebench.report.view import View

# The H200 of 2026-11-28 02:50, ResNet-50 at batch 1, interleaved: per process, the median of the warm-up's last three
# windows (alone) and of the timed calls (interleaved), eager then default
H200 = {"eager": ([4.333, 4.614, 4.145, 4.622, 4.889, 3.607, 4.007],
                  [4.400, 4.104, 4.165, 3.774, 5.249, 3.741, 4.310]),
        "default": ([3.414, 3.492, 3.512, 3.205, 4.529, 3.255, 3.400],
                    [3.744, 4.143, 4.111, 3.808, 5.399, 3.727, 4.245])}


def _pair(figures: dict, *, interleave: bool = True, ended: str = "steady", start=(1.3, 1.1)):
    """Eager and default results whose processes warmed up to `figures[variant][0]` and timed `[1]`; each warm-up's
    windows begin at `start` times that (the asked calls, then a window still getting faster)."""
    n = len(figures["eager"][0])
    ids = [f"p{i}" for i in range(n)]
    out = []
    for variant in ("eager", "default"):
        alone, loop = figures[variant]
        r = fr.result("resnet-50", 1, variant, 1.0, env=fr.CPU, processes=loop, process_ids=ids if interleave else None,
                      interleave=interleave, compile_s=None if variant == "eager" else 13.0)
        for rep, w in zip(r.repeats, alone):
            rep.warmed = Warmed(ended=ended, windows_ms=[*(w * f for f in start), w * 1.01, w, w * 0.99])
        out.append(r)
    return out


def test_the_h200s_interleaved_resnet_is_said_to_have_been_changed_by_sharing_its_processes():
    eager, default = _pair(H200)
    found = sharing.alone_over_interleaved(eager, default)
    assert found.n == 7 and found.changed(0.05)
    assert found.value == pytest.approx(1.19, abs=0.01) and found.low > 1.05
    view = View([eager, default])
    s = view.speedup(eager, default)
    assert s.value == pytest.approx(1.02, abs=0.01)  # what the interleaved loop said
    # undecided either way, and more interleaved rounds would not decide it: none are asked for
    assert s.verdict == s.withheld == Verdict.inconclusive and s.sharing == found and s.rounds_to_decide(0.05) is None
    (note,) = [n for n in stability.notes(view) if n.startswith("undecided: ")]
    # the speed-up alone (what a process running one variant reads) beside its ratio to the interleaved one
    assert found.alone == pytest.approx(1.22, abs=0.01) and 1.05 < found.alone_low < found.alone < found.alone_high
    assert (f"its speed-up was {found.alone:.2f}x [{found.alone_low:.2f}-{found.alone_high:.2f}] over 7 processes, "
            f"{found.value:.2f}x [{found.low:.2f}-{found.high:.2f}] the interleaved one, so sharing") in note
    assert "more interleaved rounds would not decide it; --no-interleave" in note and "withheld" not in note
    assert not [n for n in stability.notes(view) if n.startswith("interleaving: ")]  # said once, in its line above
    (row,) = [r for r in flat.rows(view) if r["variant"] == "default"]
    assert (row["alone_over_interleaved"], row["alone_over_interleaved_ci95_low"],
            row["alone_over_interleaved_ci95_high"], row["verdict_withheld"]) == (found.value, found.low, found.high,
                                                                                   "inconclusive")
    assert (row["speedup_alone"], row["speedup_alone_ci95_low"], row["speedup_alone_ci95_high"]) == (
        found.alone, found.alone_low, found.alone_high)
    assert row["verdict"] == "inconclusive" and row["rounds_to_decide"] is None


def _shifted(loop_speedup: float, alone_speedup: float, spread=(0.99, 1.0, 1.01, 1.0, 0.995)):
    """Eager at 10 ms in 5 processes, the other at `loop_speedup` interleaved and `alone_speedup` in its warm-ups
    (eager's warm-ups at its loop's figure), each process moved by the host alike in all four."""
    eager = [10.0 * f for f in spread]
    return {"eager": (eager, eager), "default": ([e / alone_speedup for e in eager], [e / loop_speedup for e in eager])}


@pytest.mark.parametrize("loop, alone, said, stands", [
    (1.0, 1.2, Verdict.same, False),  # same interleaved, compiled 1.2x alone: `same` would be wrong
    (1.0, 1 / 1.2, Verdict.same, False),
    (1.12, 1.0, Verdict.faster, False),  # faster only beside eager: alone the two are alike
    (1 / 1.12, 1.0, Verdict.slower, False),
    (1.5, 1.8, Verdict.faster, True),  # faster, and faster still alone: the change only strengthens it
    (1 / 1.5, 1 / 1.8, Verdict.slower, True),
    (1.12, 1.13, Verdict.faster, True),  # no change beyond the band: nothing withheld
])
def test_a_verdict_is_withheld_where_what_sharing_the_process_changed_could_undo_it(loop, alone, said, stands):
    eager, default = _pair(_shifted(loop, alone))
    view = View([eager, default])
    s = view.speedup(eager, default)
    assert s.sharing is not None and s.paired_by == "process"
    if stands:
        assert s.verdict == said and s.withheld is None
        notes = [n for n in stability.notes(view) if n.startswith("interleaving: ")]
        assert bool(notes) == s.sharing.changed(0.05)
        assert all(f"its verdict ({said}) stands, as the change only strengthens it" in n for n in notes)
        return
    assert s.verdict == Verdict.inconclusive and s.withheld == said
    (note,) = [n for n in stability.notes(view) if n.startswith("undecided: ")]
    assert f"its interval said {said}, withheld: timed alone" in note and "--no-interleave" in note
    (row,) = [r for r in flat.rows(view) if r["variant"] == "default"]
    assert (row["verdict"], row["verdict_withheld"]) == ("inconclusive", said)
    # the recommendation does not compile on a withheld `faster`, and says why
    assert speedups.best([("default", s)]) is None
    assert "withheld" in cells.may_decide([s], 0.05)


def test_a_speed_up_of_another_metric_or_of_processes_apart_has_no_sharing_check():
    eager, default = _pair(_shifted(1.0, 1.2))
    assert speedups.speedup(eager, default).withheld == Verdict.same
    assert speedups.speedup(eager, default, metric=lambda rep: rep.samples_ms).sharing is None
    eager, default = _pair(_shifted(1.0, 1.2), interleave=False)
    assert speedups.speedup(eager, default).sharing is None


def test_variants_that_run_alone_as_they_do_interleaved_say_nothing_and_their_columns_read_near_1():
    same = {v: (loop, loop) for v, (_, loop) in H200.items()}
    eager, default = _pair(same)
    found = sharing.alone_over_interleaved(eager, default)
    assert found.value == pytest.approx(1.0) and not found.changed(0.05)
    view = View([eager, default])
    assert not [n for n in stability.notes(view) if n.startswith("interleaving: ")]
    (row,) = [r for r in flat.rows(view) if r["variant"] == "default"]
    assert row["alone_over_interleaved"] == pytest.approx(1.0)


def test_nothing_is_read_without_shared_processes_or_with_too_few_steady_warm_ups():
    assert sharing.alone_over_interleaved(*_pair(H200, interleave=False)) is None  # a process each: nothing alone
    assert sharing.alone_over_interleaved(*_pair(H200, ended="cap")) is None  # still warming: not the variant alone
    few = {v: (alone[:2], loop[:2]) for v, (alone, loop) in H200.items()}
    assert sharing.alone_over_interleaved(*_pair(few)) is None
    # steady after 4 windows: the last three may still hold its start (SETTLED), so no process reads it alone
    assert sharing.alone_over_interleaved(*_pair(H200, start=(1.3,))) is None
    eager, default = _pair(H200)
    for rep in default.repeats[2:]:
        rep.warmed = Warmed(ended="steady", windows_ms=[3.4, 3.4])
    assert sharing.alone_over_interleaved(eager, default) is None
    (row,) = [r for r in flat.rows(View([eager, default])) if r["variant"] == "default"]
    assert row["alone_over_interleaved"] is None


@pytest.mark.parametrize("n", [3, 5, 7])
def test_noise_between_the_warm_ups_and_the_loop_seldom_reads_as_a_change_and_a_real_one_often_does(n):
    # each process's speed-up alone over interleaved, log-normal: at the H200 recording's spread (10%) and at a host
    # as noisy as the 03:05 lease's (30%) with no effect, a change called is a false note; at 1.19x it is the truth
    rng = random.Random(n)

    def called(effect: float, spread: float, draws: int = 4000) -> float:
        hits = 0
        for _ in range(draws):
            ratios = [effect * math.exp(rng.gauss(0, spread)) for _ in range(n)]
            hits += sharing.of_speedups(ratios, [1.0] * n).changed(0.05)
        return hits / draws

    assert called(1.0, 0.10) <= 0.015
    assert called(1.0, 0.30) <= 0.04
    assert called(1.19, 0.10) >= {3: 0.15, 5: 0.4, 7: 0.6}[n]


def test_a_language_models_verdict_per_token_is_checked_as_its_whole_calls_are():
    """Warm-ups time whole generate() calls alone: where they say sharing the process could undo a verdict, a
    language model's verdict (its time per token) is withheld as a call's would be; its prefill's is not checked."""
    from compilebench.core import generation
    from compilebench.core.generation import GenerateCalls

    eager, default = _pair(_shifted(1.12, 1.0))  # faster only beside eager: alone the two are alike
    for r in (eager, default):
        r.case = dataclasses.replace(r.case, model="smollm2-135m", prompt_len=16, new_tokens=8)
        for rep in r.repeats:
            per_token = statistics.median(rep.samples_ms) / 10
            rep.generation = GenerateCalls(new_tokens=8, batch_size=1, prompt_len=16, ttft_ms=[1.0] * 3,
                                           per_token_ms=[per_token] * 3)
        r.derive()
    s = speedups.speedup(eager, default, metric=generation.PER_TOKEN)
    assert s.sharing is not None and s.withheld == Verdict.faster and s.verdict == Verdict.inconclusive
    (note,) = [n for n in stability.notes(View([eager, default])) if n.startswith("undecided: ")]
    assert ": per token 1.12x" in note and "its interval said faster, withheld: timed alone" in note
    assert speedups.speedup(eager, default, metric=generation.TTFT).sharing is None
