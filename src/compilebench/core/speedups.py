"""Comparing two results: the speed-up of one over another, from both sides' per-process figures (the unit of
independence), with its 95% interval and verdict; and the one rule for the best of several. The report, `tune`,
`compare` and the Python API all take their speed-ups from here, so every table, chart, file and pick agrees.
No torch, no report."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable, Iterable, TypeVar

from compilebench.core import generation, sequential, sharing, stats
from compilebench.core.drift import Drift
from compilebench.core.result import Result, process_id
from compilebench.core.sharing import Sharing
from compilebench.core.vocab import Verdict

T = TypeVar("T")


def mean(r: Result | None) -> float | None:
    """The mean of a result that may be averaged into a table: ok only (invalid and failures have no number)."""
    return None if r is None else r.mean


@dataclass(frozen=True)
class Speedup:
    """Eager time over the other's, from both sides' per-process figures, with its 95% interval and verdict."""

    value: float
    low: float | None
    high: float | None
    verdict: Verdict
    paired: bool  # from per-pair ratios: the variants shared each process (--interleave), or each round
    drift: float | None = None  # measured in different runs: the interval is widened by this drift either way
    confidence: float = 0.95  # of each look: below 95% never; above where the run looked several times
    paired_by: str | None = None  # "process" (--interleave) or "round" (the rounds of one run); None: unpaired
    n: int | None = None  # the processes (or rounds, or shared processes) per side it was read from
    df: float | None = None  # its interval's degrees of freedom
    # a paired reading whose per-pair ratios fell into two groups far apart (stats.groups): each group's speed-up
    # and the repeats it holds, lower first; the effect itself moved with the machine's state
    groups: tuple[tuple[float, tuple[int, ...]], ...] = ()
    # interleaved: where the process that compiled the graph cold read unlike those that loaded it from the
    # compiler's cache (_by_compile): the cold one's speed-up and repeat, then the cached ones'
    by_compile: tuple[tuple[float, tuple[int, ...]], ...] = ()
    # interleaved: the speed-up its variants' warm-ups, each timed alone, give over it (core/sharing.py), and the
    # verdict its interval gave where that change could undo it (then `verdict` is inconclusive: withheld)
    sharing: Sharing | None = None
    withheld: Verdict | None = None

    @property
    def reach(self) -> float | None:
        """The smallest effect this reading could tell from none (its interval's half-width, as a fraction)."""
        return sequential.reach(self.low, self.high)

    def rounds_to_decide(self, min_effect: float) -> int | None:
        """About how many processes (rounds) a side would need, at the same estimate and spread, for the interval
        to clear the nearer edge of the ±min_effect band (`same` inside it, `faster` or `slower` beyond). None:
        out of reach (the estimate sits on an edge, or the drift between runs alone is wider), or no interval."""
        if self.reach is None or not self.n or not self.df or self.withheld is not None:
            return None  # withheld: more interleaved rounds would not undo what sharing the process changed
        return sequential.rounds_to_reach(self.reach, self.gap(min_effect), self.n, self.df, self.confidence,
                                          self.drift or 0.0)

    def gap(self, min_effect: float) -> float:
        """How far the estimate lies from the nearer edge of the ±min_effect band (a fraction, in log space): the
        half-width an interval around it must come under to decide."""
        edge = math.log1p(min_effect)
        return math.expm1(min(abs(math.log(self.value) - edge), abs(math.log(self.value) + edge)))

    @property
    def improvement(self) -> float:
        return stats.speedup_to_improvement(self.value)

    @property
    def improvement_interval(self) -> tuple[float | None, float | None]:
        return stats.speedup_to_improvement(self.low), stats.speedup_to_improvement(self.high)


def speedup(eager: Result | None, other: Result | None, min_effect: float = stats.DEFAULT_MIN_EFFECT,
            metric=None, drift: Drift | None = None) -> Speedup | None:
    """None unless both were measured ok. Paired where the two shared processes (--interleave), or by round where
    their design pairs rounds (sequential.PAIR_FROM) and both have that many rounds of one run: the two processes of a
    round ran back to back, so the machine's state then is in both and cancels in their ratio. Else from both
    sides' per-process figures (Welch). `drift`: the two come from different runs (the caller knows:
    drift.across_runs), so the interval is widened by it either way: a verdict then needs the effect beyond the
    drift as well, and `same` is out of reach within it. The interval is read at the boundary of the look the
    results' design was at (repeats until decided: core/sequential.py), so a verdict holds over all its looks."""
    if mean(eager) is None or mean(other) is None:
        return None
    e, o = eager.process_figures(metric), other.process_figures(metric)
    if not e or not o:
        return None
    shared = [p for p in e if p in o]
    if eager.case.interleave and other.case.interleave and shared:  # one shared process: no interval, yet paired
        s = of_means([e[p] for p in shared], [o[p] for p in shared], min_effect, pair=True, drift=drift,
                     confidence=_confidence(eager, other, len(shared)), paired_by="process")
        index = {process_id(rep): rep.index for rep in other.repeats}
        s = _grouped(s, [e[p] / o[p] for p in shared], [index[p] for p in shared])
        s = _by_compile(s, {p: e[p] / o[p] for p in shared}, other, min_effect)
        # the warm-ups time whole calls alone: their check holds the verdict's figure too (a generate() call's time
        # is mostly its decoded tokens'), and no other figure
        checked = metric is None or metric is generation.verdict_metric(other.case)
        return _checked(s, sharing.alone_over_interleaved(eager, other), min_effect) if checked else s
    pair_from = min(eager.pair_from or 0, other.pair_from or 0)
    if pair_from:
        re, ro = eager.round_figures(metric), other.round_figures(metric)
        rounds = [k for k in re if k in ro]
        if len(rounds) >= pair_from:
            s = of_means([re[k] for k in rounds], [ro[k] for k in rounds], min_effect, pair=True, drift=drift,
                         confidence=_confidence(eager, other, len(rounds)), paired_by="round")
            return _grouped(s, [re[k] / ro[k] for k in rounds], [k[1] for k in rounds])
    return of_means(list(e.values()), list(o.values()), min_effect, drift=drift,
                    confidence=_confidence(eager, other, min(len(e), len(o))))


def _grouped(s: Speedup, ratios: list[float], repeats: list[int]) -> Speedup:
    """A paired speed-up with its pairs' ratios in two groups far apart, where they are (stats.groups, as a case's
    processes are grouped: noise alone draws them in under 1 in 100): each group's speed-up (the geometric mean of
    its ratios) and its repeats. The note says the effect itself moved, which noise must not make it say."""
    found = stats.groups(ratios)
    if not found:
        return s
    groups = tuple((math.exp(sum(math.log(ratios[i]) for i in g) / len(g)), tuple(sorted(repeats[i] for i in g)))
                   for g in found)
    return dataclasses.replace(s, groups=groups)


def _by_compile(s: Speedup, ratios: dict[str, float], other: Result, min_effect: float) -> Speedup:
    """A speed-up paired by process whose one process that compiled the graph cold (no hit in inductor's cache) read
    unlike those that loaded it from the cache, beyond their own spread (stats.beyond, 99%) and beyond min_effect:
    each side's speed-up (the cached ones' geometric mean) and repeats. Eager shares each process, so the host's
    state cancels in each ratio: what moved is the compiled code as it was made ready (on one H200, 2026-11-30,
    ResNet-50 1.11x cold and 0.90-0.92x in four cached processes)."""
    hits = {process_id(rep): (rep.compile_cache_hits, rep.index) for rep in other.repeats}
    cold = [p for p in ratios if p in hits and hits[p][0] == 0]
    cached = [p for p in ratios if p in hits and (hits[p][0] or 0) > 0]
    if len(cold) != 1 or not stats.beyond(ratios[cold[0]], [ratios[p] for p in cached]):
        return s
    cached_value = math.exp(sum(math.log(ratios[p]) for p in cached) / len(cached))
    if abs(math.log(ratios[cold[0]] / cached_value)) <= math.log1p(min_effect):
        return s
    return dataclasses.replace(s, by_compile=((ratios[cold[0]], (hits[cold[0]][1],)),
                                              (cached_value, tuple(sorted(hits[p][1] for p in cached)))))


def _checked(s: Speedup, found: Sharing | None, min_effect: float) -> Speedup:
    """An interleaved speed-up with its sharing check. Where sharing the process changed the effect beyond the band
    and in the direction that could undo its verdict, the verdict is withheld (inconclusive): `same` by a change
    either way, `faster` by variants closer alone (the other's speed-up smaller), `slower` by variants further
    apart alone; an undecided one stays undecided, as more interleaved rounds would not undo the change. A verdict
    the change would only strengthen stands (faster interleaved, faster still alone)."""
    if found is None or not found.changed(min_effect):
        return dataclasses.replace(s, sharing=found)
    alone = Verdict.faster if found.low > 1 else Verdict.slower
    if s.verdict == alone:
        return dataclasses.replace(s, sharing=found)
    return dataclasses.replace(s, sharing=found, withheld=s.verdict, verdict=Verdict.inconclusive)


def _confidence(eager: Result, other: Result, processes: int) -> float:
    """The confidence of the look these two were read at: the longer design of the two, at the processes both have;
    results written under the equal split (a count of looks, no design) as they were read then."""
    design = max(eager.design or [], other.design or [], key=len)
    if design:
        return sequential.confidence(design, processes)
    return sequential.equal_split(max(eager.looks or 1, other.looks or 1))


def of_means(eager_means: list[float], other_means: list[float], min_effect: float = stats.DEFAULT_MIN_EFFECT, *,
             pair: bool = False, drift: Drift | None = None, confidence: float = 0.95,
             paired_by: str | None = None) -> Speedup:
    """The speed-up from each side's per-process figures (any per-process quantity: a case's latency, the time a
    process took to serve a mix), its interval widened by `drift` where the two come from different runs."""
    s, low, high, df = stats.ratio_df(other_means, eager_means, pair=pair, confidence=confidence)
    if drift is not None and low is not None and high is not None:  # what a rerun of either side may move, too
        low, high = low / (1 + drift.value), high * (1 + drift.value)
    return Speedup(s, low, high, Verdict.of(low, high, min_effect), pair, drift.value if drift else None, confidence,
                   paired_by or ("process" if pair else None), min(len(eager_means), len(other_means)), df)


MARGIN = 0.005  # an estimate this close to an edge of the ±min_effect band sits on it: no count of rounds decides


def out_of_reach(s: Speedup, min_effect: float, whose: str = "this run's") -> str:
    """What an undecided reading could and could not see, in one clause: "differences under ±9% are out of this
    run's reach; about 6 more rounds would decide it, at the same spread". Empty for a decided one (or one with
    no interval: one process a side says so elsewhere). `whose`: what reads it ("its": two files' speed-ups)."""
    if s.verdict != Verdict.inconclusive or s.reach is None:
        return ""
    if s.withheld is not None:
        return why_withheld(s)
    said = f"differences under ±{s.reach:.0%} are out of {whose} reach"
    need = s.rounds_to_decide(min_effect)
    if need is None:
        gap = s.gap(min_effect)
        why = ("the drift between runs alone is wider" if s.drift and s.drift >= gap else
               f"it sits at the ±{min_effect:.0%} margin" if gap < MARGIN else
               f"it would take over {sequential.MOST_ROUNDS} of them")
        return f"{said}; more rounds would not decide it ({why})"
    more = max(1, need - s.n)
    unit = ("round" if s.paired_by == "round" else "process" if s.paired_by == "process" else "process a side")
    unit = unit if more == 1 else unit.replace("process", "processes").replace("round", "rounds")
    return f"{said}; about {more} more {unit} would decide it, at the same spread"


def why_withheld(s: Speedup) -> str:
    """Why an interleaved reading decides nothing, in one clause: its reach, and that sharing the process changed the
    effect."""
    was = f"its interval said {s.withheld}, withheld: " if s.withheld != Verdict.inconclusive else ""
    return (f"differences under ±{s.reach:.0%} are out of this run's reach; {was}{s.sharing.said()}, so sharing the "
            "process changed the effect and more interleaved rounds would not decide it; --no-interleave times each "
            "variant in processes of its own")


def best(candidates: Iterable[tuple[T, Speedup | None]]) -> tuple[T, Speedup] | None:
    """The fastest candidate whose speed-up is `faster` (its whole interval beyond the minimum effect); None where
    none is: then the answer is not to compile. The recommendation table and `tune` both pick with it."""
    faster = [(c, s) for c, s in candidates if s is not None and s.verdict == Verdict.faster]
    return max(faster, key=lambda cs: cs[1].value, default=None)


def rival(others: Iterable[tuple[T, Speedup | None]], over: Callable[[T], Speedup | None]) -> tuple[T, Speedup] | None:
    """The runner-up to a pick (best): of the `others` (the pick left out) `faster` than the baseline, the fastest,
    with the pick's speed-up over it (`over`), where that is not itself `faster`: the two were not told apart, so the
    pick is no surer than its rival. None where the pick beats it beyond the minimum effect, or nothing else is
    faster. The recommendation table, the terminal's words and `tune` all name it so."""
    runner_up = best(others)
    if runner_up is None:
        return None
    said = over(runner_up[0])
    return None if said is None or said.verdict == Verdict.faster else (runner_up[0], said)
