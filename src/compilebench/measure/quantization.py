"""--quantize in the worker: the case's quantization (kinds/quantize.py: torchao's config, the devices that run it)
applied in place after the model is built in its dtype and its float output kept, before anything is compiled, as
torchao documents it; a model with no linear layer is refused (nothing would change)."""

from __future__ import annotations

from compilebench import kinds


def linear_layers(model) -> int:
    """How many nn.Linear layers the model holds: what torchao quantizes."""
    import torch

    return sum(1 for m in model.modules() if isinstance(m, torch.nn.Linear))


def apply(model, quantization: str) -> None:
    """The model's linear layers quantized in place (a pipeline's: its denoiser's, as torch.compile compiles its
    denoiser alone); a model with none is refused (nothing would change)."""
    model = getattr(model, "optimized_part", None) or model
    if not linear_layers(model):
        raise ValueError(f"--quantize {quantization}: the model has no linear layer to quantize")
    kinds.quantization(quantization).apply(model)


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
