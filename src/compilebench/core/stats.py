"""Pure statistics over latency samples (milliseconds). No torch, no I/O.

Two levels, never mixed:
- within one process: the samples of one timed loop (summarize). They describe that process's noise (CV,
  percentiles), but they are not independent draws of what a rerun would give, so no interval or verdict is
  built from them.
- between processes: one figure per worker process (a repeat: per_process, the median of its calls). The process
  is the unit of independence: clocks, memory layout and other load change from one process to the next, and a
  rerun is another process. A case's estimate and its 95% interval come from the per-process figures in log space
  (estimate), so no bound is ever negative and the interval widens with the run-to-run spread; a speed-up comes
  from both sides' per-process log figures (speedup), or from the paired log ratios of processes that shared a
  process (--interleave) or a round.
A run that adds repeats until a verdict is decided looks at it several times: each look's confidence, and what an
interval can still see, are the design's (core/looks.py).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from compilebench.core.record import Record, column, columns_of, stored_as

# A speed-up within 5% either way is "same": the band PyTorch's HUD and asv call no change, and wider than the
# narrowest interval a 2-core VM gives (about +-3% after 7 repeats): at 2%, `same` could never be reached.
DEFAULT_MIN_EFFECT = 0.05
# A case's per-process means fall into separate groups (the machine changed state during the run) where sorted
# they leave a gap of more than 10% that is over 3 times the spread inside either side, and more than noise alone
# leaves one time in a hundred: on n values drawn from one normal (in log space; the ratio of gap to spread does
# not depend on its width) the largest gap passes 3 times the spread in 46% of draws of 3, 18% of 4, 6.5% of 5,
# 2.2% of 6 and 0.7% of 7, and passes these ratios in 1% (2,000,000 draws each; tests/test_decide.py draws again).
UNSTABLE_GAP, UNSTABLE_RATIO = 0.10, 3.0
NOISE_RATIO = {3: 166.0, 4: 15.0, 5: 6.2, 6: 3.8}


def per_process(samples) -> float:
    """The one figure of a worker process, from its timed calls: their median. Every latency, interval, speed-up
    and verdict is built from it. A process's mean is pulled by its own outliers (one H200, ResNet-50 eager: a
    process of mean 4.13 ms and median 3.56 ms, its first 30 calls 6.1 ms); replayed on that GPU's recording and
    this VM's (benchmarks/decide.py replay), medians decided with intervals half as wide as means' or narrower, and
    no false verdict. The guide's "mean of 300 runs" stays beside it (Estimate.mean_of_means)."""
    return float(np.median(np.asarray(samples, dtype=float)))


PER_PROCESS_WORDS = "the median of each process's timed calls"  # what per_process is, for every legend


def check_min_effect(value) -> float:
    """The one check of a minimum effect, for every command and the API that take one: a fraction in [0, 1)."""
    from compilebench.core.errors import UserError

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        shown = f"{value * 100:g}%" if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)
        raise UserError(f"--min-effect must be from 0% to below 100% (min_effect from 0 to below 1 in Python: 2% is "
                        f"0.02), got {shown}")
    return value


def groups(values: list[float]) -> list[list[int]] | None:
    """Indexes of `values` (per-process means) in two groups far apart, lowest first; None where they are one.
    Three values or more (two processes alone cannot tell a change of state from noise), and the fewer they are
    the farther apart (NOISE_RATIO)."""
    if len(values) < 3:
        return None
    order = sorted(range(len(values)), key=lambda i: values[i])
    logs = [math.log(values[i]) for i in order]
    gaps = [b - a for a, b in zip(logs, logs[1:])]
    at = max(range(len(gaps)), key=gaps.__getitem__)
    spread = max(logs[at] - logs[0], logs[-1] - logs[at + 1])
    if gaps[at] > UNSTABLE_GAP and gaps[at] > max(UNSTABLE_RATIO, NOISE_RATIO.get(len(values), 0.0)) * spread:
        return [order[:at + 1], order[at + 1:]]
    return None


def beyond(one: float, others: list[float], confidence: float = 0.99) -> bool:
    """Whether `one` lies outside where one more value drawn as `others` were would fall (log scale: their mean and
    Student's t prediction interval at `confidence`): a process unlike the others beyond their own spread. Needs
    three others: fewer give no spread to read."""
    if len(others) < 3:
        return False
    logs = [math.log(v) for v in others]
    centre, sd = statistics.fmean(logs), statistics.stdev(logs)
    return abs(math.log(one) - centre) > t_critical(len(logs) - 1, confidence) * sd * math.sqrt(1 + 1 / len(logs))


def t_critical(df: float, confidence: float = 0.95) -> float:
    """Two-sided Student-t critical value (e.g. 2.262 for df=9 at 95%): the t distribution's inverse from
    scipy.special, which scipy.stats.t.ppf calls (in every process that reads an interval, scipy.stats took 2.1 s
    to import on this project's VM, scipy.special 0.6)."""
    from scipy.special import stdtrit

    return float(stdtrit(df, 0.5 + confidence / 2))


@dataclass(kw_only=True)
class Summary(Record):
    """One process's samples (milliseconds), within that process only: the case's estimate is between processes."""

    n: int = 0
    mean: float | None = None
    median: float | None = None
    std: float | None = None  # the sample standard deviation (n-1)
    min: float | None = None
    max: float | None = None
    p90: float | None = None  # percentiles by linear interpolation (Hyndman-Fan type 7, numpy's default)
    p99: float | None = None
    cv: float | None = None  # std / mean


@dataclass(kw_only=True)
class Group(Record):
    """Processes of one case whose means fell together, apart from another group (groups): the machine changed
    state during the run."""

    mean_ms: float | None = None  # the estimate between this group's processes
    repeats: list[int] = field(default_factory=list)
    started: str | None = stored_as("from")  # when its first process was measured, and its last
    ended: str | None = stored_as("to")


def summarize(samples) -> Summary:
    """One process's samples."""
    x = np.asarray(samples, dtype=float)
    if x.size == 0:
        return Summary()
    mean = float(x.mean())
    std = float(x.std(ddof=1)) if x.size > 1 else 0.0
    return Summary(n=int(x.size), mean=mean, median=float(np.median(x)), std=std, min=float(x.min()),
                   max=float(x.max()), p90=float(np.percentile(x, 90)), p99=float(np.percentile(x, 99)),
                   cv=std / mean if mean > 0 else None)


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """Mean of independent values and its Student-t interval (n-1 degrees of freedom); no interval for n < 2."""
    x = np.asarray(values, dtype=float)
    m = float(x.mean())
    if x.size < 2:
        return m, None, None
    half = t_critical(x.size - 1, confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - half, m + half


def estimate(process_means, confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """A latency from per-process means: their geometric mean, with the t-interval of the mean log mapped back.
    Both bounds are positive; one process gives no interval."""
    m, low, high = mean_interval(np.log(np.asarray(process_means, dtype=float)), confidence)
    return math.exp(m), _exp(low), _exp(high)


def welch(a, b) -> tuple[float, float, float]:
    """mean(b) - mean(a), its standard error and the Welch-Satterthwaite degrees of freedom (two samples of
    independent values, variances not assumed equal). Each side needs two values or more."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    var = va + vb
    df = var**2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1)) if var > 0 else float(a.size + b.size - 2)
    return float(b.mean() - a.mean()), math.sqrt(var), float(df)


def paired(a, b) -> tuple[float, float, float]:
    """mean(b - a) over pairs, its standard error and n-1 degrees of freedom."""
    d = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    return float(d.mean()), float(d.std(ddof=1)) / math.sqrt(d.size), float(d.size - 1)


def ratio(a_means, b_means, *, pair: bool = False, confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """B's time over A's from per-process figures, in log space: exp(mean log b - mean log a) with its interval.
    `pair`: a_means[i] and b_means[i] were measured in the same process (interleaved) or round, so the interval
    comes from their log ratios, which cancels the drift both shared. No interval with fewer than two processes on
    a side."""
    return ratio_df(a_means, b_means, pair=pair, confidence=confidence)[:3]


def ratio_df(a_means, b_means, *, pair: bool = False,
             confidence: float = 0.95) -> tuple[float, float | None, float | None, float | None]:
    """ratio(), with the degrees of freedom of its interval (None: no interval)."""
    la, lb = np.log(np.asarray(a_means, dtype=float)), np.log(np.asarray(b_means, dtype=float))
    r = math.exp(lb.mean() - la.mean())
    if pair:
        if la.size != lb.size:
            raise ValueError("paired ratios need one figure of each side per process")
        if la.size < 2:
            return r, None, None, None
        diff, se, df = paired(la, lb)
    else:
        if la.size < 2 or lb.size < 2:
            return r, None, None, None
        diff, se, df = welch(la, lb)
    half = t_critical(df, confidence) * se
    return math.exp(diff), math.exp(diff - half), math.exp(diff + half), df


def speedup(eager_means, compiled_means, *, pair: bool = False,
            confidence: float = 0.95) -> tuple[float, float | None, float | None]:
    """Eager time over compiled time (2.0: compiled takes half the time), with its interval (95% by default)."""
    return ratio(compiled_means, eager_means, pair=pair, confidence=confidence)


def improvement_pct(eager_mean: float, compiled_mean: float) -> float:
    """The guide's percentage improvement: (eager - compiled) / eager * 100."""
    return (eager_mean - compiled_mean) / eager_mean * 100.0


def speedup_to_improvement(s: float | None) -> float | None:
    """A speed-up as the guide's % improvement: eager/compiled = s means (1 - 1/s) * 100."""
    return None if s is None else (1 - 1 / s) * 100.0


def break_even(compile_s: float | None, eager_ms: float, compiled_ms: float) -> float | None:
    """Inferences after which compiling has paid for itself: compile seconds over the per-call saving.
    None ("never") when compiling saves nothing per call."""
    saving_s = (eager_ms - compiled_ms) / 1e3
    if compile_s is None or saving_s <= 0:
        return None
    return math.ceil(round(compile_s / saving_s, 6))  # round first: 1.0 / 1e-6 must not become 1000001


def break_even_range(compile_s: float | None, eager_ms: float, low: float | None, high: float | None,
                     spread: float) -> tuple[float | None, float | None] | None:
    """The calls break_even gives at each end of a speed-up's interval (eager's time at its estimate), the compile's
    seconds moved by `spread` (the fraction one cold compile moves from another: core/drift) toward that end: the
    fewest at `high` with the compile that much shorter, the most at `low` with it that much longer, each None
    ("never") where that end saves nothing per call. None without an interval or a compile. One compile measured
    once, taken as exact, would make the range read surer than it is."""
    if compile_s is None or low is None or high is None:
        return None
    shortest, longest = moved(compile_s, spread)
    return break_even(shortest, eager_ms, eager_ms / high), break_even(longest, eager_ms, eager_ms / low)


def moved(once: float, spread: float) -> tuple[float, float]:
    """A figure measured once (a cold compile's seconds) as far lower and higher as one measurement of it moves from
    another (`spread`, a fraction: core/drift): (once / (1 + spread), once * (1 + spread))."""
    return once / (1 + spread), once * (1 + spread)


@dataclass(frozen=True)
class Estimate:
    """A case's number from the samples of each of its processes (milliseconds): the estimate between processes
    with its 95% interval, and what the samples say within them. Stored as a dict of these names."""

    repeats: int = column(0, csv="repeats")
    n: int = column(0, csv="n")
    n_min: int | None = column(csv="n_min")
    mean: float | None = column(csv="latency_ms")  # the case's latency: the geometric mean of the per-process figures
    ci95_low: float | None = column(csv="ci95_low_ms")  # its interval
    ci95_high: float | None = column(csv="ci95_high_ms")
    # the guide's "mean of 300 runs": the geometric mean of each process's mean call, with no interval
    mean_of_means: float | None = column(csv="mean_ms")
    between_cv: float | None = column(csv="between_cv")  # sd of the log figures: the relative spread between processes
    median: float | None = column(csv="median_ms")
    p90: float | None = column(csv="p90_ms")
    p99: float | None = column(csv="p99_ms")
    min: float | None = column(csv="min_ms")
    max: float | None = column(csv="max_ms")
    within_cv: float | None = column(csv="within_cv")  # the median CV within one process

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def row(self) -> dict:
        """Its CSV and JSON columns (milliseconds where a time)."""
        return columns_of(self)

    @classmethod
    def from_dict(cls, d: dict | None) -> Estimate:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in names})


def case_summary(samples: list[list[float]]) -> Estimate:
    """A case from the samples of each of its processes: the estimate and interval between processes (from each
    one's figure: per_process), the guide's mean, and what the samples say within them (percentiles of all
    samples, the median within-process CV)."""
    samples = [p for p in samples if len(p)]
    if not samples:
        return Estimate()
    figures = [per_process(p) for p in samples]
    value, low, high = estimate(figures)
    logs = np.log(figures)
    pooled = np.concatenate([np.asarray(p, dtype=float) for p in samples])
    cvs = [c for c in (summarize(p).cv for p in samples) if c is not None]
    return Estimate(
        repeats=len(samples),
        n=int(pooled.size),
        n_min=min(len(p) for p in samples),
        mean=value,
        ci95_low=low,
        ci95_high=high,
        mean_of_means=estimate([float(np.mean(p)) for p in samples])[0],
        between_cv=float(logs.std(ddof=1)) if logs.size > 1 else None,
        median=float(np.median(pooled)),
        p90=float(np.percentile(pooled, 90)),
        p99=float(np.percentile(pooled, 99)),
        min=float(pooled.min()),
        max=float(pooled.max()),
        within_cv=float(np.median(cvs)) if cvs else None,
    )


def _exp(x: float | None) -> float | None:
    return None if x is None else math.exp(x)
