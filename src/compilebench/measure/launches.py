"""What a GPU model's calls cost the host: the calling thread's CPU time per timed call (its launches), and how
inductor launches the Triton kernels it compiled. At batch 1 a model's launches, not its kernels, can set its pace:
on one H200 (2026-11-30) benchmarks/blocks.py read compiled ResNet-50 at 2.2-2.3 ms a call in a plain process, its
launches' CPU time all of it, where compilebench's workers read 3.0-4.0 ms; these figures say which side moved.

Inductor launches a Triton kernel through its own static launcher (torch._C's StaticallyLaunchedCudaKernel: no
Python between the call and cuLaunchKernel) where it finds the kernel's cubin, else through Triton's launcher,
which costs more CPU per launch."""

from __future__ import annotations

import sys
from collections import Counter

STATIC, TRITON = "static", "triton"


def launch_cpu_ms(loop_cpu_ns: int | None, calls: int) -> float | None:
    """The calling thread's CPU ms per timed call, up to the synchronize closing the calls (None: not measured): well
    under the ms per call where the GPU set the pace; near it where the host did, or where the launches waited for
    room in the GPU's queue (a driver that spins while it waits counts the wait as CPU time)."""
    return round(loop_cpu_ns / calls / 1e6, 6) if loop_cpu_ns is not None and calls else None


def triton_launchers() -> dict[str, int]:
    """The Triton kernels inductor has loaded in this process (every graph it compiled or loaded from its cache), by
    the launcher each runs through: {"static": n, "triton": m}; empty where it loaded none."""
    codecache = sys.modules.get("torch._inductor.codecache")
    heuristics = sys.modules.get("torch._inductor.runtime.triton_heuristics")
    if codecache is None or heuristics is None:
        return {}
    counts: Counter = Counter()
    for module in list(codecache.PyCodeCache.modules):
        for value in list(vars(module).values()):
            if isinstance(value, heuristics.CachingAutotuner):
                counts.update(kind(launcher) for launcher in value.launchers)
    return dict(counts)


def kind(launcher) -> str:
    """STATIC where torch marked the launcher static (`_is_static`) or, in a torch that marks none, where the
    function it calls is a StaticallyLaunchedCudaKernel's `run`; else TRITON."""
    if getattr(launcher, "_is_static", False):
        return STATIC
    runner = getattr(launcher, "__globals__", {}).get("runner")
    return STATIC if type(getattr(runner, "__self__", None)).__name__ == "StaticallyLaunchedCudaKernel" else TRITON
