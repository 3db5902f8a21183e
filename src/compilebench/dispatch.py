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

from compilebench import locks
from compilebench.executors import Cancelled
from compilebench.result import Result
from compilebench.spec import Case, Job


@dataclass(frozen=True)
class Target:
    name: str  # in progress lines: "cuda:0", "H100"
    resume_id: str  # results whose machine_id or placement is this count as finished here
    env: dict  # the environment given to a result that came back without one (a timeout, a lost node)
    placement: str = ""  # recorded on each result (Ray: "ray|H100|torch ...|transformers ..."); "" on this machine


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
    benchmark of this machine off it, and how to run a job there. run raises Cancelled when cancel() stopped it."""

    name: str
    device: str
    run: Run
    cancel: Callable[[], None] = lambda: None
    locks: list[tuple[str, bool]] = field(default_factory=list)
    prepare: Callable[[list[int]], None] = lambda repeats: None  # start what these repeats will need, up front

    def execute(self, unit: Unit, work: Work, progress: Progress) -> list[Result]:
        job = dataclasses.replace(work.job, cases=[dataclasses.replace(c, device=self.device) for c in work.job.cases])
        progress.started(self.name, unit)
        try:
            with locks.hold(self.locks, unit.describe(job.repeat), on_wait=progress.note):
                return self.run(job, work.env, lambda p: progress.phase(self.name, p))
        finally:
            progress.finished(self.name)


class LocalPool:
    """One unit per slot at a time, every slot busy at once. With one slot (the default) the unit runs in the
    caller's thread, so the driver's only activity beside a timed loop is a blocking wait on the worker."""

    def __init__(self, slots: list[Slot]):
        self.slots = slots

    def run(self, units: list[Unit], open_unit: OpenUnit, progress: Progress, deliver: Deliver) -> None:
        for slot in self.slots:
            slot.prepare([u.repeat for u in units])
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
    """The host's cores in `parts` disjoint, contiguous, near-equal shares (one per GPU), so one case's
    compilation cannot take the cores another case launches its kernels from. Empty shares where there are
    fewer cores than parts."""
    cpus = sorted(cpus)
    size, extra = divmod(len(cpus), parts)
    shares, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        shares.append(cpus[start:end])
        start = end
    return shares


def gpu_slots(gpus: list[int], timeout_s: float | None, gpu_ids: dict[int, str] | None = None,
              models: tuple[str, ...] = (), inductor: bool = False) -> list[Slot]:
    """A slot per listed GPU. Each worker sees only its GPU (as cuda:0), keeps to its share of the CPU cores,
    and runs that many threads, compile workers included. Each slot locks its physical GPU (by UUID where known)."""
    from compilebench.executors import ProcessExecutor

    gpu_ids = gpu_ids or {}
    shares = share_cpus(list(os.sched_getaffinity(0)), len(gpus)) if len(gpus) > 1 else [[]]
    slots = []
    for gpu, cpus in zip(gpus, shares):
        env = {"CUDA_VISIBLE_DEVICES": str(gpu)}
        if cpus:
            threads = str(len(cpus))
            env.update(COMPILEBENCH_CPUS=",".join(map(str, cpus)), OMP_NUM_THREADS=threads,
                       TORCHINDUCTOR_COMPILE_THREADS=threads)
        executor = ProcessExecutor(timeout_s, env=env, models=models, inductor=inductor)
        slots.append(Slot(f"cuda:{gpu}", "cuda:0", executor.run, executor.cancel,
                          locks.names_for(f"cuda:{gpu}", gpu_ids.get(gpu)), executor.start_launchers))
    return slots
