"""--quantize: torchao's quantization of a model's linear layers, each name mapped to torchao's config (in torchao's
words: int8 weight-only, int8 dynamic activation with int8 weight, int4 weight-only, float8 dynamic activation
with float8 weight). Applied in place after the model is built in its dtype and before anything is compiled, as
torchao documents it. torchao's recommended inductor settings are not applied (set_inductor_config=False): a
case's inductor options are the ones its run names (--inductor-option), so its key says what was compiled.

Which device can run which: int4 weight-only needs CUDA kernels (its CPU path is a prototype config), float8 needs
a CUDA device of compute capability 8.9 or later; the int8 ones run on a CPU too, eagerly and compiled."""

from __future__ import annotations

import importlib.util
import re

from compilebench.core.environment import is_cuda
from compilebench.core.errors import UserError

CONFIGS = {"int8-weight-only": "Int8WeightOnlyConfig", "int8-dynamic": "Int8DynamicActivationInt8WeightConfig",
           "int4-weight-only": "Int4WeightOnlyConfig", "float8-dynamic": "Float8DynamicActivationFloat8WeightConfig"}
MISSING = "--quantize needs torchao: pip install compilebench[quant]"
FLOAT8_CAPABILITY = (8, 9)


def check_installed(quantizations) -> None:
    """torchao importable where a run quantizes (found without importing it: its import takes seconds)."""
    if any(q != "none" for q in quantizations) and importlib.util.find_spec("torchao") is None:
        raise UserError(MISSING)


def refusal(quantization: str, device: str, capability: str | None) -> str | None:
    """Why this device cannot run the quantization (None: it can). `capability`: the CUDA device's compute
    capability ("9.0"), None where it is not known yet."""
    cuda = is_cuda(device)
    if quantization == "int4-weight-only" and not cuda:
        return "--quantize int4-weight-only needs a CUDA device (torchao's int4 kernels; its CPU path is a prototype)"
    if quantization == "float8-dynamic":
        if not cuda:
            return "--quantize float8-dynamic needs a CUDA device of compute capability 8.9 or later"
        if capability and tuple(int(x) for x in capability.split(".")[:2]) < FLOAT8_CAPABILITY:
            return (f"--quantize float8-dynamic needs compute capability 8.9 or later; this GPU has {capability} "
                    "(int8-weight-only and int8-dynamic run on it)")
    return None


# cuBLAS's int8 matmul, which inductor calls (torch._int_mm) for torchao's int8 dynamic quantization, refuses a
# matrix of 16 rows or fewer: on an H200 (torch 2.11, torchao 0.18) ViT compiled at batch 1 raised it from its
# classifier head, where each image is one row; eager int8-dynamic ran (pytorch/ao#2376 reports the same).
INT_MM_ROWS = re.compile(r"self\.size\(0\) needs to be greater than 16, but got (\d+)")


def beyond_kernels(exc: BaseException, case) -> str | None:
    """Why a quantized case failed because the device's kernels cannot take a shape it has, in the user's words
    (which shape, which kernel, the upstream issue); None where the failure is of another kind."""
    if getattr(case, "quantize", "none") == "none":
        return None
    chain, e = [], exc
    while e is not None and len(chain) < 10:  # dynamo wraps what inductor's code raised
        chain.append(str(e))
        e = e.__cause__ or e.__context__
    rows = next((m for m in map(INT_MM_ROWS.search, chain) if m), None)
    if rows is None:
        return None
    how = "compiled" if case.variant.compiled else "eagerly"
    return (f"--quantize {case.quantize} {how} at batch {case.batch_size}: a linear layer of the model gets "
            f"{rows.group(1)} row(s), and the int8 matmul it is lowered to (torch._int_mm, cuBLAS) needs more than "
            f"16 (pytorch/ao#2376): this device's kernels cannot run it at this shape. Eager int8-dynamic runs "
            "(torchao's own path), as would a batch whose every linear layer gets over 16 rows")


def linear_layers(model) -> int:
    """How many nn.Linear layers the model holds: what torchao quantizes."""
    import torch

    return sum(1 for m in model.modules() if isinstance(m, torch.nn.Linear))


def apply(model, quantization: str) -> None:
    """The model's linear layers quantized in place; a model with none is refused (nothing would change)."""
    import torchao.quantization as ao

    if not linear_layers(model):
        raise ValueError(f"--quantize {quantization}: the model has no linear layer to quantize")
    ao.quantize_(model, getattr(ao, CONFIGS[quantization])(set_inductor_config=False))


def of_case(model, case, check: bool, enter, float_output):
    """A case's quantization, in place (nothing where it has none), once its float output (`float_output()`, what
    its quality is read against) is kept where this process checks outputs (`check`); returns that output."""
    if case.quantize == "none":
        return None
    kept = None
    if check:
        enter("float reference")
        kept = float_output()
    enter("quantizing")
    apply(model, case.quantize)
    return kept
