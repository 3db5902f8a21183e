"""Steps in a series of runs: where a case's number moved and stayed moved, found with each point's interval and the
machine's run-to-run drift, so that a move a rerun could make is not a step.

The fit, after asv's step detection (asv/step_detect.py): the log values are fitted by a piecewise-constant mean,
each point weighted by 1 / (its own variance + the drift's), with a penalty per segment (ruptures' PELT search over
that weighted cost). A boundary is kept as a step only where the two segments' means differ at 95%, the search
allowed for (their difference beyond `critical` standard errors: 1.96 where one boundary was possible, Bonferroni's
over every boundary the search could have picked beyond that), and by at least the minimum effect; boundaries that
fail are merged away one by one, the weakest first. Segments hold at least two runs: one run out of line is a blip,
not a step, until the next run confirms it (the rule PyTorch's HUD applies to its nightly series).

The drift is estimated from the machine's series themselves where they hold MIN_MOVES successive moves or more (the
upper quartile of the moves, which a few steps do not move, as a normal scatter, less what the points' own
intervals already hold); with fewer, DEFAULT_DRIFT is assumed unless the runs show more (few()): a handful of runs
cannot tell a machine that never moves from one that moves a little, but can show one that moves 10% between runs
(this project's VM does). An estimate carries its degrees of freedom, and a step is judged by Student's t at them
(a drift read low from a few runs would otherwise pass its moves for steps); an assumed drift, by the normal."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from statistics import NormalDist

from compilebench.core import stats

Z95 = 1.959964
MIN_SEGMENT = 2  # runs: a step needs two runs on its far side
PENALTY = 2.0  # per segment, in the weighted cost's chi-square units, on top of the log(n) of BIC: see _penalty
DEFAULT_DRIFT = 0.05  # where too few moves are known to estimate it: the 5% band the HUD and asv allow
# The same for compile seconds, one cold compile a run: this estimator on the six moves of the quick suite's three
# cold compiles over three runs of one night on this project's VM (2-21%, same code and torch; 2026-11-29) gives 0.13.
DEFAULT_COMPILE_DRIFT = 0.13
MIN_MOVES = 10  # successive moves (over all of a machine's series) needed to estimate the drift
# The degrees of freedom an upper quartile of n moves' sizes is worth, as a normal scale estimate, per move: its
# asymptotic efficiency against the standard deviation, f(q)^2 q^2 / (2 p (1 - p)) for the half-normal's quartile
# q = 1.1503 (p = 0.75, density f(q) = 0.4118): 0.60.
MOVES_EFFICIENCY = 0.60
Q75_HALF_NORMAL = 1.1503  # the upper quartile of |x| for x normal with unit deviation


@dataclass(frozen=True)
class Point:
    """One run's figure in a series: its estimate and 95% interval (None where it has none, as compile seconds)."""

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def log_se(self) -> float | None:
        if self.low is None or self.high is None or self.low <= 0 or self.high <= self.low:
            return None
        return (math.log(self.high) - math.log(self.low)) / (2 * Z95)


@dataclass(frozen=True)
class Step:
    """The series moved between points at-1 and at: the later segment's mean over the earlier one's, with its 95%
    interval allowing for the search (`critical`: its half-width in standard errors, where a boundary picked among
    several needs more than Z95)."""

    at: int
    ratio: float
    low: float
    high: float
    before: tuple[int, int]  # the earlier segment's points [start, end)
    after: tuple[int, int]
    critical: float = Z95


@dataclass(frozen=True)
class Drift:
    """The machine's run-to-run drift as a fraction (a standard deviation of the log values) beyond what the points'
    own intervals hold, and the degrees of freedom of its estimate (inf: assumed, not estimated)."""

    sd: float
    df: float = math.inf

    def times(self, k: float) -> Drift:
        return Drift(self.sd * k, self.df)

    def describe(self) -> str:
        """'±3.1% (read from the runs: 8 degrees of freedom)', or '±5.0% (assumed: the runs show no more)'."""
        how = "assumed: the runs show no more" if math.isinf(self.df) else \
            f"read from the runs: {self.df:.0f} degrees of freedom"
        return f"±{self.sd:.1%} ({how})"


def drift(series: list[list[Point]], default: Drift = Drift(DEFAULT_DRIFT)) -> Drift:
    """The machine's run-to-run drift; where the series hold fewer than MIN_MOVES successive moves, `default` unless
    few() says more."""
    moves = [math.log(b.value / a.value) for s in series for a, b in zip(s, s[1:]) if a.value > 0 and b.value > 0]
    if len(moves) < MIN_MOVES:
        shown = few(series)
        return shown if shown.sd > default.sd else default
    upper = statistics.quantiles([abs(m) for m in moves], n=4)[2]
    # per point: a move is the difference of two
    return Drift(_beyond_own(upper / Q75_HALF_NORMAL / math.sqrt(2), series), MOVES_EFFICIENCY * len(moves))


def few(series: list[list[Point]]) -> Drift:
    """The drift as a handful of runs show it (0 where they cannot): each series of 2 * MIN_SEGMENT points or more
    split where one step would fit it best, the points' deviations from their side's mean (so a step does not pass
    for drift, nor do runs that alternate high and low, as successive moves would make them), their root mean
    square over the deviations' degrees of freedom. A handful of runs cannot tell a machine that never moves from
    one that moves a little, so drift() keeps its default over this; they can show one that moves 12%: taken as the
    default 5%, four runs of three series of such a machine showed a step in 40% of drawn series where nothing
    changed, ten runs of one series in 77%; read as a median widened by t over the normal at 95%, 8% and 11%; as
    this with the step judged by t at its degrees of freedom, 4.8% and 3.3% (benchmarks/step_noise.py)."""
    deviations, fitted = [], 0
    for s in series:
        y = [math.log(p.value) for p in s if p.value > 0]
        if len(y) < 2 * MIN_SEGMENT:
            continue
        at = min(range(MIN_SEGMENT, len(y) - MIN_SEGMENT + 1), key=lambda k: _spread(y[:k]) + _spread(y[k:]))
        for side in (y[:at], y[at:]):
            mean = statistics.fmean(side)
            deviations += [v - mean for v in side]
        fitted += 2
    df = len(deviations) - fitted
    if df < 2:
        return Drift(0.0)
    return Drift(_beyond_own(math.sqrt(sum(d * d for d in deviations) / df), series), df)


def _spread(y: list[float]) -> float:
    mean = statistics.fmean(y)
    return sum((v - mean) ** 2 for v in y)


def _beyond_own(scatter: float, series: list[list[Point]]) -> float:
    """A per-point scatter less what the points' own intervals already hold."""
    own = [p.log_se ** 2 for s in series for p in s if p.log_se is not None]
    return math.sqrt(max(0.0, scatter ** 2 - (statistics.median(own) if own else 0.0)))


def find(points: list[Point], drift: Drift, min_effect: float, searched: bool = True) -> list[Step]:
    """The steps of one series, oldest first. `searched`: read as places a search picked among every run (the
    history's steps); False: as a gate reads them, which at each run asks about one boundary, its newest runs',
    named before they were measured (one boundary's critical value)."""
    import numpy as np
    import ruptures

    if len(points) < 2 * MIN_SEGMENT:
        return []
    y, w = _weighed(points, drift.sd)
    ends = ruptures.Pelt(custom_cost=_weighted(), min_size=MIN_SEGMENT, jump=1).fit(
        np.column_stack([y, w])).predict(pen=_penalty(len(points)))
    bounds = [0, *ends]
    z = critical(len(points) if searched else 2 * MIN_SEGMENT, drift.df)
    while True:
        steps = [_step(y, w, bounds[i - 1], bounds[i], bounds[i + 1], z) for i in range(1, len(bounds) - 1)]
        # how far each clears its own critical value: its size over its interval's half-width
        weak = [(abs(math.log(s.ratio)) / (math.log(s.high / s.low) / 2), i)
                for i, s in enumerate(steps) if not _kept(s, min_effect)]
        if not weak:
            return steps
        bounds.pop(min(weak)[1] + 1)  # merge the weakest boundary away, then judge the others again


def _weighed(points: list[Point], drift_sd: float):
    """The points' log values, and their weights: 1 / (each one's own variance + the drift's)."""
    import numpy as np

    return (np.array([math.log(p.value) for p in points]),
            np.array([1.0 / ((p.log_se or 0.0) ** 2 + drift_sd ** 2 or 1e-12) for p in points]))


def _penalty(n: int) -> float:
    return PENALTY + math.log(n)


def _kept(s: Step, min_effect: float) -> bool:
    significant = s.low > 1 or s.high < 1
    return significant and abs(s.ratio - 1) >= min_effect


def _step(y, w, start: int, at: int, end: int, z: float) -> Step:
    def mean(a: int, b: int) -> tuple[float, float]:
        weight = float(w[a:b].sum())
        return float((w[a:b] * y[a:b]).sum()) / weight, 1.0 / weight

    (m1, v1), (m2, v2) = mean(start, at), mean(at, end)
    d, se = m2 - m1, math.sqrt(v1 + v2)
    return Step(at, math.exp(d), math.exp(d - z * se), math.exp(d + z * se), (start, at), (at, end), z)


def critical(n: int, df: float = math.inf) -> float:
    """How many standard errors a step must clear to be one at 95% in a series of n points, its boundary picked by a
    search among every one that leaves MIN_SEGMENT points a side: Z95 where one boundary was possible, beyond that
    Bonferroni's over the candidates; Student's t at `df` where the drift is an estimate of that many degrees of
    freedom. Read at Z95 whatever the search, steps appeared in 6-23% of drawn series where nothing changed; at
    this by the normal, 2-8%, by t, 0.7-4.7% (benchmarks/step_noise.py); the 95% point of the largest |z| over
    single boundaries (a scan statistic, lower) left 10-14% in thirty runs, where a search also compares short
    segments."""
    level = 1 - (1 - 0.95) / 2 / max(1, n - 2 * MIN_SEGMENT + 1)
    return NormalDist().inv_cdf(level) if math.isinf(df) else stats.t_critical(df, 2 * level - 1)


def _weighted():
    """ruptures' cost of a segment: the weighted squared error of the log values about their weighted mean (signal
    columns: value, weight), from cumulative sums. A subclass of ruptures' BaseCost, which PELT requires of a custom
    cost (anything else it silently replaces by plain L2); made here so ruptures loads only when a series is fitted."""
    import numpy as np
    from ruptures.base import BaseCost

    class Weighted(BaseCost):
        model = "weighted-l2"
        min_size = MIN_SEGMENT

        def fit(self, signal):
            self.signal = signal  # PELT reads its length
            y, w = signal[:, 0], signal[:, 1]
            self.sw, self.swy, self.swy2 = (np.concatenate([[0.0], np.cumsum(x)]) for x in (w, w * y, w * y * y))
            return self

        def error(self, start: int, end: int) -> float:
            sw = self.sw[end] - self.sw[start]
            swy = self.swy[end] - self.swy[start]
            return float(self.swy2[end] - self.swy2[start] - swy * swy / sw)

    return Weighted()
