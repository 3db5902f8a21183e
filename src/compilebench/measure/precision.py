"""TF32 for a case, set and read through the API the installed torch has. torch 2.9 added a per-backend precision
API (`torch.backends.cuda.matmul.fp32_precision`, `torch.backends.cudnn.fp32_precision`, its `conv` and `rnn`
ops); once it is used, reading the legacy flags (`allow_tf32`, `get_float32_matmul_precision`) raises torch's
"mix of the legacy and new APIs" error. Setting only the legacy flags leaves the new cuDNN backend value at
"none", which inductor's convolution templates read: under max-autotune they would be benchmarked in full fp32
against TF32 cuDNN. So where the new API exists it alone is set and read, and the precision each backend actually
has is recorded; where it does not, the legacy flags are."""

from __future__ import annotations

import contextlib

# The new API's settings a case changes: (name in the record, the object holding it)
_NEW = ("cuda_matmul", "cudnn", "cudnn_conv")


def new_api() -> bool:
    import torch

    return hasattr(torch.backends.cudnn, "fp32_precision") and hasattr(torch.backends.cuda.matmul, "fp32_precision")


def _holders():
    import torch

    b = torch.backends
    return {"cuda_matmul": b.cuda.matmul, "cudnn": b.cudnn, "cudnn_conv": b.cudnn.conv}


def effective() -> dict:
    """What each backend uses for float32 now: {"matmul": "tf32"|"ieee", "conv": ...} and, on the new API, each
    setting as torch holds it. An op's "none" defers to its backend's, a backend's "none" to the generic one; all
    "none" is torch's default (matmul in full fp32, cuDNN convolutions in TF32)."""
    import torch

    if not new_api():
        return {"matmul": "tf32" if torch.backends.cuda.matmul.allow_tf32 else "ieee",
                "conv": "tf32" if torch.backends.cudnn.allow_tf32 else "ieee", "api": "legacy"}
    b = torch.backends
    generic = b.fp32_precision
    held = {name: h.fp32_precision for name, h in _holders().items()}

    def resolve(*chain: str, default: str) -> str:
        return next((x for x in chain if x != "none"), default)

    return {"matmul": resolve(held["cuda_matmul"], generic, default="ieee"),
            "conv": resolve(held["cudnn_conv"], held["cudnn"], generic, default="tf32"),
            "api": "fp32_precision", **{f"fp32_precision_{k}": v for k, v in held.items()}}


@contextlib.contextmanager
def tf32(allow: bool | None):
    """TF32 on or off for matmuls and cuDNN (None: as it is), put back afterwards for the next inline case."""
    import torch

    if allow is None:
        yield
        return
    want = "tf32" if allow else "ieee"
    if new_api():
        holders = _holders()
        saved = {name: h.fp32_precision for name, h in holders.items()}
        for h in holders.values():
            h.fp32_precision = want
        try:
            yield
        finally:
            for name, h in holders.items():
                h.fp32_precision = saved[name]
        return
    saved_legacy = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                    torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved_legacy[:2]
        torch.set_float32_matmul_precision(saved_legacy[2])


def not_taken(allow: bool | None, now: dict) -> str | None:
    """The self-check: a TF32 setting the backends do not hold after it was set, in words; None where it took."""
    if allow is None:
        return None
    want = "tf32" if allow else "ieee"
    off = [k for k in ("matmul", "conv") if now.get(k) != want]
    return (f"--{'' if allow else 'no-'}tf32 did not take: {', '.join(f'{k} uses {now.get(k)}' for k in off)}"
            if off else None)


def matmul_precision_words() -> str:
    """torch.get_float32_matmul_precision() where it can be read; on the new API, the same word from it."""
    import torch

    if new_api():
        return "high" if effective()["matmul"] == "tf32" else "highest"
    return torch.get_float32_matmul_precision()
