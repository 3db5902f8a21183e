"""The timed worker's cores: once its model is compiled, the processes it started (inductor's compile workers, which
stay behind idle, and one of which kept a core busy through every compiled timed loop on an H200) are moved, every
thread of theirs, to the cores the run's own processes keep to (run/devices.set_aside), so nothing of the run shares
a core with the timed loop. A machine with no cores to spare names none: nothing moves."""

from __future__ import annotations

import os

HOUSE_ENV = "COMPILEBENCH_HOUSE_CPUS"  # as run/devices.py sets it
PROC = "/proc"


def set_aside(proc: str = PROC) -> int:
    """Moves this process's descendants to the housekeeping cores; returns how many processes it moved."""
    named = os.environ.get(HOUSE_ENV)
    if not named:
        return 0
    house = {int(c) for c in named.split(",")}
    return sum(move(pid, house, proc) for pid in descendants(os.getpid(), proc))


def move(pid: int, cpus: set[int], proc: str = PROC) -> bool:
    """Keeps a process, every thread of it, to these cores; False where it ended meanwhile or is not ours to move."""
    try:
        for thread in os.listdir(f"{proc}/{pid}/task"):
            os.sched_setaffinity(int(thread), cpus)
    except (OSError, ValueError):
        return False
    return True


def descendants(pid: int, proc: str = PROC) -> list[int]:
    """Every process below `pid`, from each process's parent in /proc/PID/stat."""
    parents: dict[int, list[int]] = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(parent, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        out += children
        todo += children
    return out


def cpu_s(pid: int, proc: str = PROC) -> float | None:
    """The CPU seconds (user and system) a process has used so far; None where it ended meanwhile."""
    try:
        with open(f"{proc}/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def descendants_cpu_s(pid: int | None = None, proc: str = PROC) -> tuple[int, float]:
    """How many processes run below `pid` (this one), and the CPU seconds they have used so far: a worker's helpers
    (inductor's compile pool: compile_fx wakes it at every compile of a graph on a GPU, one loaded from its cache
    included) run on the housekeeping cores, whose ticks the worker's CPU share never reads."""
    kids = descendants(os.getpid() if pid is None else pid, proc)
    return len(kids), sum(used for kid in kids if (used := cpu_s(kid, proc)) is not None)
