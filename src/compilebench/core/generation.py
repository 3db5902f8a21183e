"""Text generation's figures, as one process records its generate() calls and as a case sums them up over its
processes: time to first token (prefill), the latency of each decoded token, and the bytes a decode step reads;
and which of them a case's verdict is read from."""

from __future__ import annotations

from dataclasses import dataclass, field

from compilebench.core import stats
from compilebench.core.record import Record, items, part


@dataclass(kw_only=True)
class DecodeBytes(Record):
    """What one decode step must read, on average over a call's steps (diagnostics/bandwidth.decode_bytes)."""

    weights: int | None = None
    kv_cache: int | None = None  # at the cache's mean length over the steps
    per_step: int | None = None
    mean_len: float | None = None


@dataclass(kw_only=True)
class FirstCall(Record):
    """One of the first generate() calls, timed one by one: where compiling stops costing anything."""

    total_ms: float | None = None
    ttft_ms: float | None = None
    per_token_ms: float | None = None
    graphs: int | None = None  # graphs compiled so far
    compile_s: float | None = None  # compile seconds within this call


@dataclass(kw_only=True)
class GenerateCalls(Record):
    """One process's generate() calls: its steady calls' time to first token and per-token latencies (ms), its first
    calls, and how far its tokens agreed with eager's."""

    new_tokens: int | None = None
    batch_size: int | None = None
    prompt_len: int | None = None
    ttft_ms: list[float] = field(default_factory=list)  # per steady call
    per_token_ms: list[float] = field(default_factory=list)  # per steady call: its mean decoded-token latency
    token_ms: list[list[float]] = field(default_factory=list)  # per steady call: each decoded token's latency
    first_calls: list[FirstCall] = items(FirstCall)
    decode_bytes: DecodeBytes = part(DecodeBytes)
    first_divergence: int | None = None  # the first new token that differs from eager's; None: none differs


@dataclass(kw_only=True)
class Generation(Record):
    """A case's text generation over its processes: time to first token and per token, each estimated between
    processes as a forward pass's time is."""

    new_tokens: int | None = None
    batch_size: int | None = None
    ttft: stats.Estimate = part(stats.Estimate)
    per_token: stats.Estimate = part(stats.Estimate)
    decode_bytes: DecodeBytes = part(DecodeBytes)

    @classmethod
    def of(cls, measured: list) -> Generation:
        """From the repeats timed to the end."""
        gen = [r.generation for r in measured if r.generation]
        if not gen:
            return cls()
        return cls(new_tokens=gen[0].new_tokens, batch_size=gen[0].batch_size,
                   ttft=stats.case_summary([g.ttft_ms for g in gen]),
                   per_token=stats.case_summary([g.per_token_ms for g in gen]),
                   decode_bytes=next((g.decode_bytes for g in gen if g.decode_bytes), DecodeBytes()))


def TTFT(rep) -> list[float]:
    """A repeat's time to first token of each steady-state generate() call: a metric of core/speedups.speedup."""
    return rep.generation.ttft_ms


def PER_TOKEN(rep) -> list[float]:
    """A repeat's mean time per decoded token of each steady-state generate() call: a metric of speedups.speedup."""
    return rep.generation.per_token_ms


def verdict_metric(case):
    """The per-call series a case's verdict is read from, wherever it is said (the table, the run's looks at its
    verdicts, the undecided line, the suite's summary): a text-generation case's time per decoded token, as its
    table's "per token vs eager" shows it (the prefill has a column of its own, whole calls their end-to-end
    tokens/s); any other case's whole call (None)."""
    return PER_TOKEN if case.generation else None


def per(case) -> str:
    """What a case's speed-up is of, in words to follow it, where that is not the whole call: ' per token'."""
    return " per token" if verdict_metric(case) is PER_TOKEN else ""
