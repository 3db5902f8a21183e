"""Every way of running a model, one module each behind one protocol (kinds/base.Kind: its name and title, what it
needs installed, what it refuses and why, whether it keeps files on this host, its version, and where it prepares
itself how), and the registry below that lists them in the order the tables show them. `plan` asks each asked kind
for its refusal in one loop; the worker prepares an engine, an AOTInductor package and a CUDA graph through their
kinds; the report, `tune` and the API take every kind from here. A new engine is a module of its own and a line
in ALL. The transforms applied before any of them, torchao's quantizations (kinds/quantize.py), answer the same
refusal in the same loop.

Imports core alone: a kind's facts are read at import, its preparation imports torch and its engine when called."""

from __future__ import annotations

from compilebench.core.errors import UnknownChoice
from compilebench.kinds import aot_inductor, compiled, eager, executorch, onnxruntime, openvino, quantize, tensorrt
from compilebench.kinds.base import Asked, Kind
from compilebench.kinds.quantize import Quantization

ALL: tuple[Kind, ...] = (*eager.KINDS, *compiled.KINDS, aot_inductor.KIND,
                         onnxruntime.KIND, openvino.KIND, tensorrt.KIND, executorch.KIND)
_BY_NAME = {k.name: k for k in ALL}
# The transforms applied before any of them: torchao's quantizations (--quantize), by name.
QUANTIZATIONS = {q.name: q for q in quantize.QUANTIZATIONS}

__all__ = ["ALL", "QUANTIZATIONS", "Asked", "Kind", "Quantization", "engines", "get", "names", "of", "quantization",
           "register_backend", "title"]


def names() -> tuple[str, ...]:
    return tuple(_BY_NAME)


def engines() -> tuple[Kind, ...]:
    """The kinds run by another engine than torch."""
    return tuple(k for k in ALL if k.engine)


def get(name: str, what: str = "variant") -> Kind:
    """The kind --variant (or --engine: `what`) names; an unknown one refused with the names allowed."""
    kind = _BY_NAME.get(name)
    allowed = [k.name for k in (engines() if what == "engine" else ALL)]
    if kind is None or kind.name not in allowed:
        raise UnknownChoice(what, name, allowed)
    return kind


def quantization(name: str) -> Quantization:
    """The transform --quantize names (core/settings checked the name)."""
    return QUANTIZATIONS[name]


def of(variant) -> Kind:
    """The kind a Variant runs as (its name: eager-static-cache and eager-cudagraphs are kinds of their own)."""
    return get(variant.name)


def title(name: str) -> str:
    """A kind's title (`ONNX Runtime`), as a report says whose version ran; a kind this compilebench does not know
    (a newer one wrote the results file) by its name."""
    kind = _BY_NAME.get(name)
    return kind.title if kind is not None else name


def register_backend(backend: str) -> None:
    """A torch.compile backend an engine ships (`--backend openvino`), registered with dynamo by importing it; where
    its package is missing, an ImportError whose line names the extra to install."""
    import importlib

    for kind in ALL:
        module = kind.backends.get(backend)
        if module:
            kind.no_telemetry()
            try:
                importlib.import_module(module)
            except ImportError as exc:
                raise ImportError(f"--backend {backend} needs {module} ({exc}): pip install "
                                  f"compilebench[{kind.extra}]") from None
