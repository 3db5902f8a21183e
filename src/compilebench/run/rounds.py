"""A sweep's rounds: the planned ones (which repeats it measures, in what order) and the extra ones that repeats
until decided adds.

Planned: the cases measured together in one process (one, or an interleaved model's variants), what each target
still needs (resume: a stored repeat is kept, a crashed one tried again), and the units in the order they run,
with the compiler-state folder each group's repeats share. In rounds across the whole run: repeat 1 of every case,
then repeat 2 of every case, and so on. Within a round, a model and batch size's variants (under every
environment, --env) run one after the other, in an order drawn afresh for each odd round and reversed in the even
one after it (within_round), and the variants an interleaved process alternates in an order drawn the same way
(in_process); and each case's processes spread over the run's whole length, so a change of the
machine's state during the run lands in every case's interval instead of in one case's mean.

Extra: which comparisons of a run are still undecided after its planned rounds, and the rounds that measure them
more. A comparison is a compiled case against its eager twin on the same target, and (--env) a case under each
later environment against the same case under the first. One still `inconclusive` gets rounds up to the design's
next look (core/sequential.looks: two more at a time, up to --max-repeats); its verdict is read at the widened
confidence of its look (core/sequential.confidence), so a false verdict over all looks stays within 5%. One whose
verdict is withheld because sharing its processes changed the effect (--interleave: core/speedups.py), read from
sharing.FIRM processes or more, gets none: more rounds of the same design would not undo that (read from fewer, it
gets the next look, which a chance reading may not repeat). The extra rounds of every undecided model are
interleaved, as the planned ones are."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import time
from dataclasses import dataclass, field

from compilebench.core import generation, pairing, speedups
from compilebench.core.case import Case
from compilebench.core.result import Result
from compilebench.core.run import MAX_REPEATS, SHARING, TIME_BUDGET  # why a run stopped short of a verdict
from compilebench.core.sharing import FIRM
from compilebench.core.spec import RunSpec
from compilebench.core.speedups import Speedup
from compilebench.core.vocab import FAILED, RETRIED, RETRIED_ON_REQUEST, Verdict
from compilebench.run.dispatch import Target, Unit
from compilebench.storage.store import Store


def retryable(status: str, retry_failed: bool) -> bool:
    return status in RETRIED or (retry_failed and status in RETRIED_ON_REQUEST)


def groups(cases: list[Case], interleave: bool) -> list[list[Case]]:
    """The cases measured in one process: each alone, or (--interleave) the variants of one model, batch size and
    settings together."""
    if not interleave:
        return [[c] for c in cases]
    groups: dict[str, list[Case]] = {}
    for c in cases:
        groups.setdefault(c.eager_key(), []).append(c)
    return list(groups.values())


def blocks(groups: list[list[Case]]) -> list[list[int]]:
    """Group indexes whose repeats alternate: the variants of one model, batch size and settings, under every
    environment (--env)."""
    blocks: dict[str, list[int]] = {}
    for i, g in enumerate(groups):
        blocks.setdefault(g[0].eager_key(environment=None), []).append(i)
    return list(blocks.values())


def within_round(units: list, repeat: int, seed: str = "") -> list:
    """A model's units (its variants, under every environment) in round `repeat`: each odd round in an order drawn
    afresh (from `seed`, the model's, and the round: the same on a resume and on every shard), the even round after
    it in that order reversed. Drawn, so no order lines up with a state of the machine that comes and goes in step
    with the rounds (in a fixed order, an A/A pair of ResNet-50 on this VM read B 8-14% slower than A in 6 rounds
    running, and a run that looked then called the same case `faster` than itself); reversed in pairs, so each
    unit runs first as often as last over every two rounds (a coin alone leaves all of a first look's 3 rounds in
    one order one time in four: replayed on this VM's A/A runs it missed 1.0 more often than reversal did)."""
    pair = (repeat + 1) // 2
    order = list(units)
    random.Random(f"{seed}|{pair}").shuffle(order)
    return order if repeat % 2 else order[::-1]


def in_process(cases: list[Case], repeat: int, seed: str) -> tuple[Case, ...]:
    """The variants an interleaved process measures, in the order it warms them up and alternates their blocks:
    drawn as a round's order is (within_round, from the model's seed and the round), so no variant is always the one
    warmed up first, as the device wakes, or always the one whose block follows the other's. On the H200 of
    2026-11-28 02:50, with eager always first, compiled ResNet-50's loop ran 1.10-1.25x slower than its warm-up in 7
    of 7 processes and eager's did not: with one order, what order does and what sharing does cannot be told apart."""
    if len(cases) < 2:
        return tuple(cases)
    return tuple(within_round(list(cases), repeat, f"{seed}|in process"))


def block_seed(groups: list[list[Case]], block: list[int]) -> str:
    """What a block's order is drawn from: its model, batch size and settings, the same in every run of them."""
    return groups[block[0]][0].eager_key(environment=None)


@dataclass
class Schedule:
    units: list[Unit]
    stored: dict[tuple[str, str], Result]  # (case key, resume id) -> the stored result a repeat continues
    uses: dict[str, int]  # compiler-state folder -> units left that use it
    # (case key, resume id) measured again as a new result: stored under another run's tag (a run of its own)
    new_runs: set[tuple[str, str]] = field(default_factory=set)


def schedule(spec: RunSpec, cases: list[Case], store: Store, targets: list[Target], outcome,
             tag: str | None = None) -> Schedule:
    """Every unit still to measure on each target, in the order they run; `outcome` counts what resume skipped.
    `tag`: this run's; a case stored under another tag is a run of its own, measured again (the same tag resumes)."""
    together = groups(cases, spec.interleave)
    stored: dict[tuple[str, str], Result] = {}
    new_runs: set[tuple[str, str]] = set()
    needed = [_needed(spec, together, store, t, stored, outcome, tag, new_runs) for t in targets]
    units, uses = [], {}
    for i in range(1, spec.repeats + 1):
        for block in blocks(together):
            # environments (targets of their own) alternate, repeat by repeat
            for t, gi in within_round([(t, gi) for t in range(len(targets)) for gi in block], i,
                                      block_seed(together, block)):
                todo = needed[t].get(gi, {}).get(i)
                if todo:
                    units.append(Unit(targets[t], in_process(todo, i, block_seed(together, block)), i, gi))
                    folder = state_name(together[gi], targets[t])
                    uses[folder] = uses.get(folder, 0) + 1
    return Schedule(units, stored, uses, new_runs)


def _needed(spec: RunSpec, groups: list[list[Case]], store: Store, target: Target, stored: dict, outcome,
            tag: str | None, new_runs: set) -> dict[int, dict[int, list[Case]]]:
    """Group -> repeat -> the cases of the group still to measure on the target (those it takes)."""
    needed: dict[int, dict[int, list[Case]]] = {}
    for gi, group in enumerate(groups):
        for case in group:
            if not target.takes(case):
                continue
            latest = None if spec.rerun else store.latest(case.key(), target.resume_id)
            if latest is not None and tag and latest.tag and latest.tag != tag:
                new_runs.add((case.key(), target.resume_id))
                latest = None
            if latest is not None:
                stored[(case.key(), target.resume_id)] = latest
            have = {r.index: r.status for r in (latest.repeats if latest else [])}
            for i in range(1, spec.repeats + 1):
                if i not in have:
                    needed.setdefault(gi, {}).setdefault(i, []).append(case)
                elif retryable(have[i], spec.retry_failed):
                    outcome.retried += 1
                    needed.setdefault(gi, {}).setdefault(i, []).append(case)
                elif have[i] in FAILED:
                    outcome.not_retried += 1
                else:
                    outcome.done_before += 1
    return needed


def state_name(group: list[Case], target: Target) -> str:
    """The compiler-state folder of the cases measured together: the same across runs of one sweep's cases (tune
    measures a configuration again in a later rung, warm)."""
    return hashlib.sha1(f"{target.resume_id}|{'|'.join(c.key() for c in group)}".encode()).hexdigest()[:16]


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
        per = generation.per(self.other.case)
        what = f"{self.other.case.describe()}{',' + per if per else ''}"
        if self.base.case.environment != self.other.case.environment:
            return f"{what} against {self.base.case.environment}"
        return what


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
        s = speedups.speedup(base, other, min_effect, generation.verdict_metric(c.other.case))
        if s is not None and s.verdict == Verdict.inconclusive:
            out.append(Open(c, s, max(max(r.index for r in base.repeats), max(r.index for r in other.repeats))))
    return out


def next_look(looks: list[int], repeats: int) -> int | None:
    """The processes per case at the design's next look after `repeats`; None at the cap."""
    return next((n for n in looks if n > repeats), None)


def extra_units(wanted: dict[tuple[int, int], tuple[int, int]], groups: list[list[Case]], targets: list[Target],
           block_of: dict[int, int]) -> list[Unit]:
    """The units of the extra rounds: `wanted` maps (group, target index) to the repeats it gets (first, last).
    Round-major (round i of every undecided model, then round i + 1), each round in an order drawn as the planned
    rounds' are (within_round)."""
    first, last = min((a for a, _ in wanted.values()), default=1), max((b for _, b in wanted.values()), default=0)
    seeds = {b: block_seed(groups, block) for b, block in enumerate(blocks(groups))}
    units = []
    for i in range(first, last + 1):
        for b in sorted({block_of[gi] for gi, _ in wanted}):
            mine = sorted((gt for gt in wanted if block_of[gt[0]] == b), key=lambda gt: (gt[1], gt[0]))
            units += [Unit(targets[t], in_process([c for c in groups[gi] if targets[t].takes(c)], i, seeds[b]), i, gi)
                      for gi, t in within_round(mine, i, seeds[b]) if wanted[(gi, t)][0] <= i <= wanted[(gi, t)][1]]
    return units


class ExtraRounds:
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
            if o.speedup.withheld is not None and o.speedup.sharing.n >= FIRM:
                ended.append((o, SHARING))  # interleaving changed the effect: more of it would not undo that
                continue
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
        return extra_units(wanted, self.groups, self.targets, self.block_of), told, ended
