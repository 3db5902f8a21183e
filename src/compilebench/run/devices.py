"""This machine's devices, as the driver uses them.

What it needs to know about this machine's GPUs, learnt in a short-lived child process: the driver itself never
initializes CUDA, so it holds no GPU memory and never counts as another process on a GPU. Where torch was built
without GPU support (its version file says so, read without importing it), there is nothing to ask: no child.
python -m compilebench.run.devices '{"device": "cuda" | null, "gpus": "0,1" | null}' prints JSON: the resolved device,
the environment of the device a case would see, the listed GPUs with their UUIDs, or the bad-input message.

Its GPUs as slots (--gpus, or the one GPU of a run): each worker sees its GPU alone, as cuda:0, and is told which
GPU that must be (it checks); holds that GPU's lock, by UUID; and keeps to its share of the CPU cores (those local
to its GPU, one per physical core), running that many threads, off the cores the run's own processes keep to where
the machine has cores to spare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Callable

from compilebench.core.environment import Environment, is_cuda
from compilebench.core.errors import UserError
from compilebench.measure import fingerprint
from compilebench.measure.cores import HOUSE_ENV
from compilebench.run import dispatch, locks


def probe(device: str | None, gpus: str | None = None) -> dict:
    """{"device": ..., "env": ..., "gpus": [int], "gpu_ids": {index: uuid}}; a UserError for bad input."""
    if gpus is None and (device == "cpu" or (device is None and gpu_build() is False)):
        # nothing to ask CUDA, or a torch built without it (where the child's answer is the CPU): no child needed
        return {"device": "cpu", "env": fingerprint.collect("cpu"), "gpus": [], "gpu_ids": {}, "gpu_cpus": {}}
    p = subprocess.run([sys.executable, "-m", "compilebench.run.devices", json.dumps({"device": device, "gpus": gpus})],
                       capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    try:
        answer = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"the device probe failed (exit {p.returncode}):\n{p.stderr[-3000:]}") from None
    if answer.get("error"):
        raise UserError(answer["error"])
    answer["env"] = Environment.from_dict(answer["env"])
    answer["gpu_ids"] = {int(k): v for k, v in answer.get("gpu_ids", {}).items()}
    answer["gpu_cpus"] = {int(k): v for k, v in answer.get("gpu_cpus", {}).items()}
    return answer


def gpu_build(torch_dir: str | None = None) -> bool | None:
    """Whether the installed torch was built for a GPU (CUDA or ROCm), read from its torch/version.py without
    importing torch (a CPU build says `cuda = None` and `hip = None`); None where that cannot be read."""
    import ast
    import importlib.util

    try:
        if torch_dir is None:
            spec = importlib.util.find_spec("torch")
            torch_dir = os.path.dirname(spec.origin) if spec and spec.origin else None
        with open(os.path.join(torch_dir, "version.py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
    except (OSError, TypeError, ValueError, SyntaxError):
        return None
    said = {}
    for node in tree.body:  # `cuda: Optional[str] = None` (torch 2.x) or `cuda = None`
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        for target in targets:
            if isinstance(target, ast.Name) and target.id in ("cuda", "hip") and isinstance(node.value, ast.Constant):
                said[target.id] = node.value.value
    if set(said) != {"cuda", "hip"}:
        return None
    return any(v is not None for v in said.values())


def _answer(device: str | None, gpus: str | None) -> dict:
    import torch

    if gpus is not None:
        listed = resolve_gpus(gpus)
        resolved = f"cuda:{listed[0]}"
    else:
        listed = []
        resolved = resolve_device(device)
    ids, cpus = {}, {}
    if is_cuda(resolved):
        for i in listed or [int(resolved.split(":")[1])]:
            ids[i] = fingerprint.gpu_uuid(f"cuda:{i}")
            cpus[i] = local_cpus(torch.cuda.get_device_properties(i))
    return {"device": resolved, "env": fingerprint.collect(resolved).to_dict(), "gpus": listed, "gpu_ids": ids, "gpu_cpus": cpus}


def resolve_device(requested: str | None) -> str:
    """'cuda' when available and nothing was asked; a clear UserError when CUDA is asked for and absent."""
    import torch

    if requested is None:
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if requested == "cpu":
        return "cpu"
    if not torch.cuda.is_available():
        raise UserError(f"--device {requested}: CUDA is not available on this machine (allowed here: cpu)")
    index = int(requested.partition(":")[2] or 0)
    count = torch.cuda.device_count()
    if index >= count:
        raise UserError(f"--device {requested}: this machine has {count} CUDA device(s) (allowed: cuda:0..cuda:{count - 1})")
    return f"cuda:{index}"


def parse_gpus(text: str, count: int) -> list[int]:
    """--gpus: 'all' or comma-separated indices of this machine's `count` CUDA devices."""
    allowed = f"allowed: 0..{count - 1} or all" if count else "this machine has no CUDA device"
    if text.strip() == "all":
        if not count:
            raise UserError(f"--gpus all: {allowed}")
        return list(range(count))
    try:
        gpus = [int(g) for g in text.split(",")]
    except ValueError:
        raise UserError(f"--gpus {text}: expected GPU indices separated by commas, such as 0,1,2,3 ({allowed})") from None
    bad = [g for g in gpus if not 0 <= g < count]
    if bad:
        raise UserError(f"--gpus {text}: no CUDA device {bad[0]} here ({allowed})")
    if len(set(gpus)) != len(gpus):
        raise UserError(f"--gpus {text}: a GPU is listed twice; each runs one case at a time")
    return gpus


def check_one_type(names: dict[int, str], text: str) -> None:
    """A sweep measures each case once here: on GPUs of two types, which one measured it would be chance."""
    if len(set(names.values())) > 1:
        listed = ", ".join(f"{g}: {n}" for g, n in names.items())
        raise UserError(f"--gpus {text}: GPUs of different types ({listed}); list GPUs of one type, and run a "
                        "sweep per type into the same --db (or --executor ray --accelerator-type all)")


def resolve_gpus(text: str) -> list[int]:
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not count:
        raise UserError(f"--gpus {text}: CUDA is not available on this machine")
    gpus = parse_gpus(text, count)
    check_one_type({g: torch.cuda.get_device_name(g) for g in gpus}, text)
    return gpus


def parse_cpulist(text: str) -> list[int]:
    """sysfs's '0-3,8-11' as [0, 1, 2, 3, 8, 9, 10, 11]."""
    out = []
    for part in text.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            out.extend(range(int(low), int(high or low) + 1))
    return out


def local_cpus(props, root: str = "/sys/bus/pci/devices") -> list[int]:
    """The CPUs close to a GPU (its socket or NUMA node), from sysfs's local_cpulist of its PCI device; [] unknown."""
    try:
        address = f"{props.pci_domain_id:04x}:{props.pci_bus_id:02x}:{props.pci_device_id:02x}.0"
        with open(f"{root}/{address}/local_cpulist") as f:
            return parse_cpulist(f.read())
    except (AttributeError, OSError, ValueError):
        return []


# Its GPUs as slots
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
                         executor.start_launchers, {**gpu_env(index, uuid), **(env or {})}, executor.keep_launchers_to)


def one_gpu(index: int, executor, uuid: str | None) -> dispatch.LocalPool:
    """The run's one GPU: its slot, whose worker keeps to the cores the driver does not (set_aside)."""
    house, timed = set_aside(set(os.sched_getaffinity(0)))
    return dispatch.LocalPool([slot(index, executor, uuid, cpus_env(timed, house))], house)


def slots(gpus: list[int], timeout_s: float | None, gpu_ids: dict[int, str] | None = None,
              models: tuple[str, ...] = (), inductor: bool = False,
              gpu_cpus: dict[int, list[int]] | None = None, most_repeats: int = 0) -> dispatch.LocalPool:
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
        executor = ProcessExecutor(timeout_s, env=env, models=models, inductor=inductor, most_repeats=most_repeats)
        made.append(slot(gpu, executor, gpu_ids.get(gpu), cpus_env(cpus or timed, house)))
    return dispatch.LocalPool(made, house)


def main() -> None:
    asked = json.loads(sys.argv[1])
    try:
        answer = _answer(asked.get("device"), asked.get("gpus"))
    except UserError as exc:
        answer = {"error": str(exc)}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
