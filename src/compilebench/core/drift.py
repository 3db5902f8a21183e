"""Run-to-run drift: how far the mean of one case moves between runs on one machine (other tenants, clocks,
memory placement), which no interval of a single run holds. A speed-up between results measured in different runs
is called faster or slower only beyond it as well as beyond its interval; one run that alternates what it compares
lets drift fall on both sides alike and needs none of this.

A run is one command's plan: each repeat records the run that measured it. Results written before runs were
recorded say nothing of theirs."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from compilebench.core.result import Result

# Used where the results hold too little history to estimate drift. Measured on this project's 2-core VM: the same
# eager ResNet-50 read 35-51 ms in six runs minutes apart; a quiet GPU node drifts less: let your file tell it.
DEFAULT = 0.25
# The same for one cold compile of a case against another (one a run: no interval of its own). Measured on this
# project's 2-core VM: the quick suite's three cold compiles read 18-23% less in a run at 05:24 than at 03:05 the same
# night, same code and torch (2026-11-29); on H200 leases days apart, 13-43%.
COMPILE_DEFAULT = 0.25
MIN_PAIRS = 3  # pairs of runs of one case on one machine needed to estimate drift instead of assuming it


@dataclass(frozen=True)
class Drift:
    value: float  # the fraction by which a case's mean may move between runs
    source: str  # how it was learnt, in words a table note can say

    def describe(self) -> str:
        return f"±{self.value:.0%} ({self.source})"


def runs(r: Result) -> set[str]:
    """The runs that measured it, where recorded (core/run.py)."""
    return r.run_ids


def across_runs(a: Result, b: Result, unknown: bool) -> bool:
    """Whether two results were measured in different runs. `unknown`: the answer where either does not say
    (results written before runs were recorded), which the caller knows best (two files: different runs)."""
    if a.result_id == b.result_id:
        return False
    ra, rb = runs(a), runs(b)
    if not ra or not rb:
        return unknown
    return not ra & rb


def estimate(results: list[Result], figure: Callable[[Result], float | None] = lambda r: r.mean,
             default: float = DEFAULT, under_test: Iterable[Result] = ()) -> Drift:
    """The largest move of a case's figure (its mean; or its compile seconds, with COMPILE_DEFAULT) between two runs
    on one machine that these results hold (every result, not only the newest), where they hold at least MIN_PAIRS
    such pairs; else the default. `under_test`: results a verdict asks about (a gate's candidate), left out: a move
    to one of them is what is asked, not drift (counted in, a 29% slowdown after steady runs was its own 29% drift,
    and no gate could see it)."""
    asked = {r.result_id for r in under_test}
    by_case: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        if figure(r) and runs(r) and r.result_id not in asked:
            by_case.setdefault((r.case_key, r.machine_id), []).append(r)
    moves = []
    for series in by_case.values():
        series.sort(key=lambda r: r.created_at)
        moves += [abs(math.log(figure(b) / figure(a))) for a, b in zip(series, series[1:]) if across_runs(a, b, True)]
    if len(moves) < MIN_PAIRS:
        return Drift(default, f"the default: these results hold {len(moves)} pair(s) of runs of one case on one "
                              f"machine, {MIN_PAIRS} are needed to estimate it")
    return Drift(math.exp(max(moves)) - 1, f"the largest of {len(moves)} moves between runs of one case on one "
                                           "machine in these results")
