"""The shapes timed unit (`compilebench shapes`): one process serves a sequence of input shapes, as a service
meets them. For each shape in order: its first call timed alone (a compile, a recompile or neither, read from
dynamo's own compilation metrics), warm-up, then its steady calls; then a second pass, one call of every shape,
which must compile nothing (a setting that still compiles never settles); then each shape's output against eager's.

The settings are variants: torch's automatic dynamic shapes, dynamic=True or False, mark_dynamic on the batch (or,
for text, the prompt's sequence) dimension of every input before its first call, or every input padded up to a
bucket with its outputs sliced back, both inside the timed call (the padded work is counted)."""

from __future__ import annotations

from types import SimpleNamespace

from compilebench.core import traffic
from compilebench.core.job import Job
from compilebench.core.served import ShapeServed, ShapesServed
from compilebench.core.vocab import CLOCK, EAGER_NONDETERMINISTIC
from compilebench.measure import compiler, conditions, correctness, forward, generation, recording, timing
from compilebench.measure.recording import Measuring, Recorder
from compilebench.measure.unit import TimedUnit


class Serving(TimedUnit):
    """One setting per process (its compiles are its own): every shape's loop in order, then the second pass."""

    reference_may_compile = True

    def build(self) -> None:
        self.case, self.rep = self.first, self.results[0].repeat
        self.shapes = [traffic.Shape.parse(t) for t in self.case.shapes]
        self.served = (_Text if self.case.generation else _Vision)(self.entry, self.case, self.shapes)
        self.model = self.served.model
        self.expected: dict = {}

    def reference(self) -> None:
        self.expected = {s.token: self.served.expected(s) for s in self.shapes}
        # eager again on each shape: how far it differs from itself floors the tolerance
        self.eager_self = max(self.served.self_difference(self.expected[s.token], s) for s in self.shapes)
        self.served.unload()  # a pipeline's adapters: the served pass swaps each in as a user's first swap does

    def warm(self) -> None:
        call = self.served.callable(self.case.variant)
        for s in self.shapes:
            call(s)

    def variants(self) -> None:
        self.call = self.served.callable(self.case.variant)

    def loops(self, recorder: Recorder) -> dict:
        case, policy, call = self.case, self.job.timing, self.call
        iters = policy.iters
        self.per_shape: dict[str, ShapeServed] = {}
        self.flags: dict[str, list[str]] = {}
        loop_recompiles = 0
        for s in self.shapes:
            swap_s = self._swapped(s)
            records, graphs = compiler.compile_records(), compiler.graph_count()
            m = timing.measure(lambda s=s: call(s), iters=iters, warmup=policy.warmup_for(case.variant), clock=self.clock,
                               min_iters=policy.min_iters, max_time_s=policy.max_time_s,
                               warmup_s=policy.warmup_s, warmup_cap_s=policy.warmup_cap_s,
                               sync_each_call=case.sync_each_call,
                               graph_count=compiler.graph_count, watch=self.watch, on_phase=self.enter,
                               before_timing=recorder.memory.steady)  # the shape's first call is a compile's
            recorder.memory.after_loop()
            self.per_shape[s.token], self.flags[s.token] = _shape_record(
                m, compiler.compiled_since(records, graphs), s, case.variant,
                recording.clock_check(m, self.clock, case.sync_each_call))
            self.per_shape[s.token].swap_s = swap_s
            loop_recompiles += m.recompiles or 0
        self.enter("second pass")
        for s in self.shapes:
            self._swapped(s)
            records, graphs = compiler.compile_records(), compiler.graph_count()
            self.per_shape[s.token].second_call_ms = timing.first_call(lambda s=s: call(s), self.clock) / 1e6
            self.per_shape[s.token].second_compiles = compiler.compiled_since(records, graphs)["compiles"]
        return {case.variant.label: SimpleNamespace(recompiles=loop_recompiles)}

    def _swapped(self, s: traffic.Shape) -> float | None:
        """The shape's LoRA adapter swapped in (a pipeline's), its seconds to the device's end; None: it has none."""
        if not s.lora:
            return None
        self.clock.sync()
        t0 = self.clock.now_ns()
        self.served.swap(s)
        self.clock.sync()
        return (self.clock.now_ns() - t0) / 1e9

    def record(self, r: Measuring, m) -> None:
        first = self.per_shape[self.shapes[0].token]
        self.rep.first_call_s = first.first_call_s
        self.rep.timing = "latency" if self.case.sync_each_call else "throughput"
        self.rep.flags = sorted({f for flags in self.flags.values() for f in flags})
        self.rep.shapes = ShapesServed(served=list(self.case.shapes), per_shape=self.per_shape)

    def check_of(self, r: Measuring):
        def check() -> list[str]:
            problems = []
            for s in self.shapes:
                if s.token in self.expected:
                    verdict = self.served.check(self.expected[s.token], self.call, s, self.recorder.math,
                                                self.eager_self)
                    p = self.per_shape[s.token]
                    p.max_rel_err, p.agreement, p.problems = verdict.max_rel_err, verdict.agreement, verdict.problems
                    problems += [f"{s.words}: {p}" for p in verdict.problems]
            if self.expected:
                self.rep.eager_self_rel_err = self.eager_self
                if EAGER_NONDETERMINISTIC.raised_by(self.eager_self):
                    self.rep.flags.append(EAGER_NONDETERMINISTIC.name)
            return problems

        return check


def run(entry, results: list[Measuring], job: Job, clock: timing.HostClock, watch, enter) -> None:
    (result,) = results  # one setting per process: its compiles are its own
    Serving(entry, results, job, clock, watch, enter).run()


def _shape_record(m: timing.Measurement, compiled: dict, shape: traffic.Shape, variant,
                  samples_over_wall) -> tuple[ShapeServed, list[str]]:
    """One shape's first call, what it compiled and its steady samples; and the flags of its loop (its conditions,
    and on a GPU the events' clock against the loop's wall time)."""
    served_as = shape.padded(variant.pad_to)
    flags = conditions.flags(m.conditions) + ([CLOCK.name] if recording.clock_suspect(samples_over_wall) else [])
    return ShapeServed(served_as=served_as.token if served_as != shape else None, first_call_s=m.first_call_ns / 1e9,
                       **compiled, warmup_iters=m.warmup.calls, samples_ms=[x / 1e6 for x in m.samples_ns],
                       recompiles_in_timed_loop=m.recompiles, stopped_early=m.stopped_early,
                       samples_over_wall=samples_over_wall), flags


def _rows_per_item(v, batch: int) -> int | None:
    """How many rows of an input (or output) tensor belong to one item of the batch: OWL-ViT's text queries are
    several per photo. None: not a batch-major tensor."""
    return v.shape[0] // batch if v.dim() and v.shape[0] >= batch and v.shape[0] % batch == 0 else None


def pad_rows(inputs: dict, batch: int, to: int) -> dict:
    """A batch padded up to `to` items by repeating its last item (real data: no kernel sees a special value)."""
    import torch

    out = {}
    for k, v in inputs.items():
        rows = _rows_per_item(v, batch) if isinstance(v, torch.Tensor) else None
        out[k] = v if not rows or to == batch else torch.cat([v, v[-rows:].repeat(to - batch, *[1] * (v.dim() - 1))])
    return out


def slice_rows(out, batch: int, padded: int):
    """A model output with the padded items' rows removed, whatever nests them (a ModelOutput, tuples)."""
    import torch

    if isinstance(out, torch.Tensor):
        rows = _rows_per_item(out, padded)
        return out[:rows * batch] if rows else out
    if isinstance(out, dict):
        return type(out)(**{k: slice_rows(v, batch, padded) for k, v in out.items()})
    if isinstance(out, (list, tuple)):
        return type(out)(slice_rows(v, batch, padded) for v in out)
    return out


def mark_batch(inputs: dict, batch: int) -> None:
    """mark_dynamic on the batch dimension of every batch-major input (before the first call with it)."""
    import torch

    for v in inputs.values():
        if isinstance(v, torch.Tensor) and _rows_per_item(v, batch):
            torch._dynamo.mark_dynamic(v, 0)


class _Vision:
    """A vision model serving batches of photos of each shape, its inputs made before anything is compiled."""

    def __init__(self, entry, case, shapes: list[traffic.Shape]):
        self.model = forward.build(entry, case)
        self.inputs = {s.token: forward.inputs_for(entry, case, s.batch, s.image) for s in shapes}
        ranks = sorted({s.lora for s in shapes if s.lora})
        if ranks:  # a pipeline's adapters, made before anything is compiled
            self.model.prepare_lora(ranks, case.variant.lora_hotswap)

    def swap(self, s: traffic.Shape) -> None:
        if s.lora:
            self.model.swap_lora(s.lora)

    def unload(self) -> None:
        if getattr(self.model, "adapters", None):  # a pipeline that served LoRA adapters
            self.model.unload_lora()

    def expected(self, s: traffic.Shape) -> dict:
        self.swap(s)
        return correctness.snapshot(self.model(**self.inputs[s.token]))

    def callable(self, variant):
        fn = compiler.apply(self.model, variant)
        # a pipeline marks its denoiser's inputs itself (compiler.Part): its own are made anew at each step
        if variant.mark_dynamic and getattr(self.model, "optimized_part", None) is None:
            for token, kw in self.inputs.items():
                mark_batch(kw, traffic.Shape.parse(token).batch)
        if not variant.pad_to:
            return lambda s: fn(**self.inputs[s.token])

        def padded(s: traffic.Shape):
            to = traffic.bucket(s.batch, variant.pad_to)
            return slice_rows(fn(**pad_rows(self.inputs[s.token], s.batch, to)), s.batch, to)

        return padded

    def self_difference(self, expected: dict, s: traffic.Shape) -> float:
        return correctness.self_difference(expected, self.expected(s))

    def check(self, expected: dict, call, s: traffic.Shape, math: str, eager_self: float):
        self.swap(s)
        return correctness.check(expected, correctness.snapshot(call(s)), math, eager_self)


class _Text:
    """A causal LM serving prompts of each length with generate() as `run` times it (greedy, exactly --new-tokens
    tokens); a compiled setting's static KV cache holds the longest (padded) prompt, one per batch size, allocated
    before anything is compiled."""

    def __init__(self, entry, case, shapes: list[traffic.Shape]):
        self.case = case
        self.model = forward.build(entry, case)
        self.prompts = {s.token: entry.prompt(s.batch, s.prompt, case.weights, case.model_size).to(case.device)
                        for s in shapes}
        self.config = generation.generation_config(self.model, case.new_tokens, None)
        self.shapes = shapes

    def swap(self, s: traffic.Shape) -> None:
        """A causal LM serves no adapters."""

    def unload(self) -> None:
        """Nor unloads any."""

    def expected(self, s: traffic.Shape):
        out = self.model.generate(self.prompts[s.token], generation_config=self.config, output_logits=True,
                                  return_dict_in_generate=True)
        return out.sequences[:, -self.case.new_tokens:].clone(), [x.detach().clone() for x in out.logits]

    def callable(self, variant):
        import torch

        if not variant.compiled:
            return lambda s, **extra: self.model.generate(self.prompts[s.token], generation_config=self.config, **extra)
        longest = max(s.padded(variant.pad_to).prompt for s in self.shapes) + self.case.new_tokens
        caches = {b: generation.static_cache(self.model, b, longest, getattr(torch, self.case.dtype))
                  for b in sorted({s.batch for s in self.shapes})}
        compiled = torch.compile(self.model.forward, **compiler.compile_kwargs(variant))
        step = _marking(compiled) if variant.mark_dynamic else compiled
        name = generation.cache_argument(self.model)

        def call(s: traffic.Shape, **extra):
            ids, mask, pad = self.prompts[s.token], None, 0
            if variant.pad_to:
                ids, mask, pad = _left_padded(ids, traffic.bucket(s.prompt, variant.pad_to), self.config.pad_token_id)
            caches[s.batch].reset()
            self.model.forward = step
            try:
                out = self.model.generate(ids, attention_mask=mask, generation_config=self.config,
                                          **{name: caches[s.batch]}, **extra)
            finally:
                del self.model.forward
            return out if extra else out[:, pad:]  # the prompt as given, and its new tokens

        return call

    def self_difference(self, expected, s: traffic.Shape) -> float:
        return correctness.generation_self_difference(*expected, *self.expected(s))

    def check(self, expected, call, s: traffic.Shape, math: str, eager_self: float):
        out = call(s, output_logits=True, return_dict_in_generate=True)
        tokens = out.sequences[:, -self.case.new_tokens:]
        return correctness.check_generation(expected[0], expected[1], tokens, list(out.logits), math, eager_self)


def _left_padded(ids, length: int, pad_id: int):
    """Prompts padded on the left to `length` tokens, with the attention mask that hides the padding."""
    import torch

    pad = length - ids.shape[1]
    filler = torch.full((ids.shape[0], pad), pad_id, dtype=ids.dtype, device=ids.device)
    mask = torch.cat([torch.zeros_like(filler), torch.ones_like(ids)], dim=1)
    return torch.cat([filler, ids], dim=1), mask, pad


def _marking(forward):
    """The compiled forward, with mark_dynamic on every dimension of a prefill's inputs that has the prompt's
    length (a decode step's length is 1: nothing to mark)."""
    import torch

    def call(*args, **kwargs):
        ids = kwargs.get("input_ids")
        if ids is not None and ids.dim() == 2 and ids.shape[1] > 1:
            for v in kwargs.values():
                if isinstance(v, torch.Tensor):
                    for dim, size in enumerate(v.shape):
                        if size == ids.shape[1]:
                            torch._dynamo.mark_dynamic(v, dim)
        return forward(*args, **kwargs)

    return call
