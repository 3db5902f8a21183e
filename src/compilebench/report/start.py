"""The start-up view: per model, how long a new process waits for its first answer under each way of starting
(no compile, a cold compile, a warm local cache, the mega-cache, regional compilation, an AOTInductor package),
against the steady latency each then gives, with the requests after which each has paid for its start against
no compile, and the fastest start that pays off within --requests N.

A start is what the worker measured in a fresh process: the model's build (not for an AOTInductor package,
which holds its weights), loading artifacts or a package, and the first call (which holds any compile); a cold
start is one process's (the first repeat), the others the median over the repeats that started so. For
`compilebench shapes`, a start is the first call of every shape served (report/shape_starts.py)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from compilebench.core import stats
from compilebench.core.result import Result
from compilebench.core.vocab import FAILED
from compilebench.report import data, drawing
from compilebench.report.cells import Table, ends_said, num, spread_said, table
from compilebench.report.drawing import Chart
from compilebench.report.view import View

# A repeat's compiler state, as a start is named by it.
STARTS = {"cold": "cold start", "warm": "warm cache", "dir": "cache folder", "mega": "mega-cache"}
PARTS = (("build", "build_s"), ("load", "load_s"), ("first call", "first_call_s"))  # a start's parts, in order


@dataclass
class Start:
    """One way of starting a model: its name, the result it comes from, the seconds until the first answer
    (and their parts), and how many processes started so."""

    name: str
    result: Result
    parts: dict[str, float]  # build, load, first call (with its compile): seconds, medians over `processes`
    processes: int
    state: str = ""  # the compiler state its processes started from (STARTS), for the order of a table's rows

    @property
    def order(self) -> tuple:
        """No compile first, then by variant (whole-model compiles before regions), cold before warm before mega."""
        v = self.result.case.variant
        return v.compiled, v.order, v.scope, list(STARTS).index(self.state) if self.state in STARTS else len(STARTS)

    @property
    def seconds(self) -> float:
        return sum(self.parts.values())

    @property
    def steady_ms(self) -> float | None:
        return self.result.mean


def break_even(start: Start, eager: Start) -> int | None:
    """Requests after which this start has paid for itself against no compile (0: from the first); None: never
    (it is no faster per request, and starts later, or it never answered)."""
    if start.steady_ms is None or eager.steady_ms is None or not start.processes:
        return None
    return _pays(start.seconds - eager.seconds, (eager.steady_ms - start.steady_ms) / 1e3)


def break_even_ends(start: Start, eager: Start, view: View) -> tuple[int | None, int | None] | None:
    """break_even at each end of the start's steady speed-up over no compile (its 95% interval), its first call (which
    holds its compile) as much shorter or longer as one compile moves from another (View.compile_drift): the fewest
    requests and the most (None: never at that end); None without an interval. A count to the request beside a
    speed-up known only within its interval, or a compile measured once, would read surer than it is."""
    if start.steady_ms is None or eager.steady_ms is None or not start.processes:
        return None
    s = view.speedup(eager.result, start.result)
    if s is None or s.low is None or s.high is None:
        return None
    extra_s, e = start.seconds - eager.seconds, eager.steady_ms
    shorter, longer = _compile_moves(start, view.compile_drift.value)
    return _pays(extra_s - shorter, (e - e / s.high) / 1e3), _pays(extra_s + longer, (e - e / s.low) / 1e3)


def _compile_moves(start: Start, spread: float) -> tuple[float, float]:
    """The seconds a compiled start's first call (which holds its compile) may be shorter and longer in another run:
    as far as one compile of a case moves from another (`spread`: View.compile_drift); none for no compile. An
    engine's preparation (its export and build, or reading them from its cache) is its start's load, and moves as a
    compile does: an ExecuTorch cold start of 6.91 s, 6.89 of them the export, read "[6.91-6.92]"."""
    variant = start.result.case.variant
    if not variant.compiled:
        return 0.0, 0.0
    moving = start.parts.get("first call", 0.0) + (start.parts.get("load", 0.0) if variant.engine else 0.0)
    shortest, longest = stats.moved(moving, spread)
    return moving - shortest, longest - moving


def _pays(extra_s: float, saving_s: float) -> int | None:
    """Requests until `extra_s` more seconds to start are repaid at `saving_s` per request (0: from the first)."""
    if extra_s <= 0 and saving_s >= 0:
        return 0
    if saving_s <= 0:
        return None
    return math.ceil(round(extra_s / saving_s, 6))


def seconds_said(start: Start, spread: float) -> str:
    """Seconds until the first answer; for a compiled start, in brackets the same with its first call as far shorter
    or longer as one compile moves from another, as its pay-off's range moves it: '14.15 [11.36-17.63]'."""
    shorter, longer = _compile_moves(start, spread)
    point, low, high = (f"{x:.2f}" for x in (start.seconds, start.seconds - shorter, start.seconds + longer))
    return point if low == high else f"{point} [{low}-{high}]"  # a first call too short to move what is said


def serving_s(start: Start, requests: int) -> float | None:
    """Seconds to start and then serve `requests` one after another."""
    return None if start.steady_ms is None else start.seconds + requests * start.steady_ms / 1e3


def serving_said(start: Start, requests: int, view: View) -> str:
    """serving_s, and in brackets the same at the ends of the steady latency's 95% interval with the compile as
    far shorter or longer as one moves from another: '510.4 [495.2-521.6]'."""
    point = serving_s(start, requests)
    e = start.result.stats
    if point is None or e.ci95_low is None or e.ci95_high is None:
        return num(point, 1)
    shorter, longer = _compile_moves(start, view.compile_drift.value)
    low = start.seconds - shorter + requests * e.ci95_low / 1e3
    return f"{point:.1f} [{low:.1f}-{start.seconds + longer + requests * e.ci95_high / 1e3:.1f}]"


def _starts_of(r: Result) -> list[Start]:
    """The starts a result's repeats recorded (recording.record_start): one per compiler state they started from,
    or the package they loaded (from fresh processes only, where the package was also built by one)."""
    reps = [p for p in r.repeats if p.start]
    v = r.case.variant
    if v.ahead_of_time:
        reps = [p for p in reps if not p.aot_inductor.built] or reps
        states = {(f"{v.label}, package loaded", ""): reps} if reps else {}
    elif v.compiled:
        states = {}
        for p in reps:
            states.setdefault(p.compile_cache or "cold", []).append(p)
        states = {(f"{v.label}, {STARTS.get(state, state)}", state): mine for state, mine in states.items()}
    else:
        states = {(v.label, ""): reps} if reps else {}
    if not states and r.status in FAILED:  # it never answered: a row that says why
        return [Start(v.label, r, {}, 0)]
    return [Start(name, r, {part: statistics.median([p.start.parts[key] for p in mine if key in p.start.parts])
                            for part, key in PARTS if any(key in p.start.parts for p in mine)}, len(mine), state)
            for (name, state), mine in states.items()]


def first_start(r: Result) -> Start | None:
    """The first start a result recorded (a cold compile, or the package loaded), for `tune`'s table."""
    starts = _starts_of(r)
    return starts[0] if starts else None


@dataclass
class Model:
    """One model's starts on one hardware, torch, batch size and settings (the compile cache aside)."""

    hardware: str
    label: str
    batch_size: int
    torch: str
    eager: Start | None
    starts: list[Start]  # eager first, then in variant order; a state measured twice: the newest result's


def models(view: View) -> list[Model]:
    """Every model whose results hold a start other than no compile's."""
    out = []
    for rs in data.alike(view.latest, order=lambda r: (r.case.variant.order, r.created_at), compile_cache="cold"):
        starts: dict[str, Start] = {}
        # a start measured by two results (a mega-cache run's first repeat starts cold too): the newest of those
        # whose setting is that start's own (--compile-cache cold for a cold start) wins
        for r in sorted(rs, key=lambda r: (r.case.compile_cache == "cold", r.created_at)):
            for s in _starts_of(r):
                starts[s.name] = s
        eager = next((s for s in starts.values() if not s.result.case.variant.compiled), None)
        if not any(s.result.case.variant.compiled and s.processes for s in starts.values()):
            continue  # nothing but no compile (or results that recorded no start: before this view existed)
        first = rs[0]
        out.append(Model(data.hardware(first), data.model_label(rs, first.case.model), first.case.batch_size,
                         data.torch_version(first), eager,
                         sorted(starts.values(), key=lambda s: s.order)))
    return out


def _break_even_text(s: Start, eager: Start | None, view: View) -> str:
    """'780 [760-802]': the requests at the steady speed-up's estimate and at its interval's ends."""
    if eager is None or s is eager or not s.processes:
        return ""
    n, ends = break_even(s, eager), break_even_ends(s, eager, view)
    ranged = ends and n is not None and ends != (n, n)  # one that starts sooner pays from the first at both ends
    return ("never" if n is None else f"{n:,}") + (f" [{ends_said(ends)}]" if ranged else "")


def recommended(m: Model, view: View) -> tuple[Start | None, str]:
    """The fastest start among those whose steady speed-up over no compile is `faster` and that pay for their
    start within --requests even at the slow end of that speed-up's interval; else no compile. With the reason, in a
    few words, naming a start that pays off within them only at the interval's fast end."""
    requests = view.requests
    if m.eager is None:
        return None, "no eager result to weigh the starts against"
    paying, maybe = [], []
    for s in m.starts:
        if s is m.eager or s.result.status != "ok":
            continue
        speedup = view.speedup(m.eager.result, s.result)
        ends = break_even_ends(s, m.eager, view)
        if speedup is None or speedup.verdict != "faster" or ends is None or ends[0] is None or ends[0] > requests:
            continue
        (paying if ends[1] is not None and ends[1] <= requests else maybe).append((s, ends))
    undecided = "".join(f"; {s.name} pays off after {ends_said(ends)} requests at the ends of its speed-up's "
                        f"interval, {requests:,} between them: more repeats may tell" for s, ends in maybe)
    if not paying:
        return m.eager, (f"no start that is faster per request (beyond {view.min_effect:.0%}) pays for itself within "
                         f"{requests:,} requests{undecided}")
    best = min((s for s, _ in paying), key=lambda s: (s.seconds, s.steady_ms))
    return best, (f"the fastest start of the {len(paying)} that pay for themselves within {requests:,} requests"
                  f"{undecided}")


def start_tables(view: View) -> list[Table]:
    """Per model: each start's seconds until the first answer and their parts, its steady latency with the 95%
    interval between processes, the requests it takes to pay for its start, and the time to serve --requests."""
    requests, out = view.requests, []
    for m in models(view):
        pick, _ = recommended(m, view)
        columns = [
            ("start", lambda s: s.name + (" (recommended)" if s is pick else "")),
            ("until the first answer s", lambda s: seconds_said(s, view.compile_drift.value) if s.processes else ""),
            ("of which build / load / first call s", lambda s: " / ".join(
                f"{s.parts[k]:.2f}" if k in s.parts else "-" for k, _ in PARTS) if s.processes else ""),
            ("processes", lambda s: str(s.processes)),
            ("steady ms", lambda s: _steady(s.result)),
            ("95% CI ms", lambda s: _interval(s.result)),
            ("pays off after (requests)", lambda s: _break_even_text(s, m.eager, view)),
            (f"{requests:,} requests s", lambda s: serving_said(s, requests, view)),
        ]
        builds = [f"- {s.name}: the package was built once, in {a.export_s:.1f} s of export and {a.package_s:.1f} s "
                  f"of packaging ({a.package_bytes / 1e6:.1f} MB)"
                  for s in m.starts if (a := s.result.aot_inductor).package_s is not None]
        megas = [_mega_note(s) for s in m.starts if s.name.endswith(STARTS["mega"]) and s.result.mega_cache.bytes]
        out.append(table(title_of(m), columns, m.starts, [*builds, *megas]))
    return out


def _mega_note(s: Start) -> str:
    """The artifacts' size, the graphs they missed, and what the first call still compiled after loading them
    (dynamo's compile timer: on a CPU inductor builds its C++ kernels again)."""
    mega = s.result.mega_cache
    note = f"- {s.name}: {mega.bytes / 1e6:.1f} MB of artifacts"
    if mega.missed:
        note += f"; {mega.missed} graph(s) inductor's cache did not hold were compiled anyway"
    if mega.compile_s is not None:
        note += f"; after loading them the first call still compiled for {mega.compile_s:.1f} s"
        if s.result.cold_compile_s is not None:
            note += f" (the cold compile: {s.result.cold_compile_s:.1f} s)"
    return note


def _steady(r: Result) -> str:
    if r.status == "ok":
        return f"{r.stats.mean:.3f}"
    return r.status + (f": {r.message}" if r.message else "")


def _interval(r: Result) -> str:
    s = r.stats
    return f"{s.ci95_low:.3f}-{s.ci95_high:.3f}" if r.status == "ok" and s.ci95_low is not None else ""


def _steady_said(r: Result) -> str:
    """The steady latency with its interval in brackets, where no column beside it holds the interval."""
    return _steady(r) + (f" [{i}]" if (i := _interval(r)) else "")


NOTE = ("Until the first answer: what a new process waits, measured in one: the model's build (an AOTInductor "
        "package holds its weights and skips it), loading the mega-cache's artifacts or the package (another "
        "engine: preparing it), and the first call, which holds any compile. A cold start is the first repeat's; the "
        "others are medians over the repeats that started so (processes); a compiled start has in brackets the same "
        "with its first call (an engine: and its preparation) as far shorter or longer as one compile moves from "
        "another. Pays off after: the requests, served one after another, after "
        "which the start plus the steady latency has cost less than no compile's, and in brackets the same at each "
        "end of the steady speed-up's 95% interval, {spread}; never: it is no faster per request. The recommended "
        "start is the fastest of those whose steady speed-up is `faster` and that pay off within the requests given "
        "(--requests) at both ends. N requests s: the start and then N requests at the steady latency, and in "
        "brackets the same at the ends of its 95% interval, the compile as far shorter or longer.")


def recommendation_rows(view: View) -> Table | None:
    """The start-up recommendation per model, for the Recommendation section."""
    requests = view.requests
    picks = [(m, *recommended(m, view)) for m in models(view)]
    if not picks:
        return None
    columns = [("hardware", lambda x: x[0].hardware), ("torch", lambda x: f"torch {x[0].torch}"),
               ("batch", lambda x: str(x[0].batch_size)), ("Task/Model", lambda x: x[0].label),
               ("start recommended", lambda x: x[1].name if x[1] else ""),
               ("until the first answer s", lambda x: seconds_said(x[1], view.compile_drift.value) if x[1] else ""),
               ("steady ms", lambda x: _steady_said(x[1].result) if x[1] else ""),
               (f"{requests:,} requests s", lambda x: serving_said(x[1], requests, view) if x[1] else ""),
               ("why", lambda x: x[2])]
    return table(f"Start-up within {requests:,} requests", columns, picks)


def sections(view: View, charts: list) -> list:
    tables = start_tables(view)
    items: list = [NOTE.format(spread=spread_said(view.compile_drift, "the first call"))] if tables else []
    for t in tables:
        items.append(t)
        items += [c for c in charts if c.section == ("start", t.title)]
    return items


def title_of(m: Model) -> str:
    return f"Start-up: {m.label}, {m.hardware}, batch {m.batch_size}, torch {m.torch}"


def charts(view: View, out_dir: str, taken: set[str]) -> list[Chart]:
    """Per model: stacked bars, one per way of starting, the seconds of its build, load and first call (with any
    compile), each labelled with the steady latency it then gives (or why it never answered)."""
    out = []
    spread = view.compile_drift.value  # a compiled start's label carries its range, as its table's cell
    for m in models(view):
        title = title_of(m)
        widths = {part: [s.parts.get(part, 0.0) for s in m.starts] for part, _ in PARTS}
        notes = [(f"  {seconds_said(s, spread)} s; "
                  + (f"{_steady_said(s.result)} ms per call after" if s.steady_ms is not None else s.result.status)
                  if s.processes else f"  {s.result.status}", not s.processes) for s in m.starts]
        stem = drawing.stem(out_dir, f"start-{m.label}-{m.hardware}-b{m.batch_size}-{m.torch}", taken)
        out.append(drawing.stacked(("start", title), title, [s.name for s in m.starts], widths, stem,
                                   "seconds until the first answer in a new process (build, load, first call with "
                                   "any compile)", notes))
    return out
