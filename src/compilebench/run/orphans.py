"""Results a killed run's workers finished but the run never stored. Each job folder (in the temporary folder)
holds the job, with its driver's claim (the results file, the driver's process, each case's result id), and the
result once the worker wrote it whole. The next run on the same results file stores such a result, as the dead
driver would have, unless the repeat was measured again meanwhile, and removes the folders dead drivers left."""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import tempfile

from compilebench.core.case import Case
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.run import executors
from compilebench.run.dispatch import Unit
from compilebench.storage.store import Store, process_started


def claim(store: Store, unit: Unit, result_ids: dict[str, str], run_id: str,
          labels: dict[str, tuple[str, str]]) -> dict:
    """What a job folder must say for a later run to store its result as this driver would: written with the job.
    result_ids: each case's key -> the result its repeat joins; labels: each model's row label and task."""
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
            cases = Job.from_dict(job).cases
        except (OSError, ValueError, KeyError, TypeError):  # the worker never finished: nothing of it to keep
            repeats, cases = [], []
        try:
            for case, rep in zip(cases, repeats):
                taken += _store(store, case, rep, job["claim"], job["repeat"], done)
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


def _store(store: Store, case: Case, rep: Repeat, mine: dict, repeat: int, done) -> int:
    """A repeat a dead driver's worker measured, stored as that driver would have (its run, its eager twin's
    FLOPs), unless measured again since."""
    key, rid = case.key(), mine["resume_id"]
    if key not in mine["cases"]:
        return 0
    stored = store.latest(key, rid)
    if stored is not None and done(repeat)(stored):
        return 0  # measured again since, by a run that found the claim dead
    result_id, claimed, label, task = (mine["cases"][key] + [case.model, ""])[:4]
    case = Case.from_dict(claimed)
    rep.run = mine.get("run")
    if rep.flops is None:  # as the driver would: its eager twin's count
        rep.flops = store.eager_flops(case, rid)
    store.add_repeat(Result(case, [rep], machine_id=rep.environment.machine_id if rep.environment else rid,
                            placement=mine["placement"], label=label, task=task, result_id=result_id))
    return 1
