"""Whether this host has room for more of the run's own processes (the launchers of later looks): a core each
beside the driver's, and the memory each holds, of what is available to this process: the kernel's MemAvailable,
and where a memory cgroup limits this process (a container, a Kubernetes pod), what its limit leaves, at every
level of its hierarchy. Unknown memory: no room."""

from __future__ import annotations

import os

# The memory a launcher holds: 315 MB of its own on this project's VM (torch 2.13+cpu, transformers and inductor
# imported, 2026-11-28); a CUDA build maps larger libraries.
LAUNCHER_BYTES = 1 << 30
CGROUP = "/sys/fs/cgroup"
UNLIMITED = 1 << 60  # cgroup v1 says "no limit" with a number near 2**63


def room_for(launchers: int, new: int, cpus: int | None = None, available: int | None = None) -> bool:
    """Whether this many launchers, `new` of them not started yet, can import side by side here: a core each
    beside the driver's (of the cores this process may use), and LAUNCHER_BYTES of the memory available for each
    new one."""
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    available = available_bytes() if available is None else available
    return cpus >= launchers + 1 and available is not None and available >= new * LAUNCHER_BYTES


def available_bytes(proc: str = "/proc", cgroup: str = CGROUP) -> int | None:
    """The memory this process may still take: MemAvailable, or less where a cgroup's limit leaves less."""
    try:
        with open(f"{proc}/meminfo") as f:
            free = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    left = [limit - used for limit, used in _cgroup_limits(proc, cgroup) if limit < UNLIMITED]
    return min([free, *left])


def _cgroup_limits(proc: str, cgroup: str) -> list[tuple[int, int]]:
    """(limit, usage) of this process's memory cgroup and each one above it: v2 (memory.max, memory.current) or v1
    (the memory controller's memory.limit_in_bytes, memory.usage_in_bytes). A level whose files are absent (a
    container sees its own cgroup as the root) or unreadable is skipped."""
    try:
        with open(f"{proc}/self/cgroup") as f:
            lines = [line.strip().split(":", 2) for line in f if line.count(":") >= 2]
    except OSError:
        return []
    out = []
    for _, controllers, path in lines:
        if controllers == "":
            root, files = cgroup, ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            root, files = f"{cgroup}/memory", ("memory.limit_in_bytes", "memory.usage_in_bytes")
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            where = "/".join([root, *parts[:depth]])
            try:
                with open(f"{where}/{files[0]}") as f:
                    limit = f.read().strip()
                with open(f"{where}/{files[1]}") as f:
                    used = int(f.read())
            except (OSError, ValueError):
                continue
            if limit != "max":
                out.append((int(limit), used))
    return out
