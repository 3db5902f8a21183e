"""The environment a worker process measured in (its fingerprint: host, hardware, software, threads, matmul
precision, what NVML says of its GPU), typed, each field declared once; and the questions asked of it, answered
once: whether it is a CUDA device, the guide's hardware heading, the machine, the id resume matches, whether TF32
applied. Pure: measure/fingerprint.py collects it, every repeat carries its own.

Fields a newer compilebench wrote and this one does not know are kept (`extra`) and written back unchanged."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from compilebench.core.record import Record

# What every fingerprint says, whatever its device: a column each in the CSV even where it is empty (None).
ALWAYS = ("hostname", "os", "python", "torch", "transformers", "triton", "compilebench", "cpu", "cpu_count",
          "torch_threads", "float32_matmul_precision", "cpu_affinity", "cuda_visible_devices", "device",
          "device_name", "cuda", "driver", "tf32_matmul", "tf32_cudnn")
# What the repeats of one case must share to be one case: a report says where they do not, rather than showing
# one of them (the GPU itself may differ: --gpus spreads a case's repeats over several of one model).
COMMON = ("device_name", "compute_capability", "torch", "transformers", "triton", "python", "cuda", "cudnn", "driver",
          "torch_threads", "tf32_matmul", "tf32_cudnn", "environment", "malloc")


def is_cuda(device: str | None) -> bool:
    """Whether a device string names a CUDA device ("cuda", "cuda:1"): the one place it is spelled."""
    return str(device or "").startswith("cuda")


@dataclass(kw_only=True)
class Environment(Record):
    hostname: str | None = None
    os: str | None = None
    python: str | None = None
    torch: str | None = None
    transformers: str | None = None
    triton: str | None = None
    compilebench: str | None = None
    cpu: str | None = None  # the CPU's model name
    cpu_count: int | None = None
    torch_threads: int | None = None
    float32_matmul_precision: str | None = None
    cpu_affinity: int | None = None  # CPU cores the process could run on
    malloc: str | None = None  # the C allocator and whether it kept freed memory (measure/allocator.py)
    cuda_visible_devices: str | None = None
    device: str | None = None  # as the worker saw it: "cpu", "cuda:0"
    device_name: str | None = None  # the GPU's name, or the CPU's
    cuda: str | None = None
    driver: str | None = None
    tf32_matmul: bool | None = None
    tf32_cudnn: bool | None = None
    # CUDA only
    gpu_uuid: str | None = None  # GPU-... (MIG-... for a MIG instance): which GPU of the machine it was
    compute_capability: str | None = None
    cudnn: int | None = None
    fp32_precision_api: str | None = None  # "fp32_precision" (torch 2.9+) or "legacy": how TF32 was set and read
    fp32_precision_cuda_matmul: str | None = None
    fp32_precision_cudnn: str | None = None
    fp32_precision_cudnn_conv: str | None = None
    nvml: str | None = None  # why NVML could not be opened (clocks, power and energy are then missing)
    gpu_mig_instance: str | None = None
    gpu_readings: str | None = None  # a MIG instance: whose readings NVML's are
    gpu_persistence_mode: bool | None = None
    gpu_application_clocks_mhz: list | None = None  # [SM, memory]
    gpu_max_clocks_mhz: list | None = None
    gpu_ecc: int | None = None
    gpu_mig: int | None = None
    # --env: the environment it ran under, its interpreter and the variables it set
    environment: str | None = None
    environment_python: str | None = None
    environment_set: str | None = None

    @property
    def is_cuda(self) -> bool:
        return is_cuda(self.device)

    @property
    def hardware(self) -> str:
        """The guide's hardware heading: 'A100', 'H100', or 'CPU (AMD EPYC 7B13, 2 threads)'."""
        if not self.is_cuda:
            return f"CPU ({self.cpu}, {self.torch_threads} threads)"
        name = str(self.device_name or "GPU")
        m = re.search(r"\b([A-Z]{1,3}\d{1,4}[A-Z]?)\b", name.replace("NVIDIA ", ""))
        return m.group(1) if m else name

    @property
    def machine(self) -> str:
        """The machine, never its software: its host and hardware ('vm (CPU (AMD EPYC, 2 threads))'). A history's
        series and a CPU's measured peaks are per machine; a torch upgrade is a point in a series."""
        return f"{self.hostname or '?'} ({self.hardware})"

    @property
    def machine_id(self) -> str:
        """The machine and the software a result was measured with: resume skips only cases finished here."""
        return f"{self.hostname}|{self.device_name}|torch {self.torch}|transformers {self.transformers}"

    @property
    def torch_version(self) -> str:
        """The public version, without the local build tag: '2.13.0', '2.1.0.dev20230601'."""
        return str(self.torch or "?").split("+")[0]

    def uses_tf32(self, dtype: str) -> bool:
        """Whether float32 math ran on TF32 tensor cores: a CUDA device of compute capability 8.0 or later with TF32
        allowed for matmuls or convolutions (cuDNN allows it for convolutions by default). Unknown capability
        (results written before it was recorded): the flags decide."""
        if dtype != "float32" or not self.is_cuda:
            return False
        if self.compute_capability is not None and int(str(self.compute_capability).split(".")[0]) < 8:
            return False  # no TF32 before Ampere, whatever the flags say
        return bool(self.tf32_matmul or self.tf32_cudnn)

    def fields(self) -> dict:
        """Every field that has a value, the ones a newer compilebench wrote included, by name."""
        return {**self.extra, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                                 if f.name != "extra" and getattr(self, f.name) is not None}}

    def shown(self) -> dict:
        """What `compilebench env` and a report show of it: every field a fingerprint always has (None included),
        then the others that have a value."""
        return {**{name: getattr(self, name) for name in ALWAYS}, **self.fields()}


def apart(a: list[Environment], b: list[Environment], skip=()) -> dict[str, tuple[list, list]]:
    """What must be common to a case's repeats (COMMON, but `skip`) and differs between two sets of environments (the
    two sides of a comparison): each such field with A's values and B's, in the order met, None where unrecorded."""
    out = {}
    for name in (n for n in COMMON if n not in skip):
        values = [list(dict.fromkeys(getattr(e, name) for e in side)) for side in (a, b)]
        if set(values[0]) != set(values[1]):
            out[name] = (values[0], values[1])
    return out


def disagreements(environments: list[Environment]) -> dict[str, list]:
    """What must be common to a case's repeats and is not: each such field with its values, in the order met."""
    out = {}
    for name in COMMON:
        values = list(dict.fromkeys(getattr(e, name) for e in environments if e))
        if len(values) > 1:
            out[name] = values
    return out


@dataclass(kw_only=True)
class HostPeaks(Record):
    """What a CPU can do, measured by the first worker of a run on it (diagnostics/bandwidth.host_peaks): its
    streaming copy and its matmul rate in the case's dtype; the roofline reads them per machine."""

    dtype: str | None = None
    stream_gbs: float | None = None
    matmul_gflops: float | None = None
    error: str | None = None  # why they could not be measured (a note beside the case, never its failure)

    def shown(self) -> dict:
        """As a report's environment table and the CSV's env_ columns name them (as the fingerprint once held
        them): host_stream_gbs, host_matmul_gflops_<dtype>, host_peaks_error."""
        said = {"host_stream_gbs": self.stream_gbs, f"host_matmul_gflops_{self.dtype}": self.matmul_gflops,
                "host_peaks_error": self.error}
        return {k: v for k, v in said.items() if v is not None}
