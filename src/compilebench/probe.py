"""What the driver needs to know about this machine's GPUs, learnt in a short-lived child process: the driver
itself never initializes CUDA, so it holds no GPU memory and never counts as another process on a GPU.

python -m compilebench.probe '{"device": "cuda" | null, "gpus": "0,1" | null}' prints JSON: the resolved device,
the environment of the device a case would see, the listed GPUs with their UUIDs, or the bad-input message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from compilebench import envinfo
from compilebench.errors import UserError


def probe(device: str | None, gpus: str | None = None) -> dict:
    """{"device": ..., "env": ..., "gpus": [int], "gpu_ids": {index: uuid}}; a UserError for bad input."""
    if device == "cpu" and gpus is None:  # nothing to ask CUDA: no child needed
        return {"device": "cpu", "env": envinfo.collect("cpu"), "gpus": [], "gpu_ids": {}}
    p = subprocess.run([sys.executable, "-m", "compilebench.probe", json.dumps({"device": device, "gpus": gpus})],
                       capture_output=True, text=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    try:
        answer = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise RuntimeError(f"the device probe failed (exit {p.returncode}):\n{p.stderr[-3000:]}") from None
    if answer.get("error"):
        raise UserError(answer["error"])
    answer["gpu_ids"] = {int(k): v for k, v in answer.get("gpu_ids", {}).items()}
    return answer


def _answer(device: str | None, gpus: str | None) -> dict:
    import torch

    if gpus is not None:
        listed = envinfo.resolve_gpus(gpus)
        resolved = f"cuda:{listed[0]}"
    else:
        listed = []
        resolved = envinfo.resolve_device(device)
    ids = {}
    if resolved.startswith("cuda"):
        for i in listed or [int(resolved.split(":")[1])]:
            uuid = getattr(torch.cuda.get_device_properties(i), "uuid", None)
            ids[i] = f"GPU-{uuid}" if uuid else None
    return {"device": resolved, "env": envinfo.collect(resolved), "gpus": listed, "gpu_ids": ids}


def main() -> None:
    asked = json.loads(sys.argv[1])
    try:
        answer = _answer(asked.get("device"), asked.get("gpus"))
    except UserError as exc:
        answer = {"error": str(exc)}
    print(json.dumps(answer))


if __name__ == "__main__":
    main()
