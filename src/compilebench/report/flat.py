"""One flat row per result, for CSV and JSON: `pandas.read_csv(path)` or `pandas.read_json(path)` loads it.

Columns: the case, the statistics (milliseconds), compile and correctness figures, the status, the speed-up
against the eager result of the same case on the same machine, and the environment as `env_*`. Raw samples
stay in the results file."""

from __future__ import annotations

import csv
import dataclasses
import io
import json

from compilebench import stats
from compilebench.report import data
from compilebench.spec import Case, Variant

STATS = tuple(f"{k}_ms" if k not in ("n", "cv") else k for k in stats.FIELDS)
RESULT = ("noisy", "stopped_early", "iters_requested", "warmup_iters", "first_call_s", "compile_s", "compile_cache", "compile_cache_hits",
          "flops", "achieved_tflops", "peak_tflops", "peak_math", "peak_fraction", "graphs", "graph_breaks", "break_reasons", "recompiles_in_timed_loop", "max_abs_err", "max_rel_err", "agreement",
          "peak_mem_bytes", "peak_mem_kind", "isolation", "eager_mean_ms", "speedup", "speedup_ci95_low",
          "speedup_ci95_high", "verdict", "improvement_pct", "break_even_inferences", "message",
          "phase")
HEAD = ("result_id", "created_at", "machine_id", "hardware", "torch", "status")


def rows(results: list[dict]) -> list[dict]:
    """Every result (superseded reruns included; `created_at` tells them apart), oldest first."""
    results = sorted(results, key=lambda r: r["created_at"])
    newest = {(r["case_key"], r["machine_id"]): r for r in data.latest(results)}
    env_keys = sorted({k for r in results for k in (r.get("env") or {})})
    out = []
    for r in results:
        c, s, env = r["case"], r.get("stats") or {}, r.get("env") or {}
        v = data.variant_of(r)
        eager = newest.get((_eager_key(r), r["machine_id"])) if v.compiled else None
        row = {
            "result_id": r["result_id"],
            "created_at": r["created_at"],
            "machine_id": r["machine_id"],
            "hardware": data.hardware(r),
            "torch": data.torch_version(r),
            "status": r["status"],
            "model": c["model"],
            "label": r.get("label") or c["model"],
            "task": r.get("task") or c.get("task"),
            "batch_size": c["batch_size"],
            "variant": v.mode,
            "variant_label": v.label,
            "backend": v.backend,
            "fullgraph": v.fullgraph,
            "dynamic": v.dynamic,
            **{k: c.get(k) for k in ("dtype", "autocast", "channels_last", "tf32", "attn", "device", "weights",
                                     "model_size", "image")},
            **{name: s.get(k) for name, k in zip(STATS, stats.FIELDS)},
            **{k: r.get(k) for k in RESULT},
        }
        row["achieved_tflops"] = data.achieved_tflops(r)
        p = data.peak(r)
        row["peak_tflops"], row["peak_math"] = (p.tflops, p.math) if p else (None, None)
        row["peak_fraction"] = data.peak_fraction(r)
        row["noisy"] = s.get("cv") is not None and s["cv"] > stats.NOISY_CV
        row["break_reasons"] = "; ".join(r.get("break_reasons") or [])
        row["agreement"] = "; ".join(f"{k}={v:.4f}" for k, v in (r.get("agreement") or {}).items())
        row["eager_mean_ms"] = data.mean(eager)
        row["speedup"] = data.speedup(eager, r) if v.compiled else None
        row["improvement_pct"] = data.improvement(eager, r) if v.compiled else None
        if row["speedup"] is not None:
            _, row["speedup_ci95_low"], row["speedup_ci95_high"] = stats.speedup_ci(eager["stats"], s)
            row["verdict"] = stats.speedup_verdict(row["speedup_ci95_low"], row["speedup_ci95_high"])
            row["break_even_inferences"] = stats.break_even(r.get("compile_s"), row["eager_mean_ms"], s["mean"])
        row.update({f"env_{k}": env.get(k) for k in env_keys})
        out.append(row)
    return out


def _eager_key(r: dict) -> str:
    return dataclasses.replace(Case.from_dict(r["case"]), variant=Variant("eager")).key()


def to_csv(rows_: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows_[0]) if rows_ else list(HEAD), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows_)
    return buf.getvalue()


def to_json(rows_: list[dict]) -> str:
    return json.dumps(rows_, indent=1) + "\n"
