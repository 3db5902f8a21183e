"""Results a results file could not take (a full disk, a lock held too long), kept as JSON files beside it (else in
the temporary folder) so that no finished result is ever lost; the next run on that file takes them in."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time


def _folders(db_path: str) -> list[str]:
    """Where a result goes when its results file cannot take it: beside the file, else the temporary folder."""
    tag = hashlib.sha1(os.path.abspath(db_path).encode()).hexdigest()[:12]
    return [db_path + ".unsaved", os.path.join(tempfile.gettempdir(), f"compilebench-unsaved-{tag}")]


def save(db_path: str, result: dict) -> str | None:
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


def load(db_path: str) -> list[tuple[str, dict]]:
    out = []
    for folder in _folders(db_path):
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
            if name.endswith(".json"):
                with open(os.path.join(folder, name)) as f:
                    out.append((os.path.join(folder, name), json.load(f)))
    return out


def forget(path: str) -> None:
    os.remove(path)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(path))  # the folder goes with its last file
