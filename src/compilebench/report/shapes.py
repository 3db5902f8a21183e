"""The shapes view (`compilebench shapes`): per model that served a sequence of input shapes, each setting (no
compile, automatic dynamic shapes, dynamic=True or False, mark_dynamic, padding to buckets) with what it compiled
on each shape's first call and why, whether it settled (its second pass compiled nothing), its steady latency per
shape against no compile's, and the time it takes to serve --requests N of the --mix, compiles included, with the
requests after which it has caught up with no compile. Every interval is between worker processes: a process's
time for N requests is built from its own first calls and steady means."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from compilebench.core import speedups, stats, traffic
from compilebench.core.result import Result
from compilebench.core.served import ShapeSummary
from compilebench.core.speedups import Speedup
from compilebench.core.variant import Variant
from compilebench.core.vocab import MEASURED, Verdict
from compilebench.report import cells, data, drawing
from compilebench.report.cells import Table, table
from compilebench.report.drawing import Chart
from compilebench.report.shape_starts import shapes_table

REASON_CHARS = 140


def setting_name(v: Variant) -> str:
    """A setting in the words of torch.compile's docs: 'automatic dynamic', 'dynamic=False', 'mark_dynamic'."""
    if not v.compiled:
        return "no compile"
    if v.pad_to:
        name = f"pad to {'/'.join(map(str, v.pad_to))} (dynamic=False)"
    elif v.mark_dynamic:
        name = "mark_dynamic"
    else:
        name = {None: "automatic dynamic", True: "dynamic=True", False: "dynamic=False"}[v.dynamic]
    extras = ([v.mode] if v.compile_mode else []) + v.compile_words() + (["LoRA hot-swap"] if v.lora_hotswap else [])
    return name + (f", {', '.join(extras)}" if extras else "")


@dataclass
class Setting:
    """One setting's result, with the costs of each process that served every shape (traffic.Served)."""

    result: Result
    processes: list[traffic.Served]

    @property
    def name(self) -> str:
        return setting_name(self.result.case.variant)

    @property
    def usable(self) -> bool:
        return self.result.status == "ok" and bool(self.processes)

    @property
    def settles(self) -> bool:
        return not self.result.shapes.second_compiles

    def median(self) -> traffic.Served:
        """First calls: the median over processes; steady: the estimate between them (as a case's mean)."""
        per = self.result.shapes.per_shape
        return traffic.Served({t: statistics.median(p.first_s[t] for p in self.processes) for t in per},
                              {t: per[t].steady.mean for t in per})

    def totals(self, mix: dict[str, float], n: int) -> list[float]:
        return [p.total_s(mix, n) for p in self.processes]


def _processes(r: Result) -> list[traffic.Served]:
    out = []
    for rep in r.repeats:
        if rep.status in MEASURED and rep.shapes:
            per = rep.shapes.per_shape
            out.append(traffic.Served({t: p.first_call_s for t, p in per.items()},
                                      {t: p.steady_ms for t, p in per.items()}))
    return out


@dataclass
class Model:
    """One model's settings over one sequence of shapes, on one hardware, torch and case settings."""

    hardware: str
    torch: str
    label: str
    shapes: list[traffic.Shape]
    eager: Setting | None
    settings: list[Setting]  # eager first, then the compiled settings in the order measured
    mix: dict[str, float]

    @property
    def title(self) -> str:
        return f"Shapes: {self.label}, {self.hardware}, torch {self.torch}"


def models(view) -> list[Model]:
    """Every model that served shapes, grouped as a table: results that differ only by their setting."""
    out = []
    for rs in data.alike(view.served):
        newest = data.latest(rs, key=lambda r: r.case.variant)  # the newest result of each setting
        ordered = sorted((Setting(r, _processes(r)) for r in newest), key=lambda s: s.result.case.variant.compiled)
        shapes = [traffic.Shape.parse(t) for t in rs[0].case.shapes]
        eager = next((s for s in ordered if not s.result.case.variant.compiled), None)
        out.append(Model(data.hardware(rs[0]), data.torch_version(rs[0]), data.model_label(rs, rs[0].case.model),
                         shapes, eager, ordered, view.mix_for(tuple(shapes))))
    return out


def serve_time(s: Setting, m: Model, n: int) -> tuple[float, float | None, float | None] | None:
    """Seconds to serve n requests of the mix, first calls included: the estimate between processes."""
    return stats.estimate(s.totals(m.mix, n)) if s.processes else None


def versus(view, m: Model, s: Setting, n: int) -> Speedup | None:
    """No compile's time for n requests over this setting's, with its interval and verdict."""
    if m.eager is None or s is m.eager or not (s.usable and m.eager.usable):
        return None
    return speedups.of_means(m.eager.totals(m.mix, n), s.totals(m.mix, n), view.min_effect,
                               drift=view.drift_between(m.eager.result, s.result))


def shape_versus(view, m: Model, s: Setting, token: str) -> Speedup | None:
    """No compile's steady latency over this setting's, on one shape."""
    if m.eager is None or s is m.eager or not (s.usable and m.eager.usable):
        return None
    return speedups.of_means([p.steady_ms[token] for p in m.eager.processes],
                               [p.steady_ms[token] for p in s.processes], view.min_effect,
                               drift=view.drift_between(m.eager.result, s.result))


def break_even(m: Model, s: Setting, horizon: int) -> int | None:
    if m.eager is None or not (s.usable and m.eager.usable):
        return None
    return traffic.break_even(s.median(), m.eager.median(), m.mix, horizon)


def catch_up(m: Model, s: Setting, horizon: int) -> tuple[int | None, int | None, int | None, int] | None:
    """break_even, and the 95% interval between the setting's processes of each one's own (each compiled cold: a count
    from medians alone read surer), against no compile's process of the same repeat where both have as many, else its
    median; with how many never catch up (then no interval). None for no compile, or a setting that did not serve."""
    if s is m.eager or m.eager is None or not s.usable:
        return None
    b = break_even(m, s, horizon)
    if b is None:
        return None, None, None, 0
    theirs = m.eager.processes if len(m.eager.processes) == len(s.processes) else [m.eager.median()] * len(s.processes)
    per = [traffic.break_even(p, e, m.mix, horizon) for p, e in zip(s.processes, theirs)]
    never = sum(x is None for x in per)
    if never or len(per) < 2 or min(per) <= 0:
        return b, None, None, never
    _, low, high = stats.estimate(per)
    return b, math.floor(low), math.ceil(high), 0


def catch_up_said(m: Model, s: Setting, horizon: int) -> str:
    """catch_up in words: '62,092 [48,310-79,840]', '62,092 [1 of 3 processes never]', 'never'; '' for none."""
    if (found := catch_up(m, s, horizon)) is None or found[0] is None:
        return "" if found is None else "never"
    b, low, high, never = found
    return f"{b:,}" + (f" [{never} of {len(s.processes)} processes never]" if never else
                       f" [{low:,}-{high:,}]" if low is not None else "")


def best(view, m: Model) -> tuple[Setting | None, Speedup | None, str]:
    """The setting that serves --requests of the mix soonest among those that are `faster` than no compile over
    them, settle and are correct; else no compile. With the reason."""
    n = view.requests
    faster = [(s, sp) for s in m.settings if s is not m.eager and s.settles and s.usable
              and (sp := versus(view, m, s, n)) is not None and sp.verdict == Verdict.faster]
    if not faster:
        why = f"no setting serves {n:,} requests of this mix faster than no compile (beyond {view.min_effect:.0%})"
        return m.eager, None, why + " and settles"
    s, sp = min(faster, key=lambda x: statistics.median(x[0].totals(m.mix, n)))
    return s, sp, f"serves {n:,} requests of this mix soonest, {sp.value:.2f}x no compile's time " \
                  f"({sp.low:.2f}-{sp.high:.2f}, {sp.verdict})"


def _mix_words(m: Model) -> str:
    if len(set(round(w, 9) for w in m.mix.values())) == 1:
        return "uniform over " + ", ".join(s.words for s in m.shapes)
    return ", ".join(f"{s.words} {m.mix[s.token]:.0%}" for s in m.shapes if m.mix[s.token] > 0)


def _status(s: Setting) -> str:
    return "" if s.result.status == "ok" else f"{s.result.status}: {s.result.message or ''}".strip()


def summary_table(view, m: Model) -> Table:
    n = view.requests
    columns = [
        ("setting", lambda s: s.name),
        ("graphs", lambda s: _total(s, "compiles")),
        ("recompiles", lambda s: _total(s, "recompiles")),
        ("compile s", lambda s: f"{s.result.shapes.compile_s:.1f}" if s.result.shapes and
         s.result.case.variant.compiled else ""),
        ("settles", lambda s: "" if not s.result.shapes else "yes" if s.settles else
         f"no: {s.result.shapes.second_compiles} compile(s) in the second pass"),
        ("recompile limit", lambda s: ("reached" if s.result.shapes.limit_hits else "not reached")
         if s.result.shapes and s.result.case.variant.compiled else ""),
        ("peak memory MiB", lambda s: f"{s.result.peak_mem_bytes / 2**20:,.0f}" if s.result.peak_mem_bytes else ""),
        (f"{n:,} requests s", lambda s: f"{e[0]:.2f}" if (e := serve_time(s, m, n)) else _status(s)),
        ("95% CI s", lambda s: "" if (e := serve_time(s, m, n)) is None or e[1] is None else
         f"{e[1]:.2f}-{e[2]:.2f}"),
        ("vs no compile", lambda s: "" if (sp := versus(view, m, s, n)) is None else
         f"{sp.value:.2f}x ({sp.low:.2f}-{sp.high:.2f}, {sp.verdict})" if sp.low is not None else f"{sp.value:.2f}x (inconclusive)"),
        ("catches up after (requests)", lambda s: catch_up_said(m, s, n)),
    ]
    pick, sp, why = best(view, m)
    notes = [f"Mix: {_mix_words(m)}; {n:,} requests (--mix, --requests). Best for this mix: "
             f"**{pick.name if pick else 'none measured'}**: {why}.",
             "catches up after: the requests of the mix after which a setting has served them all sooner than no "
             "compile, from the processes' medians; in brackets the 95% interval between its processes of each "
             "one's own (each compiled cold), against no compile's process of the same repeat."]
    return table(m.title, columns, m.settings, notes)


def setting_table(view, m: Model, s: Setting) -> Table:
    """One setting, a row per shape in the order served."""
    per = s.result.shapes.per_shape

    def steady(t: str) -> str:
        e = per[t].steady
        return f"{e.mean:.3f}" + (f" ({e.ci95_low:.3f}-{e.ci95_high:.3f})" if e.ci95_low else "")

    def vs(t: str) -> str:
        sp = shape_versus(view, m, s, t)
        return "" if sp is None else f"{sp.value:.2f}x ({', '.join(cells.verdict_words(sp))})"

    columns = [
        ("shape", lambda t: traffic.Shape.parse(t).words),
        ("served as", lambda t: traffic.Shape.parse(per[t].served_as).words if per[t].served_as else ""),
        ("first call s", lambda t: f"{per[t].first_call_s:.3f}"),
        ("graphs compiled", lambda t: str(per[t].compiles)),
        ("compile s", lambda t: f"{per[t].compile_s:.2f}" if per[t].compiles else ""),
        ("why it recompiled (dynamo)", lambda t: "; ".join(per[t].recompile_reasons)[:REASON_CHARS]),
        ("steady ms (95% CI)", steady),
        ("vs no compile", vs),
        ("second pass", lambda t: f"{per[t].second_compiles} compile(s)" if per[t].second_compiles else "nothing compiled"),
        ("correct", lambda t: _correct(per[t])),
    ]
    if all(p.swap_s is not None for p in per.values()) and per:  # a pipeline's LoRA adapters, one swapped in a shape
        columns.insert(2, ("LoRA swap s", lambda t: f"{per[t].swap_s:.3f}"))
    return table(f"{s.name}: {m.label}, {m.hardware}", columns, [t for t in per] if per else [])


def _correct(p: ShapeSummary) -> str:
    if p.problems:
        return "no: " + "; ".join(p.problems)
    if p.max_rel_err is None:
        return ""
    agreement = ", ".join(f"{k} {v:.0%}" for k, v in p.agreement.items())
    return f"yes (max rel err {p.max_rel_err:.1e}{', ' + agreement if agreement else ''})"


def _total(s: Setting, name: str) -> str:  # a compiled setting's total over its shapes; nothing for no compile
    return str(getattr(s.result.shapes, name)) if s.result.case.variant.compiled and s.result.shapes else ""


NOTE = ("Each setting served the shapes in one process per repeat, in the order listed: each shape's first call "
        "timed alone (graphs compiled, with dynamo's reason for each recompile), then its steady calls; then a "
        "second pass, one call of each shape, in which a setting that settled compiles nothing. The time to serve N "
        "requests of the mix adds each shape's first call (in the order the mix first meets them; a first call "
        "was measured in the order served) and steady latency, per process; its interval is between processes. "
        "Catches up after: the requests after which the setting has served everything sooner than no compile, and "
        "stays ahead. Padding serves each input as the smallest bucket that holds it and slices its outputs back: "
        "the padded work is in its latency.")


def tables(view, charts: list = ()) -> list:
    """Per model: its summary, its charts (those given), then a table per setting that served the shapes."""
    items: list = []
    for m in models(view):
        starts = shapes_table(m)
        items += [summary_table(view, m), *([starts] if starts else []),
                  *[c for c in charts if c.section == ("shapes", m.title)]]
        items += [setting_table(view, m, s) for s in m.settings if s.result.shapes]
    return items


def sections(view, charts: list) -> list:
    items = tables(view, charts)
    return ([NOTE] + items) if items else []


def charts(view, out_dir: str, taken: set[str]) -> list[Chart]:
    """Per model that served shapes: each setting's steady latency by shape, and its time to serve the mix against
    the requests served, compiles included."""
    out = []
    for m in models(view):
        out.append(_latency_chart(m, drawing.stem(out_dir, f"shapes-latency-{m.label}-{m.hardware}-{m.torch}", taken)))
        out.append(_serving_chart(m, view.requests,
                                  drawing.stem(out_dir, f"shapes-serving-{m.label}-{m.hardware}-{m.torch}", taken)))
    return [c for c in out if c is not None]


def _latency_chart(m: Model, stem: str) -> Chart | None:
    """Steady milliseconds per call of each shape (in the order served), a line per setting, with the 95% interval
    between processes as error bars."""
    usable = [s for s in m.settings if s.usable]
    if not usable:
        return None
    title = f"Steady latency by shape: {m.label}, {m.hardware}, torch {m.torch}"

    def draw(ax):
        x = list(range(len(m.shapes)))
        for k, s in enumerate(usable):
            per = s.result.shapes.per_shape
            est = [per[sh.token].steady for sh in m.shapes]
            err = [[e.mean - (e.ci95_low or e.mean) for e in est], [(e.ci95_high or e.mean) - e.mean for e in est]]
            line = ax.errorbar(x, [e.mean for e in est], yerr=err, marker="o", capsize=2, label=s.name)
            line.lines[0].set_gid(f"line-{k}")
        ax.set_xticks(x, [sh.words for sh in m.shapes], fontsize=7)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("shape, in the order served")
        ax.set_ylabel("steady ms per call (95% CI)")
        return [s.name for s in usable]

    return drawing.lines(("shapes", m.title), title, stem, draw)


def _serving_chart(m: Model, requests: int, stem: str) -> Chart | None:
    """Cumulative seconds against requests served of the mix, a line per setting (median first calls, steady
    estimates): each compile is a step where the mix first meets its shape. Log-log: the steps at the start and the
    slopes at the end both show."""
    usable = [s for s in m.settings if s.usable]
    if not usable:
        return None
    title = f"Time to serve the mix: {m.label}, {m.hardware}, torch {m.torch}"
    order = traffic.sequence(m.mix, requests)
    # a point at each first request of a shape (its compile step) and on either side, and 400 spread on the log
    # axis: a million requests need not be a million points
    firsts = {i for t in set(order) for i in (order.index(t) - 1, order.index(t))}
    points = sorted({i for i in firsts if i >= 0} | {round(requests ** (k / 400)) - 1 for k in range(401)})

    def draw(ax):
        for k, s in enumerate(usable):
            seconds = s.median().cumulative(order)
            (line,) = ax.plot([i + 1 for i in points], [seconds[i] for i in points], label=s.name,
                              drawstyle="steps-post")
            line.set_gid(f"line-{k}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("requests served (log scale)")
        ax.set_ylabel("seconds since the first request, compiles included (log scale)")
        return [s.name for s in usable]

    return drawing.lines(("shapes", m.title), title, stem, draw)
