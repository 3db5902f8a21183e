"""Datasheet peak FLOP/s of the GPUs a report may meet, so an achieved FLOP/s can be read as a fraction of the
device's peak for the math it ran.

Only dense figures from NVIDIA's datasheets (they print tensor-core figures "with sparsity", twice the dense
ones), and only for devices whose `torch.cuda.get_device_name` names the exact board: a GPU not listed gets
no fraction rather than a guessed one (the A10G, the H200 NVL and laptops are left out on purpose)."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Peak:
    device: str  # the board the figure belongs to: "H100 SXM"
    math: str  # "FP32", "TF32 tensor", "BF16 tensor", "FP16 tensor"
    tflops: float


# (pattern on the device name, board, {math: dense TFLOP/s}); first match wins, so specific boards come first.
_BOARDS: tuple[tuple[str, str, dict[str, float]], ...] = (
    # nvidia.com H100 datasheet: SXM 67 / 989 / 1979 (sparse), PCIe 51 / 756 / 1513 (sparse)
    (r"H100.*(HBM3|SXM)", "H100 SXM", {"FP32": 67, "TF32": 494.5, "BF16": 989.5, "FP16": 989.5}),
    (r"H100.*PCIe", "H100 PCIe", {"FP32": 51, "TF32": 378, "BF16": 756.5, "FP16": 756.5}),
    # H200 SXM: the H100 SXM's compute with more memory
    (r"H200$", "H200 SXM", {"FP32": 67, "TF32": 494.5, "BF16": 989.5, "FP16": 989.5}),
    # A100 datasheet: 40 GB and 80 GB, SXM and PCIe share the figures
    (r"A100", "A100", {"FP32": 19.5, "TF32": 156, "BF16": 312, "FP16": 312}),
    (r"L40S", "L40S", {"FP32": 91.6, "TF32": 183, "BF16": 362.05, "FP16": 362.05}),
    (r"\bL4$", "L4", {"FP32": 30.3, "TF32": 60, "BF16": 121, "FP16": 121}),
    (r"\bA10$", "A10", {"FP32": 31.2, "TF32": 62.5, "BF16": 125, "FP16": 125}),
    # T4 and V100 have no TF32 or BF16 math: float32 runs as FP32 whatever the TF32 flag says
    (r"\bT4$", "T4", {"FP32": 8.1, "FP16": 65}),
    (r"V100-SXM2", "V100 SXM2", {"FP32": 15.7, "FP16": 125}),
    (r"V100-PCIE", "V100 PCIe", {"FP32": 14, "FP16": 112}),
)

_HALF = {"float16": "FP16", "bfloat16": "BF16"}


def peak(device_name: str, dtype: str, tf32: bool) -> Peak | None:
    """The dense peak of the fastest math this dtype may use on this board, or None where the board is unknown
    or lacks that math (BF16 on a T4).

    float32 counts as TF32 when TF32 is allowed for matmuls or convolutions: the fraction is then a lower bound
    (a model that ran without tensor cores reads low), never above 100%."""
    name = device_name.strip()
    for pattern, board, figures in _BOARDS:
        if re.search(pattern, name, re.IGNORECASE):
            if dtype in _HALF:
                math = _HALF[dtype]
            else:
                math = "TF32" if tf32 and "TF32" in figures else "FP32"
            if math not in figures:
                return None
            return Peak(board, math if math == "FP32" else f"{math} tensor", figures[math])
    return None


# (pattern on the device name, board, datasheet memory bandwidth in GB/s); first match wins. The A100's depends on
# its memory: 40 GB boards 1,555; 80 GB SXM 2,039; 80 GB PCIe 1,935.
_BANDWIDTH: tuple[tuple[str, str, float], ...] = (
    (r"H100.*(HBM3|SXM)", "H100 SXM", 3350),
    (r"H100.*PCIe", "H100 PCIe", 2000),
    (r"H200$", "H200 SXM", 4800),
    (r"A100.*80GB.*PCIe", "A100 80GB PCIe", 1935),
    (r"A100.*80GB", "A100 80GB SXM", 2039),
    (r"A100", "A100 40GB", 1555),
    (r"L40S", "L40S", 864),
    (r"\bL4$", "L4", 300),
    (r"\bA10$", "A10", 600),
    (r"\bT4$", "T4", 320),
    (r"V100", "V100", 900),
)


def bandwidth_gbs(device_name: str) -> tuple[str, float] | None:
    """The board and its datasheet memory bandwidth (GB/s), or None where the board is not listed."""
    for pattern, board, gbs in _BANDWIDTH:
        if re.search(pattern, device_name.strip(), re.IGNORECASE):
            return board, gbs
    return None
