"""The model registry: short name -> ModelEntry, a plain dict in the guide's row order.

Extra models (your own, or the fault-injecting ones the tests use) come from modules named in the
COMPILEBENCH_PLUGINS environment variable (comma-separated); each calls register(). Worker processes
inherit the variable, so a plugin model runs under process isolation too."""

from __future__ import annotations

import importlib
import os

from compilebench.errors import UnknownChoice
from compilebench.zoo.entry import ModelEntry
from compilebench.zoo.models import MODELS

REGISTRY: dict[str, ModelEntry] = {m.name: m for m in MODELS}


def register(entry: ModelEntry) -> None:
    REGISTRY[entry.name] = entry


def get(name: str) -> ModelEntry:
    try:
        return REGISTRY[name]
    except KeyError:
        raise UnknownChoice("model", name, list(REGISTRY)) from None


def _load_plugins() -> None:
    for module in filter(None, (m.strip() for m in os.environ.get("COMPILEBENCH_PLUGINS", "").split(","))):
        importlib.import_module(module)


_load_plugins()
