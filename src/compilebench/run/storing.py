"""What a sweep writes into the results file, each write whole or not at all: a repeat just measured, as the result
it joins (with Ctrl-C held off; where the file cannot take it, saved beside it for the next run), the run's record
(as it starts, decides and ends), and what an earlier run measured but could not store."""

from __future__ import annotations

import sqlite3
import sys

from compilebench.core.case import Case
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.run.dispatch import Target
from compilebench.storage import interrupts, legacy, unsaved
from compilebench.storage.store import Store


class StoreFailed(Exception):
    """The results file could not take a result (disk full, locked by another program, damaged)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def as_result(case: Case, rep: Repeat, target: Target, run_: Run, store: Store,
              labels: dict[str, tuple[str, str]], result_id: str) -> Result:
    """A repeat just measured, as the result it joins: its run; its environment where the worker never read its
    own (a timeout, a crash: the target's); its FLOPs, where its process counted none, its eager twin's."""
    rep.run = run_.run_id
    if not rep.environment:
        rep.environment = target.env
    if rep.flops is None:
        rep.flops = store.eager_flops(case, target.resume_id)
    label, task = labels.get(case.model, (case.model, case.task or ""))
    return Result(case, [rep], machine_id=rep.environment.machine_id, placement=target.placement, label=label,
                  task=task, result_id=result_id)


def keep_run(store: Store, run_: Run) -> None:
    """The run's record into the results file (as it starts, decides and ends)."""
    try:
        store.add_run(run_)
    except (sqlite3.Error, OSError) as exc:
        raise StoreFailed(f"cannot write to the results file {store.path!r} ({exc})") from exc


def store_repeat(store: Store, result: Result) -> Result:
    """One repeat into the results file, Ctrl-C held off meanwhile; where the file cannot take it, the result is
    saved beside it (or in the temporary folder) and the sweep stops with one line that says where."""
    with interrupts.signals_deferred():
        try:
            return store.add_repeat(result)
        except (sqlite3.Error, OSError) as exc:
            saved = unsaved.save(store.path, result.to_dict())
            where = f"saved to {saved}; the next run stores it" if saved else "it could not be saved anywhere: " \
                                                                              "its numbers are in the lines above"
            if not saved:
                print(result.to_dict(), file=sys.stderr)
            raise StoreFailed(f"cannot write to the results file {store.path!r} ({exc}): the result just measured was "
                              f"{where}") from exc


def recover_unsaved(store: Store) -> int:
    """Results an earlier run measured but could not store: stored now, then their files removed."""
    n = 0
    for path, d in unsaved.load(store.path):
        if "env" in d:  # saved by a compilebench of schema 2: its runs' facts are on its repeats
            d = legacy.upgrade_v2(d, {})
        store.add_repeat(Result.from_dict(d))
        unsaved.forget(path)
        n += 1
    return n
