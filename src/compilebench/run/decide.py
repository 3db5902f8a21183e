"""Repeats until decided: which comparisons of a run are still undecided after its planned rounds, and the rounds
that measure them more. A comparison is a compiled case against its eager twin on the same target, and (--env) a
case under each later environment against the same case under the first. One still `inconclusive` gets rounds
up to the design's next look (core/sequential.looks: two more at a time, up to --max-repeats); its verdict is read
at the widened confidence of its look (core/sequential.confidence), so a false verdict over all looks stays within 5%.
The rounds of every undecided model are interleaved, as the planned ones are."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

from compilebench.core import pairing, speedups
from compilebench.core.case import Case
from compilebench.core.result import Result
from compilebench.core.run import MAX_REPEATS, TIME_BUDGET  # why a run stopped short of a verdict
from compilebench.core.spec import RunSpec
from compilebench.core.speedups import Speedup
from compilebench.core.vocab import Verdict
from compilebench.run.dispatch import Target, Unit
from compilebench.run.schedule import block_seed, blocks, within_round

# Extra rounds take at most 3x as long as the planned ones took, unless --extra-time says: enough for a one-pair
# run to reach the cap (3 -> 11 processes is 8 more per 3 planned, 2.67x, and the estimate needs a margin); with
# less such runs stopped short and a known 10% effect went undecided (benchmarks/decide.py known).
EXTRA_SHARE = 3.0


@dataclass(frozen=True)
class Side:
    case: Case
    target: Target
    group: int  # the sweep's group (the cases measured in one process) that measures it

    @property
    def key(self) -> tuple[str, str]:
        return self.case.key(), self.target.resume_id


@dataclass(frozen=True)
class Comparison:
    base: Side  # eager, or the first environment's
    other: Side

    @property
    def keys(self) -> tuple:
        return self.base.key, self.other.key

    def describe(self) -> str:
        if self.base.case.environment != self.other.case.environment:
            return f"{self.other.case.describe()} against {self.base.case.environment}"
        return self.other.case.describe()


def comparisons(groups: list[list[Case]], targets: list[Target], first_environment: str | None) -> list[Comparison]:
    """Every comparison a run's verdicts are about, among the cases it measures."""
    sides = {}
    for gi, group in enumerate(groups):
        for target in targets:
            for case in group:
                if target.takes(case):
                    sides[(case.key(), target.placement)] = Side(case, target, gi)
    out = []
    for (key, placement), side in sides.items():
        if side.case.variant.compiled:  # against its eager twin, as every report reads it (core/pairing.py)
            base = sides.get((pairing.key(side.case), placement))
            if base is not None:
                out.append(Comparison(base, side))
        if first_environment is not None and side.case.environment != first_environment:
            base = sides.get((dataclasses.replace(side.case, environment=first_environment).key(), placement))
            if base is not None:
                out.append(Comparison(base, side))
    return out


@dataclass(frozen=True)
class Open:
    """A comparison still undecided: its speed-up and the processes its sides have had."""

    comparison: Comparison
    speedup: Speedup
    repeats: int

    def describe(self, more: int) -> str:
        low, high = self.speedup.improvement_interval
        return (f"{self.comparison.describe()}: {low:+.0f}% to {high:+.0f}% after {self.repeats}, "
                f"measuring {more} more")


def undecided(found: list[Comparison], stored: dict[tuple[str, str], Result], min_effect: float) -> list[Open]:
    """The comparisons whose verdict is still inconclusive (both sides measured, with an interval or not)."""
    out = []
    for c in found:
        base, other = stored.get(c.base.key), stored.get(c.other.key)
        s = speedups.speedup(base, other, min_effect)
        if s is not None and s.verdict == Verdict.inconclusive:
            out.append(Open(c, s, max(max(r.index for r in base.repeats), max(r.index for r in other.repeats))))
    return out


def next_look(looks: list[int], repeats: int) -> int | None:
    """The processes per case at the design's next look after `repeats`; None at the cap."""
    return next((n for n in looks if n > repeats), None)


def rounds(wanted: dict[tuple[int, int], tuple[int, int]], groups: list[list[Case]], targets: list[Target],
           block_of: dict[int, int]) -> list[Unit]:
    """The units of the extra rounds: `wanted` maps (group, target index) to the repeats it gets (first, last).
    Round-major (round i of every undecided model, then round i + 1), each round in an order drawn as the planned
    rounds' are (schedule.within_round)."""
    first, last = min((a for a, _ in wanted.values()), default=1), max((b for _, b in wanted.values()), default=0)
    seeds = {b: block_seed(groups, block) for b, block in enumerate(blocks(groups))}
    units = []
    for i in range(first, last + 1):
        for b in sorted({block_of[gi] for gi, _ in wanted}):
            mine = sorted((gt for gt in wanted if block_of[gt[0]] == b), key=lambda gt: (gt[1], gt[0]))
            units += [Unit(targets[t], tuple(c for c in groups[gi] if targets[t].takes(c)), i, gi)
                      for gi, t in within_round(mine, i, seeds[b]) if wanted[(gi, t)][0] <= i <= wanted[(gi, t)][1]]
    return units


class Rounds:
    """A run's extra rounds, look by look: which comparisons get more, up to the design's next look, within the
    time budget (--extra-time, by default EXTRA_SHARE of the time the planned rounds took; each batch's time is
    estimated from the run's mean unit so far, and a comparison whose rounds would not fit is ended). A resume
    that measured nothing planned has no time for extra rounds unless --extra-time gives it."""

    def __init__(self, spec: RunSpec, groups: list[list[Case]], targets: list[Target]):
        self.spec, self.groups, self.targets = spec, groups, targets
        self.comparisons = comparisons(groups, targets, spec.environments[0].name if spec.environments else None)
        self.block_of = {gi: b for b, block in enumerate(blocks(groups)) for gi in block}
        self.since: float | None = None  # when the extra rounds began
        self.budget = 0.0

    def next(self, stored: dict[tuple[str, str], Result], started: float,
             delivered: int) -> tuple[list[Unit], list[str], list[tuple[Open, str]]]:
        """The units of the next batch of rounds, a progress line for each comparison they measure, and the
        comparisons ended undecided with why. `started`: when the run began (time.monotonic); `delivered`: the
        units it has measured."""
        now = time.monotonic()
        if self.since is None:
            self.since = now
            self.budget = self.spec.extra_time_s or EXTRA_SHARE * (now - started)
        per_unit = (now - started) / max(1, delivered)
        wanted: dict[tuple[int, int], tuple[int, int]] = {}  # (group, target index) -> its extra repeats
        told, ended = [], []
        for o in undecided(self.comparisons, stored, self.spec.min_effect):
            upto = next_look(self.spec.looks, o.repeats)
            if upto is None:
                ended.append((o, MAX_REPEATS))
                continue
            mine = dict(wanted)
            for side in (o.comparison.base, o.comparison.other):
                start = 1 + max(r.index for r in stored[side.key].repeats)
                where = (side.group, self.targets.index(side.target))
                first, last = mine.get(where, (start, upto))
                if start <= upto:
                    mine[where] = (min(first, start), max(last, upto))
            if now - self.since + per_unit * sum(b - a + 1 for a, b in mine.values()) >= self.budget:
                ended.append((o, TIME_BUDGET))
                continue
            wanted = mine
            told.append(o.describe(upto - o.repeats))
        return rounds(wanted, self.groups, self.targets, self.block_of), told, ended
