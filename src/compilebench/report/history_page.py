"""`compilebench history --out DIR`: a page of its own (history.html: one small chart per case and metric over the
runs, intervals as bands and steps marked, and the steps newest first, all in one self-contained file), and the
same figures as rows (history.csv, history.json)."""

from __future__ import annotations

import os
import tempfile

from compilebench.core import steps as stepsmod
from compilebench.report import drawing, flat, html
from compilebench.report.cells import Table
from compilebench.report.history import Series

FILES = {"html": "history.html", "csv": "history.csv", "json": "history.json"}


def steps_table(series: list[Series]) -> Table:
    """Every step, newest first: where, how big with its 95% interval, the runs on either side, what changed."""
    found = sorted(((s, st) for s in series for st in s.steps), key=lambda x: x[0].runs[x[1].at].at, reverse=True)
    return Table("", ["machine", "case", "metric", "step", "95% interval", "for the", "between runs", "what changed"],
                 [[s.machine, s.case, s.metric, f"{st.ratio:.3f}x", f"{st.low:.3f}x to {st.high:.3f}x",
                   "worse" if s.worse(st) else "better",
                   f"{s.runs[st.at - 1].label} | {s.runs[st.at].label}", "; ".join(s.changed(st)) or "nothing recorded"]
                  for s, st in found],
                 ["step: the mean of the runs after it over the mean of the runs before it (since the step before), "
                  "with its 95% interval from each run's interval and the machine's run-to-run drift. A step needs two "
                  "runs on its far side and a size of at least the minimum effect."])


def series_table(series: list[Series]) -> Table:
    return Table("", ["machine", "case", "metric", "runs", "first", "newest", "steps"],
                 [[s.machine, s.case, s.metric, str(len(s.points)), _value(s.points[0]), _value(s.points[-1]),
                   str(len(s.steps))] for s in series])


def _value(p: stepsmod.Point) -> str:
    return f"{p.value:.4g}" + (f" [{p.low:.4g}-{p.high:.4g}]" if p.low is not None and p.high is not None else "")


def rows(series: list[Series]) -> list[dict]:
    """One row per series and run."""
    out = []
    for s in series:
        at = {st.at: st for st in s.steps}
        for i, (run, p) in enumerate(zip(s.runs, s.points)):
            st = at.get(i)
            out.append({"machine": s.machine, "case": s.case, "metric": s.metric, "run_index": i + 1,
                        "run": run.run or "", "tag": run.tag or "", "measured_at": run.at, "value": p.value,
                        "ci95_low": p.low, "ci95_high": p.high, "step_here": st.ratio if st else None,
                        "step_ci95_low": st.low if st else None, "step_ci95_high": st.high if st else None})
    return out


def chart(s: Series, stem: str) -> drawing.Chart:
    def draw(ax):
        x = list(range(1, len(s.points) + 1))
        ax.plot(x, [p.value for p in s.points], marker="o", color="#1f77b4", label=s.metric, gid="line-0")
        banded = [(i, p) for i, p in zip(x, s.points) if p.low is not None and p.high is not None]
        if banded:
            ax.fill_between([i for i, _ in banded], [p.low for _, p in banded], [p.high for _, p in banded],
                            color="#1f77b4", alpha=0.2, label="95% interval")
        for st in s.steps:
            ax.axvline(st.at + 0.5, color="#d62728" if s.worse(st) else "#2ca02c", linestyle="--",
                       label=f"step {st.ratio:.2f}x", gid=f"step-{st.at}")
        ax.set_xticks(x, [r.label[:12] for r in s.runs], rotation=45, ha="right", fontsize=7)
        ax.set_ylim(bottom=0)
        ax.set_ylabel(s.metric)
        return [s.metric]

    return drawing.lines(("history", s.machine), f"{s.case}: {s.metric} on {s.machine}", stem, draw)


def write(series: list[Series], out_dir: str, formats: tuple[str, ...], intro: list[str]) -> list[str]:
    """The requested files into out_dir, each whole (written beside and renamed); returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    files: dict[str, str] = {}
    if "html" in formats:
        with tempfile.TemporaryDirectory() as tmp:
            taken: set[str] = set()
            charts = [chart(s, drawing.stem(tmp, f"{s.machine} {s.case} {s.metric}", taken)) for s in series]
            by_machine = [(f"Runs on {m}", [c for s, c in zip(series, charts) if s.machine == m])
                          for m in dict.fromkeys(s.machine for s in series)]
            files[FILES["html"]] = html.page("compilebench history", intro,
                                             [("Steps, newest first", [steps_table(series)]),
                                              ("Series", [series_table(series)]), *by_machine])
    if "csv" in formats:
        files[FILES["csv"]] = flat.to_csv(rows(series))
    if "json" in formats:
        files[FILES["json"]] = flat.to_json(rows(series))
    written = []
    for name, content in files.items():
        path = os.path.join(out_dir, name)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(path + ".tmp", path)
        written.append(path)
    return written
