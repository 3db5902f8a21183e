"""A report's tables as plain data (title, header, rows of strings), declared as (column name, value) pairs, and
the words of one cell: a mean, a failure, a percentage, an interval, a verdict. Markdown and HTML render them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, TypeVar

from compilebench.core import sequential, speedups, stats
from compilebench.core.drift import Drift
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.core.vocab import CLOCK, CUDAGRAPHS_SKIPPED, INCONCLUSIVE_REMEDY, RECOMPILE_LIMIT, Verdict


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)  # lines shown under the table ("- " starts a list item)
    links: tuple[str, ...] = ()  # columns whose cells are paths of files kept beside the results: shown as links
    commands: tuple[str, ...] = ()  # columns whose cells are shell commands: shown as code (HTML: with a copy button)

    def records(self) -> list[dict[str, str]]:
        """Each row as {column name: cell}: how a reader (or a test) finds a cell."""
        return [dict(zip(self.header, row)) for row in self.rows]


T = TypeVar("T")
Columns = list[tuple[str, Callable[[T], str]]]  # (column name, the cell of one row's item)


def table(title: str, columns: Columns, items: Iterable[T], notes: Iterable[str] = ()) -> Table:
    """A table declared as (name, value) pairs, one row per item: a column's name and its cells stand together."""
    return Table(title, [name for name, _ in columns], [[value(x) for _, value in columns] for x in items], list(notes))


# Flags that change what a number is (another clock's time, a CUDA-graph mode without graphs, a model partly run
# eagerly past the recompile limit): named in the cell.
CELL_FLAGS = (CLOCK.name, CUDAGRAPHS_SKIPPED.name, RECOMPILE_LIMIT.name)


def cell(r: Result | None) -> str:
    """A guide cell: the mean (with a flag that changes what it is), `OOM`, the status word of another failure, or
    empty where nothing was measured."""
    if r is None:
        return ""
    if r.status == "ok":
        marks = [f for f in r.flags if f in CELL_FLAGS]
        return f"{r.stats.mean:.3f}" + (f" ({', '.join(marks)})" if marks else "")
    return "OOM" if r.status == "oom" else r.status


def pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}%"


def num(x: float | None, digits: int | None) -> str:
    if x is None:
        return ""
    return f"{x:.{digits}f}" if digits is not None else f"{x:.2e}"


def compile_range(r: Result, spread: float) -> tuple[float, float] | None:
    """A result's compile seconds (a cold compile's, measured once a case, else the median of its warm ones) as far
    shorter or longer as one compile moves from another here (`spread`: View.compile_drift), as its break-even's
    range moves them; None where it compiled nothing."""
    return stats.moved(r.compile_s, spread) if r.compile_s is not None else None


def compile_s(r: Result | None, spread: float, digits: int = 1, cold_only: bool = False) -> str:
    """A result's compile seconds with their compile_range() in brackets: '22.1 [17.7-27.6]' (`cold_only`: none
    where no repeat compiled cold)."""
    if r is None or r.compile_s is None or (cold_only and not r.cold_compile_s):
        return ""
    return ranged(r.compile_s, spread, digits)


def ranged(seconds: float | None, spread: float, digits: int = 1) -> str:
    """Seconds with, in brackets, the same as far shorter or longer as one compile moves from another (`spread`:
    View.compile_drift; stats.moved): '4.1 [3.3-5.1]'; alone without a spread."""
    if seconds is None:
        return ""
    low, high = (num(x, digits) for x in stats.moved(seconds, spread))
    return num(seconds, digits) if low == high else f"{num(seconds, digits)} [{low}-{high}]"


def interval(low: float | None, high: float | None, fmt: str = "{:.1f}%") -> str:
    return "" if low is None or high is None else f"{fmt.format(low)} to {fmt.format(high)}"


def ratio(s: Speedup | None) -> str:
    return "" if s is None else f"{s.value:.3f}x"


def ratio_interval(s: Speedup | None) -> str:
    return "" if s is None else interval(s.low, s.high, "{:.3f}x")


def ratio_said(s: Speedup | None) -> str:
    """One cell: '1.500x (1.200x to 1.900x, faster)': the ratio, its interval where it has one, the verdict, and an
    inconclusive one's reach ('0.950x (0.770x to 1.170x, inconclusive, ±19% reach)'): a side comparison (an engine
    against compile, quantized against float) has no undecided note to say it."""
    if s is None:
        return ""
    between = ratio_interval(s)
    reach = reach_said(s)
    return f"{ratio(s)} ({between + ', ' if between else ''}{verdict(s)}{', ' + reach if reach else ''})"


def improvement(s: Speedup | None) -> str:
    return "" if s is None else pct(s.improvement)


def improvement_interval(s: Speedup | None) -> str:
    return "" if s is None else interval(*s.improvement_interval)


def break_even(compiled: Result, eager: Result | None) -> str:
    """The calls after which compiling has paid for itself, in words: a count, or never ("" for an eager variant:
    nothing compiled to pay back)."""
    if not compiled.case.variant.compiled:
        return ""
    be = stats.break_even(compiled.compile_s, speedups.mean(eager), compiled.mean)
    return "never" if be is None else f"{be:,.0f}"


def break_even_range(compiled: Result, eager: Result | None, s: Speedup | None, spread: float) -> str:
    """break_even() at each end of the speed-up's interval, the compile moved by `spread` toward that end
    (stats.break_even_range): '12,130-306,000', '12,130-never'; '' without one. A count to the call beside an
    interval 25x wide would read surer than it is."""
    if not compiled.case.variant.compiled or s is None or eager is None:
        return ""
    return ends_said(stats.break_even_range(compiled.compile_s, speedups.mean(eager), s.low, s.high, spread))


COLD = "compile s: a cold compile, measured once a case,"
COLD_OR_WARM = ("compile s: a cold compile, measured once a case (where no repeat compiled cold, a warm one: the "
                "median of those that compiled warm),")


def compile_note(d: Drift, what: str = COLD) -> str:
    """What compile_s() and ranged() bracket, for a table's note: `what` has in brackets..."""
    return (f"{what} has in brackets the same divided and multiplied by {1 + d.value:.2f}: how far one compile of a "
            f"case moves from another here ({d.source}).")


def spread_said(d: Drift, what: str = "the compile") -> str:
    """How a break-even range holds the compile's own noise (View.compile_drift), for a table's note: at the fewest
    the compile divided by 1 + d, at the most multiplied by it (stats.moved)."""
    return (f"with {what} {1 / (1 + d.value):.2f}x as long at the fewest and {1 + d.value:.2f}x at the most: how far "
            f"one compile of a case moves from another here ({d.source}), measured once a case")


def ends_said(ends: tuple[float | None, float | None] | None, between: str = "-") -> str:
    """stats.break_even_range's two counts in words ('never' for an end that saves nothing); '' for none."""
    return between.join("never" if n is None else f"{n:,.0f}" for n in ends) if ends else ""


def may_decide(undecided: Iterable[Speedup], min_effect: float) -> str:
    """What inconclusive speed-ups could not see (one: its reach and the rounds that would decide it; several: the
    widest reach) and what may decide them: more repeats, and --interleave unless every one already shared its
    processes (suggesting what the run did is no remedy); one withheld for what sharing a process changed: that."""
    undecided = list(undecided)
    if len(undecided) == 1 and undecided[0].withheld is not None:  # its remedy is --no-interleave, said with it
        return speedups.out_of_reach(undecided[0], min_effect)
    interleaved = all(s.paired_by == "process" for s in undecided)
    remedy = "more repeats may decide" if interleaved else "more repeats or --interleave may decide"
    if len(undecided) == 1:
        seen = speedups.out_of_reach(undecided[0], min_effect)
    else:
        widest = max((s.reach for s in undecided if s.reach is not None), default=None)
        seen = "" if widest is None else f"differences under ±{widest:.0%} are out of this run's reach"
    return f"{seen}; {remedy}" if seen else remedy


def verdict(s: Speedup | None) -> str:
    """'faster'; 'inconclusive (across runs)' where the two sides come from different runs (drift_note says why)."""
    return "" if s is None else s.verdict if s.drift is None else f"{s.verdict} (across runs)"


def verdict_words(s: Speedup) -> list[str]:
    """The verdict, then whether its sides came from different runs, then (inconclusive) its reach: the smallest
    effect its interval could tell from none."""
    return [str(s.verdict), *(["across runs"] if s.drift is not None else []), *filter(None, [reach_said(s)])]


def reach_said(s: Speedup) -> str:
    """An inconclusive speed-up's reach, '±19% reach' (the smallest effect its interval could tell from none); ''
    for a decided one."""
    return f"±{s.reach:.0%} reach" if s.verdict == Verdict.inconclusive and s.reach is not None else ""


def verdict_reach(s: Speedup | None) -> str:
    """verdict(), an inconclusive one with its reach, for a cell no undecided note speaks for: 'faster',
    'inconclusive (±8% reach)', 'inconclusive (across runs, ±30% reach)'."""
    if s is None:
        return ""
    said, *more = verdict_words(s)
    return f"{said} ({', '.join(more)})" if more else said


def improvement_verdict(s: Speedup | None) -> str:
    """One cell: '20.0% (faster)'."""
    return "" if s is None else f"{pct(s.improvement)} ({verdict(s)})".replace(" (across runs))", ", across runs)")


def drift_note(d: Drift) -> str:
    return (f"across runs: the two sides of such a verdict were measured in different runs, so its interval also "
            f"holds this machine's run-to-run drift, {d.describe()}, and a verdict needs the effect beyond it. For a "
            f"decisive answer, measure both in one run: it alternates them, so drift falls on both alike (two torch "
            f"installs or environment settings: `compilebench run --env A=PYTHON --env B=PYTHON`).")


VERDICT_NOTE = ("verdict: faster or slower when the whole 95% interval of the speed-up lies beyond the minimum effect "
                "({effect}) either way; same when it lies inside it; inconclusive otherwise: {remedy}. An "
                "inconclusive one says its reach: the smallest effect it could tell from none (its interval's "
                "half-width), and about how many more rounds, at the same estimate and spread, would decide it.")


def verdict_note(min_effect: float, looks: int = 1, design: list[int] | None = None) -> str:
    """`looks`: the most looks at the data a run of these results allowed (repeats until decided); `design`: the
    processes at each look of the longest design among them (none: results written under the equal split)."""
    note = VERDICT_NOTE.format(effect=f"{min_effect:.0%}" if min_effect * 100 == int(min_effect * 100) else f"{min_effect:.1%}",
                               remedy=INCONCLUSIVE_REMEDY)
    if design and len(design) > 1:
        note += (f" Repeats until decided: the run looked at its verdicts at {', '.join(map(str, design))} processes, "
                 f"each look's interval at the group-sequential boundary of Lan-DeMets Pocock-type spending of the "
                 f"5% ({', '.join(f'{sequential.confidence(design, n):.1%}' for n in design)}), so a false "
                 "verdict over all looks stays within 5%.")
    elif looks > 1:
        note += (f" Repeats until decided: the run looked at its verdicts up to {looks} times, so each such interval is "
                 f"at {sequential.equal_split(looks):.1%}, and a false verdict over all looks stays within 5%.")
    return note
