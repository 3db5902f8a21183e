"""The environment fingerprint every repeat records (core/environment.Environment): hardware, software versions,
threads, matmul precision and, on a GPU, what NVML says of it."""

from __future__ import annotations

import functools
import importlib.metadata
import os
import platform
import socket
import subprocess

from compilebench.core.environment import Environment, is_cuda
from compilebench.measure import allocator, precision


def version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _nvidia_driver() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
        return out.strip().splitlines()[0] if out.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


@functools.cache
def static() -> dict:
    """What cannot change while one interpreter on one host runs: the host, the OS, the versions of Python and the
    packages, the CPU. Collected once a process (package metadata is read from disk): a launcher collects it as it
    starts, and the workers it forks inherit it."""
    import torch

    return {
        "hostname": socket.gethostname(),
        "os": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": version("transformers"),
        "triton": version("triton") or version("pytorch-triton"),
        "compilebench": version("compilebench"),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
    }


def collect(device: str, **also) -> Environment:
    """Everything that can change a number: hardware, software versions, threads, matmul precision; `also`: what
    the caller knows of it (the --env it runs under)."""
    import torch

    env = {
        **static(),
        "torch_threads": torch.get_num_threads(),
        "float32_matmul_precision": precision.matmul_precision_words(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "malloc": allocator.state(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "device": device,
        "device_name": static()["cpu"],
        "cuda": None,
        "driver": None,
        "tf32_matmul": None,
        "tf32_cudnn": None,
    }
    if is_cuda(device):
        major, minor = torch.cuda.get_device_capability(device)
        env.update(
            device_name=torch.cuda.get_device_name(device),
            gpu_uuid=gpu_uuid(device),
            compute_capability=f"{major}.{minor}",
            cuda=torch.version.cuda,
            cudnn=torch.backends.cudnn.version(),
        )
        used = precision.effective()  # read through the API the installed torch has (the other one may raise)
        env.update(tf32_matmul=used.pop("matmul") == "tf32", tf32_cudnn=used.pop("conv") == "tf32",
                   fp32_precision_api=used.pop("api"), **used)
        from compilebench.measure.conditions import Nvml

        nvml = Nvml.open(env["gpu_uuid"], torch.cuda.current_device())
        if nvml:  # the driver's version from NVML, which the worker opens anyway: nvidia-smi took a second a worker
            env.update(driver=nvml.driver_version(), **nvml.facts())
        else:  # clocks, power and energy will be missing: the environment says why
            env.update(driver=_nvidia_driver(), nvml=Nvml.error)
    return Environment.from_dict({**env, **also})


def gpu_uuid(device: str) -> str | None:
    """The UUID of the GPU this process sees as `device`, as nvidia-smi, NVML and CUDA_VISIBLE_DEVICES write it:
    MIG-... for a MIG instance (a process that sees MIG instances sees them through CUDA_VISIBLE_DEVICES), else
    GPU-..."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return f"{'MIG' if uses_mig() else 'GPU'}-{uuid}" if uuid else None


def uses_mig() -> bool:
    return any(x.strip().startswith("MIG-") for x in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(","))
