"""Repeats another run on the same results file was measuring when this run came to them. The sweep leaves them to
it, then waits for them, so that a run (and `compilebench.benchmark()`) reports every result of its cases, whoever
measured them; a repeat whose holder stopped without storing it (interrupted, or dead) is handed back to be
measured here."""

from __future__ import annotations

import time
from typing import Callable

from compilebench.core.case import Case
from compilebench.run.dispatch import Unit
from compilebench.storage.store import Store

INTERVAL_S = 1.0  # how often the claims are read again: SQLite tells no one when a row goes


def pause(seconds: float) -> None:
    time.sleep(seconds)


def wait(store: Store, held: list[tuple[Unit, Case]], done: Callable[[int], Callable], note: Callable[[str], None]) -> list[Unit]:
    """Block until no live process holds any of these repeats (unit, case); return the units, each with the cases
    whose repeats their holders let go without storing. done(repeat)(stored result): whether that result has it."""
    back: list[tuple[Unit, Case]] = []
    told: set[tuple[str, int]] = set()
    while held:
        waiting: list[tuple[Unit, Case]] = []
        for unit, case in held:
            holder = store.holder(case.key(), unit.target.resume_id, unit.repeat)
            if holder is not None:
                waiting.append((unit, case))
                if (holder.host, holder.pid) not in told:
                    told.add((holder.host, holder.pid))
                    note(f"waiting for pid {holder.pid} on {holder.host}, another run measuring {case.describe()} "
                         f"repeat {unit.repeat}, to report it with this run's (Ctrl-C stops waiting; that run stores it)")
            else:  # a claim goes in the transaction that stores its repeat: what is not stored now was let go
                stored = store.latest(case.key(), unit.target.resume_id)
                if stored is None or not done(unit.repeat)(stored):
                    back.append((unit, case))
        held = waiting
        if held:
            pause(INTERVAL_S)
    return _units(back)


def _units(pairs: list[tuple[Unit, Case]]) -> list[Unit]:
    """The units again, each with only the cases handed back, in their first order."""
    units: dict[int, tuple[Unit, list[Case]]] = {}  # by identity: a unit's target holds a dict, so no hash
    for unit, case in pairs:
        units.setdefault(id(unit), (unit, []))[1].append(case)
    return [Unit(u.target, tuple(cs), u.repeat, u.group) for u, cs in units.values()]
