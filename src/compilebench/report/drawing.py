"""How a chart is drawn, with matplotlib, and written as PNG and SVG: grouped horizontal bars with their 95%
intervals as error bars (a verdict that is not faster, slower or same hatched and said), line charts and stacked
bars. Every mark carries an SVG id (`bar-<row>-<series>`, `line-<k>`) so a test, or a reader of the SVG, can count
them. Which charts a report has is charts.py's, and each view's own (start.py, shapes.py, why.py)."""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass, field


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
class Series:
    name: str
    values: list[float | None]
    errors: list[tuple[float, float] | None] | None = None  # (below, above) the value
    missing: list[str] | None = None  # what to print where a value is None: 'OOM', 'error', ...
    verdicts: list[str | None] | None = None  # improvement bars: inconclusive ones are hatched and say so


def save(fig, stem: str) -> tuple[str, str]:
    """The figure as stem.png and stem.svg (fonts as text, no date: the same chart is the same file)."""
    import matplotlib

    png, svg = stem + ".png", stem + ".svg"
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "compilebench"}):
        fig.savefig(png, dpi=110)
        fig.savefig(svg, metadata={"Date": None})
    return png, svg


def stem(out_dir: str, text: str, taken: set[str]) -> str:
    """The path, without extension, of a chart named after `text`, unique among the names `taken`."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:80] or "chart"
    unique, i = name, 2
    while unique in taken:
        unique, i = f"{name}-{i}", i + 1
    taken.add(unique)
    return os.path.join(out_dir, unique)


TITLE_WIDTH = 110  # characters a line: a figure 9 inches wide holds about 130 at 10 points
AXIS_WIDTH = 80  # an axis's words are centred on the axes, narrower than the figure by the models' names


def set_title(fig, text: str) -> None:
    """The chart's title over the whole figure, in lines it holds: set over the axes, a CPU's long name ran past the
    figure's edge and was cut ("..., torch 2.13, batch si")."""
    fig.suptitle("\n".join(textwrap.wrap(text, TITLE_WIDTH)), fontsize=10)


def axis_words(text: str) -> str:
    return "\n".join(textwrap.wrap(text, AXIS_WIDTH))


def lines(section: tuple, title: str, stem: str, draw) -> Chart:
    """A line chart: `draw(ax)` plots it and returns its lines' names."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4.5), layout="constrained")
    ax = fig.subplots()
    drawn = draw(ax)
    set_title(fig, title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    png, svg = save(fig, stem)
    return Chart(section, title, png, svg, [(name, "line") for name in drawn])


def fit_labels(fig, ax, texts) -> None:
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


def bars(section: tuple, title: str, labels: list[str], series: list[Series], xlabel: str, stem: str,
         improvement: bool) -> Chart:
    """Horizontal grouped bars: one row per model (first at the top), one bar per series; an improvement's (in %)
    axis may go below zero, a duration's never does."""
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
            text = f"{value:.1f}%" if improvement else f"{value:.4g}"
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
    if not improvement:  # a duration is never negative: neither is its axis
        ax.set_xlim(left=0)
    ax.set_xlabel(axis_words(xlabel))
    ax.set_ylabel("Task/Model")
    set_title(fig, title)
    ax.grid(axis="x", alpha=0.3)
    if drawn:
        fig.legend(fontsize=8, loc="outside lower center", ncols=min(k, 3))
    fit_labels(fig, ax, texts)
    png, svg = save(fig, stem)
    return Chart(section, title, png, svg, drawn, hatched, tuple(ax.get_xlim()))


def stacked(section: tuple, title: str, labels: list[str], widths: dict[str, list[float]], stem: str, xlabel: str,
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
    texts = [ax.text(left[i], i, text, va="center", ha="left", fontsize=7, color="#b00020" if problem else None)
             for i, (text, problem) in enumerate(notes or [])]
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(0, max(left, default=0.0) * 1.05 or 1.0)
    ax.set_xlabel(axis_words(xlabel))
    set_title(fig, title)
    fit_labels(fig, ax, texts)  # room for each note, however long (a cold start's ran off the figure)
    ax.grid(axis="x", alpha=0.3)
    fig.legend(fontsize=8, loc="outside lower center", ncols=3)
    png, svg = save(fig, stem)
    return Chart(section, title, png, svg, [(label, part) for label in labels for part in widths])
