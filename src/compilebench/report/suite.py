"""The suite summed up, as the PyTorch HUD's compilers dashboard does: its pass rate (cases ok over cases run) and,
per hardware, batch size and compiled setting, the pass rate, the geometric-mean speed-up with its verdicts, the
best and worst model and the memory compression ratio (eager's peak over compiled's), over the models measured ok
both ways. The report's summary table, `run`'s last lines and `check --summary` say it."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from compilebench.core import generation
from compilebench.core.vocab import VERDICTS
from compilebench.report import data
from compilebench.report.cells import Columns, Table, table
from compilebench.report.data import Column
from compilebench.report.view import Group, View


@dataclass(frozen=True)
class _Summary:
    """One compiled column of one group: its pass rate, and over the models measured ok both ways, the speed-ups
    (per decoded token in a text-generation group: core/generation.verdict_metric), verdicts and memory compression
    ratios."""

    g: Group
    column: Column
    speedups: list[tuple[float, str]]  # (speed-up, model label)
    verdicts: Counter
    not_ok: int
    run: int  # compiled results of the column, whatever their status
    memory: list[float]  # eager peak memory / compiled peak memory, where both were measured alike
    shared: int = 0  # models whose variants shared their processes (--interleave): one peak, nothing to compare
    bounds: tuple = ()  # each model's speed-up interval (low, high), in the order of `speedups`
    memory_bounds: tuple = ()  # each model's compression interval (low, high), in the order of `memory`

    @property
    def geomean(self) -> str:
        return f"{_geomean([s for s, _ in self.speedups]):.2f}x" if self.speedups else ""

    @property
    def geomean_interval(self) -> tuple[float, float] | None:
        """The geomean's interval: the models' half-widths (log space) in quadrature over their count. Each is at
        its own critical value (Student's t, or a look's boundary), never under the normal's, so this is at least
        as wide as the normal theory's. None where a model has no interval."""
        return _in_quadrature([s for s, _ in self.speedups], self.bounds)

    @property
    def geomean_said(self) -> str:
        """'1.53x [1.44-1.63]', or the geomean alone without an interval."""
        found = self.geomean_interval
        return self.geomean + (f" [{found[0]:.2f}-{found[1]:.2f}]" if found else "")

    @property
    def pass_rate(self) -> str:
        return f"{self.run - self.not_ok}/{self.run} ({(self.run - self.not_ok) / self.run:.0%})" if self.run else ""

    @property
    def memory_compression(self) -> str:
        """'1.18x [1.05-1.32]': the geometric mean of the models' and its interval as the speed-ups' (where each
        model's peaks moved between processes; the interval left out where it says no more)."""
        if not self.memory:
            return ""
        found = _in_quadrature(self.memory, self.memory_bounds)
        ends = "" if found is None or f"{found[0]:.2f}" == f"{found[1]:.2f}" else f" [{found[0]:.2f}-{found[1]:.2f}]"
        return f"{_geomean(self.memory):.2f}x{ends}"

    def extreme(self, pick) -> str:
        return "" if not self.speedups else f"{(e := pick(self.speedups))[1]} ({e[0]:.2f}x)"

    def sentence(self) -> str:
        """The column in one line: `run` prints it under its summary."""
        said = [f"pass rate {self.pass_rate}"]
        if self.speedups:
            per = generation.per(self.g.results[0].case)  # a group is text generation or not
            said.append(f"geomean speed-up{per} {self.geomean_said} over {len(self.speedups)} model(s)")
        if self.memory:
            said.append(f"memory compression {self.memory_compression}")
        elif self.shared:
            said.append("memory not compared (each process held both variants: --no-interleave measures it)")
        kind = ", generation" if self.g.generation else ""  # the LMs' group apart from the vision models'
        return f"{self.column.header}, {self.g.hardware}, batch {self.g.batch_size}{kind}: {', '.join(said)}"


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _in_quadrature(values: list[float], bounds: tuple) -> tuple[float, float] | None:
    """The geomean's interval: the models' half-widths (log space) in quadrature over their count. Each is at its
    own critical value (Student's t, or a look's boundary), never under the normal's, so this is at least as wide
    as the normal theory's. None where a model has no interval."""
    if not bounds or any(low is None or high is None for low, high in bounds):
        return None
    centre = math.log(_geomean(values))
    half = math.hypot(*(math.log(high / low) / 2 for low, high in bounds)) / len(bounds)
    return math.exp(centre - half), math.exp(centre + half)


def _summarise(g: Group, c: Column) -> _Summary:
    measured = [(m, s) for m in g.models if (s := g.verdict(m, c)) is not None]
    compiled = [r for m in g.models if (r := g.result(m, c)) is not None]
    # compiled over eager (data.memory_ratio, as the tables read it), turned over: eager's peak over compiled's
    ratios = [found for m, _ in measured if (r := g.result(m, c)) and (found := data.memory_ratio(g.eager(m, c), r))]
    shared = sum(1 for m, _ in measured if data.shared_process(g.eager(m, c), g.result(m, c)))
    return _Summary(g, c, [(s.value, g.label(m)) for m, s in measured], Counter(s.verdict for _, s in measured),
                    sum(1 for r in compiled if r.status != "ok"), len(compiled), [1 / x for x, _, _ in ratios],
                    shared, tuple((s.low, s.high) for _, s in measured),
                    tuple((1 / high if high else None, 1 / low if low else None) for _, low, high in ratios))


def summaries(view: View) -> list[_Summary]:
    """Every compiled column of every group, summed up."""
    return [_summarise(g, c) for g in view.groups for c in g.compiled_columns]


def pass_rate(view: View) -> str:
    """The suite's: cases ok over cases run (every variant, eager too; shapes results as cases)."""
    latest = view.latest + view.served
    ok = sum(1 for r in latest if r.status == "ok")
    return f"{ok} of {len(latest)} case(s) ok ({ok / len(latest):.0%})" if latest else "no case run"


def summary_table(view: View) -> Table:
    """Per hardware, batch size and compiled column: the pass rate; over the models measured ok both ways, the
    geometric-mean speed-up, how many verdicts of each kind, the best and worst model, and the geometric-mean
    memory compression ratio."""
    columns: Columns = [
        ("hardware", lambda s: s.g.hardware),
        ("batch size", lambda s: str(s.g.batch_size)),
        ("compiled variant", lambda s: s.column.header),
        ("pass rate", lambda s: s.pass_rate),
        ("models", lambda s: str(len(s.speedups))),
        ("geomean speed-up", lambda s: s.geomean),
        ("geomean 95% CI", lambda s: "" if (i := s.geomean_interval) is None else f"{i[0]:.2f}x to {i[1]:.2f}x"),
        ("verdicts", lambda s: ", ".join(f"{s.verdicts[v]} {v}" for v in VERDICTS if s.verdicts[v])),
        ("best", lambda s: s.extreme(max)),
        ("worst", lambda s: s.extreme(min)),
        ("memory compression", lambda s: s.memory_compression),
    ]
    return table("", columns, summaries(view), [
        f"Pass rate of the suite: {pass_rate(view)}. A compiled variant's pass rate: its cases ok over its cases "
        "run (a mismatch, a recompile while timed, an error, OOM, timeout or crash fails one).",
        "speed-up = eager time / compiled time (1.25x: the compiled model takes 80% of the time; text generation's: "
        "per decoded token), over the models measured ok both ways; each model's verdict needs its 95% interval "
        "clear of the minimum effect. The geomean's interval: the models' (in log space) in quadrature over their "
        "count.",
        "memory compression = eager's peak memory / compiled's (above 1: compiling saved memory), geometric mean over "
        "the same models, but for those whose variants shared each process (--interleave: one peak, both's); on a "
        "CPU a peak is the process's RSS, which for a compiled case includes the compiler, and moves from one "
        "process to another: each model's ratio then has its interval (the speed-up table's), and the geomean's "
        "is theirs in quadrature."])
