"""One flat row per result, for CSV and JSON: `pandas.read_csv(path)` or `pandas.read_json(path)` loads it.

Columns: the case, the estimate between processes and its interval (milliseconds), what the samples say within
a process, compile and correctness figures, the status and flags, the speed-up against the eager result of the
same case on the same machine with its interval and verdict (the numbers the tables and charts show; `speedup_of`
says what it is of: a text-generation case's is per decoded token, as its verdict everywhere, with its whole
`generate()` calls' in `call_*`), text generation's figures, fields a newer compilebench wrote, and the environment
as `env_*`. Raw samples stay in the results file.

A CSV cell of text that starts with =, +, -, @ (or a tab or carriage return) gets a leading apostrophe, so a
spreadsheet shows it rather than running it as a formula; numbers are left as they are."""

from __future__ import annotations

import csv
import io
import json

from compilebench.core import generation, repeat, reproduce, settings, speedups, stats, traffic
from compilebench.core.engines import EngineStart
from compilebench.core.environment import ALWAYS
from compilebench.core.result import Result
from compilebench.core.starts import AotStart, MegaStart
from compilebench.diagnostics import bandwidth, profiling
from compilebench.report import cells, data, shapes
from compilebench.report.view import View

# The case's own figures: every metric its repeats declare a column for (core/repeat.py), then the result's.
RESULT = (*repeat.COLUMNS, "compile_s", "cold_compile_s", "warm_compile_s", "isolation", "message", "inline_model",
          "tag", "looks", "pair_from", "undecided_by")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def rows(view: View) -> list[dict]:
    """Every result (superseded reruns included; `created_at` tells them apart), oldest first."""
    results = sorted(view.results, key=lambda r: r.created_at)
    min_effect = view.min_effect
    env_keys = sorted({*ALWAYS, *(k for r in results for e in r.environments for k in e.fields()),
                       *(k for r in results for rep in r.repeats for k in rep.host_peaks.shown())})
    out = []
    for r in results:
        c, s = r.case, r.stats
        v = c.variant
        row = {
            "result_id": r.result_id,
            "created_at": r.created_at,
            "machine_id": r.machine_id,
            "reproduce": reproduce.command(r),  # the command that measures the case again
            "hardware": data.hardware(r),
            "torch": data.torch_version(r),
            "status": r.status,
            "flags": " ".join(r.flags),
            "model": c.model,
            "label": r.label or c.model,
            "task": r.task or c.task,
            "batch_size": c.batch_size,
            "variant": v.name,
            "variant_label": v.label,
            "backend": v.backend,
            "fullgraph": v.fullgraph, "compile_decoder": v.decoder or None,  # a pipeline's decoder compiled too
            "dynamic": v.dynamic,
            "inductor_options": " ".join(f"{k}={val}" for k, val in v.options),
            **shape_columns(r),
            "environment": c.environment,
            **{k: getattr(c, k) for k in settings.names() if k != "task"},  # the task has its column above
            **s.row(),
            **{k: getattr(r, k) for k in RESULT},
            "iters_per_repeat": "/".join(str(len(rep.samples_ms)) for rep in r.repeats),
            "break_reasons": "; ".join(r.break_reasons),
            "agreement": "; ".join(f"{k}={val:.4f}" for k, val in r.agreement.items()),
            "quality": "; ".join(f"{k}={val:.4g}" for k, val in r.quality.items()),  # --quantize: vs float's
            "achieved_tflops": data.achieved_tflops(r),
            "min_effect": min_effect,
            # unstable: each group of per-process figures, "mean ms (repeats) from-to"
            "unstable_groups": "; ".join(f"{g.mean_ms:.4g} ms ({','.join(map(str, g.repeats))}) {g.started} to "
                                         f"{g.ended}" for g in r.unstable),
        }
        p = data.peak(r)
        row["peak_tflops"], row["peak_math"] = (p.tflops, p.math) if p else (None, None)
        row["peak_fraction"] = data.peak_fraction(r)
        eager = view.eager_of(r)
        row.update({**_verdict_columns(view, r, eager), **_why_columns(r), **_start_columns(r)})
        if c.generation:
            row.update(_generation_columns(view, r, eager))
        row.update({k: _scalar(val) for k, val in r.extra.items()})  # written by a newer compilebench
        row.update({f"env_{k}": environment_cell(r, k) for k in env_keys})
        out.append(row)
    return out


def _verdict_columns(view: View, r: Result, eager: Result | None) -> dict:
    """The speed-up over eager the case's verdict reads, as the report's (`speedup_of`: per decoded token for text
    generation), whether sharing a process moved it, and the calls until compiling pays (whole calls)."""
    metric = generation.verdict_metric(r.case)
    sp = view.speedup(eager, r, metric) if eager is not None else None
    calls = view.speedup(eager, r) if eager is not None else None
    return {"eager_mean_ms": speedups.mean(eager), "speedup_of": "token" if metric else "call",
            **_speedup_columns("", sp, view.min_effect), **_sharing_columns(sp),
            **_break_even_columns(r, eager, calls, view.compile_drift.value)}


def _break_even_columns(r: Result, eager: Result | None, sp, spread: float) -> dict:
    """The calls until compiling has paid for itself, and the same at the ends of the speed-up's interval with the
    compile `spread` shorter or longer (stats.break_even_range; None: never, or no interval); the compile's seconds
    so moved (compile_s_low, compile_s_high: cells.compile_range, a warm compile's where none was cold)."""
    moved = dict(zip(("compile_s_low", "compile_s_high"), cells.compile_range(r, spread) or (None, None)))
    if sp is None:
        return {**dict.fromkeys(("break_even_inferences", "break_even_fewest", "break_even_most")), **moved}
    ends = stats.break_even_range(r.compile_s, speedups.mean(eager), sp.low, sp.high, spread) or (None, None)
    return {"break_even_inferences": stats.break_even(r.compile_s, speedups.mean(eager), r.mean),
            "break_even_fewest": ends[0], "break_even_most": ends[1], **moved}


def environment_cell(r: Result, name: str):
    """A field of the environment its repeats ran in: its value where they agree, else each value (in the order
    met) joined by ' | ' (the GPUs a --gpus run spread its repeats over; a disagreement the report names)."""
    seen: dict[str, object] = {}
    if name.startswith("host_"):  # a CPU's peaks, as the repeat that measured them recorded them
        said = [rep.host_peaks.shown() for rep in r.repeats if rep.host_peaks]
    else:
        said = [env.fields() for env in r.environments or [r.env]]
    for fields in said:
        value = fields.get(name)
        seen.setdefault(json.dumps(value, sort_keys=True, default=str), value)
    if not seen:
        return None
    values = list(seen.values())
    return values[0] if len(values) == 1 else " | ".join("" if v is None else str(v) for v in values)


def _generation_columns(view: View, r: Result, eager: Result | None) -> dict:
    """Text generation: whole calls' speed-up, time to first token and per token with their intervals and
    speed-ups, energy per token, tokens/s, and where the tokens first diverged from eager's."""
    row = _speedup_columns("call_", view.speedup(eager, r) if eager else None, view.min_effect)  # whole calls
    for metric, name in ((generation.TTFT, "ttft"), (generation.PER_TOKEN, "per_token")):
        est = getattr(r.generation, name)
        row[f"{name}_ms"] = est.mean
        row[f"{name}_ci95_low_ms"], row[f"{name}_ci95_high_ms"] = est.ci95_low, est.ci95_high
        row.update(_speedup_columns(f"{name}_", view.speedup(eager, r, metric) if eager else None, view.min_effect))
    tokens = r.case.batch_size * r.case.new_tokens  # every sequence's new tokens: what one generate() call makes
    row["energy_per_token_j"] = r.energy_per_call_j / tokens if r.energy_per_call_j is not None else None
    row["cpu_energy_per_token_j"] = r.cpu_energy_per_call_j / tokens if r.cpu_energy_per_call_j is not None else None
    row["decode_tokens_per_s"] = data.decode_tokens_per_s(r)
    row["e2e_tokens_per_s"] = data.e2e_tokens_per_s(r)
    row["first_divergence"] = min((rep.generation.first_divergence for rep in r.repeats
                                   if rep.generation.first_divergence is not None), default=None)
    return row


SHAPES = ("shapes", "mark_dynamic", "pad_to")  # `compilebench shapes`: empty for a case of one shape


def shape_columns(r: Result) -> dict:
    """What a shapes result served and how (shapes.csv has a row per shape): empty for any other."""
    c = r.case
    return {"shapes": " ".join(c.shapes) or None, "mark_dynamic": c.variant.mark_dynamic or None,
            "pad_to": " ".join(map(str, c.variant.pad_to)) or None}


WHY = ("compile_dynamo_s", "compile_aot_s", "compile_inductor_s", "compile_codegen_s", "compile_cpu_checks_s",
       "recompile_reasons",
       "compile_trace", "profile_trace", "profile_ms", "profile_matmul_conv_ms", "profile_other_kernels_ms",
       "profile_outside_kernels_ms", "profile_op_calls", "profile_gpu_kernels", "bytes_moved", "flop_per_byte",
       "achieved_gbs", "decode_bytes_per_step", "decode_gbs", "decode_gbs_ci95_low", "decode_gbs_ci95_high")


def _why_columns(r) -> dict:
    """The compile's phases and recompile reasons, the compile trace kept, and the profile's split of a call."""
    p = r.profile
    shares = p.shares_ms
    return {
        **r.compile_phases.row(),
        "recompile_reasons": "; ".join(r.recompile_reasons),
        "compile_trace": r.compile_trace.shown,
        "profile_trace": p.trace,
        "profile_ms": p.wall_ms,
        "profile_matmul_conv_ms": shares.get(profiling.MATMUL_CONV),
        "profile_other_kernels_ms": shares.get(profiling.OTHER),
        "profile_outside_kernels_ms": shares.get(profiling.OUTSIDE),
        "profile_op_calls": p.op_calls,
        "profile_gpu_kernels": p.kernels,
        "bytes_moved": r.bytes_moved,
        "flop_per_byte": bandwidth.intensity(r.flops, r.bytes_moved),
        "achieved_gbs": data.achieved_gbs(r),
        "decode_bytes_per_step": r.generation.decode_bytes.per_step,
        **dict(zip(("decode_gbs", "decode_gbs_ci95_low", "decode_gbs_ci95_high"), data.decode_gbs(r) or (None,) * 3)),
    }


START = ("regions", "recompile_limit_hits", *MegaStart.columns(), *AotStart.columns(), *EngineStart.columns())


def _start_columns(r) -> dict:
    """What was compiled and how it starts: the blocks a regional compile compiled (class=count), the frames
    dynamo stopped compiling at its recompile limit, the mega-cache's artifacts and the start they gave, and an
    aot-inductor package's build, size, load and start."""
    return {"regions": " ".join(f"{k}={n}" for k, n in r.regions.items()),
            "recompile_limit_hits": r.recompile_limit_hits, **r.mega_cache.row(), **r.aot_inductor.row(),
            **r.engine.row()}


SHARING = ("alone_over_interleaved", "alone_over_interleaved_ci95_low", "alone_over_interleaved_ci95_high",
           "speedup_alone", "speedup_alone_ci95_low", "speedup_alone_ci95_high", "verdict_withheld")


def _sharing_columns(s: speedups.Speedup | None) -> dict:
    """An interleaved speed-up against the one its variants' warm-ups, each timed alone, give (core/sharing.py): 1
    where sharing the process changed nothing; empty where they shared none, or too few warm-ups were long enough.
    `speedup_alone`: the speed-up those warm-ups give. `verdict_withheld`: the verdict its interval gave where that
    change could undo it (`verdict` then says inconclusive)."""
    found = s.sharing if s is not None else None
    if found is None:
        return dict.fromkeys(SHARING)
    return dict(zip(SHARING, (found.value, found.low, found.high, found.alone, found.alone_low, found.alone_high,
                              s.withheld)))


def _speedup_columns(prefix: str, s: speedups.Speedup | None, min_effect: float) -> dict:
    return {
        f"{prefix}speedup": s.value if s else None,
        f"{prefix}speedup_ci95_low": s.low if s else None,
        f"{prefix}speedup_ci95_high": s.high if s else None,
        f"{prefix}improvement_pct": s.improvement if s else None,
        f"{prefix}improvement_ci95_low_pct": s.improvement_interval[0] if s else None,
        f"{prefix}improvement_ci95_high_pct": s.improvement_interval[1] if s else None,
        f"{prefix}verdict": s.verdict if s else None,
        f"{prefix}paired": s.paired if s else None,
        f"{prefix}paired_by": s.paired_by if s else None,  # "process" (--interleave) or "round"
        f"{prefix}across_runs_drift": s.drift if s else None,  # measured in different runs: the drift its interval holds
        # the smallest effect it could tell from none (its interval's half-width), and about how many processes (or
        # rounds) a side would decide it at the same estimate and spread: an undecided reading's reach
        f"{prefix}reach_pct": s.reach * 100 if s and s.reach is not None else None,
        f"{prefix}rounds_to_decide": s.rounds_to_decide(min_effect) if s else None,
        # a paired reading whose pairs fell into two groups far apart: each group's speed-up (its repeats)
        f"{prefix}speedup_groups": "; ".join(f"{v:.4g}x ({','.join(map(str, reps))})" for v, reps in s.groups)
        if s and s.groups else None,
    }


def _scalar(value):
    return json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value


def _safe(value):
    """A text cell a spreadsheet would run as a formula, shown as text instead."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value


def to_csv(rows_: list[dict]) -> str:
    buf = io.StringIO()
    fields = list(dict.fromkeys(k for r in rows_ for k in r)) or ["result_id", "status"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: _safe(v) for k, v in r.items()} for r in rows_)
    return buf.getvalue()


def to_json(rows_: list[dict]) -> str:
    return json.dumps(rows_, indent=1) + "\n"


def _catch_up_columns(m, s, requests: int) -> dict:
    """When a setting catches up with no compile, with the 95% interval between its processes' own (None: never,
    no interval, or no compile itself)."""
    b, low, high, _ = shapes.catch_up(m, s, requests) or (None, None, None, 0)
    return {"catches_up_after": b, "catches_up_ci95_low": low, "catches_up_ci95_high": high}


def shape_rows(view) -> list[dict]:
    """One flat row per setting and shape (shapes.csv, shapes.json, `Results.to_pandas()` of a shapes run)."""
    out = []
    for m in shapes.models(view):
        for s in m.settings:
            total = shapes.serve_time(s, m, view.requests)
            sp = shapes.versus(view, m, s, view.requests)
            for t, p in s.result.shapes.per_shape.items():
                shape, est, ssp = traffic.Shape.parse(t), p.steady, shapes.shape_versus(view, m, s, t)
                out.append({
                    "hardware": m.hardware, "torch": m.torch, "model": s.result.case.model, "label": m.label,
                    "setting": s.name, "variant_label": s.result.case.variant.label, "status": s.result.status,
                    "result_id": s.result.result_id, "shape": t, "batch_size": shape.batch,
                    "image_size": f"{shape.image[0]}x{shape.image[1]}" if shape.image else None,
                    "prompt_len": shape.prompt, "lora_rank": shape.lora, "lora_swap_s": p.swap_s,
                    "served_as": p.served_as, "mix_share": m.mix[t], "first_call_s": p.first_call_s,
                    "graphs_compiled": p.compiles, "compile_s": p.compile_s,
                    "recompile_reasons": "; ".join(p.recompile_reasons), "second_pass_compiles": p.second_compiles,
                    "recompile_limit_hits": p.limit_hits, "steady_ms": est.mean, "steady_ci95_low_ms": est.ci95_low,
                    "steady_ci95_high_ms": est.ci95_high, "repeats": est.repeats, "speedup": ssp.value if ssp else None,
                    "speedup_verdict": str(ssp.verdict) if ssp else None, "max_rel_err": p.max_rel_err,
                    "correct": not p.problems if p.max_rel_err is not None else None,
                    "peak_mem_bytes": s.result.peak_mem_bytes, "requests": view.requests,
                    "serve_s": total[0] if total else None, "serve_ci95_low_s": total[1] if total else None,
                    "serve_ci95_high_s": total[2] if total else None, "serve_speedup": sp.value if sp else None,
                    "serve_verdict": str(sp.verdict) if sp else None,
                    **_catch_up_columns(m, s, view.requests),
                    "settles": s.settles,
                })
    return out
