"""What a worker process is asked to measure (a Job): its cases, how to time them (a Timing: the run's TimingPolicy
resolved for their kind of timed unit), which repeat, the compiler state it starts from and what else to record.
The driver writes it, the worker reads it. Pure data."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compilebench.core import traffic
from compilebench.core.case import Case
from compilebench.core.environment import is_cuda
from compilebench.core.record import Record
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
# Warm-up goes on past --warmup calls and --warmup-time seconds until steady (measure/timing.warm_up), for at most
# this long; 0: not at all (a fixed warm-up, as runs before issue 62, whose timings read so)
DEFAULT_WARMUP_CAP_S = 10.0
# When the driver asked for the worker process (time.monotonic(), one clock for every process of the machine): the
# worker records the time until its first phase as the phase "start" (the fork, or the interpreter and its imports).
SPAWNED_AT = "COMPILEBENCH_SPAWNED_AT"


# The kinds of timed unit (Case.timed_unit): forward calls, generate() calls, a pipeline's images, and a sequence
# of shapes served by any of them (`compilebench shapes`)
UNITS = ("forward", "generation", "image", "serving", "serving generation", "serving image")
# a pipeline's image is many denoiser calls and a decoder's: seconds each at its real size on a CPU
DEFAULT_IMAGE_ITERS = 10
DEFAULT_IMAGE_WARMUP = 2
DEFAULT_SERVED_GENERATION_ITERS = 5  # generate() calls per prompt length served: each is many forwards
DEFAULT_SERVED_IMAGE_ITERS = 5  # images per shape a pipeline serves: each is many denoiser steps


@dataclass(frozen=True)
class TimingPolicy:
    """How a run's cases are timed, as asked (None: the default of the kind of timed unit). `resolve` fills in the
    defaults once, at plan time, for each kind of timed unit the run has: the worker, serving and the reproduce
    command read what it resolved."""

    iters: int | None = None  # None: 300 forward calls, 20 generate() calls, 10 images, 20 calls (5 generate()
    # calls, 5 images) per shape served
    warmup: int | None = None  # None: 10 calls (2 images, 2 per shape served)
    max_time_s: float | None = None  # budget for one repeat's timed loop; the real N is recorded
    min_iters: int | None = None  # no budget ends a timed loop before this many samples; None: 10, or fewer iters
    first_calls: int | None = None  # generation: calls timed one by one before the steady state; None: 5
    warmup_s: float | None = None  # warm-up goes on until this long has passed too; None: 1 s on a GPU, 0 on a CPU
    warmup_cap_s: float | None = None  # warm-up goes on until steady for at most this long; None: 10 s

    def resolve(self, unit: str, device: str | None) -> Timing:
        """The timing of one kind of timed unit (UNITS) on a device."""
        defaults = {"forward": DEFAULT_ITERS, "generation": DEFAULT_GENERATION_ITERS, "image": DEFAULT_IMAGE_ITERS,
                    "serving": traffic.DEFAULT_SHAPE_ITERS, "serving generation": DEFAULT_SERVED_GENERATION_ITERS,
                    "serving image": DEFAULT_SERVED_IMAGE_ITERS}
        iters = self.iters if self.iters is not None else defaults[unit]
        warmup = self.warmup if self.warmup is not None else (
            traffic.DEFAULT_SHAPE_WARMUP if unit.startswith("serving") else
            DEFAULT_IMAGE_WARMUP if unit == "image" else DEFAULT_WARMUP)
        return Timing(iters=iters, warmup=warmup, max_time_s=self.max_time_s,
                      min_iters=min(DEFAULT_MIN_ITERS if self.min_iters is None else self.min_iters, iters),
                      first_calls=DEFAULT_FIRST_CALLS if self.first_calls is None else self.first_calls,
                      warmup_s=self.warmup_s if self.warmup_s is not None else (
                          DEFAULT_GPU_WARMUP_S if is_cuda(device) else 0.0),
                      warmup_cap_s=DEFAULT_WARMUP_CAP_S if self.warmup_cap_s is None else self.warmup_cap_s)


@dataclass(kw_only=True)
class Timing(Record):
    """How one kind of timed unit is timed in a run, every default filled in (TimingPolicy.resolve)."""

    iters: int = DEFAULT_ITERS
    warmup: int = DEFAULT_WARMUP
    max_time_s: float | None = None
    min_iters: int = DEFAULT_MIN_ITERS
    first_calls: int = DEFAULT_FIRST_CALLS
    warmup_s: float = 0.0
    warmup_cap_s: float | None = None  # 0: a fixed warm-up; None: not recorded (a run before the cap: fixed too)

    def warmup_for(self, variant: Variant) -> int:
        return max(self.warmup, MIN_WARMUP_CUDAGRAPHS) if variant.uses_cudagraphs else self.warmup

    def to_dict(self) -> dict:
        """Every field, always: a timing is stored whole."""
        return {**self.extra, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}}


@dataclass
class Job:
    """What one worker process measures: the cases (one, or an interleaved group), which repeat, the on-disk
    compiler state it starts from, and whether to count FLOPs and check outputs (once per case is enough for
    FLOPs; once per case and compiler state for outputs: a repeat compiled from the same warm cache runs the
    same code)."""

    cases: list[Case]
    timing: Timing  # its cases' kind of timed unit's, resolved at plan time
    repeat: int = 1
    compile_cache: str | None = None  # cold, warm, dir or mega: the state of the compiler folders it was given
    count_flops: bool = True
    check: bool = True  # compare compiled outputs with eager's (once per case and compiler state is enough)
    claim: dict | None = None  # the driver's claim (run/storing.py): lets a later run store what a killed driver did not
    environment: dict | None = None  # the --env Interpreter its cases run under, as a dict: the worker records it
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
        return {**out, "cases": [c.to_dict() for c in self.cases], "timing": self.timing.to_dict()}

    @classmethod
    def from_dict(cls, d: dict) -> Job:
        """A job a driver wrote; fields it did not write take their defaults, fields this version lacks are left."""
        fields = {f.name for f in dataclasses.fields(cls)} - {"cases", "timing"}
        return cls([Case.from_dict(c) for c in d["cases"]], Timing.from_dict(d["timing"]),
                   **{k: v for k, v in d.items() if k in fields})
