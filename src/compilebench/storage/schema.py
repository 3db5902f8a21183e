"""The results file as a file: where one may be made (check_path, asked before anything is measured), opening it
whole for a run or read-only for a report, its schema (made, checked, refused when newer, migrated when older) and
what SQLite's refusals mean for the user, in one line each. The Store (store.py) runs its queries on what this
opens.

Schema 3 has three levels: a run (one invocation) stored once in `runs`, a result (a case on one machine) in
`results` holding its repeats, each with its own environment. A file of an older schema (legacy.py) is read as
this one by a report, and migrated in place when a run opens it: under the store's write lock, in one
transaction, a copy of the file as it was kept beside it first. WAL mode and a busy timeout let several processes
write one file at once."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time

from compilebench.core.errors import EnvironmentFailure, SchemaError, UserError
from compilebench.core.run import Run
from compilebench.storage import legacy, paths

SCHEMA_VERSION = 3
DEFAULT_PATH = os.path.join("compilebench-results", "results.db")
BUSY_TIMEOUT_S = float(os.environ.get("COMPILEBENCH_DB_TIMEOUT", "60"))  # how long a write waits for a lock

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id  TEXT PRIMARY KEY,
    started TEXT NOT NULL,
    tag     TEXT,
    data    TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    result_id  TEXT PRIMARY KEY,
    case_key   TEXT NOT NULL,
    machine_id TEXT NOT NULL,
    placement  TEXT NOT NULL,
    created_at TEXT NOT NULL,
    model      TEXT NOT NULL,
    batch_size INTEGER NOT NULL,
    variant    TEXT NOT NULL,
    data       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_by_case ON results (case_key, machine_id);
CREATE INDEX IF NOT EXISTS results_by_placement ON results (case_key, placement);
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
        if empty:  # made by this opener
            _make(conn)
        schema = check_schema(conn, path)
        conn.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        raise
    if not empty:
        _check_whole(conn, path)
        if schema < SCHEMA_VERSION:
            _migrate(conn, path)
            schema = SCHEMA_VERSION
    return schema


def _make(conn: sqlite3.Connection) -> None:
    """This schema's tables, the statements one by one (executescript would commit midway), in the caller's
    transaction."""
    for statement in (*_SCHEMA.split(";"), _CLAIMS):
        if statement.strip():
            conn.execute(statement)
    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))


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
    if not exists:
        _check_creatable(path)
    elif write:
        folder = os.path.dirname(os.path.abspath(path))
        if not os.access(path, os.W_OK) or not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"results file {path!r} is read-only (or its folder is): a run cannot store results there; "
                            "make it writable or give another --db (`compilebench report` reads it as it is)")
    # after the folder is found writable: a read-only file system of a few KiB is read-only, not full
    if write and (full := paths.why_full(paths.nearest_folder(os.path.dirname(os.path.abspath(path))))):
        raise UserError(f"cannot write results file {path!r}: {full}; free some space or give a --db on another disk")
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


def backup_path(path: str, schema: int) -> str:
    """Where a file of an older schema is kept, as it was, when a run migrates it."""
    return f"{path}.schema{schema}.bak"


def _migrate(conn: sqlite3.Connection, path: str) -> None:
    """An older schema to this one, in place, in one transaction under the write lock (a second run opening the
    file waits, then finds it migrated): a copy of the file as it was first, beside it (its tables and indexes,
    written in the same transaction through an attached file), then each result as this schema stores it and the
    runs its repeats name (legacy.py). A migration that fails leaves the file as it was."""
    kept = backup_path(path, check_schema(conn, path))
    if os.path.exists(kept):  # an earlier migration's copy, which failed to finish: the file is still as it was
        os.remove(kept)
    conn.execute("ATTACH DATABASE ? AS kept", (kept,))  # not allowed inside a transaction
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if check_schema(conn, path) < SCHEMA_VERSION:  # another run may have migrated it while this one waited
                _copy(conn)
                _upgrade(conn, check_schema(conn, path))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    finally:
        conn.execute("DETACH DATABASE kept")
    if os.path.exists(kept) and os.path.getsize(kept) == 0:  # migrated by another run meanwhile: nothing to keep
        os.remove(kept)


def _copy(conn: sqlite3.Connection) -> None:
    """The file's tables and indexes, as they are, into the attached file `kept`."""
    made = conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master WHERE sql IS NOT NULL "
                        "ORDER BY type = 'index'").fetchall()
    for kind, name, table, sql in made:
        conn.execute(sql.replace(f"CREATE {kind.upper()} {name}", f"CREATE {kind.upper()} kept.{name}", 1))
        if kind == "table":
            conn.execute(f"INSERT INTO kept.{name} SELECT * FROM main.{name}")


def _upgrade(conn: sqlite3.Connection, schema: int) -> None:
    rows = conn.execute("SELECT data FROM results ORDER BY created_at, rowid").fetchall()
    runs: dict[str, Run] = {}
    results = legacy.results([r[0] for r in rows], schema, runs)
    conn.execute("ALTER TABLE results RENAME TO results_old")
    conn.execute("DROP INDEX IF EXISTS results_by_case")
    _make(conn)
    for run in runs.values():
        conn.execute("INSERT INTO runs VALUES (?, ?, ?, ?)", run_row(run))
    for r in results:
        conn.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", result_row(r))
    conn.execute("DROP TABLE results_old")


def run_row(run: Run) -> tuple:
    """The runs table's columns: what queries select by, then the whole run as JSON."""
    return run.run_id, run.started, run.tag, json.dumps(run.to_dict())


def result_row(result) -> tuple:
    """The results table's columns: what queries select by, then the result as stored (its case, identity and
    repeats) as JSON."""
    c = result.case
    return (result.result_id, result.case_key, result.machine_id, result.placement, result.created_at, c.model,
            c.batch_size, c.variant.mode, json.dumps(result.to_dict()))
