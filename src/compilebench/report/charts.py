"""Charts with matplotlib, each written as PNG and SVG: per (hardware, batch) the duration of every variant and
the % improvement per model; per hardware the improvement at each batch size; per batch size the improvement
on each hardware when several are present; per text-generation table the first generate() calls (the compile
curve).

Every chart says what it shows in its title (hardware, torch version, batch size), labels its axes with units,
prints the value on each bar (or the status where a model has no number) and has a legend. Every bar carries
its 95% interval as an error bar, the same interval the tables print (the View's); an improvement whose
verdict is not faster, slower or same is hatched and says "inconclusive". A duration axis never goes below
zero. Each bar carries an SVG id `bar-<model index>-<series index>` so a test (or a reader of the SVG) can count
them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from compilebench.core import speedups, traffic
from compilebench.core.result import Result
from compilebench.diagnostics import profiling
from compilebench.report import data, shapes, start, why
from compilebench.report.cells import cell
from compilebench.report.data import Column
from compilebench.report.view import Group, View

IMPROVEMENT_AXIS = "% improvement over no compile: (eager - compiled) / eager x 100, with 95% CI"


@dataclass
class Chart:
    section: tuple  # where it belongs: a group's key, ("hardware", hw) or ("batch", batch)
    title: str
    png: str
    svg: str
    bars: list[tuple[str, str]] = field(default_factory=list)  # (model label, series) of each bar drawn
    inconclusive: list[tuple[str, str]] = field(default_factory=list)  # the bars drawn hatched
    xlim: tuple[float, float] | None = None  # the value axis as drawn


@dataclass
class _Series:
    name: str
    values: list[float | None]
    errors: list[tuple[float, float] | None] | None = None  # (below, above) the value
    missing: list[str] | None = None  # what to print where a value is None: 'OOM', 'error', ...
    verdicts: list[str | None] | None = None  # improvement bars: inconclusive ones are hatched and say so


def _torches(columns: list[Column]) -> str:
    return ", ".join(f"torch {t}" for t in dict.fromkeys(c.torch for c in columns))


def _duration(g: Group) -> tuple[str, list[_Series], str]:
    series = []
    for c in g.columns:
        rs = [g.result(m, c) for m in g.models]
        values = [speedups.mean(r) for r in rs]
        errors = [_around(v, r.stats.ci95_low, r.stats.ci95_high) if v is not None else None
                  for v, r in zip(values, rs)]
        series.append(_Series(c.header, values, errors, [cell(r) for r in rs]))
    title = f"Inference duration: {g.hardware}, {_torches(g.columns)}, batch size {g.batch_size}"
    return title, series, "mean time per batch (ms), with 95% CI between processes"


def _around(value: float, low: float | None, high: float | None) -> tuple[float, float] | None:
    """An interval as (below, above) a bar's value; none where one process gave no interval."""
    return None if low is None or high is None else (value - low, high - value)


def _improvement(g: Group) -> tuple[str, list[_Series], str]:
    _, series = _improvement_by([(g, c) for c in g.compiled_columns], lambda g, c: c.header)
    title = f"Improvement from torch.compile: {g.hardware}, {_torches(g.columns)}, batch size {g.batch_size}"
    return title, series, IMPROVEMENT_AXIS


def _why_missing(eager: Result | None, compiled: Result | None) -> str:
    """What an improvement bar shows instead of a number: the failure that prevented it."""
    for r in (compiled, eager):
        if r is not None and r.status != "ok":
            return cell(r)
    return ""  # not measured: nothing to say


def _improvement_by(pairs: list[tuple[Group, Column]], series_name) -> tuple[list[str], list[_Series]]:
    """Improvement per model with its interval and verdict, one series per (group, compiled column): a batch
    size, or a hardware."""
    results = [r for g, _ in pairs for r in g.results]
    models = data.model_order(results)
    series = []
    for g, c in pairs:
        both = [(g.result(m, c.eager), g.result(m, c)) for m in models]
        speedups = [g.speedup(m, c) for m in models]
        values = [s.improvement if s else None for s in speedups]
        errors = [_around(s.improvement, *s.improvement_interval) if s else None for s in speedups]
        series.append(_Series(series_name(g, c), values, errors, [_why_missing(e, r) for e, r in both],
                              [s.verdict if s else None for s in speedups]))
    return [data.model_label(results, m) for m in models], series


def render(view: View, out_dir: str) -> list[Chart]:
    """Draw every chart the results allow into out_dir; returns them in reading order."""
    import matplotlib

    matplotlib.use("Agg", force=False)  # no display needed; a no-op where the user chose another backend
    os.makedirs(out_dir, exist_ok=True)
    charts: list[Chart] = []
    names: set[str] = set()
    groups = view.groups

    def draw(section, title, labels, series, xlabel, stem):
        if not any(v is not None for s in series for v in s.values):
            return  # nothing measured ok: the tables say why
        stem = _unique(_slug(stem), names)
        png, svg = os.path.join(out_dir, stem + ".png"), os.path.join(out_dir, stem + ".svg")
        bars, inconclusive, xlim = _draw(title, labels, series, xlabel, png, svg)
        charts.append(Chart(section, title, png, svg, bars, inconclusive, xlim))

    for g in groups:
        if g.generation:
            curve = _compile_curve(g, os.path.join(out_dir, _unique(_slug(f"first-calls-{g.title}"), names)))
            if curve:
                charts.append(curve)
            continue
        labels = [g.label(m) for m in g.models]
        title, series, xlabel = _duration(g)
        draw(g.key, title, labels, series, xlabel, f"duration-{g.hardware}-b{g.batch_size}")
        if g.compiled_columns:
            title, series, xlabel = _improvement(g)
            draw(g.key, title, labels, series, xlabel,
                 f"improvement-{g.hardware}-b{g.batch_size}")
    groups = [g for g in groups if not g.generation]

    # Per hardware: the improvement at each batch size, one chart per compiled column.
    for hw in dict.fromkeys(g.hardware for g in groups):
        mine = [g for g in groups if g.hardware == hw]
        for c in dict.fromkeys(c for g in mine for c in g.compiled_columns):
            having = [g for g in mine if c in g.columns]
            if len(having) < 2:
                continue
            labels, series = _improvement_by([(g, c) for g in having], lambda g, c: f"batch size {g.batch_size}")
            title = f"Improvement by batch size: {hw}, {c.header}"
            draw(("hardware", hw), title, labels, series, IMPROVEMENT_AXIS, f"batch-sizes-{hw}-{c.header}")

    # Per batch size: the improvement on each hardware, for each compiled variant measured on several.
    for batch in sorted({g.batch_size for g in groups}):
        mine = [g for g in groups if g.batch_size == batch]
        kinds = dict.fromkeys((c.variant, c.settings) for g in mine for c in g.compiled_columns)
        for variant, setting in kinds:
            having = [(g, c) for g in mine for c in g.compiled_columns if (c.variant, c.settings) == (variant, setting)]
            if len({g.hardware for g, _ in having}) < 2:
                continue
            labels, series = _improvement_by(having, lambda g, c: f"{g.hardware}, torch {c.torch}")
            title = data.with_settings(f"Improvement by hardware: batch size {batch}, {variant.label}", setting)
            draw(("batch", batch), title, labels, series, IMPROVEMENT_AXIS, f"hardware-b{batch}-{variant.label}")

    return charts + _stacked_charts(view, out_dir, names) + _shape_charts(view, out_dir, names)


def _stacked_charts(view: View, out_dir: str, names: set[str]) -> list[Chart]:
    """Where each profiled call's time goes (--profile), and how long each way of starting waits for its first
    answer."""
    charts = []
    for hw, label, rows in why.profiled(view):
        stem = os.path.join(out_dir, _unique(_slug(f"time-split-{label}-{hw}"), names))
        charts.append(_time_split(why.title(label, hw), rows, stem))
    for m in start.models(view):
        stem = os.path.join(out_dir, _unique(_slug(f"start-{m.label}-{m.hardware}-b{m.batch_size}-{m.torch}"), names))
        charts.append(_starts(m, stem))
    return charts


def _shape_charts(view: View, out_dir: str, names: set[str]) -> list[Chart]:
    """Per model that served shapes: each setting's steady latency by shape, and its time to serve the mix against
    the requests served, compiles included."""
    charts = []
    for m in shapes.models(view):
        stem = os.path.join(out_dir, _unique(_slug(f"shapes-latency-{m.label}-{m.hardware}-{m.torch}"), names))
        charts.append(_shape_latency(m, stem))
        stem = os.path.join(out_dir, _unique(_slug(f"shapes-serving-{m.label}-{m.hardware}-{m.torch}"), names))
        charts.append(_serving_curve(m, view.requests, stem))
    return [c for c in charts if c is not None]


def _lines(section: tuple, title: str, stem: str, draw) -> Chart:
    """A line chart: `draw(ax)` plots it and returns its lines' names."""
    import matplotlib
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.subplots()
    drawn = draw(ax)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    png, svg = stem + ".png", stem + ".svg"
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "compilebench"}):
        fig.savefig(png, dpi=110)
        fig.savefig(svg, metadata={"Date": None})
    return Chart(section, title, png, svg, [(name, "line") for name in drawn])


def _shape_latency(m, stem: str) -> Chart | None:
    """Steady milliseconds per call of each shape (in the order served), a line per setting, with the 95% interval
    between processes as error bars."""
    usable = [s for s in m.settings if s.usable]
    if not usable:
        return None
    title = f"Steady latency by shape: {m.label}, {m.hardware}, torch {m.torch}"

    def draw(ax):
        x = list(range(len(m.shapes)))
        for k, s in enumerate(usable):
            per = s.result.shapes["per_shape"]
            est = [per[sh.token]["steady"] for sh in m.shapes]
            err = [[e["mean"] - (e["ci95_low"] or e["mean"]) for e in est], [(e["ci95_high"] or e["mean"]) - e["mean"] for e in est]]
            line = ax.errorbar(x, [e["mean"] for e in est], yerr=err, marker="o", capsize=2, label=s.name)
            line.lines[0].set_gid(f"line-{k}")
        ax.set_xticks(x, [sh.words for sh in m.shapes], fontsize=7)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("shape, in the order served")
        ax.set_ylabel("steady ms per call (95% CI)")
        return [s.name for s in usable]

    return _lines(("shapes", m.title), title, stem, draw)


def _serving_curve(m, requests: int, stem: str) -> Chart | None:
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

    return _lines(("shapes", m.title), title, stem, draw)


def _fit_labels(fig, ax, texts) -> None:
    """Widen the x axis until every bar's label lies inside it: a label past a long whisker would otherwise run
    over the model names (or off the figure)."""
    for _ in range(3):  # widening changes the scale, and with it each label's width in data units
        fig.draw_without_rendering()
        lo, hi = ax.get_xlim()
        inverse = ax.transData.inverted()
        left, right = lo, hi
        for t in texts:
            (x0, _), (x1, _) = inverse.transform(t.get_window_extent())
            left, right = min(left, x0), max(right, x1)
        if (left, right) == (lo, hi):
            return
        pad = (right - left) * 0.01
        ax.set_xlim(left - pad if left < lo else lo, right + pad if right > hi else hi)


def _draw(title: str, labels: list[str], series: list[_Series], xlabel: str, png: str, svg: str):
    """Horizontal grouped bars: one row per model (first at the top), one bar per series."""
    import matplotlib
    from matplotlib.figure import Figure

    n, k = len(labels), len(series)
    height = 0.8 / k
    fig = Figure(figsize=(9, 1.5 + n * (0.2 + 0.17 * k)), layout="constrained")
    ax = fig.subplots()
    colors = matplotlib.colormaps["tab10"]
    drawn, hatched, texts = [], [], []
    span = max((abs(v) for s in series for v in s.values if v is not None), default=1.0) or 1.0
    for j, s in enumerate(series):
        for i, value in enumerate(s.values):
            y = i + (j - (k - 1) / 2) * height
            if value is None:
                why = s.missing[i] if s.missing else ""
                if why:
                    ax.text(0, y, f" {why}", va="center", ha="left", fontsize=7, color="#b00020")
                continue
            err = s.errors[i] if s.errors else None
            inconclusive = bool(s.verdicts) and s.verdicts[i] == "inconclusive"
            (bar,) = ax.barh(y, value, height, color=colors(j % 10), label=s.name if not any(
                d[1] == s.name for d in drawn) else None, hatch="////" if inconclusive else None,
                alpha=0.45 if inconclusive else 1.0, edgecolor="black" if inconclusive else None, linewidth=0.5,
                xerr=[[err[0]], [err[1]]] if err else None, error_kw={"elinewidth": 0.8, "capsize": 2})
            bar.set_gid(f"bar-{i}-{j}")
            drawn.append((labels[i], s.name))
            if inconclusive:
                hatched.append((labels[i], s.name))
            text = f"{value:.1f}%" if xlabel == IMPROVEMENT_AXIS else f"{value:.4g}"
            if s.verdicts and s.verdicts[i]:
                text += f" {s.verdicts[i]}"
            reach = (err[1] if value >= 0 else err[0]) if err else 0
            pad = span * 0.01 + reach
            texts.append(ax.text(value + (pad if value >= 0 else -pad), y, text, va="center",
                                 ha="left" if value >= 0 else "right", fontsize=7))
    ax.set_yticks(range(n), labels)
    ax.set_ylim(n - 0.5, -0.5)  # the first model at the top, as in the tables
    ax.axvline(0, color="black", linewidth=0.8)
    ax.margins(x=0.15)
    if xlabel != IMPROVEMENT_AXIS:  # a duration is never negative: neither is its axis
        ax.set_xlim(left=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Task/Model")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if drawn:
        fig.legend(fontsize=8, loc="outside lower center", ncols=min(k, 3))
    _fit_labels(fig, ax, texts)
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "compilebench"}):
        fig.savefig(png, dpi=110)
        fig.savefig(svg, metadata={"Date": None})
    return drawn, hatched, tuple(ax.get_xlim())


def _compile_curve(g: Group, stem: str) -> Chart | None:
    """Text generation: each of the first generate() calls of the first repeat, one point per call and a line
    per model and variant, on a log scale (the first call holds the compilation)."""
    lines = []
    for model in g.models:
        for c in g.columns:
            r = g.result(model, c)
            first = r.repeats[0].generation.get("first_calls") or [] if r and r.repeats else []
            if first:
                lines.append((f"{g.label(model)}, {c.header}", [f["total_ms"] / 1e3 for f in first]))
    if not lines:
        return None
    def draw(ax):
        for k, (name, seconds) in enumerate(lines):
            (line,) = ax.plot(range(1, len(seconds) + 1), seconds, marker="o", label=name)
            line.set_gid(f"line-{k}")
        ax.set_yscale("log")
        ax.set_xlabel("call (1 holds the compilation)")
        ax.set_ylabel("seconds per generate() call (log scale)")
        return [name for name, _ in lines]

    return _lines(g.key, f"First generate() calls: {g.title}", stem, draw)


def _time_split(title: str, rows: list[Result], stem: str) -> Chart:
    """Stacked bars, one per profiled case (batch and variant): its call's milliseconds in matmul/conv, in other
    kernels and outside them."""
    labels = [f"b{r.case.batch_size} {why.variant_label(r)}" for r in rows]
    widths = {share: [r.profile["shares_ms"][share] for r in rows] for share in profiling.SHARES}
    return _stacked(("why", title), title, labels, widths, stem,
                    "milliseconds per call in the profiled pass (profiling adds its own overhead)")


def _starts(m, stem: str) -> Chart:
    """Stacked bars, one per way of starting: the seconds of its build, load and first call (with any compile),
    each labelled with the steady latency it then gives (or why it never answered)."""
    title = start.title_of(m)
    widths = {part: [s.parts.get(part, 0.0) for s in m.starts] for part, _ in start.PARTS}
    ends = [s.seconds for s in m.starts]
    notes = [(f"  {end:.2f} s; " + (f"{s.steady_ms:.3f} ms per call after" if s.steady_ms is not None else s.result.status)
              if s.processes else f"  {s.result.status}", not s.processes) for s, end in zip(m.starts, ends)]
    return _stacked(("start", title), title, [s.name for s in m.starts], widths, stem,
                    "seconds until the first answer in a new process (build, load, first call with any compile)", notes)


def _stacked(section: tuple, title: str, labels: list[str], widths: dict[str, list[float]], stem: str, xlabel: str,
             notes: list[tuple[str, bool]] | None = None) -> Chart:
    """Horizontal stacked bars, one per label (first at the top), one segment per part (`widths[part][i]`);
    `notes`: a text after each bar, and whether to draw it as a problem."""
    import matplotlib
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 1.5 + 0.45 * len(labels)), layout="constrained")
    ax = fig.subplots()
    colors = matplotlib.colormaps["tab10"]
    left = [0.0] * len(labels)
    for j, (part, ws) in enumerate(widths.items()):
        for i, w in enumerate(ws):
            (bar,) = ax.barh(i, w, 0.6, left=left[i], color=colors(j), label=part if i == 0 else None)
            bar.set_gid(f"bar-{i}-{j}")
        left = [a + w for a, w in zip(left, ws)]
    for i, (text, problem) in enumerate(notes or []):
        ax.text(left[i], i, text, va="center", ha="left", fontsize=7, color="#b00020" if problem else None)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, max(left, default=0.0) * 1.6 or 1.0) if notes else ax.set_xlim(left=0)  # room for the notes
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=8, loc="outside lower center", ncols=3)
    png, svg = stem + ".png", stem + ".svg"
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "compilebench"}):
        fig.savefig(png, dpi=110)
        fig.savefig(svg, metadata={"Date": None})
    return Chart(section, title, png, svg, [(label, part) for label in labels for part in widths])


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "chart"


def _unique(stem: str, taken: set[str]) -> str:
    name, i = stem, 2
    while name in taken:
        name, i = f"{stem}-{i}", i + 1
    taken.add(name)
    return name
