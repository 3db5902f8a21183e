"""The words every part of compilebench shares, each declared once: what happened to a case (status), what may
be wrong with its conditions (flags, each with its remedy) and how a comparison reads (verdicts). Pure data."""

from __future__ import annotations

import enum
from dataclasses import dataclass

# ok: measured. oom: ran out of (device or host) memory, as the guide's "OOM" cells. error: raised.
# invalid: measured, but something (a recompile in the timed loop) voids the number.
# mismatch: measured, but the compiled model's output is outside tolerance of eager's: kept, never recommended.
# timeout: killed after --timeout. crashed: the worker process died (signal or exit without a result).
# unsupported: another engine (kinds/), or its exporter, could not take the model (an
# operator it lacks, a shape that depends on the data): the exporter's own reason is its message; or the device's
# quantized kernels cannot take a shape of the case (cuBLAS's int8 matmul below 17 rows): which, in its message.
STATUSES = ("ok", "oom", "error", "invalid", "mismatch", "timeout", "crashed", "unsupported")
MEASURED = ("ok", "invalid", "mismatch")  # timed to the end: their samples are real, even where the number is voided
FAILED = ("oom", "error", "timeout", "crashed", "unsupported")  # no number at all
RETRIED = ("crashed", "timeout")  # tried again on resume by default: the machine, not the case, may be at fault
RETRIED_ON_REQUEST = ("error", "oom", "unsupported")  # tried again with --retry-failed (another engine's version)
# When repeats disagree, the case shows the most telling status: a failure before a voided number before ok.
SEVERITY = ("crashed", "timeout", "error", "unsupported", "oom", "invalid", "mismatch", "ok")


@dataclass(frozen=True)
class Flag:
    """A condition a result was measured in that makes its number less trustworthy: its name (as stored), the
    bounds of the quantity that raises it, and what to do about it (the text names the bounds it is built from)."""

    name: str
    remedy_text: str  # may name {low} and {high}
    low: float | None = None  # raised below this
    high: float | None = None  # raised above this
    # The flags of the first release are counted in a report's intro even at zero; a later one only when raised,
    # so an older results file reports as it did.
    counted_at_zero: bool = False

    def raised_by(self, value: float | None) -> bool:
        return value is not None and ((self.low is not None and value < self.low) or
                                      (self.high is not None and value > self.high))

    @property
    def remedy(self) -> str:
        return self.remedy_text.format(low=self.low, high=self.high)

    def __str__(self) -> str:
        return self.name


NOISY = Flag("noisy", "within one process the calls vary by more than {high:.0%} (CV): close other programs, pin the "
             "clocks (GPU: `nvidia-smi -lgc`), raise --iters or --max-time, or use --interleave so drift hits the "
             "variants alike", high=0.10, counted_at_zero=True)  # of the coefficient of variation of one process's calls
BUSY = Flag("busy", "other processes used the CPU while the timed loop ran (more than {high:.0%} of its time, or "
            "another process on the GPU): stop them (or run on a quiet machine) and measure again with --rerun",
            high=0.05, counted_at_zero=True)  # of the machine's CPU time: idle reads under 1%; one other busy core of 16 reads 6%
THROTTLED = Flag("throttled", "the GPU slowed its clocks for heat or a hardware slowdown while the timed loop ran "
                 "(a power cap is recorded, not flagged: it is how a GPU runs at full power): cool it, check "
                 "`nvidia-smi -q -d PERFORMANCE`, and measure again with --rerun", counted_at_zero=True)
# The sum of a pipelined loop's CUDA event times over its host wall time: lower, a fifth of the loop's time is in
# no event pair; higher, the events overlap or measure another device's time.
CLOCK = Flag("clock", "the timed loop's CUDA event times add up to less than {low:.0%} or more than {high:.0%} of its "
             "wall time: the events did not time the model's work on its stream, or the host could not keep the GPU "
             "busy; measure with --sync-each-call (each call timed to completion), and report it if the ratio stays "
             "off", low=0.80, high=1.05, counted_at_zero=True)
CUDAGRAPHS_SKIPPED = Flag("cudagraphs-skipped", "a CUDA-graph mode recorded no CUDA graph (the reason inductor gave "
                          "is in the details), so it ran as plain compile: fix the reason (often inputs the graph "
                          "mutates) or compare it as `default`", counted_at_zero=True)
RECOMPILE_LIMIT = Flag("recompile-limit", "dynamo hit its recompile limit, so the frames past it ran uncompiled and the "
                       "number is of a partly eager model (the recompile reasons are in the details): compile with "
                       "--dynamic true, fewer input shapes, or torch._dynamo.config.recompile_limit raised")
# Why a warm-up ended (measure/warmup.py): its windows of calls steady, its cap reached, or no steadiness asked
# (a cap of 0: the calls and seconds asked for).
STEADY, CAP, FIXED = "steady", "cap", "fixed"
# How inductor's compile pool stood when a timed process began its warm-up (measure/compile_pool.py): ready, still
# starting when the worker stopped waiting, or closed.
POOL_READY, POOL_STARTING, POOL_FAILED = "ready", "still starting", "failed"
# Of a case's per-process figures, not of one process: raised by the result (core/stats.groups), never by a worker.
UNSTABLE = Flag("unstable", "the case's processes fell into two groups far apart (the machine changed state during "
                "the run: the groups' means and times are in the details); its interval holds both states, so it is "
                "wide: find what else ran then (other tenants, a clock change), and measure again with --rerun")
# Checks only real hardware can fail, read at run time (which one, in words, is the repeat's self_checks): a
# profile whose kernels outlast its calls, a steady peak above the compile's, an energy counter that did not
# advance, a precision setting that did not take.
SELF_CHECK = Flag("self-check", "a figure of this result failed a check of itself that only real hardware can fail "
                  "(which, in the details): that figure is not to be trusted; report it with the details")
# Of a compiled case's eager reference: two eager calls on the same input differed (cuDNN's autotuning on the first
# call, atomics in a scatter): its compiled outputs were allowed that difference (eager self rel err, in the details)
EAGER_NONDETERMINISTIC = Flag("eager-nondeterministic", "eager's own two calls on the same input differ (by the eager "
                              "self rel err in the details), so the compiled outputs were allowed that much: to check "
                              "them at the math's tolerance, make eager deterministic "
                              "(torch.use_deterministic_algorithms, torch.backends.cudnn.benchmark = False)", high=0.0)
FLAGS = {f.name: f for f in (NOISY, BUSY, THROTTLED, CLOCK, CUDAGRAPHS_SKIPPED, RECOMPILE_LIMIT, UNSTABLE, SELF_CHECK,
                             EAGER_NONDETERMINISTIC)}


class Verdict(str, enum.Enum):
    """How a speed-up's interval (95%, or wider where the run looked several times) reads against the smallest
    effect worth acting on (--min-effect): `faster` when the whole interval lies above 1 + min_effect, `slower`
    when it lies below 1 / (1 + min_effect) (the band is symmetric in log space: 5% faster and 5% slower are the
    same distance from 1), `same` when it lies inside that band, `inconclusive` otherwise (or with no interval at
    all). Stored and compared as its word."""

    faster = "faster"
    slower = "slower"
    same = "same"
    inconclusive = "inconclusive"

    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__

    @classmethod
    def of(cls, low: float | None, high: float | None, min_effect: float) -> Verdict:
        if low is None or high is None:
            return cls.inconclusive
        top, bottom = 1 + min_effect, 1 / (1 + min_effect)
        if low > top:
            return cls.faster
        if high < bottom:
            return cls.slower
        if low >= bottom and high <= top:
            return cls.same
        return cls.inconclusive


# What to do about an inconclusive verdict.
INCONCLUSIVE_REMEDY = ("add repeats (run the same command with a larger --repeats: the stored ones are kept), use "
                       "--interleave, or measure on a quieter machine")
VERDICTS = tuple(Verdict)

# A failed status in a few words, where a table or `tune` says why a result has no number.
STATUS_WORDS = {"mismatch": "output differs from eager", "invalid": "recompiled while timed", "oom": "out of memory",
                "error": "error", "timeout": "timed out", "crashed": "crashed",
                "unsupported": "the engine or kernel could not take the model"}
