"""--quantize in the report: a table per model (on one machine, batch size and settings), a row per quantization,
eager and each compiled variant side by side: the time, the speed-up over eager in the model's dtype (the float
baseline) and over eager of the same quantization (what compiling adds), and the quality the quantization kept
(its predictions against the float model's), with the weights' size as stored."""

from __future__ import annotations

import math
from dataclasses import dataclass

from compilebench.core import generation, pairing, settings
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.core.variant import Variant
from compilebench.report import data
from compilebench.report.cells import Table, ratio_said
from compilebench.report.view import View


@dataclass(frozen=True)
class Cell:
    """One variant under one quantization, against eager float (the baseline) and eager of the same quantization."""

    quantization: str
    variant: Variant
    result: Result
    vs_float: Speedup | None
    vs_same: Speedup | None  # what compiling adds to the quantized model: None for eager, and for float


@dataclass(frozen=True)
class Model:
    """A model's quantizations on one machine, batch size and settings (the float baseline's)."""

    first: Result
    metric: object  # what is compared: per token for generation, else the latency (None)
    cells: list[Cell]

    @property
    def title(self) -> str:
        f = self.first
        words = ", ".join(w for w in data.settings(f) if w != f.case.quantize)
        return (f"{f.label or f.case.model} on {data.hardware(f)}, torch {data.torch_version(f)}, batch "
                f"{f.case.batch_size}" + (f" ({words})" if words else ""))

    def quantizations(self) -> list[str]:
        return list(dict.fromkeys(c.quantization for c in self.cells))

    def compiled(self) -> list[Variant]:
        return list(dict.fromkeys(c.variant for c in self.cells if c.variant.compiled))

    def cell(self, quantization: str, variant: Variant) -> Cell | None:
        return next((c for c in self.cells if (c.quantization, c.variant) == (quantization, variant)), None)

    def eager(self, quantization: str) -> Cell | None:
        return next((c for c in self.cells if c.quantization == quantization and not c.variant.compiled), None)


def models(view: View) -> list[Model]:
    """Each model whose results hold a quantization, its cells in the order of QUANTIZATIONS, eager first."""
    if not any(r.case.quantize != "none" for r in view.latest):
        return []
    by_baseline: dict[tuple, list[Result]] = {}
    for r in view.latest:
        by_baseline.setdefault((r.machine_id, pairing.baseline_key(r, pairing.FLOAT)), []).append(r)
    return [_model(view, rs) for rs in by_baseline.values() if any(r.case.quantize != "none" for r in rs)]


def _model(view: View, results: list[Result]) -> Model:
    first = results[0]
    metric = generation.verdict_metric(first.case)
    order = {q: i for i, q in enumerate(settings.QUANTIZATIONS)}
    results = sorted(results, key=lambda r: (order.get(r.case.quantize, len(order)), r.case.variant.compiled,
                                             r.case.variant.order, r.case.variant.label))
    cells = []
    for r in results:
        q, compiled = r.case.quantize, r.case.variant.compiled
        baseline, eager = view.pairing.of(r, pairing.FLOAT), view.pairing.of(r)  # eager float, eager of the same q
        vs_float = view.speedup(baseline, r, metric) if baseline is not None else None
        vs_same = view.speedup(eager, r, metric) if compiled and q != "none" and eager is not None else None
        cells.append(Cell(q, r.case.variant, r, vs_float, vs_same))
    return Model(first, metric, cells)


def tables(view: View) -> list[Table]:
    """One table per model whose results hold a quantization (the legend under the last); none where nothing was
    quantized."""
    found = models(view)
    out = [_table(m) for m in found]
    if out:
        out[-1].notes += [NOTE, *([RANDOM_WEIGHTS] if random_weights(found) else [])]
    return out


def random_weights(found: list[Model]) -> bool:
    """Whether any quality was read on random weights (the zoo's default)."""
    return any(c.result.case.weights == "random" and c.result.quality for m in found for c in m.cells)


def _table(m: Model) -> Table:
    rows = []
    for q in m.quantizations():
        eager = m.eager(q)
        r = eager.result if eager else None
        row = [q, time_cell(r, m.metric), ratio_said(eager.vs_float if eager else None), quality_words(r), _mib(r)]
        for v in m.compiled():
            c = m.cell(q, v)
            row += [time_cell(c and c.result, m.metric), ratio_said(c and c.vs_float), ratio_said(c and c.vs_same),
                    quality_words(c and c.result)]
        rows.append(row)
    unit = "ms/token" if m.metric else "ms"
    header = ["quantization", f"eager {unit}", "eager vs float", "eager quality", "weights MiB"]
    for v in m.compiled():
        header += [f"{v.label} {unit}", f"{v.label} vs eager float", f"{v.label} vs eager, same quantization",
                   f"{v.label} quality"]
    return Table(m.title, header, rows)


def time_cell(r: Result | None, metric) -> str:
    """Its mean (per token for generation), or its status where it was not ok."""
    if r is None:
        return ""
    if r.status != "ok":
        return r.status
    est = r.generation.per_token if metric else r.stats
    return "" if est.mean is None else f"{est.mean:.3f}"


def quality_words(r: Result | None) -> str:
    """What the quantized model kept of the float model's predictions: 'top1 98%, top5 100%'; 'tokens 90% (differs
    at 12)': the first new token where they differ."""
    if r is None or not r.quality:
        return ""
    q = dict(r.quality)
    first = q.pop("first_divergence", None)
    said = ", ".join(f"{k} {_share(v)}" for k, v in q.items())
    return said + (f" (differs at {first})" if first is not None else "")


def _share(v: float) -> str:
    """'100%' only where every prediction agreed: 0.996 is '99.6%', never rounded up to a whole agreement."""
    return "100%" if v >= 1 else f"{math.floor(v * 1000) / 10:g}%"


def _mib(r: Result | None) -> str:
    return "" if r is None or not r.weight_bytes else f"{r.weight_bytes / 2**20:.3g}"


NOTE = ("quantization: torchao's, of the linear layers (--quantize). vs (eager) float: the speed-up over eager in the "
        "model's dtype, the baseline; vs eager, same quantization: what compiling adds to the quantized model. "
        "quality: the quantized model's predictions against the float model's on the same input (top1: the same "
        "class; top5: the float model's class among its five best; pixel_class, class, box: as the correctness "
        "check reads them; tokens: the greedy tokens equal, and the first new token where one differs); a "
        "compiled quantized model is still checked against eager of the same quantization within its math's "
        "tolerance (`mismatch` where it is not). weights: the parameters and buffers as stored.")
RANDOM_WEIGHTS = ("random weights (the zoo's default): a model with random weights predicts near ties (a causal LM's "
                  "next tokens, a classifier's classes), which any quantization flips, so its quality reads far lower "
                  "than a trained model's would; read quality with --weights pretrained. Speed and weights' size do "
                  "not depend on the weights' values.")
