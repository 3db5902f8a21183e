"""Pure statistics over raw latency samples (milliseconds). No torch, no I/O."""

from __future__ import annotations

import math

import numpy as np

# Fields of summarize(), in display order. `cv` is std/mean: the noise of one result.
FIELDS = ("n", "mean", "median", "std", "min", "max", "p90", "p99", "ci95_low", "ci95_high", "cv")

# A coefficient of variation above this makes a mean hard to compare with another at the few-% level.
NOISY_CV = 0.10


def t_critical(df: int, confidence: float = 0.95) -> float:
    """Two-sided Student-t critical value (e.g. 2.262 for df=9 at 95%)."""
    from scipy.stats import t

    return float(t.ppf(0.5 + confidence / 2, df))


def mean_ci(samples, confidence: float = 0.95) -> tuple[float, float]:
    """Confidence interval of the mean, Student-t with n-1 degrees of freedom. A single sample gives (mean, mean)
    widened to nothing: there is no spread to estimate, and callers see n=1 beside it."""
    x = np.asarray(samples, dtype=float)
    m = float(x.mean())
    if x.size < 2:
        return (m, m)
    half = t_critical(x.size - 1, confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return (m - half, m + half)


def summarize(samples) -> dict:
    """Every derived statistic of one result. Percentiles are linear interpolation (Hyndman-Fan type 7,
    numpy's default); std is the sample standard deviation (n-1)."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return {k: None for k in FIELDS} | {"n": 0}
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    low, high = mean_ci(x)
    return {
        "n": int(x.size),
        "mean": mean,
        "median": float(np.median(x)),
        "std": std,
        "min": float(x.min()),
        "max": float(x.max()),
        "p90": float(np.percentile(x, 90)),
        "p99": float(np.percentile(x, 99)),
        "ci95_low": low,
        "ci95_high": high,
        "cv": std / mean if mean > 0 else None,
    }


def improvement_pct(eager_mean: float, compiled_mean: float) -> float:
    """The guide's percentage improvement: (eager - compiled) / eager * 100."""
    return (eager_mean - compiled_mean) / eager_mean * 100.0


def ratio_ci(a: dict, b: dict, confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """b's mean over a's mean, with a confidence interval from the propagated uncertainty of both means (delta
    method on the log ratio, Welch-Satterthwaite degrees of freedom). No interval when either has n < 2.
    Samples of one timed loop are not fully independent, so the interval is a guide, not a guarantee."""
    ratio = b["mean"] / a["mean"]
    if a["n"] < 2 or b["n"] < 2:
        return ratio, None, None
    ra = (a["std"] / a["mean"]) ** 2 / a["n"]  # relative variance of each mean
    rb = (b["std"] / b["mean"]) ** 2 / b["n"]
    var = ra + rb
    if var == 0:
        return ratio, ratio, ratio
    df = var**2 / (ra**2 / (a["n"] - 1) + rb**2 / (b["n"] - 1))
    half = t_critical(max(1, int(df)), confidence) * math.sqrt(var)
    return ratio, ratio * math.exp(-half), ratio * math.exp(half)


def verdict(low: float | None, high: float | None) -> str:
    """How a time ratio (new / old) reads: below 1 throughout its interval is faster."""
    if low is None or high is None:
        return "no interval (n < 2)"
    if high < 1:
        return "faster"
    if low > 1:
        return "slower"
    return "no significant difference"


def speedup_ci(eager: dict, compiled: dict) -> tuple[float, float | None, float | None]:
    """eager mean / compiled mean with its 95% CI (2.0: compiled takes half the time)."""
    return ratio_ci(compiled, eager)


def speedup_verdict(low: float | None, high: float | None) -> str:
    """How a speed-up reads: compiled is faster only when its whole interval lies above 1."""
    if low is None or high is None:
        return "no interval (n < 2)"
    if low > 1:
        return "faster"
    if high < 1:
        return "slower"
    return "no significant difference"


def break_even(compile_s: float | None, eager_ms: float, compiled_ms: float) -> float | None:
    """Inferences after which compiling has paid for itself: compile seconds over the per-call saving.
    None ("never") when compiling saves nothing per call."""
    saving_s = (eager_ms - compiled_ms) / 1e3
    if compile_s is None or saving_s <= 0:
        return None
    return math.ceil(round(compile_s / saving_s, 6))  # round first: 1.0 / 1e-6 must not become 1000001


NOISE_REMEDY = ("CV above 10%: close other programs, pin the clocks (GPU: `nvidia-smi -lgc`), raise --iters or "
                "--max-time, or use --interleave so drift hits eager and compiled alike")
