"""Whether a file could be made at a path, asked before anything is measured or written: the nearest folder that
exists on the path must take a file, tried for real and removed (permission bits say nothing to root, on /proc or
on a read-only file system)."""

from __future__ import annotations

import os
import tempfile


def nearest_folder(path: str) -> str:
    """The nearest part of the path that exists (a file, where one stands in the way)."""
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    return probe


def why_not_writable(folder: str) -> str | None:
    """None where a file can be made in the folder; else why not, in the system's words."""
    try:
        fd, tried = tempfile.mkstemp(prefix=".compilebench-probe-", dir=folder)
        os.close(fd)
        os.remove(tried)
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
