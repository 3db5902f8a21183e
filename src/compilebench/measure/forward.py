"""The forward-pass timed unit (the guide's vision models): one call of the model on one batch.

Build the model and its inputs, keep one eager output as the expected one, time the first call alone (it holds the
compilation), warm up, time the loop, then check the compiled output against it."""

from __future__ import annotations

import contextlib

from compilebench.core.case import Case
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.diagnostics import bandwidth, profiling
from compilebench.measure import aot_inductor, compiler, correctness, timing
from compilebench.measure.recording import Recorder, record, record_aot, record_check, record_profiles
from compilebench.zoo.entry import default_image_path, load_image


def prepare(entry, case: Case):
    """The model and its inputs on the device, in the case's dtype, memory format and attention."""
    return build(entry, case), inputs_for(entry, case, case.batch_size)


def _dtype(case: Case):
    import torch

    return torch.float32 if case.autocast else getattr(torch, case.dtype)  # autocast casts per op instead


def build(entry, case: Case):
    """The model on the device, in the case's dtype, memory format and attention."""
    import torch

    model = entry.build(case.weights, case.model_size)
    if case.attn is not None:
        if not hasattr(model, "set_attn_implementation"):
            raise ValueError(f"--attn {case.attn}: {case.model} has no attention implementation to choose")
        model.set_attn_implementation(case.attn)
    model = model.to(device=case.device, dtype=_dtype(case))
    return model.to(memory_format=torch.channels_last) if case.channels_last else model


def inputs_for(entry, case: Case, batch_size: int, image_size: tuple[int, int] | None = None) -> dict:
    """One call's inputs on the device: the photo (resized to image_size first, as a photo of that size would
    arrive) through the model's processor, batch_size times."""
    import torch

    image = load_image(case.image or default_image_path())
    if image_size is not None:
        image = image.resize(image_size)
    inputs = {}
    for k, v in entry.inputs(image, batch_size, case.weights, case.model_size).items():
        v = v.to(case.device, dtype=_dtype(case) if v.is_floating_point() else v.dtype)
        inputs[k] = v.contiguous(memory_format=torch.channels_last) if case.channels_last and v.dim() == 4 else v
    return inputs


@contextlib.contextmanager
def _counted(count: bool):
    """The FLOPs (torch's counter: matmuls and convolutions) and the bytes its operators move (bandwidth.py) of the
    eager calls inside the block, set on exit when `count`."""
    from torch.utils.flop_counter import FlopCounterMode

    found = {"flops": None, "bytes": None}
    if not count:
        yield found
        return
    with FlopCounterMode(display=False) as flops, bandwidth.BytesCounter() as moved:
        yield found
    found.update(flops=flops.get_total_flops(), bytes=moved.total)


def _inductor_bytes(job: Job, compiled: list[Case]):
    """Inductor's own count of the bytes its kernels access, where one variant compiles cold in this process."""
    return bandwidth.inductor_bytes() if len(compiled) == 1 and job.compile_cache == "cold" else contextlib.nullcontext({})


def _warm(model, inputs: dict, compiled: list[Case], enter) -> None:
    """--compile-cache warm: compile each variant once, then forget it in memory; what stays is on disk, as for a
    second process."""
    enter("warming the compile cache")
    for c in compiled:
        if not c.variant.ahead_of_time:  # its package is what a later repeat loads: no cache to warm
            compiler.apply(model, c.variant, shared=True)(**inputs)
    compiler.forget_compiled()


def _callables(model, inputs: dict, cases: list[Case], job: Job, enter) -> tuple[dict, dict]:
    """What each variant times, by label, and what building or loading an aot-inductor package took."""
    fns, packaged = {}, {}
    for c in cases:
        if c.variant.ahead_of_time:
            fns[c.variant.label], packaged[c.variant.label] = aot_inductor.prepare(model, inputs, job.packages, c, enter)
        else:
            fns[c.variant.label] = compiler.apply(model, c.variant, shared=len(cases) > 1)
    return fns, packaged


def run(entry, results: list[Result], job: Job, clock: timing.HostClock, watch, enter) -> None:
    """Measure one case, or (--interleave) the variants of one model and batch in alternating blocks on one
    model. Fills each result's repeat; raises on a failure of the case (the worker records it)."""
    policy, count_flops = job.policy, job.count_flops
    cases = [r.case for r in results]
    first = cases[0]
    enter("build")
    model, inputs = prepare(entry, first)
    compiled = [c for c in cases if c.variant.compiled]
    expected, counted = None, {}
    if compiled and (job.check or count_flops):
        enter("eager reference")
        with _counted(count_flops) as counted:  # the eager call is counted, not repeated
            expected = correctness.snapshot(model(**inputs))
        if first.compile_cache == "warm":
            _warm(model, inputs, compiled, enter)
    recorder = Recorder(first, results[0].env)
    fns, packaged = _callables(model, inputs, cases, job, enter)
    if all(c.variant.ahead_of_time for c in cases):
        model = None  # a replica holds the package's weights only: the model's leave the peak memory measured
    graph_count = compiler.graph_count if compiled else None
    iters, floor = policy.iters_for(False), policy.min_iters_for(False)
    timed = dict(iters=iters, min_iters=floor, max_time_s=policy.max_time_s, warmup_s=policy.warmup_s_for(first.device),
                 sync_each_call=first.sync_each_call, clock=clock, graph_count=graph_count, watch=watch,
                 before_timing=recorder.memory.steady, on_phase=enter)
    with recorder.loops(), _inductor_bytes(job, compiled) as compiled_bytes:
        if len(cases) == 1:
            fn = fns[first.variant.label]
            measured = {first.variant.label: timing.measure(lambda: fn(**inputs), warmup=policy.warmup_for(first.variant),
                                                            **timed)}
        else:
            measured = timing.measure_interleaved(
                {name: (lambda f=f: f(**inputs)) for name, f in fns.items()},
                warmup={c.variant.label: policy.warmup_for(c.variant) for c in cases}, **timed)
    if not compiled and count_flops:
        enter("counting FLOPs")  # after timing: an extra call before would not leave the first call first
        with _counted(True) as counted:
            model(**inputs)
    compile_stats = None
    if compiled:
        enter("check")
        compile_stats = compiler.compile_stats()
    for r in results:
        rep: Repeat = r.repeats[0]
        m = measured[r.case.variant.label]
        record(rep, m, clock, first.sync_each_call, alone=len(cases) == 1)
        r.flops = counted.get("flops")
        rep.bytes_moved = compiled_bytes.get("bytes") if r.case.variant.compiled else counted.get("bytes")
        rep.regions = compiler.regions_of(fns[r.case.variant.label])

        def check(fn=fns[r.case.variant.label], rep=rep) -> list[str]:
            output = correctness.snapshot(fn(**inputs))
            return record_check(rep, correctness.check(expected, output, recorder.math), recorder.math)

        recorder.finish(rep, r.case, m, compile_stats, check if r.case.variant.compiled and job.check else list)
        if r.case.variant.ahead_of_time:
            record_aot(rep, packaged[r.case.variant.label])
    record_profiles(results, job, {name: (lambda f=f: f(**inputs)) for name, f in fns.items()}, profiling.FORWARD_CALLS,
                    clock, enter)