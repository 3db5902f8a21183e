"""How a timed unit's measurement lands in a Repeat, and the device facts measured beside it: the clock to time
with, the conditions watch around the timed loop, and peak memory."""

from __future__ import annotations

import resource

from compilebench import conditions, timing
from compilebench.result import Repeat


def reset_peak_memory(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats(device)


def peak_memory(device: str) -> tuple[int, str]:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.max_memory_allocated(device), "cuda_max_allocated"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "host_max_rss"  # Linux reports KiB


def record(rep: Repeat, m: timing.Measurement) -> None:
    """What a timed loop measured, into the repeat."""
    rep.first_call_s = m.first_call_ns / 1e9
    rep.warmup_iters, rep.warmup_s = m.warmup_iters, m.warmup_ns / 1e9
    rep.iters_requested, rep.min_iters, rep.stopped_early = m.iters_requested, m.min_iters, m.stopped_early
    rep.loop_wall_s = m.loop_wall_ns / 1e9
    rep.loop_started_at, rep.loop_ended_at = m.loop_started_at, m.loop_ended_at
    rep.conditions = m.conditions
    rep.flags = conditions.flags(m.conditions)
    rep.set_samples(m.samples_ns)


def make_clock(device: str) -> timing.HostClock:
    return timing.CudaClock(device) if device.startswith("cuda") else timing.HostClock()


def make_watch(device: str) -> conditions.Watch:
    """Other processes' CPU share always; the GPU's clocks, power and throttling through NVML where it works."""
    if not device.startswith("cuda"):
        return conditions.Watch()
    import torch

    props = torch.cuda.get_device_properties(device)
    uuid_ = getattr(props, "uuid", None)
    nvml = conditions.Nvml.open(f"GPU-{uuid_}" if uuid_ else None, torch.cuda.current_device())
    return conditions.Watch(gpu=nvml.read if nvml else None)


def judge(rep: Repeat, recompiles: int | None, problems: list[str]) -> None:
    """A recompile while timed voids the numbers; an output outside tolerance is a mismatch, kept and shown."""
    if recompiles:
        rep.status = "invalid"
        rep.message = f"{recompiles} recompile(s) inside the timed loop: the samples mix compiled graphs"
    elif problems:
        rep.status = "mismatch"
        rep.message = "compiled output differs from eager: " + "; ".join(problems)
