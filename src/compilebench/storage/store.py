"""The results store: one SQLite file, one transaction per repeat, written the moment a repeat arrives.

Each result (a case on one machine, with every repeat) is kept whole as JSON (raw samples included) beside a few
indexed columns. The schema version is recorded; a newer file is refused with an instruction rather than
misread, and a schema-1 file (one process per result) is read as one repeat per result, and migrated in place
when a run adds to it. WAL mode and a busy timeout let several processes write one file at once.

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

from compilebench.core.errors import EnvironmentFailure, SchemaError, UserError
from compilebench.core.result import Result, upgrade_v1
from compilebench.storage import paths

SCHEMA_VERSION = 2
DEFAULT_PATH = os.path.join("compilebench-results", "results.db")
BUSY_TIMEOUT_S = float(os.environ.get("COMPILEBENCH_DB_TIMEOUT", "60"))  # how long a write waits for a lock

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    result_id  TEXT PRIMARY KEY,
    case_key   TEXT NOT NULL,
    machine_id TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    model      TEXT NOT NULL,
    batch_size INTEGER NOT NULL,
    variant    TEXT NOT NULL,
    mean_ms    REAL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_by_case ON results (case_key, machine_id);
"""
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    case_key   TEXT NOT NULL,
    resume_id  TEXT NOT NULL,
    repeat     INTEGER NOT NULL,
    result_id  TEXT NOT NULL,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    started    TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    PRIMARY KEY (case_key, resume_id, repeat)
)
"""


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
        exists = check_path(path, write=write)
        if not exists and not create:
            raise UserError(f"results file {path!r} is empty: it holds no results" if os.path.exists(path)
                            else f"results file {path!r} does not exist")
        if not exists:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            if write:
                conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
                schema = _open_for_run(conn, path, new=not exists)
            else:
                conn = _open_read_only(path)
                schema = _check_schema(conn, path)
        except sqlite3.DatabaseError as exc:
            raise _refusal(path, exc) from None
        return cls(conn, path, schema, write)

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

    def _result(self, data: str) -> Result:
        d = json.loads(data)
        return Result.from_dict(upgrade_v1(d) if self.schema == 1 else d)

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


def _open_for_run(conn: sqlite3.Connection, path: str, new: bool) -> int:
    """Make the schema where the file has none, else check the one it has, in one transaction that a second opener
    waits for (BEGIN IMMEDIATE under the busy timeout): runs starting together on a new file all find it whole.
    Returns the schema version, after checking an existing file whole and migrating an older one."""
    if new:
        _wal(conn)
    conn.execute("BEGIN IMMEDIATE")
    try:
        empty = conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None
        if empty:  # made by this opener: the statements one by one (executescript would commit midway)
            for statement in (*_SCHEMA.split(";"), _CLAIMS):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        schema = _check_schema(conn, path)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    if not empty:
        _check_whole(conn, path)
        if schema < SCHEMA_VERSION:
            _migrate(conn, schema)
            schema = SCHEMA_VERSION
    return schema


def _wal(conn: sqlite3.Connection) -> None:
    """WAL mode for a new file (several processes write one file at once). Switching takes the whole file, which
    SQLite does not wait for: another opener of the same new file may hold it for a moment, so try until the
    busy timeout."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # SQLite's own busy handler sleeps the same way


def _refusal(path: str, exc: sqlite3.DatabaseError) -> Exception:
    """What SQLite's refusal to open a file means for the user, in one line."""
    text = _one_line(str(exc))
    if "disk is full" in text or "disk full" in text:
        return EnvironmentFailure(f"cannot open the results file {path!r}: the disk is full ({text}); free some space "
                                  "and run the same command again")
    if "locked" in text or "busy" in text:
        return EnvironmentFailure(f"the results file {path!r} stayed locked by another program for over "
                                  f"{BUSY_TIMEOUT_S:g} s ({text}); run the same command again when it is free")
    if "malformed" in text or "corrupt" in text:
        return UserError(_damaged(path, text))
    return UserError(f"{path!r} is not a compilebench results file ({text})")


def _open_read_only(path: str) -> sqlite3.Connection:
    """Read without writing anything, beside the file either: a read-only file (or folder) still opens. A file no
    run has open (no -wal or -shm beside it: the last writer to close checkpointed everything into the file) is
    read as immutable, which makes no side files; a run writes a new repeat into its -wal, not into the file, so a
    run starting meanwhile changes nothing a report reads. Where a run has it open, SQLite's read-only mode reads
    the run's -wal too; WAL needs the shared-memory file, and where that cannot be made the file is read as
    immutable (nobody may write it meanwhile, which a read-only file guarantees)."""
    uri = "file:" + os.path.abspath(path).replace("?", "%3f").replace("#", "%23")
    if not any(os.path.exists(path + side) for side in ("-wal", "-shm")):
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, check_same_thread=False)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(f"{uri}?immutable=1", uri=True, check_same_thread=False)


def check_path(path: str, write: bool = True) -> bool:
    """Whether a results file exists there; a UserError where none could be created, or (write) where it
    cannot be written."""
    if os.path.isdir(path):
        raise UserError(f"results file {path!r} is a directory; give a file path such as {DEFAULT_PATH}")
    exists = os.path.exists(path) and os.path.getsize(path) > 0
    if not exists:
        _check_creatable(path)
    elif write:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.access(path, os.W_OK) or not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"results file {path!r} is read-only (or its folder is): a run cannot store results there; "
                            "make it writable or give another --db (`compilebench report` reads it as it is)")
    return exists


def _check_creatable(path: str) -> None:
    """The nearest folder that exists on the path must take a file (paths.py tries it for real)."""
    probe = paths.nearest_folder(os.path.dirname(os.path.abspath(path)))
    why = "not a folder" if not os.path.isdir(probe) else paths.why_not_writable(probe)
    if why:
        raise UserError(f"cannot write results file {path!r}: {probe!r} is not a writable directory ({why})")


def _check_schema(conn: sqlite3.Connection, path: str) -> int:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise  # the disk or a lock, not the file: _refusal says which
        row = None
    if row is None:
        raise UserError(f"{path!r} is not a compilebench results file (no schema version)")
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{path!r} was written by a newer compilebench (schema {version}; this one reads up to "
            f"{SCHEMA_VERSION}): upgrade with `pip install -U compilebench`, or use another --db"
        )
    return version


def _check_whole(conn: sqlite3.Connection, path: str) -> None:
    """A damaged file is refused before a run measures anything it could not store."""
    problems = [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()]
    if problems != ["ok"]:
        raise UserError(_damaged(path, problems[0]))


def _one_line(text: str) -> str:
    """SQLite's text on one line: its lines joined, its '*** in database main ***' headings left out."""
    return "; ".join(line.strip() for line in text.splitlines() if line.strip() and not line.startswith("***"))


def _damaged(path: str, problem: str) -> str:
    problem = _one_line(problem)
    return (f"results file {path!r} is damaged ({problem}): a run cannot store results in it; give another --db, "
            f"or restore a copy (`compilebench report {path}` may still read what is intact)")


def _migrate(conn: sqlite3.Connection, schema: int) -> None:
    """Schema 1 -> 2, in one transaction: each result becomes one repeat; claims get their table."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(_CLAIMS)
        for result_id, data in conn.execute("SELECT result_id, data FROM results").fetchall():
            r = Result.from_dict(upgrade_v1(json.loads(data)))
            conn.execute("UPDATE results SET status = ?, mean_ms = ?, data = ? WHERE result_id = ?",
                         (r.status, r.stats.mean, json.dumps(r.to_dict()), result_id))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
