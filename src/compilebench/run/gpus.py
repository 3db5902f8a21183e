"""This machine's GPUs as slots (--gpus, or the one GPU of a run): each worker sees its GPU alone, as cuda:0, and
is told which GPU that must be (it checks); holds that GPU's lock, by UUID; and keeps to its share of the CPU
cores (those local to its GPU, one per physical core), running that many threads, off the cores the run's own
processes keep to where the machine has cores to spare."""

from __future__ import annotations

import os
from typing import Callable

from compilebench.measure.cores import HOUSE_ENV
from compilebench.run import dispatch, locks


def share_cpus(cpus: list[int], parts: int) -> list[list[int]]:
    """Cores in `parts` disjoint, contiguous, near-equal shares. Empty shares where there are fewer cores than parts."""
    cpus = sorted(cpus)
    size, extra = divmod(len(cpus), parts)
    shares, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        shares.append(cpus[start:end])
        start = end
    return shares


def core_of(cpu: int, root: str = "/sys/devices/system/cpu") -> tuple[int, int]:
    """(socket, core) of a logical CPU: hyperthread siblings share it. Unknown: the CPU is its own core."""
    try:
        with open(f"{root}/cpu{cpu}/topology/physical_package_id") as f:
            package = int(f.read())
        with open(f"{root}/cpu{cpu}/topology/core_id") as f:
            return package, int(f.read())
    except (OSError, ValueError):
        return -1, cpu


def place_cpus(gpus: list[int], allowed: set[int], local: dict[int, list[int]],
               core: Callable[[int], tuple[int, int]] = core_of) -> list[list[int]]:
    """Each GPU's share of the cores: one logical CPU per physical core (a hyperthread sibling of another slot's core
    would share its execution units), taken from the CPUs local to the GPU (its socket: the far socket's cores reach
    it across the interconnect), the cores local to several GPUs split among them. A GPU whose locality is unknown
    shares the cores no GPU is local to (all of them, where nothing is known)."""
    first: dict[tuple[int, int], int] = {}
    for cpu in sorted(allowed):
        first.setdefault(core(cpu), cpu)
    cores = sorted(first.values())
    groups: dict[tuple[int, ...], list[int]] = {}
    for gpu in gpus:
        near = tuple(c for c in cores if c in set(local.get(gpu) or ()))
        groups.setdefault(near, []).append(gpu)
    claimed = {c for near in groups for c in near}
    shares = {}
    for near, members in groups.items():
        pool = list(near) or [c for c in cores if c not in claimed] or cores
        shares.update(zip(members, share_cpus(pool, len(members))))
    return [shares[g] for g in gpus]


# From this many cores a machine has some to spare: the run's own processes (the driver, and the compile workers a
# worker leaves idle after its compile, one of which kept a core busy through every compiled timed loop on an H200)
# keep to the first physical core (an eighth of them on a larger machine), the timed worker to the rest. Below it
# (this project's 2-core VM) every process shares every core, as before.
SPARE_FROM = 4


def set_aside(allowed: set[int], core: Callable[[int], tuple[int, int]] = core_of) -> tuple[list[int], list[int]]:
    """(the cores the run's other processes keep to, the cores left for timed workers): whole physical cores (a
    hyperthread sibling of the timed worker's core shares its execution units), one per eight; none to set aside
    below SPARE_FROM cores."""
    cpus = sorted(allowed)
    if len(cpus) < SPARE_FROM:
        return [], cpus
    cores = list(dict.fromkeys(core(c) for c in cpus))
    aside = set(cores[:max(1, len(cores) // 8)])
    house = [c for c in cpus if core(c) in aside]
    return house, [c for c in cpus if core(c) not in aside]


def cpus_env(cpus: list[int], house: list[int]) -> dict[str, str]:
    """A worker's variables: the cores it keeps to, and where it moves its compile workers."""
    return {"COMPILEBENCH_CPUS": ",".join(map(str, cpus)), HOUSE_ENV: ",".join(map(str, house))} if house else {}


def visible_id(index: int, uuid: str | None, inherited: str | None) -> str:
    """What a worker's CUDA_VISIBLE_DEVICES must say to see exactly the GPU the driver calls `index`: its UUID where
    known; else the entry of the inherited CUDA_VISIBLE_DEVICES at that index (the driver's indices count within
    it: under CUDA_VISIBLE_DEVICES=2,3 its GPU 0 is physical GPU 2)."""
    if uuid:
        return uuid
    entries = [e.strip() for e in (inherited or "").split(",") if e.strip()]
    return entries[index] if index < len(entries) else str(index)


def gpu_env(index: int, uuid: str | None) -> dict[str, str]:
    """The environment that shows a worker one GPU, as cuda:0, and tells it which GPU that must be (it checks)."""
    from compilebench.measure.invariants import EXPECTED_GPU

    env = {"CUDA_VISIBLE_DEVICES": visible_id(index, uuid, os.environ.get("CUDA_VISIBLE_DEVICES"))}
    if uuid:
        env[EXPECTED_GPU] = uuid
    return env


def gpu_lock(index: int, uuid: str | None) -> list[tuple[str, bool]]:
    """The physical GPU's lock: by UUID, or by its entry in the inherited CUDA_VISIBLE_DEVICES where none is known."""
    return locks.names_for("cuda", uuid or "cuda-" + visible_id(index, None, os.environ.get("CUDA_VISIBLE_DEVICES")))


def slot(index: int, executor, uuid: str | None, env: dict[str, str] | None = None) -> dispatch.Slot:
    """A slot for one local GPU: the worker sees only it (as cuda:0) and holds its lock; `env`: more of the worker's
    variables (cpus_env)."""
    return dispatch.Slot(f"cuda:{index}", "cuda:0", executor.run, executor.cancel, gpu_lock(index, uuid),
                         executor.start_launchers, {**gpu_env(index, uuid), **(env or {})})


def one_gpu(index: int, executor, uuid: str | None) -> dispatch.LocalPool:
    """The run's one GPU: its slot, whose worker keeps to the cores the driver does not (set_aside)."""
    house, timed = set_aside(set(os.sched_getaffinity(0)))
    return dispatch.LocalPool([slot(index, executor, uuid, cpus_env(timed, house))], house)


def slots(gpus: list[int], timeout_s: float | None, gpu_ids: dict[int, str] | None = None,
              models: tuple[str, ...] = (), inductor: bool = False,
              gpu_cpus: dict[int, list[int]] | None = None) -> dispatch.LocalPool:
    """A slot per listed GPU. Each worker sees only its GPU (as cuda:0), keeps to its share of the CPU cores left
    once the run's own processes have theirs (set_aside; those local to its GPU, one per physical core:
    place_cpus), and runs that many threads, compile workers included."""
    from compilebench.run.executors import ProcessExecutor

    gpu_ids = gpu_ids or {}
    house, timed = set_aside(set(os.sched_getaffinity(0)))
    shares = place_cpus(gpus, set(timed), gpu_cpus or {}) if len(gpus) > 1 else [[]]
    made = []
    for gpu, cpus in zip(gpus, shares):
        env = {}
        if cpus:
            threads = str(len(cpus))
            env.update(COMPILEBENCH_CPUS=",".join(map(str, cpus)), OMP_NUM_THREADS=threads,
                       TORCHINDUCTOR_COMPILE_THREADS=threads)
        made.append(slot(gpu, ProcessExecutor(timeout_s, env=env, models=models, inductor=inductor), gpu_ids.get(gpu),
                         cpus_env(cpus or timed, house)))
    return dispatch.LocalPool(made, house)
