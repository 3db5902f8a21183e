"""Published figures beside yours (`compilebench report --reference guide`). The guide, "Optimize inference using
torch.compile()" (transformers' documentation, 2023), is shipped as data (compilebench/data/guide.csv): one row per
cell of its tables as published, `OOM` where it ran out of memory. Its main tables (A100, V100 and T4 at batch 1,
4 and 16, torch 2.0.1), its "PyTorch Nightly" tables (torch 2.1.0.dev) and its "Reduce Overhead" tables (the same
nightly, mode reduce-overhead). The nightly tables are headed "torch 2.0" in the guide; the text says 2.1.0dev.

Each of your compiled results of a guide model is set beside the guide's speed-up (its eager mean over its
compiled mean) of the same model, batch size and compile mode on each of its GPUs. The guide's figures are single
means of 300 calls in one process: they carry no interval, so no verdict is drawn between theirs and yours."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from importlib import resources

from compilebench.core.errors import UnknownChoice
from compilebench.core.variant import Variant
from compilebench.report import data
from compilebench.report.cells import Columns, Table, ratio, ratio_interval, table, verdict
from compilebench.report.data import Column
from compilebench.report.view import Group, View

REFERENCES = {"guide": "guide.csv"}
_TABLES, _GPUS = ("main", "nightly", "reduce-overhead"), ("A100", "V100", "T4")  # the columns' order
SOURCES = {"guide": "https://huggingface.co/docs/transformers/perf_torch_compile (as published in 2023)"}


@dataclass(frozen=True)
class Figure:
    """One row of a published table: a model at a batch size on a GPU, eager and compiled (None: out of memory)."""

    table: str  # main, nightly or reduce-overhead
    gpu: str
    torch: str
    variant: str
    model: str
    label: str
    batch_size: int
    eager_ms: float | None
    compiled_ms: float | None

    @property
    def source(self) -> str:
        """Its column: 'guide A100, torch 2.0.1'; 'guide T4 reduce-overhead, torch 2.1.0.dev'."""
        mode = f" {self.variant}" if Variant(self.variant).compile_mode else ""
        return f"guide {self.gpu}{mode}, torch {self.torch}"

    @property
    def speedup(self) -> str:
        if self.eager_ms is None or self.compiled_ms is None:
            return "OOM"
        return f"{self.eager_ms / self.compiled_ms:.3f}x"  # as your speed-ups are written


def _ms(text: str) -> float | None:
    return None if text == "OOM" else float(text)


def load(name: str) -> list[Figure]:
    """A shipped reference's figures, in its tables' order."""
    if name not in REFERENCES:
        raise UnknownChoice("reference", name, list(REFERENCES))
    text = resources.files("compilebench").joinpath("data", REFERENCES[name]).read_text(encoding="utf-8")
    return [Figure(r["table"], r["gpu"], r["torch"], r["variant"], r["model"], r["label"], int(r["batch_size"]),
                   _ms(r["eager_ms"]), _ms(r["compiled_ms"])) for r in csv.DictReader(io.StringIO(text))]


@dataclass(frozen=True)
class _Row:
    g: Group
    model: str
    column: Column  # one of your compiled columns

    def figures(self, figures: list[Figure]) -> dict[str, Figure]:
        return {f.source: f for f in figures if (f.model, f.batch_size, f.variant) ==
                (self.model, self.g.batch_size, self.column.variant.name)}


def _rows(view: View, figures: list[Figure]) -> list[_Row]:
    return [row for g in view.groups if not g.generation for m in g.models for c in g.compiled_columns
            if g.result(m, c) is not None and (row := _Row(g, m, c)).figures(figures)]


def reference_table(view: View, figures: list[Figure], name: str = "guide") -> Table | None:
    """Your speed-ups of the guide's models beside the guide's, per model, batch size and compiled column; None
    where you measured none of them."""
    rows = _rows(view, figures)
    if not rows:
        return None
    found = {f.source: (_TABLES.index(f.table), _GPUS.index(f.gpu)) for row in rows for f in row.figures(figures).values()}
    sources = sorted(found, key=found.get)
    columns: Columns = [
        ("Task/Model", lambda x: x.g.label(x.model)), ("Batch Size", lambda x: str(x.g.batch_size)),
        ("yours", lambda x: f"{x.g.hardware}, {x.column.header}"),
        ("speed-up", lambda x: ratio(x.g.speedup(x.model, x.column))),
        ("95% CI", lambda x: ratio_interval(x.g.speedup(x.model, x.column))),
        ("verdict", lambda x: verdict(x.g.speedup(x.model, x.column))),
    ]
    columns += [(s, lambda x, s=s: (f := x.figures(figures).get(s)) and f.speedup or "") for s in sources]
    return table(f"Your speed-ups beside the {name}'s", columns, rows, notes=differences(view, rows, name))


def differences(view: View, rows: list[_Row], name: str = "guide") -> list[str]:
    """How your measurements differ from the guide's: hardware, software, settings, method."""
    results = [row.g.result(row.model, row.column) for row in rows]
    hardware = ", ".join(dict.fromkeys(data.hardware(r) for r in results))
    torch = ", ".join(dict.fromkeys(data.torch_version(r) for r in results))
    transformers = ", ".join(dict.fromkeys(str(r.env.transformers or "?") for r in results))
    settings = sorted({w for r in results for w in data.settings(r)})
    notes = [f"Yours: {hardware}; torch {torch}, transformers {transformers}; each case in fresh worker processes "
             "(repeats), its speed-up with a 95% interval. The guide's: NVIDIA A100, V100 and T4 GPUs; torch 2.0.1 "
             "(its nightly and reduce-overhead tables: torch 2.1.0.dev), transformers of mid-2023; float32; the mean "
             "of 300 calls after warm-up in one process, with no interval, so no verdict is drawn between its "
             "figures and yours. Source: " + SOURCES[name] + ".",
             "speed-up = eager time / compiled time. " + (
                 "Your hardware is not the guide's: a speed-up depends on it, so compare which models gain and how "
                 "much relative to each other rather than the numbers." if not _same_gpu(results) else
                 "Where your GPU is one of the guide's, the figures can be compared directly, within the spread "
                 "that torch, transformers and driver versions add.")]
    if settings:
        notes.append(f"Your results have settings the guide did not use ({', '.join(settings)}): their speed-ups "
                     "measure something else than the guide's.")
    return notes


def _same_gpu(results) -> bool:
    return any(data.hardware(r) in ("A100", "V100", "T4") for r in results)


def rows(view: View, figures: list[Figure]) -> list[dict]:
    """The table in long form, for CSV: one row per your result and published figure."""
    out = []
    for row in _rows(view, figures):
        r, s = row.g.result(row.model, row.column), row.g.speedup(row.model, row.column)
        for f in row.figures(figures).values():
            out.append({"model": row.model, "batch_size": row.g.batch_size, "hardware": row.g.hardware,
                        "torch": data.torch_version(r), "environment": r.case.environment, "variant": row.column.variant.name,
                        "column": row.column.header, "speedup": s and s.value, "ci95_low": s and s.low,
                        "ci95_high": s and s.high, "verdict": s and s.verdict, "reference_table": f.table,
                        "reference_gpu": f.gpu, "reference_torch": f.torch, "reference_eager_ms": f.eager_ms,
                        "reference_compiled_ms": f.compiled_ms,
                        "reference_speedup": f.eager_ms / f.compiled_ms if f.eager_ms and f.compiled_ms else None,
                        "reference_oom": f.eager_ms is None})
    return out
