"""The results store: one SQLite file, one transaction per repeat, written the moment a repeat arrives; it returns
typed Results, each with the runs its repeats name. Opening the file whole, its schema and its migrations are
schema.py's.

Three levels: a run (one invocation: its command, spec, tag, design and timing) is a row of its own, written when
it starts and when it ends or decides something; a result (a case on one machine) is kept as JSON (its case,
identity and every repeat, raw samples and each repeat's environment included) beside a few indexed columns; what
a result shows is derived from its repeats when read, never stored. Several processes may write one file at once.

Claims: before a repeat is measured, the run that will measure it claims it here, so two runs on one file never
measure the same repeat twice. A claim names its process; a claim whose process has died on this host is
released by the next run that meets it."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass

from compilebench.core import pairing
from compilebench.core.case import Case
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.storage import legacy, schema


@dataclass(frozen=True)
class Holder:
    """The process that claimed a repeat."""

    host: str
    pid: int
    claimed_at: float


class Store:
    def __init__(self, conn: sqlite3.Connection, path: str, schema: int, writable: bool):
        self._conn = conn
        self.path = path
        self.schema = schema
        self.writable = writable
        self._lock = threading.Lock()  # the sweep's slot threads claim through this one connection

    @classmethod
    def open(cls, path: str, *, create: bool = True, write: bool = True) -> Store:
        """Open a results file: for a run (write=True; created where missing, checked whole before anything is
        measured, migrated to this schema) or for a report (write=False: read-only, never changed, so a
        read-only file works). A problem with the path or the file is a UserError (exit 2); a full disk or a lock
        held past the timeout is an EnvironmentFailure (exit 1)."""
        exists = schema.check_path(path, write=write)
        if not exists and not create:
            raise UserError(f"results file {path!r} is empty: it holds no results" if os.path.exists(path)
                            else f"results file {path!r} does not exist")
        if not exists:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        conn = None
        try:
            if write:
                conn = sqlite3.connect(path, timeout=schema.BUSY_TIMEOUT_S, isolation_level=None,
                                       check_same_thread=False)
                version = schema.open_for_run(conn, path, new=not exists)
            else:
                conn = schema.open_read_only(path)
                version = schema.check_schema(conn, path)
        except BaseException as exc:
            if conn is not None:  # the last connection to close takes SQLite's -wal and -shm with it
                conn.close()
            if isinstance(exc, sqlite3.DatabaseError):
                raise schema.refusal(path, exc) from None
            raise
        return cls(conn, path, version, write)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- runs ---------------------------------------------------------------------------------------------------

    def add_run(self, run: Run) -> None:
        """A run, stored once as it starts (again, whole, as it ends or decides something)."""
        with self._transaction():
            self._conn.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?)", schema.run_row(run))

    def runs(self) -> dict[str, Run]:
        """Every run the file holds, by id (a file of an older schema read here: the runs its results name)."""
        if self.schema < schema.SCHEMA_VERSION:
            return {run.run_id: run for r in self.results() for run in r.runs}
        return {rid: Run.from_dict(json.loads(data)) for rid, data in
                self._conn.execute("SELECT run_id, data FROM runs ORDER BY started, rowid")}

    def tags(self) -> list[str]:
        """The runs the file holds that measured something, by their tags, oldest first."""
        measured = {rep.run for r in self.results() for rep in r.repeats}
        tags = (run.tag for run in sorted(self.runs().values(), key=lambda x: x.started) if run.run_id in measured)
        return list(dict.fromkeys(t for t in tags if t))

    # -- results ------------------------------------------------------------------------------------------------

    def add(self, result: Result) -> bool:
        """Store a whole result, with the runs it names, in its own transaction (merging files, tests). One already
        present with the same result_id is not added twice (nor a run); returns whether it was new."""
        with self._transaction():
            for run in result.runs:
                self._conn.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?)", schema.run_row(run))
            cur = self._conn.execute("INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                     schema.result_row(result))
        return cur.rowcount == 1

    def add_repeat(self, result: Result) -> Result:
        """A result holding the repeat(s) just measured: merged into the stored result of the same result_id (a
        repeat at the same index replaces a failed earlier attempt), its claims released, in one transaction.
        Returns the stored result as it now stands, with its runs."""
        with self._transaction():
            row = self._conn.execute("SELECT data FROM results WHERE result_id = ?", (result.result_id,)).fetchone()
            if row is None:
                merged = result
            else:
                merged = Result.from_dict(json.loads(row[0]))
                for rep in result.repeats:
                    merged.add(rep)
                merged.label, merged.task = merged.label or result.label, merged.task or result.task
            self._conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                               schema.result_row(merged))
            resume_id = result.placement or result.machine_id
            for rep in result.repeats:
                self._conn.execute("DELETE FROM claims WHERE case_key = ? AND resume_id = ? AND repeat = ?",
                                   (merged.case_key, resume_id, rep.index))
        return self._with_runs(merged)

    def results(self) -> list[Result]:
        """Every result, oldest first, with its runs: the one place stored results are read back from their JSON."""
        rows = [r[0] for r in self._conn.execute("SELECT data FROM results ORDER BY created_at, rowid")]
        if self.schema < schema.SCHEMA_VERSION:  # a report of an older file: read as this schema, never changed
            return legacy.results(rows, self.schema, {})
        runs = self.runs()
        return [Result.from_dict(json.loads(data), runs) for data in rows]

    def count(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def latest(self, case_key: str, resume_id: str) -> Result | None:
        """The newest result of a case measured here (this machine, or a Ray sweep's target), with its runs."""
        if self.schema < schema.SCHEMA_VERSION:
            found = [r for r in self.results() if r.case_key == case_key and resume_id in (r.machine_id, r.placement)]
            return found[-1] if found else None
        row = self._conn.execute(
            "SELECT data FROM results WHERE case_key = ? AND (machine_id = ? OR placement = ?) "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1", (case_key, resume_id, resume_id)).fetchone()
        return None if row is None else self._with_runs(Result.from_dict(json.loads(row[0])))

    def eager_flops(self, case: Case, resume_id: str) -> int | None:
        """The FLOPs the case's eager twin (core/pairing.py) has stored here: compiling does not change the math of
        one eager forward."""
        twin = self.latest(pairing.key(case), resume_id)
        return twin.flops if twin else None

    def _with_runs(self, result: Result) -> Result:
        """The result with the runs its repeats name, read from the runs table."""
        ids = list(dict.fromkeys(rep.run for rep in result.repeats if rep.run))
        if not ids:
            return result
        rows = self._conn.execute(f"SELECT data FROM runs WHERE run_id IN ({','.join('?' * len(ids))})", ids)
        result.runs = tuple(Run.from_dict(json.loads(data)) for (data,) in rows)
        return result

    # -- claims -------------------------------------------------------------------------------------------------

    def claim(self, case_key: str, resume_id: str, repeat: int, result_id: str | None, done) -> tuple[str | None, Holder | None]:
        """Claim one repeat of a case for this process. Returns (result_id to store it under, None) when claimed;
        (None, holder) when a live process holds it; (None, None) when it was stored meanwhile (`done(result)`
        says whether a stored result already has this repeat). `result_id` None: the series this case
        continues, or the one another run has started, or a new one."""
        with self._transaction():
            held = self._holder(case_key, resume_id, repeat)
            if held:
                return None, held
            if result_id is None:
                latest = self.latest(case_key, resume_id)
                if latest is not None and done(latest):
                    return None, None
                other = self._conn.execute("SELECT result_id FROM claims WHERE case_key = ? AND resume_id = ? LIMIT 1",
                                           (case_key, resume_id)).fetchone()
                result_id = latest.result_id if latest else other[0] if other else uuid.uuid4().hex
            self._conn.execute("INSERT INTO claims VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                               (case_key, resume_id, repeat, result_id, socket.gethostname(), os.getpid(),
                                process_started(os.getpid()), time.time()))
        return result_id, None

    def holder(self, case_key: str, resume_id: str, repeat: int) -> Holder | None:
        """The live process that holds a repeat's claim, or None (never claimed, stored, or its claimant died)."""
        with self._transaction():
            return self._holder(case_key, resume_id, repeat)

    def release_claims(self) -> None:
        """Drop every claim of this process (a sweep that ends or is interrupted)."""
        with self._transaction():
            self._conn.execute("DELETE FROM claims WHERE host = ? AND pid = ?", (socket.gethostname(), os.getpid()))

    def _holder(self, case_key: str, resume_id: str, repeat: int) -> Holder | None:
        self._release_dead(case_key, resume_id)
        held = self._conn.execute("SELECT host, pid, claimed_at FROM claims WHERE case_key = ? AND resume_id = ? "
                                  "AND repeat = ?", (case_key, resume_id, repeat)).fetchone()
        return Holder(*held) if held else None

    def _release_dead(self, case_key: str, resume_id: str) -> None:
        host = socket.gethostname()
        for pid, started in self._conn.execute("SELECT pid, started FROM claims WHERE case_key = ? AND resume_id = ? "
                                               "AND host = ?", (case_key, resume_id, host)).fetchall():
            if process_started(pid) != started:  # gone, or its pid reused by another process
                self._conn.execute("DELETE FROM claims WHERE host = ? AND pid = ? AND started = ?", (host, pid, started))

    @contextlib.contextmanager
    def _transaction(self):
        if not self.writable:
            raise RuntimeError("a results file opened for reading was written to")
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")  # take the write lock now: writers queue, never interleave
            try:
                yield
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")


def process_started(pid: int) -> str:
    """When a process started (its /proc start time), so a reused pid is not taken for the claimant; '' if gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)  # no /proc (macOS): alive or not is all we can tell
            return "alive"
        except ProcessLookupError:
            return ""
        except PermissionError:
            return "alive"


