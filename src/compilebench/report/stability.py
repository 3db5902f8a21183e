"""Where the machine moved, said rather than averaged: a case whose processes were set up unlike each other (torch's
threads, say), a case whose processes fell into two groups far apart (core/stats.groups: the machine changed state
during the run), a paired speed-up whose processes (or rounds) did (compile's effect itself moved with that state),
each with its groups' CPU probes where recorded (whether the host's CPU side ran at another speed), an interleaved
speed-up whose cold-compiled process read unlike those that loaded its graph from the compiler's cache, an
interleaved speed-up that its variants' warm-ups, each timed alone, did not bear out (core/sharing.py: sharing the
process changed the effect, and whether its verdict is withheld for it), an earlier run of the same case on the same
machine whose interval does not overlap the newest one's (it changed between runs), and a comparison that the run's
cap, its time budget or its sharing check left inconclusive. One line each, for the report's summary and the
terminal."""

from __future__ import annotations

import statistics

from compilebench.core import generation, speedups
from compilebench.core.result import Result
from compilebench.core.run import STOPPED
from compilebench.core.vocab import POOL_STARTING, Verdict
from compilebench.report import data
from compilebench.report.view import View

PROBE_APART = 0.10  # the groups' CPU probes this far apart: the host's CPU side ran at another speed in one


def notes(view: View) -> list[str]:
    latest = view.latest + view.served
    return [*_mixed_cases(latest), *filter(None, (_groups(r) for r in latest)),
            *filter(None, (_effect_groups(view, r) for r in latest)),
            *filter(None, (_by_compile(view, r) for r in latest)),
            *filter(None, (_shared(view, r) for r in latest)), *_moved(view.results, latest),
            *filter(None, (_undecided(view, r) for r in latest))]


def case_name(r: Result, short: bool = False) -> str:
    """'ViT: b1 eager (int8-dynamic)': the case with the settings that set it apart from its neighbours; `short`, in
    a list of cases: 'ViT b1 eager (int8-dynamic)', its task left out."""
    label = r.label or r.case.model
    head = f"{label.rsplit('/', 1)[-1]} " if short else f"{label}: "
    return f"{head}{r.case.describe().split(' ', 1)[1]}{data.settings_said(r)}"


def _when(stamp: str) -> str:
    return stamp[:16].replace("T", " ")


def mixed(r: Result) -> str | None:
    """A case whose processes differ in what the repeats of one case must share (core/environment.COMMON: torch's
    threads, the allocator, the driver...): its figure holds processes set up unlike each other."""
    if not r.disagreements:
        return None
    return f"mixed: {case_name(r)}: its repeats ran with different {_different(r)}, and its interval holds them all"


def _different(r: Result) -> str:
    return "; ".join(f"{k} ({', '.join(map(str, v))})" for k, v in r.disagreements.items())


def _mixed_cases(latest: list[Result]) -> list[str]:
    """mixed(), one line for the cases that differ alike (a run whose later processes all started otherwise)."""
    alike: dict[str, list[Result]] = {}
    for r in latest:
        if r.disagreements:
            alike.setdefault(_different(r), []).append(r)
    return [mixed(rs[0]) if len(rs) == 1 else
            f"mixed: the repeats of {len(rs)} cases ({', '.join(case_name(r, short=True) for r in rs)}) ran with "
            f"different {said}, and each interval holds them all" for said, rs in alike.items()]


def _groups(r: Result) -> str | None:
    if not r.unstable:
        return None
    parts = [f"{g.mean_ms:.2f} ms (repeat{'s' if len(g.repeats) > 1 else ''} "
             f"{', '.join(map(str, g.repeats))}, {_when(g.started)} to {_when(g.ended)[11:]})" for g in r.unstable]
    return (f"unstable: {case_name(r)}: its processes fell into two groups, {' and '.join(parts)}: the machine changed "
            f"state during the run, and the interval holds both{_probes(r, [g.repeats for g in r.unstable])}")


def _effect_groups(view: View, r: Result) -> str | None:
    s = view.verdict(r)
    if s is None or not s.groups:
        return None
    parts = [f"{value:.2f}x (repeat{'s' if len(repeats) > 1 else ''} {', '.join(map(str, repeats))})"
             for value, repeats in s.groups]
    why = ("the effect itself moved with the machine's state (eager and it shared each process)"
           if s.paired_by == "process" else
           "the machine changed state during the run (a round's two processes apart, or the effect with the state)")
    return (f"unstable: {case_name(r)}: its speed-up{generation.per(r.case)} over eager fell into two groups of "
            f"{'processes' if s.paired_by == 'process' else 'rounds'}, {' and '.join(parts)}: {why}, and the interval "
            f"({s.value:.2f}x{_span(s)}) holds both{_probes(r, [repeats for _, repeats in s.groups])}")


def _by_compile(view: View, r: Result) -> str | None:
    """An interleaved speed-up whose process that compiled the graph cold read unlike those that loaded it from the
    compiler's cache (speedups._by_compile)."""
    s = view.verdict(r)
    if s is None or not s.by_compile:
        return None
    (cold, first), (cached, rest) = s.by_compile
    return (f"compile cache: {case_name(r)}: its speed-up over eager was {cold:.2f}x in the process that compiled "
            f"it cold (repeat {first[0]}) and {cached:.2f}x in those that loaded the compiled graph from the "
            f"compiler's cache (repeats {', '.join(map(str, rest))}), eager beside it in each: the same graph ran "
            f"at another speed as it was made ready, and the interval ({s.value:.2f}x{_span(s)}) holds both"
            f"{_helpers(r, [first, rest])}")


def _shared(view: View, r: Result) -> str | None:
    """An interleaved verdict that stands though sharing the process changed its effect (the change only
    strengthens it); one withheld for it is said with its undecided line (speedups.why_withheld)."""
    s = view.verdict(r)
    found = s.sharing if s is not None else None
    if found is None or not found.changed(view.min_effect) or s.withheld is not None:
        return None
    return (f"interleaving: {case_name(r)}: {found.said()}: sharing the process changed the effect, and the interval "
            f"holds the interleaved one; its verdict ({s.verdict}) stands, as the change only strengthens it; "
            "--no-interleave times each variant in processes of its own")


def _probes(r: Result, groups) -> str:
    """The CPU probe (a fixed stretch of pure Python before each timed loop: measure/conditions.cpu_probe_us) of each
    group, the median over its repeats, where every group has one: whether the host's CPU side ran at another
    speed in one of them. Empty where a group has none (a GPU's readings are in the details)."""
    medians = _medians({rep.index: rep.conditions.cpu_probe_us[0] for rep in r.repeats
                        if rep.conditions.cpu_probe_us and rep.conditions.cpu_probe_us[0]}, groups)
    if not medians:
        return ""
    said = " and ".join(f"{m:.0f}" for m in medians)
    if max(medians) > min(medians) * (1 + PROBE_APART):
        return f"; the CPU probe (a fixed Python loop) took {said} µs in them: the host's CPU side ran at another speed"
    return f"; the CPU probe (a fixed Python loop) took {said} µs in them, alike"


def _helpers(r: Result, groups) -> str:
    """Inductor's compile pool beside each group's worker processes, the median over its repeats: the seconds each
    waited for it to finish starting before its warm-up (measure/compile_pool: compile_fx wakes it at every compile
    of a graph on a GPU, one loaded from the compiler's cache too), the repeats whose wait ended with it still
    starting, and the CPU seconds their own descendants used over their loops (on other cores than the loop's):
    each said where every group has the reading and any of them is more than none."""
    said = ""
    waits = _medians({rep.index: rep.conditions.compile_pool_wait_s for rep in r.repeats
                      if rep.conditions.compile_pool_wait_s is not None}, groups)
    if any(waits):
        said += (f"; before their warm-ups they waited {' and '.join(f'{m:.2f}' for m in waits)} s for inductor's "
                 "compile pool to finish starting")
    starting = [str(rep.index) for rep in r.repeats if rep.conditions.compile_pool == POOL_STARTING]
    if starting:
        said += f"; in repeat(s) {', '.join(starting)} it was still starting when the wait ended"
    medians = _medians({rep.index: rep.conditions.helper_cpu_s for rep in r.repeats
                        if rep.conditions.helper_cpu_s is not None}, groups)
    if any(medians):
        said += (f"; their own helper processes (inductor's compile pool, on other cores) used "
                 f"{' and '.join(f'{m:.2f}' for m in medians)} CPU s over the loops")
    return said


def _medians(by_repeat: dict[int, float], groups) -> list[float]:
    """Each group's median of a reading by repeat index; none where a group has no reading."""
    medians = []
    for repeats in groups:
        known = [by_repeat[i] for i in repeats if i in by_repeat]
        if not known:
            return []
        medians.append(statistics.median(known))
    return medians


def _interval(r: Result) -> str:
    s = r.stats
    span = f" [{s.ci95_low:.2f}-{s.ci95_high:.2f}]" if s.ci95_low is not None else ""
    return f"{s.mean:.2f} ms{span}"


def _moved(results: list[Result], latest: list[Result]) -> list[str]:
    """The newest result of each case against each earlier one of the same case on the same machine."""
    out = []
    for r in latest:
        if r.stats.ci95_low is None:
            continue
        for e in results:
            earlier = e.created_at < r.created_at and e.case_key == r.case_key and e.machine_id == r.machine_id
            if earlier and e.stats.ci95_low is not None and (e.stats.ci95_high < r.stats.ci95_low
                                                               or r.stats.ci95_high < e.stats.ci95_low):
                out.append(f"moved between runs: {case_name(r)}: {_interval(r)} in the newest run, {_interval(e)} in "
                           f"the one of {_when(e.created_at)}: the intervals do not overlap, so the machine changed "
                           "between the runs by more than either interval holds")
    return out


def _undecided(view: View, r: Result) -> str | None:
    """A comparison left inconclusive: after how many repeats, why the run stopped there where it was not the data,
    and the smallest effect it could have seen (speedups.out_of_reach)."""
    s = view.verdict(r)
    if s is None or s.verdict != Verdict.inconclusive:
        return None
    why = f" ({STOPPED[r.undecided_by]})" if r.undecided_by in STOPPED else ""
    seen = speedups.out_of_reach(s, view.min_effect) or "one process a side gives no interval"
    return (f"undecided: {case_name(r)}:{generation.per(r.case)} {s.value:.2f}x{_span(s)}, inconclusive after "
            f"{r.stats.repeats} repeats{why}: {seen}")


def _span(s) -> str:
    return f" [{s.low:.2f}-{s.high:.2f}]" if s.low is not None else ""
