"""Where a run's cases run: one device of this machine (the default), every listed local GPU at once (--gpus), or a
Ray cluster (--executor ray); and the spec with the device its cases are keyed by. The command line and the Python
API both say it with a Placement; the devices are learnt without initializing CUDA in this process."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compilebench import kinds
from compilebench.core import settings
from compilebench.core.environment import is_cuda
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.spec import RunSpec
from compilebench.run import devices, dispatch, executors, locks

EXECUTORS = ("local", "ray")

Where = tuple[RunSpec, dispatch.Dispatcher, list[dispatch.Target]]


@dataclass(frozen=True)
class Placement:
    """--executor, --gpus and the Ray options, as given."""

    executor: str = "local"
    gpus: str | None = None  # local GPUs to use at once: "0,1,2,3" or "all"
    ray_address: str | None = None
    accelerator_type: str | None = None  # Ray GPU types to run the whole matrix on: "H100,A100" or "all"
    cpus_per_case: int | None = None

    def resolve(self, spec: RunSpec) -> Where:
        if self.executor not in EXECUTORS:
            raise UnknownChoice("executor", self.executor, EXECUTORS)
        if self.executor == "ray":
            return self._ray(spec)
        given = [option for option, value in (("--ray-address", self.ray_address),
                                              ("--accelerator-type", self.accelerator_type),
                                              ("--cpus-per-case", self.cpus_per_case)) if value is not None]
        if given:
            raise UserError(f"{given[0]} is for --executor ray")
        return this_device(spec) if self.gpus is None else self._local_gpus(spec)

    def _local_gpus(self, spec: RunSpec) -> Where:
        if spec.device not in (None, "cuda"):
            raise UserError(f"--gpus {self.gpus} with --device {spec.device}: give one of them")
        if spec.isolation == "inline":
            raise UserError("--gpus runs a worker process per GPU; --isolation inline runs cases in this process")
        found = devices.probe("cuda", self.gpus)
        env = found["env"]
        return (dataclasses.replace(spec, device="cuda:0"),
                devices.slots(found["gpus"], spec.timeout_s, found["gpu_ids"], spec.models, spec.uses_inductor,
                              found["gpu_cpus"], spec.most_repeats),
                [dispatch.Target(f"GPUs {self.gpus}", env.machine_id, env)])

    def _ray(self, spec: RunSpec) -> Where:
        kept = [option for option, on in (("--profile", spec.profile), ("--compile-trace", spec.compile_trace),
                                          ("--compile-cache mega", settings.is_mega(spec.compile_cache)),
                                          *((f"--variant {v}", kinds.get(v).keeps_files) for v in spec.variants))
                if on]
        if kept:
            raise UserError(f"{kept[0]} keeps its files on this host (beside the results file, or the artifacts and "
                            "packages a later repeat loads); --executor ray runs cases on other hosts (use --executor "
                            "local)")
        if self.gpus is not None:
            raise UserError("--gpus is for --executor local; Ray gives each case one whole GPU of its own")
        if spec.isolation == "inline":
            raise UserError("--isolation inline runs cases in this process; --executor ray runs them on the cluster")
        if self.cpus_per_case is not None and self.cpus_per_case < 1:
            raise UserError(f"--cpus-per-case must be an integer >= 1, got {self.cpus_per_case}")
        from compilebench.run import ray_cluster

        dispatcher = ray_cluster.RayDispatcher(
            address=self.ray_address, accelerator_types=self.accelerator_type, device=spec.device,
            cpus_per_case=self.cpus_per_case, timeout_s=spec.timeout_s)
        return dataclasses.replace(spec, device=dispatcher.device), dispatcher, dispatcher.targets()


def this_device(spec: RunSpec) -> Where:
    """One device of this machine, one case at a time, under its lock. Where the device is not named (the probe
    cannot refuse it), the workers' launchers start first and import while it is probed (half a second of the
    driver's start here); a named device is checked before anything starts."""
    executor = executors.make(spec.isolation, spec.timeout_s, spec.models, spec.uses_inductor, spec.most_repeats)
    if spec.device is None:
        executor.start_launchers(range(1, spec.repeats + 1), spec.environments or (None,), wait=False)
    found = devices.probe(spec.device)
    device, env = found["device"], found["env"]
    if is_cuda(device) and spec.isolation == "process":
        # As a --gpus slot: the worker sees its GPU alone, as cuda:0, and holds that GPU's lock, by UUID.
        index = int(device.split(":")[1])
        pool = devices.one_gpu(index, executor, found["gpu_ids"].get(index))
    else:  # the CPU (a case needs every core), or a GPU in this very process (inline), which can see every GPU
        gpu_id = found["gpu_ids"].get(int(device.split(":")[1])) if is_cuda(device) else None
        pool = dispatch.LocalPool([dispatch.Slot(device, device, executor.run, executor.cancel,
                                                 locks.names_for(device, gpu_id), executor.start_launchers)])
    return dataclasses.replace(spec, device=device), pool, [dispatch.Target(device, env.machine_id, env)]
