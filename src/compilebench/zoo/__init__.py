"""The model registry: short name -> ModelEntry, a plain dict: the guide's vision models in its row order, then
the causal LMs measured by generation, then the text-to-image pipelines.

Extra models (your own, or the fault-injecting ones the tests use) come from modules named in the
COMPILEBENCH_PLUGINS environment variable (comma-separated); each calls register(). Worker processes
inherit the variable, so a plugin model runs under process isolation too. Plugins load on the first lookup
(get() or models()), so commands that never build a model (report, compare) never import them.

Imports core alone (and transformers, inside each build); the workers and the run's preparation read it."""

from __future__ import annotations

import importlib
import os

from compilebench.core.errors import UnknownChoice, UserError
from compilebench.zoo import factory, hub
from compilebench.zoo.entry import ModelEntry
from compilebench.zoo.models import MODELS
from compilebench.zoo.pipelines import PIPELINES
from compilebench.zoo.textgen import MODELS as TEXT_MODELS, TEXT_GENERATION, TextGenerationEntry

__all__ = ["REGISTRY", "ModelEntry", "TEXT_GENERATION", "TextGenerationEntry", "factory", "get", "hub", "models", "register"]

REGISTRY: dict[str, ModelEntry] = {m.name: m for m in [*MODELS, *TEXT_MODELS, *PIPELINES]}


def register(entry: ModelEntry) -> None:
    REGISTRY[entry.name] = entry


def models() -> list[ModelEntry]:
    """Every registered model: the guide's, the text-generation ones, then the plugins'."""
    _load_plugins()
    return list(REGISTRY.values())


def get(name: str, task: str | None = None, inputs: str | None = None) -> ModelEntry:
    """A zoo entry by short name, an entry for a hub id / local checkpoint directory, or (the Python API) a
    "module:function" model factory with its inputs factory."""
    _load_plugins()
    if factory.is_ref(name) and name not in REGISTRY:
        return factory.factory_entry(name, inputs)
    if name in REGISTRY:
        entry = REGISTRY[name]
        if task is not None and task != entry.task:
            raise UserError(f"--task {task}: {name} is a {entry.task} model")
        return entry
    if hub.looks_like_checkpoint(name):
        return hub.resolve(name, task)
    raise UnknownChoice("model (or a hub id / local checkpoint directory)", name, list(REGISTRY))


_plugins_loaded = False


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for module in filter(None, (m.strip() for m in os.environ.get("COMPILEBENCH_PLUGINS", "").split(","))):
        importlib.import_module(module)
