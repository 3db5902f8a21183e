"""What the driver needs to know about this machine's GPUs, learnt in a short-lived child process: the driver
itself never initializes CUDA, so it holds no GPU memory and never counts as another process on a GPU.

python -m compilebench.run.devices '{"device": "cuda" | null, "gpus": "0,1" | null}' prints JSON: the resolved device,
the environment of the device a case would see, the listed GPUs with their UUIDs, or the bad-input message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

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
    answer["gpu_ids"] = {int(k): v for k, v in answer.get("gpu_ids", {}).items()}
    answer["gpu_cpus"] = {int(k): v for k, v in answer.get("gpu_cpus", {}).items()}
    return answer


def _answer(device: str | None, gpus: str | None) -> dict:
    import torch

    if gpus is not None:
        listed = fingerprint.resolve_gpus(gpus)
        resolved = f"cuda:{listed[0]}"
    else:
        listed = []
        resolved = fingerprint.resolve_device(device)
    ids, cpus = {}, {}
    if resolved.startswith("cuda"):
        for i in listed or [int(resolved.split(":")[1])]:
            ids[i] = fingerprint.gpu_uuid(f"cuda:{i}")
            cpus[i] = local_cpus(torch.cuda.get_device_properties(i))
    return {"device": resolved, "env": fingerprint.collect(resolved), "gpus": listed, "gpu_ids": ids, "gpu_cpus": cpus}


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
