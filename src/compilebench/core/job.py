"""What a worker process is asked to measure (a Job): its cases, how to time them (TimingPolicy), which repeat,
the compiler state it starts from and what else to record. The driver writes it, the worker reads it. Pure data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compilebench.core.case import Case
from compilebench.core.variant import Variant

DEFAULT_ITERS = 300  # the guide: mean of 300 inferences
DEFAULT_GENERATION_ITERS = 20  # steady-state generate() calls: each makes --new-tokens tokens
DEFAULT_WARMUP = 10
DEFAULT_MIN_ITERS = 10  # no time budget ends a repeat's timed loop before this many samples
DEFAULT_FIRST_CALLS = 5  # generate() calls timed one by one before the steady state: when does compiling end?
# CUDA graphs (reduce-overhead, max-autotune) record on the 2nd-3rd call: never time those.
MIN_WARMUP_CUDAGRAPHS = 3
# A GPU needs time, not just calls, to reach steady clocks: ten calls of a 3 ms model are 30 ms of a ramp.
DEFAULT_GPU_WARMUP_S = 1.0
# When the driver asked for the worker process (time.monotonic(), one clock for every process of the machine): the
# worker records the time until its first phase as the phase "start" (the fork, or the interpreter and its imports).
SPAWNED_AT = "COMPILEBENCH_SPAWNED_AT"


@dataclass(frozen=True)
class TimingPolicy:
    """How a case is timed. Recorded with each result but not part of the case key."""

    iters: int | None = None  # None: the timed unit's default (300 forward calls, 20 generate calls)
    warmup: int = DEFAULT_WARMUP
    max_time_s: float | None = None  # budget for one repeat's timed loop; the real N is recorded
    min_iters: int = DEFAULT_MIN_ITERS  # no budget ends a timed loop before this many samples
    first_calls: int = DEFAULT_FIRST_CALLS  # generation: calls timed one by one before the steady state
    warmup_s: float | None = None  # warm-up goes on until this long has passed too; None: 1 s on a GPU, 0 on a CPU

    def warmup_for(self, variant: Variant) -> int:
        return max(self.warmup, MIN_WARMUP_CUDAGRAPHS) if variant.uses_cudagraphs else self.warmup

    def warmup_s_for(self, device: str) -> float:
        if self.warmup_s is not None:
            return self.warmup_s
        return DEFAULT_GPU_WARMUP_S if device.startswith("cuda") else 0.0

    def iters_for(self, generation: bool) -> int:
        if self.iters is not None:
            return self.iters
        return DEFAULT_GENERATION_ITERS if generation else DEFAULT_ITERS

    def min_iters_for(self, generation: bool) -> int:
        return min(self.min_iters, self.iters_for(generation))


@dataclass
class Job:
    """What one worker process measures: the cases (one, or an interleaved group), which repeat, the on-disk
    compiler state it starts from, and whether to count FLOPs and check outputs (once per case is enough for
    FLOPs; once per case and compiler state for outputs: a repeat compiled from the same warm cache runs the
    same code)."""

    cases: list[Case]
    policy: TimingPolicy
    repeat: int = 1
    compile_cache: str | None = None  # cold, warm, dir or mega: the state of the compiler folders it was given
    count_flops: bool = True
    check: bool = True  # compare compiled outputs with eager's (once per case and compiler state is enough)
    claim: dict | None = None  # the driver's claim (run/orphans.py): lets a later run store what a killed driver did not
    environment: dict | None = None  # the Environment its cases run under, as a dict: the worker records it
    traces: str | None = None  # the folder its profile and compile trace go to (diagnostics/traces.py); None: neither is kept
    profile: bool = False  # a profiled pass after the timed loop (--profile; once per case)
    compile_trace: bool = False  # TORCH_TRACE of its compile (--compile-trace; once per case)
    measure_machine: bool = False  # a CPU's bandwidth and matmul rate after the timed loop (once per run and dtype)
    mega_path: str | None = None  # --compile-cache mega: the artifacts file a cold repeat writes and a mega one loads
    packages: str | None = None  # aot-inductor: the folder its packages are built into (by the first repeat) and loaded from
    weights: str | None = None  # the run's folder of random weights, drawn once a model and loaded by every process

    def to_dict(self) -> dict:
        """Every field by its name: the cases and the timing policy as their own dicts."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {**out, "cases": [c.to_dict() for c in self.cases], "policy": dataclasses.asdict(self.policy)}

    @classmethod
    def from_dict(cls, d: dict) -> Job:
        """A job a driver wrote; fields it did not write take their defaults, fields this version lacks are left."""
        known = {f.name for f in dataclasses.fields(TimingPolicy)}
        policy = TimingPolicy(**{k: v for k, v in d["policy"].items() if k in known})
        fields = {f.name for f in dataclasses.fields(cls)} - {"cases", "policy"}
        return cls([Case.from_dict(c) for c in d["cases"]], policy, **{k: v for k, v in d.items() if k in fields})
