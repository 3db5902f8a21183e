"""--quantize in the report: a table per model (on one machine, batch size and settings), a row per quantization,
eager and each compiled variant side by side: the time, the speed-up over eager in the model's dtype (the float
baseline) and over eager of the same quantization (what compiling adds), and the quality the quantization kept
(its predictions against the float model's), with the weights' size as stored."""

from __future__ import annotations

from compilebench.core import settings
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.report import data
from compilebench.report.cells import Table, ratio, verdict
from compilebench.report.view import View


def tables(view: View) -> list[Table]:
    """One table per model whose results hold a quantization; none where nothing was quantized."""
    if not any(r.case.quantize != "none" for r in view.latest):
        return []
    by_baseline: dict[tuple, list[Result]] = {}
    for r in view.latest:
        by_baseline.setdefault((r.machine_id, r.case.eager_key(quantize="none")), []).append(r)
    return [_table(view, rs) for rs in by_baseline.values() if any(r.case.quantize != "none" for r in rs)]


def _table(view: View, results: list[Result]) -> Table:
    first = results[0]
    baseline = next((r for r in results if r.case_key == first.case.eager_key(quantize="none")), None)
    metric = data.PER_TOKEN if first.case.generation else None
    compiled = sorted({r.case.variant for r in results if r.case.variant.compiled}, key=lambda v: (v.order, v.label))
    order = {q: i for i, q in enumerate(settings.QUANTIZATIONS)}
    rows = []
    for q in sorted({r.case.quantize for r in results}, key=order.get):
        eager = next((r for r in results if r.case.quantize == q and not r.case.variant.compiled), None)
        row = [q, _time(eager, metric), _speedup(view.speedup(baseline, eager, metric) if q != "none" else None),
               quality_words(eager), _mib(eager)]
        for v in compiled:
            r = next((x for x in results if x.case.quantize == q and x.case.variant == v), None)
            row += [_time(r, metric), _speedup(view.speedup(baseline, r, metric)),
                    _speedup(view.speedup(eager, r, metric)) if q != "none" else "", quality_words(r)]
        rows.append(row)
    unit = "ms/token" if metric else "ms"
    header = ["quantization", f"eager {unit}", "eager vs float", "eager quality", "weights MiB"]
    for v in compiled:
        header += [f"{v.label} {unit}", f"{v.label} vs eager float", f"{v.label} vs eager, same quantization",
                   f"{v.label} quality"]
    words = ", ".join(w for w in data.settings(first) if w != first.case.quantize)
    title = (f"{first.label or first.case.model} on {data.hardware(first)}, torch {data.torch_version(first)}, batch "
             f"{first.case.batch_size}" + (f" ({words})" if words else ""))
    return Table(title, header, rows, [NOTE])


def _time(r: Result | None, metric) -> str:
    if r is None:
        return ""
    if r.status != "ok":
        return r.status
    est = r.generation.per_token if metric else r.stats
    return "" if est.mean is None else f"{est.mean:.3f}"


def _speedup(s: Speedup | None) -> str:
    return "" if s is None else f"{ratio(s)} ({verdict(s)})"


def quality_words(r: Result | None) -> str:
    """What the quantized model kept of the float model's predictions: 'top1 98%, top5 100%'; 'tokens 90% (first
    differs at 12)'."""
    if r is None or not r.quality:
        return ""
    q = dict(r.quality)
    first = q.pop("first_divergence", None)
    said = ", ".join(f"{k} {v:.0%}" for k, v in q.items())
    return said + (f" (first differs at {first})" if first is not None else "")


def _mib(r: Result | None) -> str:
    return "" if r is None or not r.weight_bytes else f"{r.weight_bytes / 2**20:.3g}"


NOTE = ("quantization: torchao's, of the linear layers (--quantize). vs (eager) float: the speed-up over eager in the "
        "model's dtype, the baseline; vs eager, same quantization: what compiling adds to the quantized model. "
        "quality: the quantized model's predictions against the float model's on the same input (top1: the same "
        "class; top5: the float model's class among its five best; pixel_class, class, box: as the correctness "
        "check reads them; tokens: the greedy tokens equal, and the first new token where one differs); a "
        "compiled quantized model is still checked against eager of the same quantization within its math's "
        "tolerance (`mismatch` where it is not). weights: the parameters and buffers as stored.")
