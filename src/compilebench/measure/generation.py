"""The text-generation timed unit: one generate() call making exactly --new-tokens tokens (greedy; end-of-sequence
never ends it early), split into time to first token (prefill) and the latency of each decoded token, taken as
each token is produced.

Variants as people deploy them: eager with the dynamic cache (the plain baseline), eager with the static cache,
and torch.compile of the model's forward with the static cache transformers recommends for compiled generation.
The static cache is allocated once per variant before anything is compiled, its tensors marked as static
addresses, and reset (in place) before every call: allocated lazily inside a compiled prefill, transformers
leaves them unmarked, and CUDA-graph trees then skip every graph that mutates them (reduce-overhead would silently
run as default).
transformers' generate() compiles the forward by itself when the cache can be compiled (on GPUs); every call
here passes disable_compile=True, so each variant is exactly what its label says."""

from __future__ import annotations

import contextlib

from compilebench.core.case import Case
from compilebench.core.generation import DecodeBytes, FirstCall, GenerateCalls
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat
from compilebench.diagnostics import bandwidth, profiling
from compilebench.measure import compiler, correctness, quantization, timing
from compilebench.measure.recording import Measuring, Recorder, record_check, record_loop
from compilebench.measure.unit import TimedUnit


class _Stamps:
    """A streamer that stamps the clock as each new token arrives. generate() hands it the prompt first (not a
    token), then each new token; handing over a token copies it to the host, which waits for the device."""

    def __init__(self, stamp):
        self._stamp, self._prompt_seen = stamp, False

    def put(self, value) -> None:
        if self._prompt_seen:
            self._stamp()
        self._prompt_seen = True

    def end(self) -> None:
        pass


def generation_config(model, new_tokens: int, cache: str | None):
    """Greedy decoding of exactly new_tokens tokens: no end-of-sequence token can stop it early."""
    import copy

    config = copy.deepcopy(model.generation_config)
    config.do_sample, config.num_beams = False, 1
    config.max_new_tokens, config.min_new_tokens, config.max_length = new_tokens, None, None
    config.eos_token_id = None
    config.pad_token_id = config.pad_token_id if config.pad_token_id is not None else 0
    config.cache_implementation = cache
    config.disable_compile = True  # transformers' own automatic compile: never behind a variant's back
    for name in ("temperature", "top_p", "top_k"):  # sampling settings of a checkpoint mean nothing when greedy
        setattr(config, name, None)
    return config


def prepare(entry, case: Case):
    import torch

    dtype = torch.float32 if case.autocast else getattr(torch, case.dtype)
    model = entry.build(case.weights, case.model_size)
    if case.attn is not None:
        model.set_attn_implementation(case.attn)
    model = model.to(device=case.device, dtype=dtype)
    input_ids = entry.prompt(case.batch_size, case.prompt_len, case.weights, case.model_size).to(case.device)
    return model, input_ids


def static_cache(model, batch_size: int, max_len: int, dtype):
    """A static KV cache with every layer allocated now, outside any compiled region, so transformers marks its
    tensors as static addresses (it does so only outside one) and they keep their addresses from call to call."""
    import torch
    from transformers import StaticCache

    cache = StaticCache(config=model.config, max_cache_len=max_len)
    text = model.config.get_text_config(decoder=True)
    heads = getattr(text, "num_key_value_heads", None) or text.num_attention_heads
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    empty = torch.zeros((batch_size, heads, 0, head_dim), dtype=dtype, device=model.device)  # shapes only, no data
    for layer in cache.layers:
        if getattr(layer, "supports_early_init", True) and not getattr(layer, "is_initialized", False):
            layer.lazy_initialization(empty, empty)
    return cache


def cache_argument(model) -> str:
    """The name a model's forward (and generate()) takes its KV cache by: `cache` from transformers 5.24,
    `past_key_values` before (5.24 still maps the old name, with a deprecation)."""
    import inspect

    return "cache" if "cache" in inspect.signature(type(model).forward).parameters else "past_key_values"


def _caller(model, input_ids, config, forward, cache=None):
    """call(stamp): one generate() with this variant's forward (compiled, or the model's own), on `cache` (reset
    first) when the variant uses the static cache."""

    def call(stamp, **extra):
        if forward is not None:
            model.forward = forward  # generate() calls the model, and the model calls this
        if cache is not None:
            cache.reset()  # in place: the same tensors, at the same addresses, for every call
            extra = {**extra, cache_argument(model): cache}
        try:
            return model.generate(input_ids, generation_config=config, streamer=_Stamps(stamp), **extra)
        finally:
            if forward is not None:
                del model.forward

    return call


def _calls(model, input_ids, cases: list[Case], new_tokens: int) -> tuple[dict, dict]:
    """Each variant's generate() call by label (its forward compiled, or its decoder blocks, on a static cache
    where it uses one), and the blocks each regional compile compiled."""
    import torch

    first, prompt_len = cases[0], input_ids.shape[1]
    calls, regions = {}, {}
    for c in cases:
        if c.variant.ahead_of_time:
            raise NotImplementedError("aot-inductor does not time text generation yet: generate() drives a KV cache "
                                      "from Python, and exporting its decode step with a static cache is not built "
                                      "(time the forward of a vision model, or compile with a torch.compile mode)")
        static = c.variant.compiled or c.variant.cache == "static"
        forward = None
        if c.variant.scope == "regions":  # the forward as it is, with the decoder blocks compiled during its calls
            compiled_blocks = compiler.apply(model, c.variant, shared=len(cases) > 1)
            forward, regions[c.variant.label] = compiled_blocks.around(model.forward), compiled_blocks.classes()
        elif c.variant.compiled:
            forward = torch.compile(model.forward, **compiler.compile_kwargs(c.variant))
        cache = static_cache(model, first.batch_size, prompt_len + new_tokens, getattr(torch, first.dtype)) if static else None
        calls[c.variant.label] = _caller(model, input_ids, generation_config(model, new_tokens, None), forward, cache)
    return calls, regions


@contextlib.contextmanager
def _embeddings_moved(model):
    """Every embedding the model looks up moved by one rounding step of its dtype (a language model's input is
    tokens: its first floating tensor is their embeddings)."""
    import torch

    def moved(module, args, out):
        return torch.nextafter(out, torch.full_like(out, float("inf")))

    hook = model.get_input_embeddings().register_forward_hook(moved)
    try:
        yield
    finally:
        hook.remove()


def _tokens_and_logits(call, prompt_len: int):
    out = call(lambda: None, output_logits=True, return_dict_in_generate=True)
    return out.sequences[:, prompt_len:].clone(), [step.detach().clone() for step in out.logits]


class Generation(TimedUnit):
    """Each variant's generate() calls: the first ones timed one by one (they hold the compiles), then the steady
    ones, split into time to first token and per-token latency."""

    profiled_calls = profiling.GENERATE_CALLS
    reference_may_compile = True

    def build(self) -> None:
        self.model, self.input_ids = prepare(self.entry, self.first)
        self.new_tokens, self.prompt_len = self.first.new_tokens, self.input_ids.shape[1]
        self.float_tokens = quantization.of_case(self.model, self.first, self.job.check, self.enter,
                                                 lambda: _tokens_and_logits(self._eager(), self.prompt_len)[0])
        self.moved = bandwidth.decode_bytes(self.model, self.first.batch_size, self.prompt_len, self.new_tokens)

    def _checked(self, case: Case) -> bool:
        """A compiled variant, or eager on the static cache: held to the dynamic cache's eager tokens."""
        return self.job.check and (case.variant.compiled or case.variant.cache == "static")

    def wants_reference(self) -> bool:
        return any(self._checked(c) for c in self.cases)

    def _eager(self):
        """generate() of the model as it is, on the dynamic cache."""
        return _caller(self.model, self.input_ids, generation_config(self.model, self.new_tokens, None), None)

    def reference(self) -> None:
        baseline = self._eager()
        self.eager_tokens, self.eager_logits = _tokens_and_logits(baseline, self.prompt_len)
        # eager again on the same prompt: how far it differs from itself floors the tolerance; and with the
        # embeddings it looks up moved by one rounding step: how far the model itself moves floors it too
        self.eager_self = correctness.generation_self_difference(self.eager_tokens, self.eager_logits,
                                                                 *_tokens_and_logits(baseline, self.prompt_len))
        with _embeddings_moved(self.model):
            self.sensitivity = correctness.generation_self_difference(self.eager_tokens, self.eager_logits,
                                                                      *_tokens_and_logits(baseline, self.prompt_len))

    def warm(self) -> None:
        calls, _ = _calls(self.model, self.input_ids, self.compiled, self.new_tokens)
        for call in calls.values():
            call(lambda: None)

    def variants(self) -> None:
        self.calls, self.regions = _calls(self.model, self.input_ids, self.cases, self.new_tokens)

    def loops(self, recorder: Recorder) -> dict:
        policy = self.job.timing
        self.per_call: dict[str, list[dict]] = {name: [] for name in self.calls}
        seen = {"compile_s": 0.0}

        def after_first_call(name: str, i: int) -> None:
            s = compiler.compile_stats()
            self.per_call[name].append({"graphs": s.graphs, "compile_s": s.compile_s - seen["compile_s"]})
            seen["compile_s"] = s.compile_s

        return timing.measure_generation(
            self.calls, first_calls=policy.first_calls, iters=policy.iters, min_iters=policy.min_iters,
            max_time_s=policy.max_time_s, clock=self.clock, graph_count=compiler.graph_count, watch=self.watch,
            after_first_call=after_first_call, before_timing=recorder.memory.steady, on_phase=self.enter)

    def record(self, r: Measuring, m) -> None:
        rep: Repeat = r.repeat
        name = r.case.variant.label
        _record(rep, m, self.per_call[name], self.new_tokens, self.first.batch_size, self.prompt_len,
                alone=len(self.cases) == 1)
        rep.generation.decode_bytes = DecodeBytes.from_dict(self.moved)
        rep.regions = self.regions.get(name, {})
        rep.graphs, rep.recompiles_in_timed_loop = compiler.graph_count(), m.recompiles

    def check_of(self, r: Measuring):
        checked = self._checked(r.case)
        if not (checked or (self.job.check and self.float_tokens is not None)):
            return None
        call, rep, math = self.calls[r.case.variant.label], r.repeat, self.recorder.math

        def check_tokens() -> list[str]:
            tokens, logits = _tokens_and_logits(call, self.prompt_len)
            if self.float_tokens is not None:  # quantized: its tokens against the float model's
                rep.quality = correctness.generation_quality(self.float_tokens, tokens)
            if not checked:
                return []
            verdict = correctness.check_generation(self.eager_tokens, self.eager_logits, tokens, logits, math,
                                                   self.eager_self, self.sensitivity)
            rep.generation.first_divergence = verdict.first_divergence
            return record_check(rep, verdict, math)

        return check_tokens

    def profiled(self) -> dict:
        return {name: (lambda c=c: c(lambda: None)) for name, c in self.calls.items()}


def run(entry, results: list[Measuring], job: Job, clock: timing.HostClock, watch, enter) -> None:
    Generation(entry, results, job, clock, watch, enter).run()


def _record(rep: Repeat, m: timing.GenerationMeasurement, first_calls: list[dict], new_tokens: int, batch_size: int,
            prompt_len: int, alone: bool = True) -> None:
    """Every call's total, its time to first token and its per-token decode latencies, in milliseconds."""
    def split(t: timing.CallTiming) -> dict:
        tokens = [b - a for a, b in zip(t.token_ns, t.token_ns[1:])]
        ttft = t.token_ns[0] if t.token_ns else t.total_ns
        return {"total_ms": t.total_ns / 1e6, "ttft_ms": ttft / 1e6,
                "per_token_ms": (sum(tokens) / len(tokens) / 1e6) if tokens else None,
                "token_ms": [x / 1e6 for x in tokens]}

    firsts = [{**split(t), **extra} for t, extra in zip(m.first_calls, first_calls)]
    for f in firsts:
        f.pop("token_ms")
    steady = [split(t) for t in m.calls]
    made = [len(t.token_ns) for t in [*m.first_calls, *m.calls] if len(t.token_ns) != new_tokens]
    if made:
        raise RuntimeError(f"a generate() call made {made[0]} new tokens, not the {new_tokens} asked for")
    rep.first_call_s = m.first_calls[0].total_ns / 1e9 if m.first_calls else None
    rep.warmup_iters = max(0, len(m.first_calls) - 1)
    rep.warmup_s = sum(t.total_ns for t in m.first_calls[1:]) / 1e9
    record_loop(rep, m, [t.total_ns for t in m.calls], alone)
    rep.timing = "latency"  # every generate() call ends with its tokens on the host
    rep.generation = GenerateCalls(
        new_tokens=new_tokens, batch_size=batch_size, prompt_len=prompt_len,
        ttft_ms=[c["ttft_ms"] for c in steady],
        per_token_ms=[c["per_token_ms"] for c in steady if c["per_token_ms"] is not None],
        token_ms=[c["token_ms"] for c in steady],
        first_calls=[FirstCall(**f) for f in firsts])
