"""A case: one measurement (a model at a batch size under a variant, with its settings), and its resume key, the
identity a results file stores it under. Pure data."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

from compilebench.core import settings as settingsmod
from compilebench.core.settings import Settings
from compilebench.core.variant import Variant


@dataclass(frozen=True)
class Case(Settings):
    """One measurement: a model at a batch size under a variant, with its settings. Hashable; its key() is the
    resume key."""

    model: str
    batch_size: int
    variant: Variant
    environment: str | None = None  # --env NAME: the interpreter and variables it ran under (core/environment.py)
    # `compilebench shapes`: the input shapes one process serves in this order (traffic.Shape tokens); none: the
    # batch size alone, again and again. batch_size is then the largest batch served.
    shapes: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "shapes", tuple(self.shapes))

    def key(self) -> str:
        return key_of(self.to_dict())

    def eager_key(self, **changes) -> str:
        """The key of its eager twin: the same model and settings, uncompiled (`changes`: any other setting the
        twin is looked for with)."""
        return eager_key_of(self.to_dict(), **changes)

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "variant": self.variant.to_dict(), "shapes": list(self.shapes)}

    @classmethod
    def from_dict(cls, d: dict) -> Case:
        """Fields this version does not know (written by a newer one) are ignored here; the stored dict keeps them."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in d.items() if k in known}, "variant": Variant.from_dict(d["variant"])})

    @property
    def kind(self) -> str:
        """What is timed: a forward pass ("vision"), generate() ("generation") or a pipeline's image ("image"); a
        case of a text-generation model says how many tokens each call makes, a pipeline's how many denoiser steps
        make its image, and only such cases do (RunSpec.cases)."""
        if self.new_tokens is not None:
            return "generation"
        return "vision" if self.steps is None else "image"

    @property
    def generation(self) -> bool:
        return self.kind == "generation"

    @property
    def timed_unit(self) -> str:
        """The kind of timed unit that measures it (core/job.UNITS): a sequence of shapes served, generate() calls,
        images made by a pipeline, or forward calls. A run's timing is resolved per kind."""
        if self.shapes:
            return {"generation": "serving generation", "image": "serving image"}.get(self.kind, "serving")
        return {"generation": "generation", "image": "image"}.get(self.kind, "forward")

    def describe(self) -> str:
        what = f"{len(self.shapes)} shapes {self.variant.label}" if self.shapes else f"b{self.batch_size} {self.variant.name}"
        return f"{self.model} {what}" + (f" [{self.environment}]" if self.environment else "")


# Variant fields added after the key's format was set: left out at their default, so older results still resume.
_VARIANT_KEY_DEFAULTS = {k: v for k, v in Variant().to_dict().items()
                         if k in ("options", "cache", "cudagraph", "scope", "regions", "mark_dynamic", "pad_to",
                                  "lora_hotswap", "decoder")}
_KEY_DEFAULTS = {**settingsmod.key_defaults(), "environment": None, "shapes": []}


def key_of(case: dict) -> str:
    """Stable identity of what a case (as a dict) measures. The device index is left out: cuda:0 and cuda:1 of one
    machine measure the same thing, and which machine it was is recorded beside the key."""
    d = {**case, "device": str(case["device"]).split(":")[0]}
    d["variant"] = {k: v for k, v in case["variant"].items()
                    if not (k in _VARIANT_KEY_DEFAULTS and v in (_VARIANT_KEY_DEFAULTS[k], None, ()))}
    for name, default in _KEY_DEFAULTS.items():
        if name in d and (d[name] == default or (default == [] and d[name] == ())):
            del d[name]
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def eager_key_of(case: dict, **changes) -> str:
    """The key of the eager twin of a case (as a dict, with the settings a newer compilebench wrote): the same
    model and settings, uncompiled; `changes`: any other setting the twin is looked for with."""
    return key_of({**case, **changes, "variant": Variant().to_dict()})
