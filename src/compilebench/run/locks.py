"""One benchmark per device per machine: an OS-level lock per device, held while a case runs on it, whichever
run or results file the case belongs to.

A CPU case holds `cpu` alone. A GPU case holds its GPU alone and `cpu` shared: GPU cases on different GPUs may
run together (each records how many CPU cores it had), but never beside a CPU case, which needs every core.
The locks are flock(2) locks on files in one folder per machine: the kernel releases them when their holder
dies, so a lock held by a dead process is simply taken over. Beside each lock, a holder writes who it is, so a
waiting run can say whom it waits for."""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import re
import sys
import tempfile
import threading
from typing import Callable

from compilebench.core.environment import is_cuda


def lock_dir() -> str:
    """Shared by every user of the machine (sticky, world-writable, like /tmp itself)."""
    path = os.environ.get("COMPILEBENCH_LOCK_DIR") or os.path.join(tempfile.gettempdir(), "compilebench-locks")
    if not os.path.isdir(path):
        os.makedirs(path, exist_ok=True)
        with contextlib.suppress(PermissionError):
            os.chmod(path, 0o1777)
    return path


def names_for(device: str, gpu_id: str | None = None) -> list[tuple[str, bool]]:
    """The locks a case on `device` holds, as (name, exclusive). `gpu_id` names the physical GPU (its UUID) where
    the device index alone would not (CUDA_VISIBLE_DEVICES renumbers devices per process)."""
    if not is_cuda(device):
        return [("cpu", True)]
    gpu = gpu_id or device.replace(":", "-")
    return [("cpu", False), (re.sub(r"[^A-Za-z0-9._-]", "_", gpu), True)]


def _holders(folder: str) -> list[str]:
    """Who holds a lock, as its holders wrote it (live processes only)."""
    out = []
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            pid = int(name.split("-")[0])
            os.kill(pid, 0)
            with open(os.path.join(folder, name)) as f:
                out.append(f.read().strip())
        except (ValueError, ProcessLookupError, OSError):
            continue
    return out


@contextlib.contextmanager
def hold(names: list[tuple[str, bool]], what: str, on_wait: Callable[[str], None] = lambda m: print(m, file=sys.stderr)):
    """Hold every named lock (in a fixed order, so two runs never wait on each other in a circle). Where one is
    taken, say once whom this run waits for, then block until it is free (no polling)."""
    base = lock_dir()
    fds, notes = [], []
    try:
        for name, exclusive in sorted(names):
            path = os.path.join(base, name + ".lock")
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
            fds.append(fd)
            with contextlib.suppress(PermissionError):
                os.fchmod(fd, 0o666)
            mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
            except BlockingIOError:
                holders = _holders(path + ".d")
                by = "; ".join(holders) if holders else "another process"
                on_wait(f"waiting for {name}: {by}")
                fcntl.flock(fd, mode)  # blocks until the holder releases it or dies
            folder = path + ".d"
            os.makedirs(folder, exist_ok=True)
            with contextlib.suppress(PermissionError):
                os.chmod(folder, 0o1777)
            note = os.path.join(folder, f"{os.getpid()}-{threading.get_ident()}")  # slot threads share a pid
            with open(note, "w") as f:
                since = datetime.datetime.now().strftime("%H:%M")
                f.write(f"run by pid {os.getpid()} since {since} ({what})")
            notes.append(note)
        yield
    finally:
        for note in notes:
            with contextlib.suppress(OSError):
                os.remove(note)
        for fd in reversed(fds):
            # unlocked, then closed: a process forked while it was held (a library's helper) shares the open file,
            # and closing this descriptor alone would leave the lock held until that process exits
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
