"""The results store: one SQLite file, one transaction per result, written the moment a result arrives.

Each result is kept whole as JSON (raw samples included) beside a few indexed columns. The schema version
is recorded; a newer file is refused with an instruction rather than misread. WAL mode and a busy timeout
let several processes write one file at once."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3

from compilebench.errors import SchemaError, UserError

SCHEMA_VERSION = 1
DEFAULT_PATH = os.path.join("compilebench-results", "results.db")

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


class Store:
    def __init__(self, conn: sqlite3.Connection, path: str):
        self._conn = conn
        self.path = path

    @classmethod
    def open(cls, path: str, *, create: bool = True) -> Store:
        """Open (or create) a results file. Every problem with the path or the file is a UserError."""
        exists = check_path(path)
        if not exists and not create:
            raise UserError(f"results file {path!r} does not exist")
        if not exists:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            conn = sqlite3.connect(path, timeout=60, isolation_level=None)
            if exists:
                _check_schema(conn, path)
            else:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
        except sqlite3.DatabaseError as exc:
            raise UserError(f"{path!r} is not a compilebench results file ({exc})") from None
        return cls(conn, path)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def add(self, result: dict) -> bool:
        """Append one result in its own transaction. A result already present (same result_id, e.g. when
        merging files) is not added twice; returns whether it was new."""
        case = result["case"]
        with self._transaction():
            cur = self._conn.execute(
                "INSERT OR IGNORE INTO results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result["result_id"],
                    result["case_key"],
                    result["machine_id"],
                    result["status"],
                    result["created_at"],
                    case["model"],
                    case["batch_size"],
                    case["variant"]["mode"],
                    (result.get("stats") or {}).get("mean"),
                    json.dumps(result),
                ),
            )
        return cur.rowcount == 1

    def finished_keys(self, resume_id: str) -> set[str]:
        """Case keys that already have a result from this machine (its machine_id), or from a Ray sweep's
        target (its placement): a resumed run skips them."""
        rows = self._conn.execute("SELECT DISTINCT case_key FROM results WHERE machine_id = ? "
                                  "OR json_extract(data, '$.placement') = ?", (resume_id, resume_id))
        return {r[0] for r in rows}

    def results(self) -> list[dict]:
        rows = self._conn.execute("SELECT data FROM results ORDER BY created_at, rowid")
        return [json.loads(r[0]) for r in rows]

    @contextlib.contextmanager
    def _transaction(self):
        self._conn.execute("BEGIN IMMEDIATE")  # take the write lock now: concurrent writers queue, never interleave
        try:
            yield
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")


def check_path(path: str) -> bool:
    """Whether a results file exists there; a UserError where none could be created."""
    if os.path.isdir(path):
        raise UserError(f"results file {path!r} is a directory; give a file path such as {DEFAULT_PATH}")
    exists = os.path.exists(path) and os.path.getsize(path) > 0
    if not exists:
        _check_creatable(path)
    return exists


def _check_creatable(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    probe = parent
    while not os.path.exists(probe):  # the nearest existing ancestor decides whether we may create it
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe) or not os.access(probe, os.W_OK | os.X_OK):
        raise UserError(f"cannot write results file {path!r}: {probe!r} is not a writable directory")


def _check_schema(conn: sqlite3.Connection, path: str) -> None:
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:
        row = None
    if row is None:
        raise UserError(f"{path!r} is not a compilebench results file (no schema version)")
    version = int(row[0])
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"{path!r} was written by a newer compilebench (schema {version}; this one reads up to "
            f"{SCHEMA_VERSION}): upgrade with `pip install -U compilebench`, or use another --db"
        )
