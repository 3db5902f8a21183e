"""Whether a file could be made at a path, asked before anything is measured or written: the nearest folder that
exists on the path must take a file, tried for real and removed (permission bits say nothing to root, on /proc or
on a read-only file system)."""

from __future__ import annotations

import os
import shutil
import tempfile

# Below this much free space a run is refused before it starts: SQLite's write-ahead log takes about 62 KiB for
# the first claim alone, each stored result its size and about 20 KiB more, and a report's charts a few MiB;
# without the room SQLite says only "disk I/O error".
MIN_FREE_BYTES = 16 * 2**20


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


def why_full(folder: str) -> str | None:
    """None where the folder's disk has room for a run's results and report; else how little it has."""
    try:
        usage = shutil.disk_usage(folder)
    except OSError:
        return None  # a folder the system cannot measure: the write itself says what is wrong
    free = usage.free
    if usage.total == 0 or free >= MIN_FREE_BYTES:  # no size at all: /proc, /sys, not a disk that filled up
        return None
    return f"the disk is full ({free / 2**10:,.0f} KiB free; a run needs at least {MIN_FREE_BYTES // 2**20} MiB)"
