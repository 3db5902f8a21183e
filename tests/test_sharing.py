"""Whether sharing a process changed a speed-up (core/sharing.py): each interleaved variant's warm-up, timed alone,
against its timed loop, said in the notes and the CSV where the two disagree beyond the smallest effect."""

import math
import random

import fakeresults as fr
import pytest

from compilebench.core import sharing
from compilebench.core.repeat import Warmed
from compilebench.report import flat, stability
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
    assert view.speedup(eager, default).value == pytest.approx(1.02, abs=0.01)  # what the interleaved loop said
    (note,) = [n for n in stability.notes(view) if n.startswith("interleaving: ")]
    assert f"was {found.value:.2f}x [{found.low:.2f}-{found.high:.2f}] the interleaved one, over 7 processes" in note
    assert "--no-interleave" in note
    (row,) = [r for r in flat.rows(view) if r["variant"] == "default"]
    assert (row["alone_over_interleaved"], row["alone_over_interleaved_ci95_low"],
            row["alone_over_interleaved_ci95_high"]) == (found.value, found.low, found.high)


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
