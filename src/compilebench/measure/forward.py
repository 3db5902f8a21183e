"""The forward-pass timed unit (the guide's vision models): one call of the model on one batch.

Build the model and its inputs, keep one eager output as the expected one, time the first call alone (it holds the
compilation), warm up, time the loop, then check the compiled output against it."""

from __future__ import annotations

import contextlib

from compilebench import kinds
from compilebench.core.case import Case
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat
from compilebench.diagnostics import bandwidth, profiling
from compilebench.measure import compiler, correctness, quantization, timing
from compilebench.measure.recording import Measuring, Recorder, record, record_aot, record_check, record_engine
from compilebench.measure.unit import TimedUnit
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

    on_device = entry.draws_on_device and case.weights == "random" and case.device not in (None, "cpu")
    with torch.device(case.device) if on_device else contextlib.nullcontext():
        model = entry.build(case.weights, case.model_size)
    if case.steps is not None:  # a pipeline: each image its case's denoiser steps
        model.steps = case.steps
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
    inputs = {}
    for k, v in entry.sized_inputs(image, image_size, batch_size, case.weights, case.model_size).items():
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


class Forward(TimedUnit):
    """Measure one case, or (--interleave) the variants of one model and batch in alternating blocks on one model."""

    profiled_calls = profiling.FORWARD_CALLS

    def build(self) -> None:
        self.model, self.inputs = prepare(self.entry, self.first)
        self.expected, self.counted, self.inductor_counted = None, {}, {}
        self.float_expected = quantization.of_case(self.model, self.first, self.job.check, self.enter,
                                                   lambda: correctness.snapshot(self.model(**self.inputs)))

    def wants_reference(self) -> bool:
        checked = any(c.variant.against_eager for c in self.cases)  # compiled, or eager in a CUDA graph
        return bool(self.compiled) and self.job.count_flops or checked and self.job.check  # eager's call counted once

    def reference(self) -> None:
        with _counted(self.job.count_flops) as self.counted:
            self.expected = correctness.snapshot(self.model(**self.inputs))
        self.eager_self = self.sensitivity = None
        if self.job.check:  # eager again on the same input: how far it differs from itself floors the tolerance
            self.eager_self = correctness.self_difference(self.expected, correctness.snapshot(self.model(**self.inputs)))
            # and on its input moved by one rounding step: how far the model itself moves floors it too
            moved = correctness.snapshot(self.model(**correctness.perturbed(self.inputs)))
            self.sensitivity = correctness.sensitivity(self.expected, moved)

    def warm(self) -> None:
        for c in self.compiled:
            if not c.variant.prepared:  # its package (engine) is what a later repeat loads: no cache to warm
                compiler.apply(self.model, c.variant, shared=True)(**self.inputs)

    def variants(self) -> None:
        """Each variant's callable, and what building or loading an aot-inductor package (or an engine) took."""
        self.fns, self.packaged = {}, {}
        for c in self.cases:
            kind = kinds.of(c.variant)
            if kind.prepares:  # an engine, an AOTInductor package, a CUDA graph: made ready by its kind
                self.fns[c.variant.label], self.packaged[c.variant.label] = kind.prepare(
                    self.model, self.inputs, self.job.packages, c, self.enter)
            else:  # eager and torch.compile's modes: the compiler every timed unit shares
                self.fns[c.variant.label] = compiler.apply(self.model, c.variant, shared=len(self.cases) > 1)
        if all(c.variant.prepared for c in self.cases):
            # a replica holds the package's (the engine's) weights only: the model's leave the peak memory measured
            self.model = None

    def loops(self, recorder: Recorder) -> dict:
        policy, first, inputs = self.job.timing, self.first, self.inputs
        timed = dict(iters=policy.iters, min_iters=policy.min_iters, max_time_s=policy.max_time_s,
                     warmup_s=policy.warmup_s, warmup_cap_s=policy.warmup_cap_s,
                     sync_each_call=first.sync_each_call, clock=self.clock,
                     graph_count=compiler.graph_count if self.compiled else None, watch=self.watch,
                     before_timing=recorder.memory.steady, on_phase=self.enter)
        with _inductor_bytes(self.job, self.compiled) as self.inductor_counted:
            if len(self.cases) == 1:
                fn = self.fns[first.variant.label]
                return {first.variant.label: timing.measure(lambda: fn(**inputs), warmup=policy.warmup_for(first.variant),
                                                            **timed)}
            return timing.measure_interleaved({name: (lambda f=f: f(**inputs)) for name, f in self.fns.items()},
                                              warmup={c.variant.label: policy.warmup_for(c.variant) for c in self.cases},
                                              **timed)

    def after_loops(self) -> None:
        if not self.compiled and self.job.count_flops:
            self.enter("counting FLOPs")  # after timing: an extra call before would not leave the first call first
            with _counted(True) as self.counted:
                self.model(**self.inputs)
        self.decoder_shares = {}
        if self.first.kind == "image" and self.model is not None:  # a pipeline: how much of an image is its decoder
            self.enter("timing the decoder")
            self.decoder_shares = {label: self.model.decoder_share(fn, self.inputs, self.clock)
                                   for label, fn in self.fns.items()}

    def record(self, r: Measuring, m) -> None:
        rep: Repeat = r.repeat
        record(rep, m, self.clock, self.first.sync_each_call, alone=len(self.cases) == 1)
        rep.flops = self.counted.get("flops")
        rep.bytes_moved = self.inductor_counted.get("bytes") if r.case.variant.compiled else self.counted.get("bytes")
        rep.regions = compiler.regions_of(self.fns[r.case.variant.label])
        rep.decoder_share = self.decoder_shares.get(r.case.variant.label)
        if r.case.variant.ahead_of_time:
            record_aot(rep, self.packaged[r.case.variant.label])
        elif r.case.variant.engine:
            record_engine(rep, self.packaged[r.case.variant.label])
        if r.case.variant.cudagraph:
            rep.cudagraphs_recorded = 1  # its pool is then looked for in the allocator's snapshot (Recorder.finish)

    def check_of(self, r: Measuring):
        checked = r.case.variant.against_eager  # compiled, or replayed from a CUDA graph: eager's output expected
        if not self.job.check or not (checked or self.float_expected is not None):
            return None
        fn, rep, inputs, math = self.fns[r.case.variant.label], r.repeat, self.inputs, self.recorder.math

        def check() -> list[str]:
            out = correctness.snapshot(fn(**inputs))
            if self.float_expected is not None:  # quantized: what it predicts against the float model
                rep.quality = correctness.quality(self.float_expected, out)
            if not checked:
                return []
            return record_check(rep, correctness.check(self.expected, out, math, self.eager_self, self.sensitivity),
                                math)

        return check

    def profiled(self) -> dict:
        return {name: (lambda f=f: f(**self.inputs)) for name, f in self.fns.items()}


def run(entry, results: list[Measuring], job: Job, clock: timing.HostClock, watch, enter) -> None:
    Forward(entry, results, job, clock, watch, enter).run()
