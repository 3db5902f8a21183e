"""--executor ray: each unit of a sweep becomes a Ray task holding one whole GPU (or the CPUs of a CPU case),
optionally pinned to a GPU type, so one sweep runs its matrix on every GPU type of a cluster.

A task runs the unit exactly as this machine would: a fresh worker process (ProcessExecutor), with private
compiler state made on its node (every repeat compiles cold there: a later repeat may land on another node), the
node's device lock, a timeout, and crash capture. It returns the results to the driver, which alone writes the
store. A task whose Ray worker or node dies comes back as a `crashed` result; Ray is told not to retry it.

Ray is optional: `pip install compilebench[ray]`."""

from __future__ import annotations

import dataclasses
import os
import threading
import traceback

from compilebench.core.errors import UserError
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat
from compilebench.measure import compiler_state, fingerprint
from compilebench.run import devices, locks
from compilebench.run.dispatch import Progress, Target, Unit
from compilebench.run.executors import ProcessExecutor, failure

ACCELERATOR_PREFIX = "accelerator_type:"  # Ray's resource label for a node's GPU type
MARKER = -1  # the unit id of the driver's own markers in the event queue (no unit has it): _Running.catch_up
CATCH_UP_S = 10.0  # how long a lost task's result waits for the relay to pass on its events


def _ray():
    try:
        import ray
    except ImportError:
        raise UserError("--executor ray needs Ray, which is not installed: pip install compilebench[ray]") from None
    return ray


def _threads_env(threads: int) -> dict[str, str]:
    """A case keeps to the CPUs its task reserved: Ray counts CPUs but does not pin them."""
    return {"OMP_NUM_THREADS": str(threads), "TORCHINDUCTOR_COMPILE_THREADS": str(threads)}


def task_gpu_uuid() -> str | None:
    """The UUID of the GPU this task's workers see as cuda:0, asked of torch in a short-lived child under the task's
    own CUDA_VISIBLE_DEVICES (devices.probe; the task opens no CUDA context). Ray's GPU id is an index CUDA reads in
    its own order (fastest first by default), not nvidia-smi's PCI order: on a node of mixed GPUs they name
    different boards, and a lock taken by the PCI index would be another GPU's."""
    return devices.probe("cuda:0")["gpu_ids"].get(0)


def run_unit(job: dict, timeout_s: float | None, threads: int, unit_id: int, events) -> list[dict]:
    """The Ray task: one unit in a fresh worker process on this node; phases go to the driver through `events`."""
    import ray

    gpus = ray.get_gpu_ids()
    slot = f"{ray.util.get_node_ip_address()} " + (f"GPU {gpus[0]}" if gpus else f"CPU task {os.getpid()}")

    def tell(phase: str | None) -> None:
        # Fire and forget: a task blocked in ray.get lends its CPUs to another task, which would then share them.
        events.actor.put_nowait.remote((unit_id, slot, phase))

    tell("start")
    work = Job.from_dict(job)
    device = work.cases[0].device
    # Locked by UUID as local runs lock it; the worker sees that GPU alone, and checks it is the one locked.
    uuid = task_gpu_uuid() if gpus else None
    held = devices.gpu_lock(0, uuid) if gpus else locks.names_for(device)
    device_env = devices.gpu_env(0, uuid) if gpus else {}
    states = compiler_state.StateFolders()
    try:
        if compiler_state.is_user_folder(work.cases[0].compile_cache):  # as this node holds it
            env, work.compile_cache = compiler_state.user_folder(work.cases[0].compile_cache)
        else:
            env = compiler_state.env_for(states.folder("case"))
            work.compile_cache = "warm" if work.compile_cache == "warm" else "cold"
        with locks.hold(held, work.cases[0].describe(), on_wait=lambda m: tell(m)):
            # One job per task: a new interpreter, as a launcher would only add its own start-up.
            repeats = ProcessExecutor(timeout_s, env=_threads_env(threads), fork=False).run(work, {**env, **device_env}, tell)
    finally:
        states.close()
    for rep in repeats:
        if not rep.environment:  # a timeout or a crashed worker: the environment is this node's
            rep.environment = fingerprint.collect(device)
    tell(None)
    return [rep.to_dict() for rep in repeats]


class RayDispatcher:
    def __init__(self, *, address: str | None, accelerator_types: str | None, device: str | None,
                 cpus_per_case: int | None, timeout_s: float | None):
        ray = _ray()
        if not ray.is_initialized():
            if address is None:  # a local cluster this run starts: Ray reports usage to its server by default
                os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        self.ray = ray
        self.timeout_s = timeout_s
        resources = ray.cluster_resources()
        types = sorted(k[len(ACCELERATOR_PREFIX):] for k in resources if k.startswith(ACCELERATOR_PREFIX))
        if device not in (None, "cpu", "cuda"):
            raise UserError(f"--device {device} with --executor ray: Ray assigns the GPU (allowed: cpu, cuda)")
        self.gpu = device == "cuda" or (device is None and resources.get("GPU", 0) > 0)
        if self.gpu and not resources.get("GPU"):
            raise UserError("--device cuda: the Ray cluster has no GPU (allowed here: cpu)")
        self.types = self._types(accelerator_types, types)
        self.device = "cuda:0" if self.gpu else "cpu"  # a task sees only the GPU Ray gave it
        self.cpus = cpus_per_case or self._default_cpus()
        largest = max((n["Resources"].get("CPU", 0) for n in ray.nodes() if n["Alive"]), default=0)
        if self.cpus > largest:
            raise UserError(f"--cpus-per-case {self.cpus}: no node of the Ray cluster has that many CPUs "
                            f"(the largest has {largest:g})")

    def _types(self, requested: str | None, available: list[str]) -> list[str | None]:
        if requested is None:
            return [None]  # any GPU (or CPU) of the cluster
        if not self.gpu:
            raise UserError("--accelerator-type pins GPU cases; this sweep runs on CPUs (--device cpu)")
        wanted = available if requested == "all" else [t.strip() for t in requested.split(",") if t.strip()]
        unknown = [t for t in wanted if t not in available]
        if unknown or not wanted:
            raise UserError(f"--accelerator-type {requested}: the Ray cluster has no {', '.join(unknown) or 'GPU type'} "
                            f"(allowed: {', '.join(available) or 'none: no node reports a GPU type'}, or all)")
        return wanted

    def _default_cpus(self) -> int:
        """A CPU case takes a whole node (the smallest, so it fits anywhere); a GPU case its node's share of
        CPUs per GPU (the smallest share), so cases on one node do not fight over cores."""
        nodes = [n["Resources"] for n in self.ray.nodes() if n["Alive"]]
        if self.gpu:
            shares = [int(r.get("CPU", 0) // r["GPU"]) for r in nodes if r.get("GPU")]
        else:
            shares = [int(r.get("CPU", 0)) for r in nodes]
        return max(1, min(shares, default=1))

    def _options(self, accelerator_type: str | None) -> dict:
        options = {"num_cpus": self.cpus, "num_gpus": 1 if self.gpu else 0, "max_retries": 0}
        if accelerator_type:
            options["accelerator_type"] = accelerator_type
        return options

    def targets(self) -> list[Target]:
        """One per GPU type asked for (or one for the whole cluster). A probe task on each checks that the
        target can run compilebench at all, and reads its environment: the fallback for a result whose node
        was lost, and the cluster's torch and transformers versions, which name the target for resuming."""
        targets = []
        for t in self.types:
            probe = self.ray.remote(fingerprint.collect).options(**self._options(t))
            try:
                env = self.ray.get(probe.remote(self.device))
            except self.ray.exceptions.RayError as exc:
                raise UserError(f"--executor ray: a probe task on {t or 'the cluster'} failed: "
                                f"{str(exc).strip().splitlines()[-1]}") from None
            name = t or ("GPU" if self.gpu else "CPU")
            placement = f"ray|{name}|torch {env.torch}|transformers {env.transformers}"
            targets.append(Target(name, placement, dataclasses.replace(env, hostname=f"ray ({name})"), placement))
        return targets

    def run(self, units: list[Unit], open_unit, progress: Progress, deliver) -> None:
        ray = self.ray
        from ray.util.queue import Queue

        events = Queue(actor_options={"num_cpus": 0})
        # Up before any task can tell it something: Ray holds a call to an actor that has not started in its caller,
        # and loses it with a caller that dies, so a lost task would not say where it ran (its start event).
        ray.get(events.actor.qsize.remote())
        task = ray.remote(run_unit)
        pending = {}
        for i, unit in enumerate(units):
            work = open_unit(unit)  # claimed at submission: the driver is the one process that claims
            if work is None:
                continue
            ref = task.options(**self._options(_accelerator(unit.target))).remote(
                work.job.to_dict(), self.timeout_s, self.cpus, i, events)
            pending[ref] = (i, unit, work.job)
        running = _Running(units, progress, events)
        listener = threading.Thread(target=_relay, args=(events, running), daemon=True)
        listener.start()
        try:
            while pending:
                (ref,), _ = ray.wait(list(pending), num_returns=1)  # blocks until a task ends
                self._deliver(ref, pending.pop(ref), running, deliver)
        finally:  # interrupted: stop the tasks still queued or running; keep the ones that had finished
            if pending:
                ready, _ = ray.wait(list(pending), num_returns=len(pending), timeout=0)
                for ref in ready:
                    self._deliver(ref, pending.pop(ref), running, deliver)
                for ref in pending:
                    ray.cancel(ref, force=True)
            ray.kill(events.actor)

    def _deliver(self, ref, entry, running: _Running, deliver) -> None:
        i, unit, job = entry
        try:
            results = [Repeat.from_dict(d) for d in self.ray.get(ref)]
        except self.ray.exceptions.RayError as exc:
            running.catch_up()  # its start event may still be on its way through the relay
            slot = running.end(i)
            where = f" on {slot}" if slot else ""
            message = f"Ray task lost{where}: {type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"
            results = failure(job, "crashed", message, traceback="".join(traceback.format_exception(exc))[-4000:])
        else:
            running.end(i)
        deliver(unit, job, results)


class _Running:
    """Which node and device runs each unit, as its task reported, for the progress line and for naming a lost
    node. Task events come on the relay thread, ends on the driver's: an event that arrives after its task's
    end is dropped, so a finished case never shows as running."""

    def __init__(self, units: list[Unit], progress: Progress, events=None):
        self.units, self.progress, self.events = units, progress, events
        self.slots: dict[int, str] = {}
        self.ended: set[int] = set()
        self.lock = threading.Lock()
        self.markers: list[threading.Event] = []

    def catch_up(self, timeout_s: float = CATCH_UP_S) -> bool:
        """Wait until the relay has passed on every event the queue held when this was asked: a marker put now
        comes out after them (the queue is first in, first out). Otherwise a lost task's end could overtake its
        start event on a loaded driver, and its `crashed` result would not say where it ran (one result of a
        loaded run of the slow tests here said no place: this order gives it). False where the relay did not get
        there within timeout_s."""
        if self.events is None:
            return True
        done = threading.Event()
        with self.lock:
            self.markers.append(done)
            n = len(self.markers) - 1
        self.events.actor.put_nowait.remote((MARKER, n, None))
        return done.wait(timeout_s)

    def marker(self, n: int) -> None:
        """The relay reached marker n."""
        with self.lock:
            done = self.markers[n]
        done.set()

    def event(self, unit_id: int, slot: str, phase: str | None) -> None:
        with self.lock:
            if unit_id in self.ended:
                return
            if phase == "start":
                self.slots[unit_id] = slot
                self.progress.started(slot, self.units[unit_id])
            elif phase is None:
                if self.slots.pop(unit_id, None):
                    self.progress.finished(slot)
            elif phase.startswith("waiting for "):
                self.progress.note(f"{slot}: {phase}")
            else:
                self.progress.phase(slot, phase)

    def end(self, unit_id: int) -> str | None:
        """The unit's task is over: where it ran, if it said."""
        with self.lock:
            self.ended.add(unit_id)
            slot = self.slots.pop(unit_id, None)
            if slot:
                self.progress.finished(slot)
            return slot


def _accelerator(target: Target) -> str | None:
    return None if target.name in ("GPU", "CPU") else target.name


def _relay(events, running: _Running) -> None:
    """Phase events from running tasks to the progress line: blocks on the queue, never polls."""
    while True:
        try:
            unit_id, slot, phase = events.get(block=True)
        except Exception:  # the queue actor was killed: the sweep is over
            return
        if unit_id == MARKER:
            running.marker(slot)
        else:
            running.event(unit_id, slot, phase)
