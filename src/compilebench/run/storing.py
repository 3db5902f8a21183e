"""Every result into the results file once, whoever measured it, each write whole or not at all.

- This run's writes: a repeat just measured, as the result it joins (with Ctrl-C held off), and the run's record
  (as it starts, decides and ends).
- What the file could not take (a full disk, a lock held too long): kept as JSON files beside it (else in the
  temporary folder), so that no finished result is ever lost; the next run on that file takes them in.
- What a killed run left: each job folder (in the temporary folder) holds the job, with its driver's claim (the
  results file, the driver's process, each case's result id), and the result once the worker wrote it whole. The
  next run on the same results file stores such a result, as the dead driver would have, unless the repeat was
  measured again meanwhile, and removes the folders dead drivers left.
- What a live run holds: repeats another run on the same results file was measuring when this run came to them.
  The sweep leaves them to it, then waits for them, so that a run (and `compilebench.benchmark()`) reports every
  result of its cases, whoever measured them; a repeat whose holder stopped without storing it (interrupted, or
  dead) is handed back to be measured here."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
import time
from typing import Callable

from compilebench.core.case import Case
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.run import executors
from compilebench.run.dispatch import Target, Unit
from compilebench.storage import interrupts, legacy
from compilebench.storage.store import Store, process_started


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
            saved = save_beside(store.path, result.to_dict())
            where = f"saved to {saved}; the next run stores it" if saved else "it could not be saved anywhere: " \
                                                                              "its numbers are in the lines above"
            if not saved:
                print(result.to_dict(), file=sys.stderr)
            raise StoreFailed(f"cannot write to the results file {store.path!r} ({exc}): the result just measured was "
                              f"{where}") from exc


def recover_unsaved(store: Store) -> int:
    """Results an earlier run measured but could not store: stored now, then their files removed."""
    n = 0
    for path, d in _saved_beside(store.path):
        if "env" in d:  # saved by a compilebench of schema 2: its runs' facts are on its repeats
            d = legacy.upgrade_v2(d, {})
        store.add_repeat(Result.from_dict(d))
        _forget(path)
        n += 1
    return n


# What the file could not take, kept beside it
def _folders(db_path: str) -> list[str]:
    """Where a result goes when its results file cannot take it: beside the file, else the temporary folder."""
    tag = hashlib.sha1(os.path.abspath(db_path).encode()).hexdigest()[:12]
    return [db_path + ".unsaved", os.path.join(tempfile.gettempdir(), f"compilebench-unsaved-{tag}")]


def save_beside(db_path: str, result: dict) -> str | None:
    """Keep a result the results file could not take; returns where (None: nowhere could be written)."""
    name = f"{result['result_id']}-{time.time_ns()}.json"
    for folder in _folders(db_path):
        path = os.path.join(folder, name)
        made = not os.path.isdir(folder)
        try:
            os.makedirs(folder, exist_ok=True)
            with open(path + ".tmp", "w") as f:
                json.dump(result, f)
            os.replace(path + ".tmp", path)
            return path
        except OSError:
            with contextlib.suppress(OSError):
                os.remove(path + ".tmp")
            if made:  # a folder this made and could not fill goes too: nothing empty is left beside the file
                with contextlib.suppress(OSError):
                    os.rmdir(folder)
    return None


def _saved_beside(db_path: str) -> list[tuple[str, dict]]:
    out = []
    for folder in _folders(db_path):
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.endswith(".json"):
                with open(os.path.join(folder, name)) as f:
                    out.append((os.path.join(folder, name), json.load(f)))
    return out


def _forget(path: str) -> None:
    os.remove(path)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(path))  # the folder goes with its last file


# What a killed run left
def claim(store: Store, unit: Unit, result_ids: dict[str, str], run_id: str,
          labels: dict[str, tuple[str, str]]) -> dict:
    """What a job folder must say for a later run to store its result as this driver would: written with the job,
    its cases in the job's order (the order its worker returns their repeats in). result_ids: each case's key -> the
    result its repeat joins (the job's cases have one each); labels: each model's row label and task."""
    pid = os.getpid()
    return {"db": os.path.realpath(store.path), "host": socket.gethostname(), "pid": pid,
            "started": process_started(pid), "resume_id": unit.target.resume_id, "placement": unit.target.placement,
            "run": run_id,
            "cases": {c.key(): [result_ids[c.key()], c.to_dict(), *labels.get(c.model, (c.model, c.task or ""))]
                      for c in unit.cases if c.key() in result_ids}}


def take_in(store: Store, done) -> int:
    """Store the results that drivers of this host, now dead, left in job folders for this results file; remove
    those folders. done(repeat)(stored result): whether that result has the repeat already. Returns how many."""
    taken = 0
    for folder, job in _dead_drivers_jobs(os.path.realpath(store.path)):
        mine = os.path.join(os.path.dirname(folder), f".compilebench-taken-{os.getpid()}-{os.path.basename(folder)}")
        try:
            os.rename(folder, mine)  # atomic: of two runs starting together, one takes it
        except OSError:
            continue
        try:
            with open(os.path.join(mine, executors.RESULT_FILE)) as f:
                repeats = [Repeat.from_dict(d) for d in json.load(f)]
            claimed = list(job["claim"]["cases"].items())  # the claim alone: no other field of the job is read
        except (OSError, ValueError, KeyError, TypeError):  # the worker never finished: nothing of it to keep
            repeats, claimed = [], []
        try:
            for (key, what), rep in zip(claimed, repeats):
                taken += _store(store, key, what, rep, job["claim"], job["repeat"], done)
        except BaseException:  # the results file could not take it: left for the next run, as it was
            os.rename(mine, folder)
            raise
        shutil.rmtree(mine, ignore_errors=True)
    return taken


def _dead_drivers_jobs(db: str):
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), executors.JOB_FOLDER + "*")):
        try:
            with open(os.path.join(folder, executors.JOB_FILE)) as f:
                job = json.load(f)
        except (OSError, ValueError):
            continue  # being written, or not ours to judge
        mine = job.get("claim") or {}
        if mine.get("db") == db and mine.get("host") == socket.gethostname() and \
                process_started(mine["pid"]) != mine["started"]:
            yield folder, job


def _store(store: Store, key: str, claimed: list, rep: Repeat, mine: dict, repeat: int, done) -> int:
    """A repeat a dead driver's worker measured, stored as that driver would have (its run, its eager twin's
    FLOPs), unless measured again since. claimed: the claim's [result id, case, label, task] of its case."""
    rid = mine["resume_id"]
    stored = store.latest(key, rid)
    if stored is not None and done(repeat)(stored):
        return 0  # measured again since, by a run that found the claim dead
    result_id, case_dict, label, task = (claimed + [None, ""])[:4]
    case = Case.from_dict(case_dict)
    label = label or case.model
    rep.run = mine.get("run")
    if rep.flops is None:  # as the driver would: its eager twin's count
        rep.flops = store.eager_flops(case, rid)
    store.add_repeat(Result(case, [rep], machine_id=rep.environment.machine_id if rep.environment else rid,
                            placement=mine["placement"], label=label, task=task, result_id=result_id))
    return 1


# What a live run holds
INTERVAL_S = 1.0  # how often the claims are read again: SQLite tells no one when a row goes


def pause(seconds: float) -> None:
    time.sleep(seconds)


def wait_for_holders(store: Store, held: list[tuple[Unit, Case]], done: Callable[[int], Callable], note: Callable[[str], None]) -> list[Unit]:
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
