"""Every table of a report, as plain data (title, header, rows of strings); markdown and HTML render them.

The guide's table: one per (hardware, batch size); rows `Task/Model` in the guide's order; a column per torch
version and variant (`torch 2.13 - no compile`, `torch 2.13 - compile`); mean ms to 3 decimals, `OOM` where
memory ran out and the status word for other failures; beside them the % improvement and the compile seconds.
The guide's other two tables compare torch versions and compile modes, rows `Task/Model` x `Batch Size`."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from compilebench import stats
from compilebench.envinfo import hardware_name
from compilebench.report import data
from compilebench.report.data import Column, Group
from compilebench.spec import VARIANTS


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)  # lines shown under the table ("- " starts a list item)


def cell(r: dict | None) -> str:
    """A guide cell: the mean, `OOM`, the status word of another failure, or empty where nothing was measured."""
    if r is None:
        return ""
    if r["status"] == "ok":
        return f"{r['stats']['mean']:.3f}"
    return "OOM" if r["status"] == "oom" else r["status"]


def pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}%"


def num(x: float | None, digits: int | None) -> str:
    if x is None:
        return ""
    return f"{x:.{digits}f}" if digits is not None else f"{x:.2e}"


def _tag(c: Column, torch: bool = False, default: bool = False) -> str:
    """What tells one compiled column from another in the headers beside it: '', ' (reduce-overhead)',
    ' (torch 2.1, tiny config)'. `default` names the default mode too (where modes sit side by side)."""
    mode = c.variant.label.removeprefix("compile").strip(" ()")
    words = ([f"torch {c.torch}"] if torch else []) + ([mode] if mode else ["default"] if default else []) + list(c.settings)
    return f" ({', '.join(words)})" if words else ""


def guide_table(g: Group, versions: int) -> Table:
    """The guide's table for one group. `versions`: how many torch versions the whole report holds, to say
    which version a % improvement belongs to only when there is a choice."""
    header = ["Task/Model"] + [c.header for c in g.columns]
    for c in g.compiled_columns:
        tag = _tag(c, torch=versions > 1)
        header += [f"% improvement{tag}", f"compile s{tag}"]
    rows = []
    for model in g.models:
        row = [g.label(model)] + [cell(g.cells.get((model, c))) for c in g.columns]
        for c in g.compiled_columns:
            comp = g.cells.get((model, c))
            row.append(pct(data.improvement(g.cells.get((model, c.eager)), comp)))
            row.append(num(comp.get("compile_s"), 1) if comp else "")
        rows.append(row)
    return Table(g.title, header, rows)


def guide_tables(results: list[dict]) -> list[Table]:
    versions = len(data.torch_labels(results))
    return [guide_table(g, versions) for g in data.groups(results)]


def summary_table(results: list[dict]) -> Table:
    """Per hardware, batch size and compiled column: the geometric-mean speed-up over the models measured ok both
    ways, and the best and worst model."""
    rows = []
    for g in data.groups(results):
        for c in g.compiled_columns:
            pairs = []
            for model in g.models:
                s = data.speedup(g.cells.get((model, c.eager)), g.cells.get((model, c)))
                if s is not None:
                    pairs.append((s, g.label(model)))
            not_ok = sum(1 for m in g.models if (r := g.cells.get((m, c))) is not None and r["status"] != "ok")
            if pairs:
                geo = math.exp(sum(math.log(s) for s, _ in pairs) / len(pairs))
                best, worst = max(pairs), min(pairs)
                rows.append([g.hardware, str(g.batch_size), c.header, str(len(pairs)), f"{geo:.2f}x",
                             f"{best[1]} ({best[0]:.2f}x)", f"{worst[1]} ({worst[0]:.2f}x)", str(not_ok)])
            else:
                rows.append([g.hardware, str(g.batch_size), c.header, "0", "", "", "", str(not_ok)])
    return Table(
        "",
        ["hardware", "batch size", "compiled variant", "models", "geomean speed-up", "best", "worst", "compiled not ok"],
        rows,
        notes=["speed-up = eager mean / compiled mean (1.25x: the compiled model takes 80% of the time), over the "
               "models measured ok both ways"],
    )


def speedup_table(results: list[dict]) -> Table:
    """Every compiled result against its eager baseline: the speed-up with its 95% CI and a verdict, and what
    compiling cost: compile seconds and the inferences it takes to pay them back."""
    rows = []
    for g in data.groups(results):
        for c in g.compiled_columns:
            for model in g.models:
                eager, comp = g.cells.get((model, c.eager)), g.cells.get((model, c))
                if comp is None:
                    continue
                row = [g.hardware, g.label(model), str(g.batch_size), c.header, comp["status"]]
                if data.mean(eager) and data.mean(comp):
                    s, low, high = stats.speedup_ci(eager["stats"], comp["stats"])
                    be = stats.break_even(comp.get("compile_s"), data.mean(eager), data.mean(comp))
                    row += [f"{s:.3f}x", f"{low:.3f}-{high:.3f}" if low is not None else "", stats.speedup_verdict(low, high),
                            num(comp.get("compile_s"), 1), "never" if be is None else f"{be:,.0f}"]
                else:
                    row += ["", "", "", num(comp.get("compile_s"), 1), ""]
                rows.append(row + [_memory_ratio(eager, comp)])
    return Table(
        "",
        ["hardware", "Task/Model", "batch", "compiled variant", "status", "speed-up", "95% CI", "verdict", "compile s",
         "break-even (inferences)", "peak memory compiled / eager"],
        rows,
        notes=["speed-up = eager mean / compiled mean; its 95% CI propagates the uncertainty of both means. The verdict "
               "is faster or slower only when the whole interval lies on one side of 1.",
               "break-even: compile seconds / per-inference saving, the number of inferences after which compiling "
               "has paid for itself; never when the compiled model saves nothing.",
               "peak memory: CUDA max_memory_allocated of each case on a GPU; on a CPU the process's peak RSS, which for "
               "a compiled case includes the compiler itself."],
    )


def _memory_ratio(eager: dict | None, compiled: dict) -> str:
    e, c = (eager or {}).get("peak_mem_bytes"), compiled.get("peak_mem_bytes")
    if not e or not c or (eager or {}).get("peak_mem_kind") != compiled.get("peak_mem_kind"):
        return ""
    return f"{c / e:.2f}x ({c / 2**20:,.0f} / {e / 2**20:,.0f} MiB)"


def recommendation_table(results: list[dict]) -> Table:
    """Per hardware, torch version, batch size and model: the fastest variant measured ok (correct, no recompile)
    that is significantly faster than plain eager, with its speed-up, CI and break-even; else no compile."""
    rows = []
    for g in data.groups(results):
        for torch_label in dict.fromkeys(c.torch for c in g.columns):
            eagers = [c for c in g.columns if c.torch == torch_label and not c.variant.compiled]
            if not eagers:
                continue
            baseline = min(eagers, key=lambda c: len(c.settings))  # plain eager where there is one
            for model in g.models:
                base = g.cells.get((model, baseline))
                if data.mean(base) is None:
                    continue
                best = None
                for c in g.columns:
                    r = g.cells.get((model, c))
                    if c == baseline or c.torch != torch_label or data.mean(r) is None:
                        continue
                    s, low, high = stats.speedup_ci(base["stats"], r["stats"])
                    if stats.speedup_verdict(low, high) == "faster" and (best is None or s > best[1]):
                        best = (c, s, low, high, r)
                row = [g.hardware, f"torch {torch_label}", str(g.batch_size), g.label(model)]
                if best is None:
                    row += ["no compile", "", "", "", "nothing measured is significantly faster than eager"]
                else:
                    c, s, low, high, r = best
                    be = stats.break_even(r.get("compile_s"), data.mean(base), data.mean(r)) if c.variant.compiled else 0
                    row += [c.header.removeprefix(f"torch {torch_label} - "), f"{s:.3f}x", f"{low:.3f}-{high:.3f}",
                            "never" if be is None else f"{be:,.0f}", ""]
                rows.append(row)
    return Table(
        "",
        ["hardware", "torch", "batch", "Task/Model", "recommended", "speed-up", "95% CI", "break-even (inferences)", "why"],
        rows,
        notes=["The fastest variant measured ok (outputs within tolerance of eager, no recompile while timed) whose "
               "speed-up over plain eager float32 is significant at 95%. A lower-precision variant is checked against "
               "eager in its own dtype: decide separately whether that precision is acceptable for your task."],
    )


def _by_hardware(results: list[dict]) -> dict[str, list[Group]]:
    out: dict[str, list[Group]] = defaultdict(list)
    for g in data.groups(results):
        out[g.hardware].append(g)
    return out


def _batch_rows(groups: list[Group], columns: list[Column], extra) -> list[list[str]]:
    """Rows Task/Model x Batch Size over several groups of one hardware, in the guide's model order."""
    models = data.model_order([r for g in groups for r in g.results])
    rows = []
    for model in models:
        for g in groups:
            if model not in g.models:
                continue
            row = [g.label(model), str(g.batch_size)] + [cell(g.cells.get((model, c))) for c in columns]
            rows.append(row + extra(g, model))
    return rows


def version_tables(results: list[dict]) -> list[Table]:
    """The guide's "PyTorch Nightly" section: per hardware holding more than one torch version, every version's
    eager and compiled means side by side, and how much the newest changed each against the oldest."""
    tables = []
    for hw, groups in _by_hardware(results).items():
        columns = sorted({c for g in groups for c in g.columns})
        versions = list(dict.fromkeys(c.torch for c in columns))
        if len(versions) < 2:
            continue
        old, new = versions[0], versions[-1]
        pairs = [(c, n) for c in columns if c.torch == old for n in columns
                 if n.torch == new and (n.variant, n.settings) == (c.variant, c.settings)]

        def extra(g, model):
            return [pct(_change(g.cells.get((model, a)), g.cells.get((model, b)))) for a, b in pairs]

        header = ["Task/Model", "Batch Size"] + [c.header for c in columns]
        header += [data.with_settings(f"% faster torch {new} vs {old}, {a.variant.label}", a.settings) for a, _ in pairs]
        tables.append(Table(f"{hw}: torch versions", header, _batch_rows(groups, columns, extra)))
    return tables


def _change(old: dict | None, new: dict | None) -> float | None:
    o, n = data.mean(old), data.mean(new)
    return stats.improvement_pct(o, n) if o and n else None


def mode_tables(results: list[dict]) -> list[Table]:
    """The guide's "Reduce Overhead" section: per hardware and torch version holding more than one compile mode,
    eager and every mode side by side with each mode's % improvement."""
    tables = []
    for hw, groups in _by_hardware(results).items():
        columns = sorted({c for g in groups for c in g.columns})
        for torch_label in dict.fromkeys(c.torch for c in columns):
            for setting in dict.fromkeys(c.settings for c in columns):
                mine = [c for c in columns if c.torch == torch_label and c.settings == setting]
                compiled = [c for c in mine if c.variant.compiled]
                if len(compiled) < 2:
                    continue

                def extra(g, model, compiled=compiled):
                    return [pct(data.improvement(g.cells.get((model, c.eager)), g.cells.get((model, c)))) for c in compiled]

                header = ["Task/Model", "Batch Size"] + [c.header for c in mine]
                header += [f"% improvement{_tag(c, default=True)}" for c in compiled]
                title = data.with_settings(f"{hw}: compile modes, torch {torch_label}", setting)
                tables.append(Table(title, header, _batch_rows(groups, mine, extra)))
    return tables


def details_table(results: list[dict]) -> Table:
    """Every result with its noise: the numbers behind each guide cell, and why a cell is not a number."""
    order = {m: i for i, m in enumerate(data.model_order(results))}
    results = sorted(data.latest(results), key=lambda r: (
        data.hardware(r), data.torch_version(r), r["case"]["batch_size"], order[r["case"]["model"]],
        data.settings(r), VARIANTS.index(r["case"]["variant"]["mode"]), r["created_at"]))
    rows, boards = [], set()
    for r in results:
        s = r.get("stats") or {}
        measured = data.measured_mean(r) is not None
        cv = s.get("cv") if measured else None
        fraction, p = data.peak_fraction(r), data.peak(r)
        rows.append([
            data.hardware(r),
            f"torch {data.torch_version(r)}",
            r["case"]["model"],
            str(r["case"]["batch_size"]),
            data.with_settings(data.variant_of(r).label, data.settings(r)),
            r["status"] + (" (stopped by --max-time)" if r.get("stopped_early") else ""),
            num(s.get("mean"), 3) if measured else "",
            f"{s['ci95_low']:.3f}-{s['ci95_high']:.3f}" if measured else "",
            num(s.get("median"), 3) if measured else "",
            "" if cv is None else f"{cv * 100:.1f}%" + (" noisy" if cv > stats.NOISY_CV else ""),
            str(s.get("n") or 0),
            num(r.get("first_call_s"), 2),
            num(r.get("compile_s"), 2),
            num(r.get("max_rel_err"), None),
            f"{r['flops'] / 1e9:.3g}" if r.get("flops") else "",  # significant digits: tiny configs are MFLOPs
            f"{data.achieved_tflops(r):.3g}" if data.achieved_tflops(r) is not None else "",
            f"{fraction * 100:.1f}% {p.math}" if fraction is not None else "",
        ])
        if p:
            boards.add(f"{p.device} {p.math} {p.tflops:g}")
    noisy = any((r.get("stats") or {}).get("cv") and r["stats"]["cv"] > stats.NOISY_CV for r in results)
    notes = [f"- {r['case']['model']} b{r['case']['batch_size']} {data.variant_of(r).label}: {r['status']}: "
             f"{r.get('message') or ''}".rstrip() for r in results if r["status"] != "ok"]
    return Table(
        "",
        ["hardware", "torch", "model", "batch", "variant", "status", "mean ms", "95% CI ms", "median ms", "CV", "N",
         "first call s", "compile s", "max rel err", "GFLOP", "TFLOP/s", "of peak"],
        rows,
        notes=([f"noisy: {stats.NOISE_REMEDY}."] if noisy else [])
        + ([f"of peak: achieved TFLOP/s over the datasheet's dense peak TFLOP/s ({'; '.join(sorted(boards))}); "
            "float32 counts as TF32 when TF32 was allowed for matmuls or convolutions."] if boards else [])
        + ((["Not ok:"] + notes) if notes else []),
    )


ENV_FIELDS = ("hostname", "device_name", "device", "cuda_visible_devices", "driver", "cuda", "torch", "transformers", "triton", "python",
              "os", "cpu", "cpu_count", "cpu_affinity", "torch_threads", "float32_matmul_precision", "tf32_matmul", "tf32_cudnn",
              "compilebench")


def environment_tables(results: list[dict]) -> list[Table]:
    """One table per machine: what was installed and set when its results were measured."""
    machines: dict[str, dict] = {}
    for r in sorted(results, key=lambda r: r["created_at"]):
        machines[r["machine_id"]] = r.get("env") or {}
    tables = []
    for machine, env in machines.items():
        keys = [k for k in ENV_FIELDS if k in env] + sorted(k for k in env if k not in ENV_FIELDS)
        rows = [[k, "" if env[k] is None else str(env[k])] for k in keys]
        tables.append(Table(f"{hardware_name(env)}: {machine}", ["field", "value"], rows))
    return tables
