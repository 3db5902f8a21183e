"""Where a sweep's cases run, and how many at once: one device of this machine (the default), every listed
local GPU (--gpus), or a Ray cluster (ray_executor). The sweep hands over units of work and gets results back
as each unit finishes; only the sweep writes the store.

A unit is one case, or (--interleave) the variants of one model measured together, bound for one target. A
target is what one copy of the sweep's matrix runs on: this machine, or one GPU type of a Ray cluster."""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
from dataclasses import dataclass
from typing import Callable, Protocol

from compilebench.executors import Cancelled
from compilebench.result import Result
from compilebench.spec import Case, TimingPolicy


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


class Progress(Protocol):
    def started(self, slot: str, unit: Unit) -> None: ...
    def phase(self, slot: str, phase: str) -> None: ...
    def finished(self, slot: str) -> None: ...


Deliver = Callable[[Unit, list[Result]], None]


class Dispatcher(Protocol):
    def run(self, units: list[Unit], policy: TimingPolicy, progress: Progress, deliver: Deliver) -> None:
        """Run every unit, calling deliver(unit, results) in the caller's thread as each unit finishes. On
        Ctrl-C: stop what is still running (nothing of it is delivered), deliver what had finished, re-raise."""
        ...


RunGroup = Callable[[list[Case], TimingPolicy, Callable[[str], None]], list[Result]]


@dataclass
class Slot:
    """One device a case may hold alone: its name, the device the worker sees, and how to run a unit there.
    run_group raises Cancelled when cancel() stopped it."""

    name: str
    device: str
    run_group: RunGroup
    cancel: Callable[[], None] = lambda: None


class LocalPool:
    """One unit per slot at a time, every slot busy at once. With one slot (the default) the unit runs in the
    caller's thread, so the driver's only activity beside a timed loop is a blocking wait on the worker."""

    def __init__(self, slots: list[Slot]):
        self.slots = slots

    def run(self, units: list[Unit], policy: TimingPolicy, progress: Progress, deliver: Deliver) -> None:
        if len(self.slots) == 1:
            slot = self.slots[0]
            for unit in units:
                progress.started(slot.name, unit)
                results = slot.run_group(_on(unit, slot), policy, lambda p: progress.phase(slot.name, p))
                progress.finished(slot.name)
                deliver(unit, results)
        else:
            self._concurrent(units, policy, progress, deliver)

    def _concurrent(self, units, policy, progress, deliver):
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
                    progress.started(slot.name, unit)
                    results = slot.run_group(_on(unit, slot), policy, lambda p: progress.phase(slot.name, p))
                    progress.finished(slot.name)
                    done.put((unit, results))
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


def _on(unit: Unit, slot: Slot) -> list[Case]:
    """The unit's cases on the slot's device: the device index is not part of a case's key."""
    return [dataclasses.replace(c, device=slot.device) for c in unit.cases]


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


def gpu_slots(gpus: list[int], timeout_s: float | None) -> list[Slot]:
    """A slot per listed GPU. Each worker sees only its GPU (as cuda:0), keeps to its share of the CPU cores,
    and runs that many threads, compile workers included."""
    from compilebench.executors import ProcessExecutor

    shares = share_cpus(list(os.sched_getaffinity(0)), len(gpus)) if len(gpus) > 1 else [[]]
    slots = []
    for gpu, cpus in zip(gpus, shares):
        env = {"CUDA_VISIBLE_DEVICES": str(gpu)}
        if cpus:
            threads = str(len(cpus))
            env.update(COMPILEBENCH_CPUS=",".join(map(str, cpus)), OMP_NUM_THREADS=threads,
                       TORCHINDUCTOR_COMPILE_THREADS=threads)
        executor = ProcessExecutor(timeout_s, env=env)
        slots.append(Slot(f"cuda:{gpu}", "cuda:0", executor.run_group, executor.cancel))
    return slots
