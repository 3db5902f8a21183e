"""Models your own code builds, for the Python API: a "package.module:function" string naming a factory that
returns an nn.Module (a fresh worker process imports and calls it), or an nn.Module object (measured in the
caller's process, and recorded as such). Inputs come from a "module:function" string or a callable that takes
the batch size and returns the keyword arguments of one call."""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from compilebench.core.errors import UserError
from compilebench.zoo.entry import ModelEntry

CUSTOM = "custom"
_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def is_ref(text: str) -> bool:
    """Whether a model name is a "module:function" reference."""
    return bool(_REF.match(text))


def resolve(ref: str, what: str) -> Callable:
    """The function a "module:function" string names; a UserError where it cannot be imported."""
    module, _, name = ref.partition(":")
    if module == "__main__":
        raise UserError(f"{what} {ref!r}: a function of __main__ cannot be imported by a worker process; move it to "
                        "a module, or pass the object itself (it is then measured in this process)")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise UserError(f"{what} {ref!r} cannot be imported: {exc}") from None
    if not callable(fn):
        raise UserError(f"{what} {ref!r} is not callable")
    return fn


def _call_inputs(make: Callable, batch_size: int) -> dict:
    got = make(batch_size)
    if not isinstance(got, dict):
        raise TypeError(f"inputs must return the keyword arguments of one call as a dict, got {type(got).__name__}")
    return got


@dataclass(frozen=True)
class FactoryModel(ModelEntry):
    """checkpoint: the model factory's "module:function"; inputs_ref: the inputs factory's."""

    inputs_ref: str = ""

    def build(self, weights: str, size: str):
        model = resolve(self.checkpoint, "model")()
        return model.eval()

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        return _call_inputs(resolve(self.inputs_ref, "inputs"), batch_size)


@dataclass(frozen=True, eq=False)
class ObjectModel(ModelEntry):
    """An nn.Module object and an inputs callable, measured in this process."""

    module: Any = field(default=None, compare=False)
    make_inputs: Callable[[int], dict] | None = field(default=None, compare=False)

    def build(self, weights: str, size: str):
        return self.module.eval()

    @property
    def in_process_only(self) -> bool:
        return True

    def inputs(self, image, batch_size: int, weights: str, size: str) -> dict:
        return _call_inputs(self.make_inputs, batch_size)


def factory_entry(model_ref: str, inputs_ref: str | None) -> FactoryModel:
    if not inputs_ref:
        raise UserError(f"model {model_ref!r} is built by your code: say how to make its inputs (inputs=...)")
    resolve(model_ref, "model")
    resolve(inputs_ref, "inputs")
    name = model_ref.rpartition(":")[2]
    return FactoryModel(name=model_ref, label=f"Custom/{name}", task=CUSTOM, checkpoint=model_ref, inputs_ref=inputs_ref)
