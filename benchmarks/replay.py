"""Replays recorded results under each estimator and design: how many rounds each needed to decide, how wide its
interval was, and how often it called a variant faster or slower than itself. Prints figures; asserts nothing
(issue 62). Measures nothing: the processes a results file recorded keep the states they ran in.

For every comparison a file holds (a compiled case against its eager twin of the same run; a case under a later
--env environment against the first's), and each way of reading it:

- estimator: the one figure taken from each process's timed calls: its mean (the guide's), its median, or its
  10% trimmed mean;
- design: how its looks are read: unpaired (Welch) or paired by round from the 3rd or the 5th round, each look's
  confidence from the spending function by the union bound (as compilebench 0.2 read it) or by the group-sequential
  boundaries (core/sequential.look_confidences); and one that reads each process's variants alone, from their
  warm-ups' last windows (core/sharing.py) instead of their loops: in an interleaved process, how the variants
  timed back to back in one process, in the process's order, would have decided;

it walks the design's looks (the run's own, or --looks) over the rounds recorded, in order, and stops at the first
decided verdict (faster, slower or same within the minimum effect), as a run does. Printed per comparison: the
verdict and the rounds it took, the interval and its half-width (the smallest effect it could tell from none);
and, per variant, an A/A false-verdict rate: `--resamples` pairs of sides drawn from that one variant's processes
(each side a random order of them, without replacement, so no side holds a process twice), each walked through
the same looks, a `faster` or `slower` between them counted false.

An interleaved file's (--interleave) rounds are its processes, each holding both variants: paired from the 3rd
round, that is the product's own reading of it (paired by process at every look); unpaired, the same processes read
as if each variant had had its own.

Usage: python benchmarks/replay.py RESULTS [RESULTS ...] [--looks 3,5,7,9,11] [--resamples 100] [--min-effect 0.05]
       [--only "median, pair from 3"]
RESULTS: results files, or folders of them (each file read on its own).
"""

from __future__ import annotations

import argparse
import glob
import math
import os
import random
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np
from _runs import TREE

sys.path.insert(0, os.path.join(TREE, "src"))

from compilebench.core import sequential, sharing, stats  # noqa: E402
from compilebench.core.vocab import Verdict  # noqa: E402
from compilebench.report import data  # noqa: E402

ESTIMATORS: dict[str, Callable] = {
    "mean": lambda x: float(np.mean(x)),
    "median": lambda x: float(np.median(x)),
    "trimmed": lambda x: float(np.mean(np.sort(x)[len(x) // 10: len(x) - len(x) // 10])),
}


def union_bound(design: list[int], n: int) -> float:
    """compilebench 0.2's confidence of a look: 1 minus the alpha it spends, the looks' shares added (union bound)."""
    k = max(0, sum(1 for x in design if x <= n) - 1)
    before = sequential.spent(design[k - 1] / design[-1]) if k else 0.0
    return 1 - (sequential.spent(design[k] / design[-1]) - before)


def exact(design: list[int], n: int) -> float:
    return sequential.confidence(design, n)


@dataclass(frozen=True)
class Design:
    name: str
    estimator: str
    pair_from: int | None  # None: never paired
    confidence: Callable[[list[int], int], float]


DESIGNS = [
    Design("0.2: mean, pair from 5, union bound", "mean", 5, union_bound),
    Design("mean, pair from 3", "mean", 3, exact),
    Design("trimmed, pair from 3", "trimmed", 3, exact),
    Design("median, unpaired", "median", None, exact),
    Design("median, pair from 5", "median", 5, exact),
    Design("median, pair from 3", "median", 3, exact),
    # each variant alone in the process (its warm-up's last windows: core/sharing.py), not the interleaved loop
    Design("alone (warm-ups), pair from 3", "alone", 3, exact),
]


@dataclass
class Reading:
    verdict: Verdict
    rounds: int
    value: float
    low: float | None
    high: float | None


def walk(base: list[float], other: list[float], looks: list[int], design: Design, min_effect: float) -> Reading | None:
    """The looks of a design over per-round figures (base[i] and other[i]: round i), stopping at the first decided
    verdict; the last look's reading where none decided. None: not even the first look's rounds."""
    reading = None
    for n in looks:
        if n > min(len(base), len(other)):
            break
        pair = design.pair_from is not None and n >= design.pair_from
        value, low, high = stats.speedup(base[:n], other[:n], pair=pair, confidence=design.confidence(looks, n))
        reading = Reading(Verdict.of(low, high, min_effect), n, value, low, high)
        if reading.verdict != Verdict.inconclusive:
            break
    return reading


def comparisons(results) -> list[tuple[str, object, object]]:
    """(what, base, other) for every compiled case against its eager twin and every later --env against the first,
    within one run of one file."""
    by_key = {}
    for r in results:
        by_key.setdefault((r.machine_id, r.case.key()), []).append(r)
    out = []
    for r in results:
        if r.case.variant.against_eager:
            base = next((b for b in by_key.get((r.machine_id, r.eager_key), []) if b.run_ids & r.run_ids), None)
            if base is not None:
                out.append((f"{r.case.model} b{r.case.batch_size} {r.case.variant.label}", base, r))
    envs = sorted({r.case.environment for r in results if r.case.environment})
    for r in results:
        if r.case.environment and r.case.environment != envs[0]:
            first = [b for b in results if b.case.environment == envs[0] and b.case.key() ==
                     r.case.key().replace(f'"environment":"{r.case.environment}"', f'"environment":"{envs[0]}"')]
            if first:
                out.append((f"{r.case.model} b{r.case.batch_size} {r.case.variant.label}: {r.case.environment} "
                            f"against {envs[0]}", first[0], r))
    return out


def per_round(r, estimator: str) -> dict[tuple[str, int], float]:
    measured = [rep for rep in r.repeats if rep.status in ("ok", "invalid", "mismatch") and rep.samples_ms]
    if estimator == "alone":  # each variant's calls back to back, in the process's order, before the loop
        return {(rep.run, rep.index): f for rep in measured if (f := sharing.alone(rep)) is not None}
    return {(rep.run, rep.index): ESTIMATORS[estimator](np.asarray(rep.samples_ms)) for rep in measured}


def aa(pool: list[float], looks: list[int], design: Design, min_effect: float, rng: random.Random, k: int) -> int:
    """False verdicts in k A/A pairs drawn from one variant's processes."""
    false = 0
    for _ in range(k):
        a, b = rng.sample(pool, len(pool)), rng.sample(pool, len(pool))
        got = walk(a, b, looks, design, min_effect)
        false += got is not None and got.verdict in (Verdict.faster, Verdict.slower)
    return false


def files(paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        out += sorted(glob.glob(os.path.join(p, "*.db"))) if os.path.isdir(p) else [p]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="+")
    ap.add_argument("--looks", help="the processes at each look (default: each run's own design; a fixed run: 3, 5, "
                                    "... up to its rounds)")
    ap.add_argument("--resamples", type=int, default=100)
    ap.add_argument("--min-effect", type=float, default=stats.DEFAULT_MIN_EFFECT)
    ap.add_argument("--only", help="one design's name")
    args = ap.parse_args()
    designs = [d for d in DESIGNS if not args.only or d.name == args.only]
    rng = random.Random(0)
    totals: dict[str, Counter] = {d.name: Counter() for d in designs}
    for path in files(args.results):
        results = data.load([path])
        for what, base, other in comparisons(results):
            rounds = sorted(set(per_round(base, "mean")) & set(per_round(other, "mean")))
            design_looks = ([int(x) for x in args.looks.split(",")] if args.looks else
                            base.design if len(base.design or []) > 1 else sequential.looks(3, len(rounds)))
            print(f"\n{os.path.basename(path)}: {what}: {len(rounds)} rounds, looks at {design_looks}")
            for d in designs:
                b, o = per_round(base, d.estimator), per_round(other, d.estimator)
                had = [k for k in rounds if k in b and k in o]  # alone: the rounds whose warm-ups were long enough
                got = walk([b[k] for k in had], [o[k] for k in had], design_looks, d, args.min_effect)
                false = sum(aa(list(side.values()), design_looks, d, args.min_effect, rng, args.resamples // 2)
                            for side in (b, o))
                t = totals[d.name]
                t["comparisons"] += 1
                t["false"] += false
                t["resamples"] += 2 * (args.resamples // 2)
                if got is None:
                    print(f"  {d.name:38s} fewer rounds than the first look")
                    continue
                decided = got.verdict != Verdict.inconclusive
                t["decided"] += decided
                t["rounds"] += got.rounds
                reach = sequential.reach(got.low, got.high)
                t["reach"] += math.log1p(reach) if reach is not None else 0
                span = f"[{got.low:.3f}-{got.high:.3f}] ±{reach:.1%}" if got.low else "[-]"
                print(f"  {d.name:38s} {str(got.verdict):12s} at {got.rounds:2d} rounds  {got.value:.3f}x {span:24s}"
                      f"A/A false {false}/{2 * (args.resamples // 2)}")
    print("\nover every comparison:")
    for name, t in totals.items():
        if t["comparisons"]:
            print(f"  {name:38s} decided {t['decided']}/{t['comparisons']}, mean rounds "
                  f"{t['rounds'] / t['comparisons']:.1f}, geometric mean half-width "
                  f"±{math.expm1(t['reach'] / t['comparisons']):.1%}, A/A false {t['false']}/{t['resamples']}")


if __name__ == "__main__":
    main()
