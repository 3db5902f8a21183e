"""The results store: one SQLite file, one transaction per repeat, written the moment a repeat arrives; it returns
typed Results. Opening the file whole, its schema and its migrations are schema.py's.

Each result (a case on one machine, with every repeat) is kept whole as JSON (raw samples included) beside a few
indexed columns. Several processes may write one file at once.

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

from compilebench.core.case import Case
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.storage import schema


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

    # -- results ------------------------------------------------------------------------------------------------

    def add(self, result: Result) -> bool:
        """Store a whole result in its own transaction (merging files, tests). One already present with the same
        result_id is not added twice; returns whether it was new."""
        with self._transaction():
            cur = self._conn.execute("INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                     _row(result))
        return cur.rowcount == 1

    def add_repeat(self, result: Result) -> Result:
        """A result holding the repeat(s) just measured: merged into the stored result of the same result_id (a
        repeat at the same index replaces a failed earlier attempt), its claims released, in one transaction.
        Returns the stored result as it now stands."""
        with self._transaction():
            row = self._conn.execute("SELECT data FROM results WHERE result_id = ?", (result.result_id,)).fetchone()
            if row is None:
                merged = result
            else:
                merged = Result.from_dict(json.loads(row[0]))
                for rep in result.repeats:
                    merged.add(rep)
                merged.env = merged.env or result.env
                merged.flops = merged.flops if merged.flops is not None else result.flops
            self._conn.execute("INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _row(merged))
            resume_id = result.placement or result.machine_id
            for rep in result.repeats:
                self._conn.execute("DELETE FROM claims WHERE case_key = ? AND resume_id = ? AND repeat = ?",
                                   (merged.case_key, resume_id, rep.index))
        return merged

    def results(self) -> list[Result]:
        """Every result, oldest first: the one place a stored result is read back from its JSON."""
        rows = self._conn.execute("SELECT data FROM results ORDER BY created_at, rowid")
        return [self._result(r[0]) for r in rows]

    def count(self) -> int:
        return self._conn.execute("SELECT COUNT(*) FROM results").fetchone()[0]

    def latest(self, case_key: str, resume_id: str) -> Result | None:
        """The newest result of a case measured here (this machine, or a Ray sweep's target)."""
        row = self._conn.execute(
            "SELECT data FROM results WHERE case_key = ? AND (machine_id = ? OR json_extract(data, '$.placement') = ?) "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1", (case_key, resume_id, resume_id)).fetchone()
        return None if row is None else self._result(row[0])

    def tags(self) -> list[str]:
        """The runs the file holds, by their tags, oldest first (results stored without one are left out)."""
        rows = self._conn.execute(
            "SELECT json_extract(r.value, '$.tag') AS tag, MIN(results.created_at) AS first FROM results, "
            "json_each(results.data, '$.repeats') AS r WHERE tag IS NOT NULL GROUP BY tag ORDER BY first").fetchall()
        return [tag for tag, _ in rows]

    def eager_flops(self, case: Case, resume_id: str) -> int | None:
        """The FLOPs the case's eager twin (same model and settings, uncompiled) has stored here: compiling does not
        change the math of one eager forward."""
        twin = self.latest(case.eager_key(), resume_id)
        return twin.flops if twin else None

    def _result(self, data: str) -> Result:
        d = json.loads(data)
        return Result.from_dict(schema.upgrade_v1(d) if self.schema == 1 else d)

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


def _row(result: Result) -> tuple:
    """The results table's columns: what queries select by, then the whole result as JSON."""
    c = result.case
    return (result.result_id, result.case_key, result.machine_id, result.status, result.created_at, c.model,
            c.batch_size, c.variant.mode, result.stats.mean, json.dumps(result.to_dict()))


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


