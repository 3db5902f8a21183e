"""Which repeats a sweep measures, and in what order: the cases measured together in one process (one, or an
interleaved model's variants), what each target still needs (resume: a stored repeat is kept, a crashed one tried
again), and the units in the order they run, with the compiler-state folder each group's repeats share.

Order: in rounds across the whole run: repeat 1 of every case, then repeat 2 of every case, and so on. Within a
round, a model and batch size's variants (under every environment, --env) run one after the other, in an order
drawn afresh for each odd round and reversed in the even one after it (within_round); and each case's processes
spread over the
run's whole length, so a change of the machine's state during the run lands in every case's interval instead of
in one case's mean."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from compilebench.core.case import Case
from compilebench.core.result import Result
from compilebench.core.spec import RunSpec
from compilebench.core.vocab import FAILED, RETRIED, RETRIED_ON_REQUEST
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
                    units.append(Unit(targets[t], tuple(todo), i, gi))
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
