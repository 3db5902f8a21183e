"""torchao's quantizations (`--quantize`), each a transform of the model's linear layers applied after the model
is built in its dtype and before it runs any way (eager, compiled, exported): in torchao's words, int8
weight-only, int8 dynamic activation with int8 weight, int4 weight-only, float8 dynamic activation with float8
weight. Each says what it needs installed (torchao: the `quant` extra), which devices run it (int4 weight-only
needs CUDA kernels, its CPU path a prototype; float8 a CUDA device of compute capability 8.9 or later; the int8
ones run on a CPU too) and the line of code that applies it. torchao's recommended inductor settings are not
applied (set_inductor_config=False): a case's inductor options are the ones its run names, so its key says what
was compiled. Its names are core/settings.QUANTIZATIONS's (a setting of the case), in that order."""

from __future__ import annotations

import importlib.util
import re

from compilebench.core.environment import is_cuda
from compilebench.kinds.base import Asked, Kind

MISSING = "--quantize needs torchao: pip install compilebench[quant]"


class Quantization(Kind):
    """A torchao quantization: its config class, the devices it runs on."""

    packages = distributions = ("torchao",)
    extra = "quant"

    def __init__(self, name: str, config: str, *, activations: str | None = None, cuda_only: str | None = None,
                 capability: tuple[int, int] | None = None):
        self.name, self.title, self.config = name, name, config
        # the math its activations are quantized to on the fly (whose tolerance its output is held to); None: a
        # weight-only quantization computes in the case's dtype
        self.activations = activations
        self.cuda_only = cuda_only  # why it needs CUDA, in the user's words; None where a CPU runs it
        self.capability = capability  # the compute capability it needs, where it needs one
        self.code = (f"torchao.quantization.quantize_(model, torchao.quantization.{config}())",)

    def refusal(self, asked: Asked) -> str | None:
        if asked.device is None:
            return None
        cuda = is_cuda(asked.device)
        if self.cuda_only and not cuda:
            return f"--quantize {self.name} needs {self.cuda_only}"
        if self.capability and cuda and asked.capability:
            have = tuple(int(x) for x in asked.capability.split(".")[:2])
            if have < self.capability:
                need = ".".join(map(str, self.capability))
                return (f"--quantize {self.name} needs compute capability {need} or later; this GPU has "
                        f"{asked.capability} (int8-weight-only and int8-dynamic run on it)")
        return None

    def missing(self) -> str | None:
        """torchao importable (found without importing it: its import takes seconds)."""
        return MISSING if importlib.util.find_spec("torchao") is None else None

    def apply(self, model) -> None:
        """The model's linear layers quantized in place."""
        import torchao.quantization as ao

        ao.quantize_(model, getattr(ao, self.config)(set_inductor_config=False))


FLOAT8 = "a CUDA device of compute capability 8.9 or later"
QUANTIZATIONS = (
    Quantization("int8-weight-only", "Int8WeightOnlyConfig"),
    Quantization("int8-dynamic", "Int8DynamicActivationInt8WeightConfig", activations="int8"),
    Quantization("int4-weight-only", "Int4WeightOnlyConfig",
                 cuda_only="a CUDA device (torchao's int4 kernels; its CPU path is a prototype)"),
    Quantization("float8-dynamic", "Float8DynamicActivationFloat8WeightConfig", activations="float8",
                 cuda_only=FLOAT8, capability=(8, 9)),
)


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
