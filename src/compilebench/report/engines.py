"""torch.compile against the other engines, at a glance: per table of the guide (hardware and batch size) and model
that another engine ran (--variant onnxruntime openvino tensorrt), every way the model was made fast side by side:
each torch.compile setting (each --backend, openvino's included) and each engine, with its latency and interval,
its speed-up over eager and, for an engine, over the best torch.compile setting, with verdicts; its preparation
cold and warm (an engine's export and build, a compile's seconds) and the calls it takes to pay for itself; how
close its output came to eager's; the precision it computed in and its version."""

from __future__ import annotations

from dataclasses import dataclass

from compilebench import kinds
from compilebench.core import speedups, stats
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.report.cells import Table, compile_note, ends_said, ranged, ratio_said, spread_said
from compilebench.report.data import Column
from compilebench.report.view import Group, View


@dataclass(frozen=True)
class Way:
    """One way of running the model in a table: its column, its result, and how it reads against eager and (an
    engine) against the best torch.compile setting."""

    column: Column
    result: Result
    vs_eager: Speedup | None
    vs_compile: Speedup | None  # an engine against the best torch.compile setting of the same table; else None
    best_compile: Result | None  # that setting

    @property
    def engine(self) -> str | None:
        return self.column.variant.engine


def ways(view: View, g: Group, model: str) -> list[Way]:
    """Every compiled way the model ran in the table (torch.compile settings first, then the engines), each against
    eager of its own torch, an engine also against the best torch.compile setting: the `faster` one with the best
    speed-up (speedups.best), else the fastest measured."""
    compiled = [(c, r) for c in g.compiled_columns if (r := g.result(model, c)) is not None]
    if not any(c.variant.engine for c, _ in compiled):
        return []
    torch_compiled = [(c, r) for c, r in compiled if not c.variant.engine]
    picked = speedups.best(((c, r), g.speedup(model, c)) for c, r in torch_compiled)
    measured = [(c, r) for c, r in torch_compiled if r.mean is not None]
    best = picked[0][1] if picked else min(measured, key=lambda x: x[1].mean)[1] if measured else None
    out = []
    for c, r in sorted(compiled, key=lambda x: (x[0].variant.engine is not None, x[0])):
        against = view.speedup(best, r) if c.variant.engine and best is not None else None
        out.append(Way(c, r, g.speedup(model, c), against, best if against is not None else None))
    return out


def tables(view: View) -> list[Table]:
    """One table per table of the guide and model that an engine ran; none where no engine ran."""
    out = []
    for g in (g for g in view.groups if not g.generation):
        for m in g.models:
            found = ways(view, g, m)
            if found:
                out.append(_table(g, m, found, view.compile_drift.value))
    if out:
        out[-1].notes += [*NOTES, compile_note(view.compile_drift, PREPARED),
                          "break-even calls in brackets: the same at each end of the speed-up's interval, "
                          f"{spread_said(view.compile_drift, 'the cold preparation')}."]
    return out


PREPARED = "prepare s: the cold preparation, measured once a case, and the warm one, the median of its processes, each"
HEADER = ["variant", "ms [95%]", "vs eager", "vs best torch.compile", "prepare cold s", "prepare warm s",
          "break-even calls", "against eager", "precision", "version"]


def _table(g: Group, model: str, found: list[Way], spread: float) -> Table:
    eager = next((c.eager for c in (g.cells.get((model, w.column)) for w in found) if c and c.eager), None)
    rows = [["no compile (eager)", time_said(eager), "", "", "", "", "", "", eager_precision(eager),
             version(eager, None)]] if eager else []
    for w in found:
        r = w.result
        cold, warm = prepared(r)
        rows.append([w.column.header.split(" - ", 1)[-1], time_said(r), ratio_said(w.vs_eager),
                     ratio_said(w.vs_compile) if w.engine else "", ranged(cold, spread, 2), ranged(warm, spread, 2),
                     _break_even(cold, eager, r, w.vs_eager, spread), agreement(r),
                     precision(r), version(r, w.engine)])
    return Table(f"{g.label(model)} on {g.title}", HEADER, rows)


def _break_even(cold: float | None, eager: Result | None, r: Result, vs_eager: Speedup | None,
                spread: float) -> str:
    """Calls until the cold preparation has paid for itself, '1,234 [1,010-1,580]' with the same at each end of
    the speed-up's interval, the preparation `spread` shorter or longer; never: it saves nothing per call."""
    if vs_eager is None or cold is None:  # no speed-up, or a preparation not recorded: nothing to repay
        return ""
    be = stats.break_even(cold, speedups.mean(eager), r.mean) if eager and r.mean is not None else None
    if be is None:
        return "never"
    ends = stats.break_even_range(cold, speedups.mean(eager), vs_eager.low, vs_eager.high, spread)
    return f"{be:,.0f}" + (f" [{ends_said(ends)}]" if ends else "")


def time_said(r: Result | None) -> str:
    """'12.345 [11.9-12.8]', or the status where nothing was measured."""
    if r is None:
        return ""
    if r.mean is None:
        return r.status + (f": {r.message}" if r.status == "unsupported" and r.message else "")
    s = r.stats
    return f"{s.mean:.3f}" + (f" [{s.ci95_low:.3g}-{s.ci95_high:.3g}]" if s.ci95_low is not None else "")


def prepared(r: Result) -> tuple[float | None, float | None]:
    """Seconds to make it ready, cold and warm: an engine's export and build (warm: from its cache), a compile's."""
    if r.case.variant.engine:
        return r.engine.cold_s, r.engine.warm_s
    return r.cold_compile_s, r.warm_compile_s


def agreement(r: Result) -> str:
    """How close its output came to eager's: the largest error over eager's largest magnitude, against what was
    allowed, and the task's own measure (top-1 classes, pixels, boxes) where it has one."""
    if r.max_rel_err is None:
        return ""
    said = [f"max rel err {r.max_rel_err:.1e} (allowed {r.rel_tolerance:.0e})" if r.rel_tolerance is not None
            else f"max rel err {r.max_rel_err:.1e}"]
    said += [f"{name} {value:.1%}" for name, value in r.agreement.items()]
    return ", ".join(said)


def precision(r: Result) -> str:
    """What it computed in: what an engine reports back (OpenVINO's inference precision), else the case's dtype."""
    return (r.engine.precision if r.case.variant.engine else None) or eager_precision(r)


def eager_precision(r: Result | None) -> str:
    if r is None:
        return ""
    return "tf32" if r.env.uses_tf32(r.case.dtype) else r.case.dtype


def version(r: Result | None, engine: str | None) -> str:
    if r is None:
        return ""
    if engine:
        return f"{kinds.title(engine)} {r.engine.version or '?'}"
    return f"torch {r.env.torch_version}"


NOTES = [
    "Each engine runs the same model, weights and inputs as eager and torch.compile, timed the same way in its own "
    "worker processes, in the same rounds. vs best torch.compile: the engine against this table's best torch.compile "
    "setting (the fastest `faster` one, else the fastest measured). prepare cold s: an engine's export (and "
    "conversion) and its first build, by the process that found nothing prepared; a compile's cold compile. prepare "
    "warm s: the median build from what the first left (ONNX Runtime's optimized model, OpenVINO's cache, "
    "TensorRT's engine); a compile's warm compile. break-even calls: the cold preparation over the time saved per "
    "call against eager. against eager: the output's largest error over eager's largest magnitude, and the task's "
    "own agreement; the tolerance may be raised to eager's own move for one rounding step of its input (details). "
    "precision: what the engine reports it computed in (OpenVINO's inference precision is pinned to the case's "
    "dtype: it would pick bfloat16 by itself on a CPU that has it).",
]
