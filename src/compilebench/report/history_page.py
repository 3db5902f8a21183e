"""`compilebench history --out DIR`: a page of its own (history.html: one small chart per case and metric over the
runs, intervals as bands and steps marked, and the steps newest first, all in one self-contained file), and the
same figures as rows (history.csv, history.json)."""

from __future__ import annotations

from dataclasses import dataclass

from compilebench.core import steps as stepsmod
from compilebench.report import drawing, exporters, flat, html
from compilebench.report.cells import Table
from compilebench.report.history import Series

FILES = {"html": "history.html", "csv": "history.csv", "json": "history.json"}


def steps_table(series: list[Series]) -> Table:
    """Every step, newest first: where, how big with its 95% interval (the search allowed for), the runs on either
    side, what changed."""
    found = sorted(((s, st) for s in series for st in s.steps), key=lambda x: x[0].runs[x[1].at].at, reverse=True)
    return Table("", ["machine", "case", "metric", "step", "95% interval", "for the", "between runs", "what changed"],
                 [[s.machine, s.case, s.metric, f"{st.ratio:.3f}x", f"{st.low:.3f}x to {st.high:.3f}x",
                   "worse" if s.worse(st) else "better",
                   f"{s.runs[st.at - 1].label} | {s.runs[st.at].label}", "; ".join(s.changed(st)) or "nothing recorded"]
                  for s, st in found],
                 ["step: the mean of the runs after it over the mean of the runs before it (since the step before), "
                  "with its 95% interval from each run's interval and the machine's run-to-run drift (by Student's t "
                  "at the degrees of freedom of that drift where the runs estimate it), allowing for the search: its "
                  "run is the one picked among every run a step could have started at (Bonferroni's over them; at "
                  "1.96 standard errors, 6-23% of drawn series with nothing changed showed a step). A step needs two "
                  "runs on its far side and a size of at least the minimum effect."])


def series_table(series: list[Series]) -> Table:
    return Table("", ["machine", "case", "metric", "runs", "first", "newest", "steps", "drift between runs"],
                 [[s.machine, s.case, s.metric, str(len(s.points)), _value(s.points[0]), _value(s.points[-1]),
                   str(len(s.steps)), s.drift.describe()] for s in series],
                 ["drift between runs: how far one run of the machine moves from the next beyond its interval, for "
                  "that metric: what a step had to clear, and how it is known."])


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
                        "run": run.run_id or "", "tag": run.tag or "", "measured_at": run.at, "value": p.value,
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


@dataclass
class Rendered:
    """What the history's formats read: its series, the page's opening lines, the scratch folder its charts are
    drawn in (the HTML holds them: one self-contained file)."""

    series: list[Series]
    intro: list[str]
    scratch: str


@exporters.exporter("history", "html")
def _html(r: Rendered) -> dict[str, str]:
    taken: set[str] = set()
    charts = [chart(s, drawing.stem(r.scratch, f"{s.machine} {s.case} {s.metric}", taken)) for s in r.series]
    by_machine = [(f"Runs on {m}", [c for s, c in zip(r.series, charts) if s.machine == m])
                  for m in dict.fromkeys(s.machine for s in r.series)]
    return {FILES["html"]: html.page("compilebench history", r.intro, [("Steps, newest first", [steps_table(r.series)]),
                                                                       ("Series", [series_table(r.series)]),
                                                                       *by_machine])}


@exporters.exporter("history", "csv")
def _csv(r: Rendered) -> dict[str, str]:
    return {FILES["csv"]: flat.to_csv(rows(r.series))}


@exporters.exporter("history", "json")
def _json(r: Rendered) -> dict[str, str]:
    return {FILES["json"]: flat.to_json(rows(r.series))}


def write(series: list[Series], out_dir: str, formats: tuple[str, ...], intro: list[str]) -> list[str]:
    """The requested files into out_dir, each whole (report/exporters.py); returns their paths."""
    return exporters.write("history", formats, out_dir, lambda scratch: Rendered(series, intro, scratch))
