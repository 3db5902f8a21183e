"""What the driver needs to know about this machine's GPUs, learnt in a short-lived child process: the driver
itself never initializes CUDA, so it holds no GPU memory and never counts as another process on a GPU.

python -m compilebench.run.devices '{"device": "cuda" | null, "gpus": "0,1" | null}' prints JSON: the resolved device,
the environment of the device a case would see, the listed GPUs with their UUIDs, or the bad-input message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from compilebench.core.environment import Environment, is_cuda
from compilebench.core.errors import UserError
from compilebench.measure import fingerprint


def probe(device: str | None, gpus: str | None = None) -> dict:
    """{"device": ..., "env": ..., "gpus": [int], "gpu_ids": {index: uuid}}; a UserError for bad input."""
    if device == "cpu" and gpus is None:  # nothing to ask CUDA: no child needed
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


def main() -> None:
    asked = json.loads(sys.argv[1])
    try:
        answer = _answer(asked.get("device"), asked.get("gpus"))
    except UserError as exc:
        answer = {"error": str(exc)}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
