"""The report's charts: per (hardware, batch) the duration of every variant and the % improvement per model; per
hardware the improvement at each batch size; per batch size the improvement on each hardware when several are
present; per text-generation table the first generate() calls (the compile curve); then each view's own (start-up,
shapes, where the time goes). Drawn by drawing.py.

Every chart says what it shows in its title (hardware, torch version, batch size), labels its axes with units,
prints the value on each bar (or the status where a model has no number) and has a legend. Every bar carries
its 95% interval as an error bar, the same interval the tables print (the View's); an improvement whose
verdict is not faster, slower or same is hatched and says "inconclusive". A duration axis never goes below
zero."""

from __future__ import annotations

import os

from compilebench.core import speedups, stats
from compilebench.core.result import Result
from compilebench.report import data, drawing, shapes, start, why
from compilebench.report.cells import cell
from compilebench.report.data import Column
from compilebench.report.drawing import Chart
from compilebench.report.view import Group, View

IMPROVEMENT_AXIS = "% improvement over no compile: (eager - compiled) / eager x 100, with 95% CI"


def render(view: View, out_dir: str) -> list[Chart]:
    """Draw every chart the results allow into out_dir; returns them in reading order."""
    import matplotlib

    matplotlib.use("Agg", force=False)  # no display needed; a no-op where the user chose another backend
    os.makedirs(out_dir, exist_ok=True)
    taken: set[str] = set()
    groups = [g for g in view.groups if not g.generation]
    return [*_group_charts(view, out_dir, taken), *_by_batch_size(groups, out_dir, taken),
            *_by_hardware(groups, out_dir, taken), *why.charts(view, out_dir, taken),
            *start.charts(view, out_dir, taken), *shapes.charts(view, out_dir, taken)]


def _bars(section, title, labels, series, xlabel, out_dir, name, taken) -> list[Chart]:
    """A bar chart, where anything was measured ok (else the tables say why)."""
    if not any(v is not None for s in series for v in s.values):
        return []
    return [drawing.bars(section, title, labels, series, xlabel, drawing.stem(out_dir, name, taken),
                         improvement=xlabel == IMPROVEMENT_AXIS)]


def _group_charts(view: View, out_dir: str, taken: set[str]) -> list[Chart]:
    """Each table's duration and improvement (a generation table's first calls)."""
    charts = []
    for g in view.groups:
        if g.generation:
            charts += filter(None, [_compile_curve(g, drawing.stem(out_dir, f"first-calls-{g.title}", taken))])
            continue
        labels = [g.label(m) for m in g.models]
        title, series, xlabel = _duration(g)
        charts += _bars(g.key, title, labels, series, xlabel, out_dir, f"duration-{g.hardware}-b{g.batch_size}", taken)
        if g.compiled_columns:
            title, series, xlabel = _improvement(g)
            charts += _bars(g.key, title, labels, series, xlabel, out_dir, f"improvement-{g.hardware}-b{g.batch_size}",
                            taken)
    return charts


def _by_batch_size(groups: list[Group], out_dir: str, taken: set[str]) -> list[Chart]:
    """Per hardware: the improvement at each batch size, one chart per compiled column."""
    charts = []
    for hw in dict.fromkeys(g.hardware for g in groups):
        mine = [g for g in groups if g.hardware == hw]
        for c in dict.fromkeys(c for g in mine for c in g.compiled_columns):
            having = [g for g in mine if c in g.columns]
            if len(having) < 2:
                continue
            labels, series = _improvement_by([(g, c) for g in having], lambda g, c: f"batch size {g.batch_size}")
            charts += _bars(("hardware", hw), f"Improvement by batch size: {hw}, {c.header}", labels, series,
                            IMPROVEMENT_AXIS, out_dir, f"batch-sizes-{hw}-{c.header}", taken)
    return charts


def _by_hardware(groups: list[Group], out_dir: str, taken: set[str]) -> list[Chart]:
    """Per batch size: the improvement on each hardware, for each compiled variant measured on several."""
    charts = []
    for batch in sorted({g.batch_size for g in groups}):
        mine = [g for g in groups if g.batch_size == batch]
        kinds = dict.fromkeys((c.variant, c.settings) for g in mine for c in g.compiled_columns)
        for variant, setting in kinds:
            having = [(g, c) for g in mine for c in g.compiled_columns if (c.variant, c.settings) == (variant, setting)]
            if len({g.hardware for g, _ in having}) < 2:
                continue
            labels, series = _improvement_by(having, lambda g, c: f"{g.hardware}, torch {c.torch}")
            title = data.with_settings(f"Improvement by hardware: batch size {batch}, {variant.label}", setting)
            charts += _bars(("batch", batch), title, labels, series, IMPROVEMENT_AXIS, out_dir,
                            f"hardware-b{batch}-{variant.label}", taken)
    return charts


def _torches(columns: list[Column]) -> str:
    return ", ".join(f"torch {t}" for t in dict.fromkeys(c.torch for c in columns))


def _duration(g: Group) -> tuple[str, list[drawing.Series], str]:
    series = []
    for c in g.columns:
        rs = [g.result(m, c) for m in g.models]
        values = [speedups.mean(r) for r in rs]
        errors = [_around(v, r.stats.ci95_low, r.stats.ci95_high) if v is not None else None
                  for v, r in zip(values, rs)]
        series.append(drawing.Series(c.header, values, errors, [cell(r) for r in rs]))
    title = f"Inference duration: {g.hardware}, {_torches(g.columns)}, batch size {g.batch_size}"
    return title, series, f"time per batch (ms): {stats.PER_PROCESS_WORDS}, over processes, with 95% CI between them"


def _around(value: float, low: float | None, high: float | None) -> tuple[float, float] | None:
    """An interval as (below, above) a bar's value; none where one process gave no interval."""
    return None if low is None or high is None else (value - low, high - value)


def _improvement(g: Group) -> tuple[str, list[drawing.Series], str]:
    _, series = _improvement_by([(g, c) for c in g.compiled_columns], lambda g, c: c.header)
    title = f"Improvement from torch.compile: {g.hardware}, {_torches(g.columns)}, batch size {g.batch_size}"
    return title, series, IMPROVEMENT_AXIS


def _why_missing(eager: Result | None, compiled: Result | None) -> str:
    """What an improvement bar shows instead of a number: the failure that prevented it."""
    for r in (compiled, eager):
        if r is not None and r.status != "ok":
            return cell(r)
    return ""  # not measured: nothing to say


def _improvement_by(pairs: list[tuple[Group, Column]], series_name) -> tuple[list[str], list[drawing.Series]]:
    """Improvement per model with its interval and verdict, one series per (group, compiled column): a batch
    size, or a hardware."""
    results = [r for g, _ in pairs for r in g.results]
    models = data.model_order(results)
    series = []
    for g, c in pairs:
        both = [(g.eager(m, c), g.result(m, c)) for m in models]
        speedups = [g.speedup(m, c) for m in models]
        values = [s.improvement if s else None for s in speedups]
        errors = [_around(s.improvement, *s.improvement_interval) if s else None for s in speedups]
        series.append(drawing.Series(series_name(g, c), values, errors, [_why_missing(e, r) for e, r in both],
                              [s.verdict if s else None for s in speedups]))
    return [data.model_label(results, m) for m in models], series


def _compile_curve(g: Group, stem: str) -> Chart | None:
    """Text generation: each of the first generate() calls of the first repeat, one point per call and a line
    per model and variant, on a log scale (the first call holds the compilation)."""
    lines = []
    for model in g.models:
        for c in g.columns:
            r = g.result(model, c)
            first = r.repeats[0].generation.first_calls if r and r.repeats else []
            if first:
                lines.append((f"{g.label(model)}, {c.header}", [f.total_ms / 1e3 for f in first]))
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

    return drawing.lines(g.key, f"First generate() calls: {g.title}", stem, draw)
