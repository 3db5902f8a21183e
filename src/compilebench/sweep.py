"""The driver loop: skip finished cases, run the rest one at a time, store each result the moment it arrives."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import signal
from dataclasses import dataclass, field

from tqdm import tqdm

from compilebench import zoo
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


def run(spec: RunSpec, store: Store, executor, *, env: dict, machine_id: str, quiet: bool = False) -> SweepOutcome:
    cases = spec.cases()
    finished = set() if spec.rerun else store.finished_keys(machine_id)
    todo = [c for c in cases if c.key() not in finished]
    outcome = SweepOutcome(skipped=len(cases) - len(todo))
    bar = tqdm(total=len(todo), disable=quiet, unit="case", dynamic_ncols=True)
    try:
        for group in _groups(todo) if spec.interleave else [[c] for c in todo]:
            bar.set_description(" + ".join(c.describe() for c in group))
            results = executor.run_group(group, spec.timing, lambda phase: bar.set_postfix_str(phase))
            for case, result in zip(group, results):
                if not result.machine_id:  # made by the driver (timeout, crash) or failed before reading its env
                    result.env, result.machine_id = env, machine_id
                if not result.label:
                    entry = zoo.get(case.model, case.task)
                    result.label, result.task = entry.label, entry.task
                with _sigint_deferred():  # a Ctrl-C now waits until the result is committed
                    store.add(result.to_dict())
                outcome.results.append(result)
                bar.update(1)
                if result.status != "ok" and not quiet:
                    bar.write(f"{case.describe()}: {result.status}: {result.message}", file=sys.stderr)
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
