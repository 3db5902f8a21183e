"""A new process's start on the sequence of shapes `compilebench shapes` served: per setting and compiler state, the
seconds until every shape had answered once, the compiling in them and the graphs compiled (the start-up view's
counterpart for a mix of shapes: report/start.py)."""

from __future__ import annotations

import statistics

from compilebench.core.vocab import MEASURED
from compilebench.report.cells import Table, table
from compilebench.report.start import STARTS


def shapes_table(m) -> Table | None:
    """A new process's start on this sequence of shapes: per setting and the compiler state its processes started
    from (a cold compile, a warm cache, the mega-cache's artifacts), the seconds until it had answered every shape
    once (each shape's first call, its LoRA swap included), the compiling in them and the graphs compiled: what a
    replica serving this mix (a pipeline's resolutions) waits for, cold and otherwise."""
    rows = []
    for s in m.settings:
        by: dict[str, list] = {}
        for rep in s.result.repeats:
            if rep.status in MEASURED and rep.shapes:
                state = (rep.compile_cache or "cold") if s.result.case.variant.compiled else ""
                by.setdefault(state, []).append(list(rep.shapes.per_shape.values()))
        rows += [(s, state, by[state]) for state in sorted(by, key=lambda k: list(STARTS).index(k) if k in STARTS
                                                              else len(STARTS))]
    if not any(s.result.case.variant.compiled for s, _, _ in rows):
        return None

    def median(row, of) -> float:
        return statistics.median(sum(of(p) for p in shapes) for shapes in row[2])

    columns = [
        ("setting", lambda r: r[0].name),
        ("start", lambda r: STARTS.get(r[1], r[1]) if r[1] else "no compile"),
        ("processes", lambda r: str(len(r[2]))),
        ("every shape answered once s",
         lambda r: f"{median(r, lambda p: (p.first_call_s or 0) + (p.swap_s or 0)):.2f}"),
        ("compile s", lambda r: f"{median(r, lambda p: p.compile_s):.1f}" if r[1] else ""),
        ("graphs compiled", lambda r: f"{median(r, lambda p: p.compiles):g}" if r[1] else ""),
    ]
    notes = ["Each process served the shapes in the order listed; its start here is the sum of its shapes' first calls "
             "(and LoRA swaps), the median over the processes that started from that state (cold: an empty compiler "
             "state; warm cache: what an earlier process of the case left on disk; mega-cache: torch's portable cache "
             "artifacts loaded into an empty state, --compile-cache mega). The model's build is not in it."]
    return table(f"Start-up over these shapes: {m.label}, {m.hardware}", columns, rows, notes)
