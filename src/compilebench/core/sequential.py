"""Repeats until decided, as a design (Jennison and Turnbull, *Group Sequential Methods*, 2000): the processes per
case at which a run looks at its verdicts (looks), the share of ALPHA it has spent by each (spent), the confidence
each look's interval is read at (confidence: the group-sequential boundary), the rounds from which a comparison is
paired by round (PAIR_FROM), and what an interval can still see (reach) and at how many rounds it would decide
(rounds_to_reach). No torch, no I/O."""

from __future__ import annotations

import functools
import math

import numpy as np

from compilebench.core.stats import t_critical

ALPHA = 0.05  # the chance of a false verdict a run allows, over all its looks at the data
LOOK_STEP = 2  # repeats until decided: rounds added between two looks
# From this many rounds measured by both sides, a speed-up comes from the per-round ratios (paired): the two
# processes of a round run back to back, forked by the same launcher, so a change of the machine's state hits both.
# On this VM (Intel Xeon, 2026-11-26) the log means of a round's two processes correlated in 17 of 18 fixed runs of
# 15 rounds (median +0.45); on one H200 (2026-11-27, the quick suite) a round's two processes shared their state
# (ResNet-50's round 6: medians 4.8 and 4.7 ms, against 3.3-3.8 and 3.0-3.3 in rounds 2 to 7). Replayed
# (benchmarks/replay.py): pairing from 3 rounds decided sooner (this VM's 12 recorded runs in 4.0 rounds on average
# against 4.5, the H200's MobileNet at 3 against 5) but read 4 false verdicts in 1,800 A/A resamples of the three
# recordings (a paired t of 3 rounds has 2 degrees of freedom), pairing from 5 none; both decided as many.
PAIR_FROM = 5


def looks(planned: int, most: int) -> list[int]:
    """The processes per case at which a run looks at its verdicts: after the planned repeats, then every
    LOOK_STEP more, the last at the cap (3, 5, 7, 9, 11 for 3 planned and 11 at most). One look: a fixed design."""
    out = list(range(planned, most, LOOK_STEP)) or [planned]
    return out + [most] if out[-1] != most else out


def spent(fraction: float) -> float:
    """The share of ALPHA a design has spent by a look at this fraction of its most processes: Lan and DeMets'
    Pocock-type spending function, ALPHA * ln(1 + (e - 1) t) (Biometrika 1983). It spends most at the first look,
    where a run reads most of its verdicts: at 3, 5, 7, 9 and 11 processes 1.9%, then 1.0%, 0.8%, 0.7% and 0.6%
    (an equal split would give each 1.0%, a first look 1.6x as wide as a fixed design's at 3 processes, where this
    one's is 1.4x; with looks at 3, 5 and 7 alone it was 1.2x)."""
    return ALPHA * math.log(1 + (math.e - 1) * min(1.0, max(0.0, fraction)))


def confidence(design: list[int] | None, processes: int | None = None) -> float:
    """The confidence of the interval read at `processes` under a design (the processes at each of its looks:
    looks()): the group-sequential boundary of that look (look_confidences), so the intervals of all its looks
    hold the truth together with probability 1 - ALPHA, whenever the run stops. A fixed design (one look): 95%.
    Fewer processes than the first look: the first look's."""
    if not design or len(design) == 1:
        return 1 - ALPHA
    k = max(0, sum(1 for n in design if n <= (processes or 0)) - 1)
    return look_confidences(tuple(design))[k]


GRID = 801  # points of the integration grid between a look's boundaries (Simpson's rule): boundaries to 1e-6


@functools.lru_cache(maxsize=64)
def look_confidences(design: tuple[int, ...]) -> tuple[float, ...]:
    """Each look's confidence under the spending function: the boundary c_k of the standardized estimate such
    that, with the estimates of successive looks correlated as their shares of the information are (a Brownian
    motion observed at n_k / n_K), the chance of first crossing at look k is spent(k) - spent(k - 1) (Lan and
    DeMets 1983; the recursive integration of Armitage, McPherson and Rowe 1969, deterministic). Repeated
    confidence intervals at these levels cover the truth at every look at once with probability 1 - ALPHA
    (Jennison and Turnbull 1989): the union bound over looks, which ignores that they share their first
    processes, gave 99.0% at the last look of 3, 5, 7; this gives 97.9%. The boundaries are the normal theory's;
    read with Student-t intervals of 2 to 10 degrees of freedom, 20,000 simulated runs of normal data crossed at
    some look in 5.1% (looks 3, 5, 7) and 5.7% (3 to 11) of them: a verdict further needs its interval beyond
    the minimum effect, which no true effect of zero reaches that often."""
    from scipy.optimize import brentq
    from scipy.special import ndtr  # the normal cdf scipy.stats.norm calls, without importing it (stats.t_critical)

    fractions = [n / design[-1] for n in design]
    out, before, t_before = [], 0.0, 0.0
    xs = density = weights = None  # the score's density at the last look, on a grid inside its boundaries
    for t in fractions:
        share = spent(t) - before
        if t <= t_before or share <= 0:  # a look at no new process spends nothing: its interval is the last one's
            out.append(out[-1] if out else 1 - ALPHA)
            continue
        step = math.sqrt(t - t_before)
        if xs is None:
            def crossed(b):
                return 2 * ndtr(-b / math.sqrt(t))
        else:
            def crossed(b, xs=xs, mass=weights * density, step=step):
                return float(np.sum(mass * (ndtr((xs - b) / step) + ndtr((-b - xs) / step))))
        bound = brentq(lambda b: crossed(b) - share, 1e-9, 40 * math.sqrt(t), xtol=1e-10)
        out.append(float(1 - 2 * ndtr(-bound / math.sqrt(t))))
        grid = np.linspace(-bound, bound, GRID)
        if xs is None:
            new = _pdf(grid / math.sqrt(t)) / math.sqrt(t)
        else:
            new = (weights * density) @ (_pdf((grid[None, :] - xs[:, None]) / step) / step)
        xs, density, weights = grid, new, _simpson(grid)
        before, t_before = spent(t), t
    return tuple(out)


def _pdf(x: np.ndarray) -> np.ndarray:
    """The standard normal density."""
    return np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _simpson(grid: np.ndarray) -> np.ndarray:
    """Simpson's rule's weights on an evenly spaced grid of an odd number of points."""
    h = grid[1] - grid[0]
    w = np.ones(grid.size)
    w[1:-1:2], w[2:-1:2] = 4, 2
    return w * h / 3


def equal_split(n_looks: int | None) -> float:
    """The confidence of each look under the equal split results written before the spending function used
    (Bonferroni: ALPHA / n_looks each), so that their verdicts read as they did."""
    return 1 - ALPHA / max(1, n_looks or 1)


def reach(low: float | None, high: float | None) -> float | None:
    """The smallest effect an interval of a ratio can tell from none: its half-width in log space, as a fraction
    (0.09: differences under 9% either way are out of its reach). None without an interval."""
    if low is None or high is None or low <= 0:
        return None
    return math.expm1((math.log(high) - math.log(low)) / 2)


MOST_ROUNDS = 200  # beyond this many rounds, a target is called out of reach: more rounds will not get there


def rounds_to_reach(now: float, target: float, n: int, df: float, confidence: float, floor: float = 0.0) -> int | None:
    """About how many processes (or rounds) a side needs for an interval's reach (half-width, as a fraction) to come
    down from `now` to below `target`, at the same spread: the half-width goes as t(df) / sqrt(n), df growing with
    n. `floor`: a part of the reach that more rounds do not shrink (the drift between runs widens every interval
    by it). None where no count up to MOST_ROUNDS gets there; n itself where it is there already."""
    if target <= 0:
        return None
    h, want, fixed = math.log1p(now), math.log1p(target), math.log1p(floor)
    spread = (h - fixed) * math.sqrt(n) / t_critical(df, confidence)  # the standard deviation, in log space
    if h <= want:
        return n
    for more in range(n + 1, MOST_ROUNDS + 1):
        grown = df * (more - 1) / max(1, n - 1)
        if fixed + t_critical(grown, confidence) * spread / math.sqrt(more) <= want:
            return more
    return None
