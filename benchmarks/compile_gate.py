"""How often `check --history` fails on compile seconds that did not change, and how often on a step that is real.
Prints figures; asserts nothing (issue 62: a CI gate that holds where users run it). Measures nothing: each history
is made of results written by hand, as a results file would hold them.

A history is `--runs` runs of three models, each run one eager and one compiled case (three processes, latency
±1.5%), the compiled case's cold compile drawn uniformly within ±`noise` of 30 s (one cold compile a run: the quick
suite's moved 2-21% between runs of one night on this project's VM, 13-43% between H200 leases), and from the newest
two runs on multiplied by `step`. Printed per (noise, step): the histories of `--histories` whose gate failed on a
compile series, and the compile series failed of all. Then, nothing changed, a fifth as many histories of `--runs`
+ 2 runs, gated at every run from the fourth as a nightly CI gate is: those that failed at some look (goal: none
where nothing changed); and with a step from the fourth newest run, gated at each of its runs: those failed by its
second, third and fourth run.

Usage: python benchmarks/compile_gate.py [--histories 100] [--runs 10] [--seed 1]
"""

from __future__ import annotations

import argparse
import datetime
import random
import uuid

from compilebench.core import stats
from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.core.variant import Variant
from compilebench.report import history

CPU = Environment.from_dict({"device": "cpu", "device_name": "AMD EPYC 7B13", "cpu": "AMD EPYC 7B13",
                             "torch_threads": 2, "torch": "2.13.0+cpu", "hostname": "laptop"})
CASES = [("resnet-50", "eager"), ("resnet-50", "default"), ("vit", "eager"), ("vit", "default"), ("detr", "eager"),
         ("detr", "default")]


def result(i: int, model: str, mode: str, ms: float, compile_s: float | None) -> Result:
    """Case model/mode as run i measured it: three processes, the run's own id and day."""
    at = (datetime.datetime(2026, 11, 1) + datetime.timedelta(days=i)).isoformat()
    run = Run(run_id=f"run{i}", tag=f"commit{i}", started=at)
    repeats = []
    for k, m in enumerate([ms / 1.01, ms, ms * 1.01]):
        rep = Repeat(index=k + 1, status="ok", compile_s=compile_s, compile_cache="cold" if k == 0 else "warm",
                     process=uuid.uuid4().hex, run=run.run_id, environment=CPU, created_at=at)
        rep.samples_ms = [m * f for f in (0.99, 1.0, 1.01)]
        rep.stats = stats.summarize(rep.samples_ms)
        repeats.append(rep)
    r = Result(Case(model, 1, Variant.named(mode), device="cpu"), repeats, machine_id="laptop", label=model,
               runs=(run,))
    r.created_at = at
    return r


def history_of(rnd: random.Random, runs: int, noise: float, step: float = 1.0, step_from: int | None = None) -> list:
    """`runs` runs of the three models, each compiled case's cold compile within ±`noise` of 30 s, multiplied by
    `step` from run `step_from` on."""
    results = []
    for i in range(1, runs + 1):
        moved = step if step_from is not None and i >= step_from else 1.0
        for model, mode in CASES:
            compile_s = 30.0 * rnd.uniform(1 - noise, 1 + noise) * moved if mode != "eager" else None
            results.append(result(i, model, mode, (40.0 if mode == "eager" else 20.0) * rnd.uniform(0.985, 1.015),
                                  compile_s))
    return results


def failed(rnd: random.Random, runs: int, noise: float, step: float) -> int:
    """The compile series one history's gate fails."""
    gated = history.gate(history_of(rnd, runs, noise, step, runs - 1), 0.05, 0.05, 0.15)
    return sum(1 for s, _, bad in gated if bad and s.metric == history.COMPILE)


def failed_looks(rnd: random.Random, runs: int, noise: float) -> int:
    """Nothing changed, and the gate looks at every run from the fourth, as a CI gate on each night does: the looks
    that failed (on any series: compile, latency or speed-up). A step left undecided stays open until a look decides
    it (history.open_step), so noise has every look to fail a gate in, not only the one that first saw the step."""
    results = history_of(rnd, runs, noise)
    return sum(1 for n in range(4, runs + 1)
               if any(bad for _, _, bad in history.gate(results[:n * len(CASES)], 0.05, 0.05, 0.15)))


def caught_at(rnd: random.Random, runs: int, noise: float, step: float) -> int | None:
    """A step from run `runs` - 3 on, gated at every run from its second, as a nightly gate is: the step's run (2, 3
    or 4) whose look failed first on its compile series, None where none did."""
    results = history_of(rnd, runs, noise, step, runs - 3)
    for k in (2, 3, 4):
        gated = history.gate(results[:(runs - 4 + k) * len(CASES)], 0.05, 0.05, 0.15)
        if any(bad and s.metric == history.COMPILE for s, _, bad in gated):
            return k
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--histories", type=int, default=100)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    for noise, step in ((0.2, 1.0), (0.1, 1.0), (0.2, 1.5), (0.1, 1.3), (0.2, 1.3)):
        per = [failed(rnd, args.runs, noise, step) for _ in range(args.histories)]
        goal = "  (goal: 0)" if step == 1.0 else ""
        print(f"compile ±{noise:.0%}, newest two runs x{step}: the gate failed {sum(1 for n in per if n)} of "
              f"{args.histories} histories on compile, {sum(per)} of {3 * args.histories} series{goal}", flush=True)
    nights = args.histories // 5
    for noise in (0.2, 0.1):
        per = [failed_looks(rnd, args.runs + 2, noise) for _ in range(nights)]
        print(f"compile ±{noise:.0%}, nothing changed, a look at every run 4 to {args.runs + 2}: the gate failed "
              f"{sum(1 for n in per if n)} of {nights} histories at some look, {sum(per)} of "
              f"{nights * (args.runs - 1)} looks  (goal: 0)", flush=True)
    for noise, step in ((0.2, 1.5), (0.2, 1.3), (0.1, 1.3)):
        at = [caught_at(rnd, args.runs + 2, noise, step) for _ in range(nights)]
        print(f"compile ±{noise:.0%}, a x{step} step gated at every run: failed by its second run in "
              f"{sum(1 for k in at if k and k <= 2)}, third {sum(1 for k in at if k and k <= 3)}, fourth "
              f"{sum(1 for k in at if k)} of {nights} histories", flush=True)


if __name__ == "__main__":
    main()
