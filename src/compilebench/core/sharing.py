"""Whether sharing a process changed a speed-up (--interleave). Each variant of an interleaved process is warmed up
alone, one after another, moments before the loop that alternates them in blocks: its warm-up's last windows are
what it does alone, its timed calls what it does beside the others. Per process, the speed-up alone (eager's
windows over the other's) over the speed-up interleaved (their loops' figures) is 1 where sharing changed nothing;
a drift of the machine between the warm-ups falls on one process at a time, so over the processes it is noise. On
one H200 (2026-11-28 02:50, ResNet-50 at batch 1) compiled ran 1.10-1.25x slower in its loop than in its warm-up in
7 of 7 processes while eager did not: its speed-up alone was 1.19x [1.08-1.32] the interleaved one's, which said
1.02x. Where a warm-up was short there is no reading (SETTLED, below).
Said where its 95% interval clears the ±5% band a verdict uses, and a verdict that change could undo is withheld
(core/speedups.py): on noise alone (tests/test_sharing.py) about 1 in 100 at the recording's spread of 10% (fewer
with more processes), up to 1 in 30 at a spread of 30%.
No torch, no report."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from compilebench.core import stats
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result, process_id
from compilebench.core.vocab import MEASURED, STEADY, Verdict

WINDOWS = 3  # a warm-up's last windows, their median: the variant alone (one window is 0.1 s of calls)
# The fewest windows a warm-up must have had, the asked calls' included, for its last ones to be past its start: a
# warm-up that was steady after 2-4 windows may still be getting faster (compiled DeepLabV3-MobileNet on this VM,
# full size: 74.7, 67.7, 63.7 ms, then its loop 59.9), which reads as sharing where there is none (the README's
# first command, 2026-11-28: 0.94x [0.89-0.98] from such warm-ups, where benchmarks/blocks.py in one process read
# blocks of 10 within 2% of alone). An H200's first variant warms up for its --warmup-time, 10 windows or more.
SETTLED = 5
FEWEST = 3  # processes: from two, an interval's t (df 1) is too wide to clear anything
# processes: a run gives up on a comparison whose verdict the check withholds once it reads that from this many (at
# 3 noise alone draws it about 1 in 100 at a 10% spread and 1 in 30 at 30%, at 5 about 1 in 200 and 1 in 45:
# tests/test_sharing.py), so one drawn at the first look by chance has the next look to clear it
FIRM = 5


@dataclass(frozen=True)
class Sharing:
    """The speed-up alone over the speed-up interleaved, the geometric mean over the processes that warmed both up
    long enough (SETTLED), with its 95% interval (paired: each process's own ratio); and the speed-up alone itself,
    with its own (what a process that runs one variant would read: a user's server)."""

    value: float
    low: float
    high: float
    n: int
    alone: float
    alone_low: float
    alone_high: float

    def changed(self, min_effect: float) -> bool:
        """The whole interval beyond the ±min_effect band: sharing the process changed the effect by more than a
        verdict's smallest effect."""
        return Verdict.of(self.low, self.high, min_effect) in (Verdict.faster, Verdict.slower)

    def said(self) -> str:
        """What the check read, in one clause."""
        return (f"timed alone (each process's warm-up, moments before its loop) its speed-up was {self.alone:.2f}x "
                f"[{self.alone_low:.2f}-{self.alone_high:.2f}] over {self.n} processes, {self.value:.2f}x "
                f"[{self.low:.2f}-{self.high:.2f}] the interleaved one")


def alone_over_interleaved(eager: Result, other: Result) -> Sharing | None:
    """None where the two did not share processes, or fewer than FEWEST of them warmed both up to steady over SETTLED
    windows or more."""
    found = by_process(eager, other)
    if len(found) < FEWEST:
        return None
    return of_speedups([alone for alone, _ in found.values()], [shared for _, shared in found.values()])


def by_process(eager: Result, other: Result) -> dict[str, tuple[float, float]]:
    """Per process that warmed both up long enough: the speed-up alone and the speed-up interleaved; none where the
    two did not share processes."""
    if not (eager.case.interleave and other.case.interleave):
        return {}
    e, o = _alone_and_loop(eager), _alone_and_loop(other)
    return {p: (e[p][0] / o[p][0], e[p][1] / o[p][1]) for p in e if p in o}


def of_speedups(alone: list[float], interleaved: list[float]) -> Sharing:
    """From each process's speed-up alone and interleaved (at least two processes)."""
    value, low, high, _ = stats.ratio_df(interleaved, alone, pair=True)
    alone_value, alone_low, alone_high, _ = stats.ratio_df([1.0] * len(alone), alone, pair=True)  # each one's own
    return Sharing(value, low, high, len(alone), alone_value, alone_low, alone_high)


def alone(rep: Repeat) -> float | None:
    """A variant alone in its process: its warm-up's last windows, their median; None where the warm-up did not end
    steady over SETTLED windows or more."""
    windows = rep.warmed.windows_ms
    if rep.warmed.ended != STEADY or len(windows) < SETTLED or not all(w > 0 for w in windows[-WINDOWS:]):
        return None
    return statistics.median(windows[-WINDOWS:])


def _alone_and_loop(r: Result) -> dict[str, tuple[float, float]]:
    """Per process: the variant alone and its timed calls' figure (stats.per_process)."""
    out = {}
    for rep in r.repeats:
        if rep.status in MEASURED and rep.samples_ms and (found := alone(rep)) is not None:
            out[process_id(rep)] = (found, stats.per_process(rep.samples_ms))
    return out
