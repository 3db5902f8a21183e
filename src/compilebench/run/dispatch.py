"""How a sweep hands out its work and gets repeats back: units bound for targets, opened into jobs right before
they run, on slots (one device each) that a dispatcher keeps busy: this machine's pool (one slot, or a slot per
--gpus GPU: run/devices.py), or a Ray cluster (run/ray_cluster.py). Repeats come back as each unit finishes; only the
sweep writes the store.

A unit is one repeat of one case, or (--interleave) one repeat of the variants of one model measured together,
bound for one target. A target is what one copy of the sweep's matrix runs on: this machine, or one GPU type of
a Ray cluster. Right before a unit runs, the sweep opens it (`open_unit`): it claims it in the results file and
says what job to run with what private compiler state, or that another run has it (None)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import threading
from dataclasses import dataclass, field
from typing import Callable, Protocol

from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.interpreter import Interpreter
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat
from compilebench.run import locks
from compilebench.run.executors import Cancelled


@dataclass(frozen=True)
class Target:
    name: str  # in progress lines: "cuda:0", "H100"
    resume_id: str  # results whose machine_id or placement is this count as finished here
    env: Environment  # the environment given to a repeat that came back without one (a timeout, a lost node)
    placement: str = ""  # recorded on each result (Ray: "ray|H100|torch ...|transformers ..."); "" on this machine
    environment: Interpreter | None = None  # --env: the cases of this environment run here, under its interpreter

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
        if self.repeat > repeats:  # an extra round, to decide its verdict
            return f"{what} (repeat {self.repeat}, to decide)"
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
Deliver = Callable[[Unit, Job, list[Repeat]], None]  # a unit, the job it ran, a repeat per case of the job


class Dispatcher(Protocol):
    def run(self, units: list[Unit], open_unit: OpenUnit, progress: Progress, deliver: Deliver) -> None:
        """Run every unit that opens, calling deliver(unit, job, repeats) in the caller's thread as each finishes. On
        Ctrl-C: stop what is still running (nothing of it is delivered), deliver what had finished, re-raise."""
        ...


Run = Callable[[Job, dict, Callable[[str], None]], list[Repeat]]


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
    prepare: Callable[[list[int], list[Interpreter | None]], None] = lambda repeats, environments: None
    env: dict[str, str] = field(default_factory=dict)  # added to each job's environment: CUDA_VISIBLE_DEVICES
    keep_to: Callable[[set[int]], None] = lambda cpus: None  # its prepared launchers onto these cores

    def execute(self, unit: Unit, work: Work, progress: Progress) -> list[Repeat]:
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

    def __init__(self, slots: list[Slot], house: list[int] | None = None):
        self.slots = slots
        self.house = house or []  # the cores the driver keeps to while its slots' workers time (run/devices.set_aside)

    def run(self, units: list[Unit], open_unit: OpenUnit, progress: Progress, deliver: Deliver) -> None:
        # The slots' launchers start before the driver keeps to the house's cores: they import on every core, with
        # nothing timed yet, and the host's room for a later look's launchers (run/room.py) counts every core.
        # Ready, they keep to the house's.
        for slot in self.slots:
            slot.prepare(sorted({u.repeat for u in units}), list(dict.fromkeys(u.target.environment for u in units)))
        for slot in self.slots if self.house else ():
            slot.keep_to(set(self.house))
        with _kept_to(self.house):
            self._run(units, open_unit, progress, deliver)

    def _run(self, units: list[Unit], open_unit: OpenUnit, progress: Progress, deliver: Deliver) -> None:
        if len(self.slots) == 1:
            slot = self.slots[0]
            for unit in units:
                work = open_unit(unit)
                if work is not None:
                    deliver(unit, work.job, slot.execute(unit, work, progress))
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
                        done.put((unit, work.job, slot.execute(unit, work, progress)))
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


@contextlib.contextmanager
def _kept_to(cpus: list[int]):
    """The calling thread (the driver, and the threads it starts meanwhile) on these cores, then back where it was."""
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)
