"""Where a sweep's cases run, and how many at once: one device of this machine (the default), every listed
local GPU (--gpus), or a Ray cluster (ray_executor). The sweep hands over units of work and gets results back
as each unit finishes; only the sweep writes the store.

A unit is one repeat of one case, or (--interleave) one repeat of the variants of one model measured together,
bound for one target. A target is what one copy of the sweep's matrix runs on: this machine, or one GPU type of
a Ray cluster. Right before a unit runs, the sweep opens it (`open_unit`): it claims it in the results file and
says what job to run with what private compiler state, or that another run has it (None)."""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Callable, Protocol

from compilebench.core.environment import Environment
from compilebench.core.result import Result
from compilebench.core.spec import Case, Job
from compilebench.run import locks
from compilebench.run.executors import Cancelled


@dataclass(frozen=True)
class Target:
    name: str  # in progress lines: "cuda:0", "H100"
    resume_id: str  # results whose machine_id or placement is this count as finished here
    env: dict  # the environment given to a result that came back without one (a timeout, a lost node)
    placement: str = ""  # recorded on each result (Ray: "ray|H100|torch ...|transformers ..."); "" on this machine
    environment: Environment | None = None  # --env: the cases of this environment run here, under its interpreter

    def takes(self, case: Case) -> bool:
        """Whether the case runs on this target: every case, or (--env) those of its environment."""
        return case.environment == (self.environment.name if self.environment else None)


@dataclass(frozen=True)
class Unit:
    target: Target
    cases: tuple[Case, ...]
    repeat: int = 1
    group: int = 0  # the cases measured together share compiler state across their repeats

    def describe(self, repeats: int) -> str:
        what = " + ".join(c.describe() for c in self.cases)
        return f"{what} (repeat {self.repeat}/{repeats})" if repeats > 1 else what


@dataclass
class Work:
    """An opened unit: the job its worker runs, and the environment holding its private compiler state."""

    job: Job
    env: dict[str, str] = field(default_factory=dict)


class Progress(Protocol):
    def started(self, slot: str, unit: Unit) -> None: ...
    def phase(self, slot: str, phase: str) -> None: ...
    def finished(self, slot: str) -> None: ...
    def note(self, message: str) -> None: ...


OpenUnit = Callable[[Unit], "Work | None"]
Deliver = Callable[[Unit, list[Result]], None]


class Dispatcher(Protocol):
    def run(self, units: list[Unit], open_unit: OpenUnit, progress: Progress, deliver: Deliver) -> None:
        """Run every unit that opens, calling deliver(unit, results) in the caller's thread as each finishes. On
        Ctrl-C: stop what is still running (nothing of it is delivered), deliver what had finished, re-raise."""
        ...


Run = Callable[[Job, dict, Callable[[str], None]], list[Result]]


@dataclass
class Slot:
    """One device a case may hold alone: its name, the device the worker sees, the locks that keep every other
    benchmark of this machine off it, the environment that shows the worker that device alone, and how to run a
    job there. run raises Cancelled when cancel() stopped it."""

    name: str
    device: str
    run: Run
    cancel: Callable[[], None] = lambda: None
    locks: list[tuple[str, bool]] = field(default_factory=list)
    # Start what these repeats will need under these environments (None: this interpreter), up front.
    prepare: Callable[[list[int], list[Environment | None]], None] = lambda repeats, environments: None
    env: dict[str, str] = field(default_factory=dict)  # added to each job's environment: CUDA_VISIBLE_DEVICES

    def execute(self, unit: Unit, work: Work, progress: Progress) -> list[Result]:
        job = dataclasses.replace(work.job, cases=[dataclasses.replace(c, device=self.device) for c in work.job.cases])
        progress.started(self.name, unit)
        try:
            with locks.hold(self.locks, unit.describe(job.repeat), on_wait=progress.note):
                return self.run(job, {**work.env, **self.env}, lambda p: progress.phase(self.name, p))
        finally:
            progress.finished(self.name)


class LocalPool:
    """One unit per slot at a time, every slot busy at once. With one slot (the default) the unit runs in the
    caller's thread, so the driver's only activity beside a timed loop is a blocking wait on the worker."""

    def __init__(self, slots: list[Slot]):
        self.slots = slots

    def run(self, units: list[Unit], open_unit: OpenUnit, progress: Progress, deliver: Deliver) -> None:
        for slot in self.slots:
            slot.prepare(sorted({u.repeat for u in units}), list(dict.fromkeys(u.target.environment for u in units)))
        if len(self.slots) == 1:
            slot = self.slots[0]
            for unit in units:
                work = open_unit(unit)
                if work is not None:
                    deliver(unit, slot.execute(unit, work, progress))
        else:
            self._concurrent(units, open_unit, progress, deliver)

    def _concurrent(self, units, open_unit, progress, deliver):
        todo: queue.SimpleQueue = queue.SimpleQueue()
        for unit in units:
            todo.put(unit)
        done: queue.SimpleQueue = queue.SimpleQueue()
        stop = threading.Event()

        def serve(slot: Slot) -> None:
            try:
                while not stop.is_set():
                    try:
                        unit = todo.get_nowait()
                    except queue.Empty:
                        break
                    work = open_unit(unit)
                    if work is not None:
                        done.put((unit, slot.execute(unit, work, progress)))
            except Cancelled:
                pass
            except BaseException as exc:  # a bug in the driver: re-raised in the caller with its traceback
                done.put((None, exc))
            done.put(None)  # this slot takes nothing more

        threads = [threading.Thread(target=serve, args=(s,), name=f"slot {s.name}", daemon=True) for s in self.slots]
        for t in threads:
            t.start()
        idle = 0
        try:
            while idle < len(threads):
                item = done.get()  # blocks: no polling beside the timed loops
                if item is None:
                    idle += 1
                elif isinstance(item[1], BaseException):
                    raise item[1]
                else:
                    deliver(*item)
        finally:  # interrupted or failed: stop every slot, keep what had finished
            stop.set()
            for s in self.slots:
                s.cancel()
            for t in threads:
                t.join(timeout=60)
            while not done.empty():
                item = done.get()
                if item is not None and not isinstance(item[1], BaseException):
                    deliver(*item)


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


def gpu_slot(index: int, executor, uuid: str | None) -> Slot:
    """A slot for one local GPU: the worker sees only it (as cuda:0) and holds its lock."""
    return Slot(f"cuda:{index}", "cuda:0", executor.run, executor.cancel, gpu_lock(index, uuid), executor.start_launchers,
                gpu_env(index, uuid))


def gpu_slots(gpus: list[int], timeout_s: float | None, gpu_ids: dict[int, str] | None = None,
              models: tuple[str, ...] = (), inductor: bool = False,
              gpu_cpus: dict[int, list[int]] | None = None) -> list[Slot]:
    """A slot per listed GPU. Each worker sees only its GPU (as cuda:0), keeps to its share of the CPU cores (those
    local to its GPU, one per physical core: place_cpus), and runs that many threads, compile workers included."""
    from compilebench.run.executors import ProcessExecutor

    gpu_ids = gpu_ids or {}
    shares = place_cpus(gpus, set(os.sched_getaffinity(0)), gpu_cpus or {}) if len(gpus) > 1 else [[]]
    slots = []
    for gpu, cpus in zip(gpus, shares):
        env = {}
        if cpus:
            threads = str(len(cpus))
            env.update(COMPILEBENCH_CPUS=",".join(map(str, cpus)), OMP_NUM_THREADS=threads,
                       TORCHINDUCTOR_COMPILE_THREADS=threads)
        slots.append(gpu_slot(gpu, ProcessExecutor(timeout_s, env=env, models=models, inductor=inductor), gpu_ids.get(gpu)))
    return slots
