"""Applying a Variant to a model, and reading what dynamo did (graphs, breaks, compile time)."""

from __future__ import annotations

from compilebench.spec import Variant


def apply(model, variant: Variant):
    """The callable to time: the model itself, or torch.compile of it with the variant's settings."""
    if not variant.compiled:
        return model
    import torch

    return torch.compile(
        model,
        mode=None if variant.mode == "default" else variant.mode,
        backend=variant.backend,
        fullgraph=variant.fullgraph,
        dynamic=variant.dynamic,
    )


def reset_dynamo() -> None:
    """Forget every compiled graph and counter, so this case compiles from nothing (inline isolation needs it)."""
    import torch._dynamo
    from torch._dynamo.utils import compilation_time_metrics, counters

    torch._dynamo.reset()
    counters.clear()
    compilation_time_metrics.clear()


def forget_compiled() -> None:
    """Drop every compiled artefact held in memory (dynamo's caches, inductor's loaded modules), keeping the
    on-disk caches: the next compile starts as a new process with a warm cache directory would."""
    from torch._inductor.utils import clear_caches

    reset_dynamo()
    clear_caches()


def graph_count() -> int:
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def compile_seconds() -> float:
    """Dynamo's own timer around each frame compilation (tracing + backend), summed."""
    from torch._dynamo.utils import compilation_time_metrics

    return float(sum(compilation_time_metrics.get("_compile.compile_inner", [])))


def cache_hits() -> int:
    """Compiled graphs that inductor loaded from its on-disk FX-graph cache instead of compiling."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"]["fxgraph_cache_hit"])


def graph_breaks() -> tuple[int, list[str]]:
    """How many graph breaks, and their distinct reasons."""
    from torch._dynamo.utils import counters

    reasons = counters["graph_break"]
    return sum(reasons.values()), sorted(reasons)


def backends() -> list[str]:
    import torch._dynamo

    return sorted(torch._dynamo.list_backends(exclude_tags=()))
