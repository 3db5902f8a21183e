"""The driver loop: skip finished cases, hand the rest to a dispatcher, store each result the moment it arrives."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import signal
import threading
from dataclasses import dataclass, field

from tqdm import tqdm

from compilebench import envinfo, zoo
from compilebench.dispatch import Dispatcher, Target, Unit
from compilebench.result import Result
from compilebench.spec import Case, RunSpec, Variant
from compilebench.store import Store

# tqdm's monitor thread wakes every few seconds; nothing of ours may run beside a timed loop.
tqdm.monitor_interval = 0


@dataclass
class SweepOutcome:
    results: list[Result] = field(default_factory=list)  # measured in this run
    skipped: int = 0  # finished earlier, resumed past
    interrupted: bool = False


class _Progress:
    """One bar over the whole sweep (tqdm's rate gives the ETA) and, per slot, the case it runs and its phase.
    Updated only when something changes: nothing of ours runs beside a timed loop on a timer."""

    def __init__(self, bar: tqdm):
        self.bar = bar
        self.running: dict[str, tuple[str, str]] = {}
        self.lock = threading.Lock()

    def started(self, slot: str, unit: Unit) -> None:
        self._set(slot, (" + ".join(c.describe() for c in unit.cases), "start"))

    def phase(self, slot: str, phase: str) -> None:
        with self.lock:
            what = self.running.get(slot, ("", ""))[0]
        self._set(slot, (what, phase))

    def finished(self, slot: str) -> None:
        self._set(slot, None)

    def _set(self, slot: str, value: tuple[str, str] | None) -> None:
        with self.lock:
            if value is None:
                self.running.pop(slot, None)
            else:
                self.running[slot] = value
            if len(self.running) == 1:  # one at a time (the default): the case, then its phase
                ((what, phase),) = self.running.values()
                self.bar.set_description(what, refresh=False)
                self.bar.set_postfix_str(phase)
            elif self.running:
                self.bar.set_description(f"{len(self.running)} running", refresh=False)
                self.bar.set_postfix_str(" | ".join(f"{s}: {w} ({p})" for s, (w, p) in sorted(self.running.items())))


def run(spec: RunSpec, store: Store, dispatcher: Dispatcher, targets: list[Target], *, quiet: bool = False) -> SweepOutcome:
    """Every case of the spec on every target, skipping what a target already has; each result stored the
    moment it arrives, by this thread alone."""
    cases = spec.cases()
    units = []
    skipped = 0
    for target in targets:
        finished = set() if spec.rerun else store.finished_keys(target.resume_id)
        todo = [c for c in cases if c.key() not in finished]
        skipped += len(cases) - len(todo)
        units += [Unit(target, tuple(g)) for g in (_groups(todo) if spec.interleave else [[c] for c in todo])]
    outcome = SweepOutcome(skipped=skipped)
    bar = tqdm(total=sum(len(u.cases) for u in units), disable=quiet, unit="case", dynamic_ncols=True)

    def deliver(unit: Unit, results: list[Result]) -> None:
        for case, result in zip(unit.cases, results):
            if not result.machine_id:  # made by the driver (timeout, crash) or failed before reading its env
                result.env, result.machine_id = dict(unit.target.env), envinfo.machine_id(unit.target.env)
            result.placement = unit.target.placement
            if not result.label:
                entry = zoo.get(case.model, case.task)
                result.label, result.task = entry.label, entry.task
            with _sigint_deferred():  # a Ctrl-C now waits until the result is committed
                store.add(result.to_dict())
            outcome.results.append(result)
            bar.update(1)
            if result.status != "ok" and not quiet:
                where = f" on {unit.target.name}" if unit.target.placement else ""  # which GPU type of a cluster
                bar.write(f"{case.describe()}{where}: {result.status}: {result.message}", file=sys.stderr)

    try:
        dispatcher.run(units, spec.timing, _Progress(bar), deliver)
    except KeyboardInterrupt:
        outcome.interrupted = True
    finally:
        bar.close()
    return outcome


def _groups(cases: list[Case]) -> list[list[Case]]:
    """--interleave: the variants of one model, batch size and settings, measured together."""
    groups: dict[str, list[Case]] = {}
    for c in cases:
        groups.setdefault(dataclasses.replace(c, variant=Variant("eager")).key(), []).append(c)
    return list(groups.values())


@contextlib.contextmanager
def _sigint_deferred():
    received = []
    previous = signal.signal(signal.SIGINT, lambda *_: received.append(True))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if received:
            raise KeyboardInterrupt
