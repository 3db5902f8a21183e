"""--variant eager-cudagraphs in the report: is reduce-overhead's gain just CUDA graphs? Per table (hardware and
batch size) and model: eager, eager replayed from a CUDA graph and its gain over eager, then each compiled mode
that records CUDA graphs (reduce-overhead, max-autotune) with its gain over eager beside its gain over eager in a
CUDA graph: the compiler's own part of it."""

from __future__ import annotations

from compilebench.report.cells import Table, cell, ratio_said
from compilebench.report.view import Group, View


def tables(view: View) -> list[Table]:
    """One table per group that holds eager in a CUDA graph; none where no run measured it."""
    out = [t for g in view.groups if (t := _table(view, g)) is not None]
    if out:
        out[-1].notes.append(NOTE)
    return out


def _table(view: View, g: Group) -> Table | None:
    graphed = [c for c in g.columns if c.variant.cudagraph]
    if not graphed:
        return None
    header, rows = ["model", "settings", "eager ms", "eager in a CUDA graph ms", "CUDA graph vs eager"], []
    modes = [c for c in g.columns if c.variant.uses_cudagraphs]
    for label in dict.fromkeys(c.variant.label for c in modes):
        header += [f"{label} ms", f"{label} vs eager", f"{label} vs eager in a CUDA graph"]
    for graph_column in graphed:
        for m in g.models:
            captured = g.result(m, graph_column)
            if captured is None:
                continue
            eager = g.cells[(m, graph_column)].eager
            row = [g.label(m), ", ".join(graph_column.settings), cell(eager) if eager else "", cell(captured),
                   ratio_said(g.speedup(m, graph_column))]
            for label in dict.fromkeys(c.variant.label for c in modes):
                mode = next((c for c in modes if c.variant.label == label and c.settings == graph_column.settings
                             and c.torch == graph_column.torch), None)
                compiled = g.result(m, mode) if mode else None
                row += [cell(compiled) if compiled else "", ratio_said(g.speedup(m, mode) if mode else None),
                        ratio_said(view.speedup(captured, compiled) if compiled else None)]
            rows.append(row)
    return Table(g.title, header, rows)


NOTE = ("eager in a CUDA graph (--variant eager-cudagraphs): the eager model's call captured once, after warm-up "
        "calls on a side stream, and replayed, its inputs copied into the captured ones each call; its output is "
        "checked against eager's. vs eager in a CUDA graph: what a CUDA-graph mode gains beyond CUDA graphs alone, "
        "the compiler's own part of its gain over eager.")
