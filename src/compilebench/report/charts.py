"""Charts with matplotlib, each written as PNG and SVG: per (hardware, batch) the duration of every variant and
the % improvement per model; per hardware the improvement at each batch size; per batch size the improvement
on each hardware when several are present.

Every chart says what it shows in its title (hardware, torch version, batch size), labels its axes with units,
prints the value on each bar (or the status where a model has no number) and has a legend. Each bar carries an
SVG id `bar-<model index>-<series index>` so a test (or a reader of the SVG) can count them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from compilebench.report import data
from compilebench.report.data import Column, Group
from compilebench.report.tables import cell

IMPROVEMENT_AXIS = "% improvement over no compile: (eager - compiled) / eager x 100"


@dataclass
class Chart:
    section: tuple  # where it belongs: ("group", hardware, batch), ("hardware", hw) or ("batch", batch)
    title: str
    png: str
    svg: str
    bars: list[tuple[str, str]] = field(default_factory=list)  # (model label, series) of each bar drawn


@dataclass
class _Series:
    name: str
    values: list[float | None]
    errors: list[tuple[float, float] | None] | None = None  # (below, above) the value
    missing: list[str] | None = None  # what to print where a value is None: 'OOM', 'error', ...


def _torches(columns: list[Column]) -> str:
    return ", ".join(f"torch {t}" for t in dict.fromkeys(c.torch for c in columns))


def _duration(g: Group) -> tuple[str, list[_Series], str]:
    series = []
    for c in g.columns:
        rs = [g.cells.get((m, c)) for m in g.models]
        values = [data.mean(r) for r in rs]
        errors = [(v - r["stats"]["ci95_low"], r["stats"]["ci95_high"] - v) if v is not None else None
                  for v, r in zip(values, rs)]
        series.append(_Series(c.header, values, errors, [cell(r) for r in rs]))
    title = f"Inference duration: {g.hardware}, {_torches(g.columns)}, batch size {g.batch_size}"
    return title, series, "mean time per batch (ms), with 95% CI"


def _improvement(g: Group) -> tuple[str, list[_Series], str]:
    _, series = _improvement_by([(g, c) for c in g.compiled_columns], lambda g, c: c.header)
    title = f"Improvement from torch.compile: {g.hardware}, {_torches(g.columns)}, batch size {g.batch_size}"
    return title, series, IMPROVEMENT_AXIS


def _why_missing(eager: dict | None, compiled: dict | None) -> str:
    """What an improvement bar shows instead of a number: the failure that prevented it."""
    for r in (compiled, eager):
        if r is not None and r["status"] != "ok":
            return cell(r)
    return ""  # not measured: nothing to say


def _improvement_by(pairs: list[tuple[Group, Column]], series_name) -> tuple[list[str], list[_Series]]:
    """Improvement per model, one series per (group, compiled column): a batch size, or a hardware."""
    results = [r for g, _ in pairs for r in g.results]
    models = data.model_order(results)
    series = []
    for g, c in pairs:
        both = [(g.cells.get((m, c.eager)), g.cells.get((m, c))) for m in models]
        series.append(_Series(series_name(g, c), [data.improvement(e, r) for e, r in both], None,
                              [_why_missing(e, r) for e, r in both]))
    return [data.model_label(results, m) for m in models], series


def render(results: list[dict], out_dir: str) -> list[Chart]:
    """Draw every chart the results allow into out_dir; returns them in reading order."""
    import matplotlib

    matplotlib.use("Agg", force=False)  # no display needed; a no-op where the user chose another backend
    os.makedirs(out_dir, exist_ok=True)
    charts: list[Chart] = []
    names: set[str] = set()
    groups = data.groups(results)

    def draw(section, title, labels, series, xlabel, stem):
        if not any(v is not None for s in series for v in s.values):
            return  # nothing measured ok: the tables say why
        stem = _unique(_slug(stem), names)
        png, svg = os.path.join(out_dir, stem + ".png"), os.path.join(out_dir, stem + ".svg")
        bars = _draw(title, labels, series, xlabel, png, svg)
        charts.append(Chart(section, title, png, svg, bars))

    for g in groups:
        labels = [g.label(m) for m in g.models]
        title, series, xlabel = _duration(g)
        draw(("group", g.hardware, g.batch_size), title, labels, series, xlabel, f"duration-{g.hardware}-b{g.batch_size}")
        if g.compiled_columns:
            title, series, xlabel = _improvement(g)
            draw(("group", g.hardware, g.batch_size), title, labels, series, xlabel,
                 f"improvement-{g.hardware}-b{g.batch_size}")

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
    return charts


def _draw(title: str, labels: list[str], series: list[_Series], xlabel: str, png: str, svg: str) -> list[tuple[str, str]]:
    """Horizontal grouped bars: one row per model (first at the top), one bar per series."""
    import matplotlib
    from matplotlib.figure import Figure

    n, k = len(labels), len(series)
    height = 0.8 / k
    fig = Figure(figsize=(9, 1.5 + n * (0.2 + 0.17 * k)), layout="constrained")
    ax = fig.subplots()
    colors = matplotlib.colormaps["tab10"]
    drawn = []
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
            (bar,) = ax.barh(y, value, height, color=colors(j % 10), label=s.name if not any(
                d[1] == s.name for d in drawn) else None,
                xerr=[[err[0]], [err[1]]] if err else None, error_kw={"elinewidth": 0.8, "capsize": 2})
            bar.set_gid(f"bar-{i}-{j}")
            drawn.append((labels[i], s.name))
            text = f"{value:.1f}%" if xlabel == IMPROVEMENT_AXIS else f"{value:.4g}"
            pad = span * 0.01 + (err[1] if err and value >= 0 else 0)
            ax.text(value + (pad if value >= 0 else -pad), y, text, va="center",
                    ha="left" if value >= 0 else "right", fontsize=7)
    ax.set_yticks(range(n), labels)
    ax.set_ylim(n - 0.5, -0.5)  # the first model at the top, as in the tables
    ax.axvline(0, color="black", linewidth=0.8)
    ax.margins(x=0.15)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Task/Model")
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    if drawn:
        fig.legend(fontsize=8, loc="outside lower center", ncols=min(k, 3))
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "compilebench"}):
        fig.savefig(png, dpi=110)
        fig.savefig(svg, metadata={"Date": None})
    return drawn


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "chart"


def _unique(stem: str, taken: set[str]) -> str:
    name, i = stem, 2
    while name in taken:
        name, i = f"{stem}-{i}", i + 1
    taken.add(name)
    return name
