"""The results file as a file: where one may be made (check_path, asked before anything is measured), opening it
whole for a run or read-only for a report, its schema (made, checked, refused when newer, migrated when older) and
what SQLite's refusals mean for the user, in one line each. The Store (store.py) runs its queries on what this
opens.

A schema-1 file (one process per result) is read as one repeat per result (upgrade_v1), and migrated in place
when a run adds to it. WAL mode and a busy timeout let several processes write one file at once."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
import time

from compilebench.core.errors import EnvironmentFailure, SchemaError, UserError
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
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


def open_for_run(conn: sqlite3.Connection, path: str, new: bool) -> int:
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
        schema = check_schema(conn, path)
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


def refusal(path: str, exc: sqlite3.DatabaseError) -> Exception:
    """What SQLite's refusal to open a file means for the user, in one line."""
    text = _one_line(str(exc))
    if "disk is full" in text or "disk full" in text or ("disk I/O error" in text and paths.why_full(
            paths.nearest_folder(os.path.dirname(os.path.abspath(path))))):
        return EnvironmentFailure(f"cannot open the results file {path!r}: the disk is full ({text}); free some space "
                                  "and run the same command again")
    if "locked" in text or "busy" in text:
        return EnvironmentFailure(f"the results file {path!r} stayed locked by another program for over "
                                  f"{BUSY_TIMEOUT_S:g} s ({text}); run the same command again when it is free")
    if "malformed" in text or "corrupt" in text:
        return UserError(_damaged(path, text))
    return UserError(f"{path!r} is not a compilebench results file ({text})")


def open_read_only(path: str) -> sqlite3.Connection:
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
    if write and (full := paths.why_full(paths.nearest_folder(os.path.dirname(os.path.abspath(path))))):
        raise UserError(f"cannot write results file {path!r}: {full}; free some space or give a --db on another disk")
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


def check_schema(conn: sqlite3.Connection, path: str) -> int:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise  # the disk or a lock, not the file: refusal says which
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


def upgrade_v1(d: dict) -> dict:
    """A result written by schema 1 (one process, its samples at the top) as one repeat of a schema-2 result."""
    repeat_fields = {f.name for f in dataclasses.fields(Repeat)}
    rep = {k: d[k] for k in repeat_fields if k in d and k not in ("index", "process", "flags", "extra", "stats")}
    rep["compile_cache"] = "cold" if d.get("compile_cache", "cold") == "cold" else (
        "warm" if d.get("compile_cache") == "warm" else "dir")
    repeat = Repeat(index=1, process=d["result_id"], **rep)
    repeat.set_samples([round(s * 1e6) for s in d.get("samples_ms") or []])
    keep = {f.name for f in dataclasses.fields(Result)} | {"case_key"}
    top = {k: v for k, v in d.items() if k in keep and k not in ("repeats", "status", "stats", "message")}
    return Result.from_dict({**top, "repeats": [repeat.to_dict()]}).to_dict()
