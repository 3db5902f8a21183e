"""Every table of a report, as plain data (title, header, rows of strings); markdown and HTML render them.

The guide's table: one per (hardware, batch size); rows `Task/Model` in the guide's order; a column per torch
version and variant (`torch 2.13 - no compile`, `torch 2.13 - compile`); mean ms to 3 decimals, `OOM` where
memory ran out and the status word for other failures; beside them the % improvement with its 95% interval and
verdict, and the compile seconds. The guide's other two tables compare torch versions and compile modes, rows
`Task/Model` x `Batch Size`. Every speed-up comes from comparison.speedup, so all tables, charts and files agree."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from compilebench import comparison, stats
from compilebench.comparison import Speedup
from compilebench.report import data
from compilebench.report.data import Column, Group
from compilebench.result import Result
from compilebench.stats import Estimate
from compilebench.vocab import CLOCK, CUDAGRAPHS_SKIPPED, FLAGS, INCONCLUSIVE_REMEDY, VERDICTS, Verdict

MIN_EFFECT = stats.DEFAULT_MIN_EFFECT


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)  # lines shown under the table ("- " starts a list item)


# Flags that change what a number is (another clock's time, a CUDA-graph mode without graphs): named in the cell.
CELL_FLAGS = (CLOCK.name, CUDAGRAPHS_SKIPPED.name)


def cell(r: Result | None) -> str:
    """A guide cell: the mean (with a flag that changes what it is), `OOM`, the status word of another failure, or
    empty where nothing was measured."""
    if r is None:
        return ""
    if r.status == "ok":
        marks = [f for f in r.flags if f in CELL_FLAGS]
        return f"{r.stats.mean:.3f}" + (f" ({', '.join(marks)})" if marks else "")
    return "OOM" if r.status == "oom" else r.status


def pct(x: float | None) -> str:
    return "" if x is None else f"{x:.1f}%"


def num(x: float | None, digits: int | None) -> str:
    if x is None:
        return ""
    return f"{x:.{digits}f}" if digits is not None else f"{x:.2e}"


def interval(low: float | None, high: float | None, fmt: str = "{:.1f}%") -> str:
    return "" if low is None or high is None else f"{fmt.format(low)} to {fmt.format(high)}"


def improvement_cells(s: Speedup | None) -> list[str]:
    """% improvement, its 95% interval, the verdict."""
    if s is None:
        return ["", "", ""]
    return [pct(s.improvement), interval(*s.improvement_interval), s.verdict]


def speedup_cells(s: Speedup | None) -> list[str]:
    if s is None:
        return ["", "", ""]
    return [f"{s.value:.3f}x", interval(s.low, s.high, "{:.3f}x"), s.verdict]


VERDICT_NOTE = ("verdict: faster or slower when the whole 95% interval of the speed-up lies beyond the minimum effect "
                "({effect}) either way; same when it lies inside it; inconclusive otherwise: {remedy}.")


def verdict_note(min_effect: float) -> str:
    return VERDICT_NOTE.format(effect=f"{min_effect:.0%}" if min_effect * 100 == int(min_effect * 100) else f"{min_effect:.1%}",
                               remedy=INCONCLUSIVE_REMEDY)


def _tag(c: Column, torch: bool = False, default: bool = False) -> str:
    """What tells one compiled column from another in the headers beside it: '', ' (reduce-overhead)',
    ' (torch 2.1, tiny config)'. `default` names the default mode too (where modes sit side by side)."""
    mode = c.variant.label.removeprefix("compile").strip(" ()")
    words = ([f"torch {c.torch}"] if torch else []) + ([mode] if mode else ["default"] if default else []) + list(c.settings)
    return f" ({', '.join(words)})" if words else ""


def guide_table(g: Group, versions: int, min_effect: float = MIN_EFFECT) -> Table:
    """The guide's table for one group. `versions`: how many torch versions the whole report holds, to say
    which version a % improvement belongs to only when there is a choice."""
    header = ["Task/Model"] + [c.header for c in g.columns]
    for c in g.compiled_columns:
        tag = _tag(c, torch=versions > 1)
        header += [f"% improvement{tag}", f"95% CI{tag}", f"verdict{tag}", f"compile s{tag}"]
    rows = []
    for model in g.models:
        row = [g.label(model)] + [cell(g.cells.get((model, c))) for c in g.columns]
        for c in g.compiled_columns:
            comp = g.cells.get((model, c))
            row += improvement_cells(comparison.speedup(g.cells.get((model, c.eager)), comp, min_effect))
            row.append(num(comp.compile_s, 1) if comp else "")
        rows.append(row)
    notes = [verdict_note(min_effect)] if g.compiled_columns else []
    return Table(g.title, header, rows, notes)


def guide_tables(results: list[Result], min_effect: float = MIN_EFFECT) -> list[Table]:
    versions = len(data.torch_labels(results))
    return [guide_table(g, versions, min_effect) for g in data.groups(results) if not g.generation]


def summary_table(results: list[Result], min_effect: float = MIN_EFFECT) -> Table:
    """Per hardware, batch size and compiled column: the geometric-mean speed-up over the models measured ok both
    ways, how many verdicts of each kind, and the best and worst model."""
    rows = []
    for g in data.groups(results):
        for c in g.compiled_columns:
            pairs, verdicts = [], defaultdict(int)
            for model in g.models:
                s = comparison.speedup(g.cells.get((model, c.eager)), g.cells.get((model, c)), min_effect)
                if s is not None:
                    pairs.append((s.value, g.label(model)))
                    verdicts[s.verdict] += 1
            not_ok = sum(1 for m in g.models if (r := g.cells.get((m, c))) is not None and r.status != "ok")
            counts = ", ".join(f"{verdicts[v]} {v}" for v in VERDICTS if verdicts[v])
            if pairs:
                geo = math.exp(sum(math.log(s) for s, _ in pairs) / len(pairs))
                best, worst = max(pairs), min(pairs)
                rows.append([g.hardware, str(g.batch_size), c.header, str(len(pairs)), f"{geo:.2f}x", counts,
                             f"{best[1]} ({best[0]:.2f}x)", f"{worst[1]} ({worst[0]:.2f}x)", str(not_ok)])
            else:
                rows.append([g.hardware, str(g.batch_size), c.header, "0", "", "", "", "", str(not_ok)])
    return Table(
        "",
        ["hardware", "batch size", "compiled variant", "models", "geomean speed-up", "verdicts", "best", "worst",
         "compiled not ok"],
        rows,
        notes=["speed-up = eager time / compiled time (1.25x: the compiled model takes 80% of the time), over the "
               "models measured ok both ways; each model's verdict needs its 95% interval clear of the minimum effect."],
    )


def flags_note(results: list[Result]) -> list[str]:
    """How many results carry each flag, each with its remedy."""
    counts = data.flag_counts(results)
    return [f"- {flag}: {n} result(s). {FLAGS[flag].remedy[0].upper()}{FLAGS[flag].remedy[1:]}." for flag, n in counts.items() if n]


def speedup_table(results: list[Result], min_effect: float = MIN_EFFECT) -> Table:
    """Every compiled result against its eager baseline: the speed-up with its 95% interval and verdict, and
    what compiling cost: cold and warm compile seconds and the inferences it takes to pay them back."""
    rows = []
    for g in data.groups(results):
        for c in g.compiled_columns:
            for model in g.models:
                eager, comp = g.cells.get((model, c.eager)), g.cells.get((model, c))
                if comp is None:
                    continue
                s = comparison.speedup(eager, comp, min_effect)
                row = [g.hardware, g.label(model), str(g.batch_size), c.header, comp.status, *speedup_cells(s),
                       "paired" if s and s.paired else ("" if s is None else "unpaired"),
                       num(comp.cold_compile_s, 1), num(comp.warm_compile_s, 1)]
                if s is not None:
                    be = stats.break_even(comp.compile_s, comparison.mean(eager), comp.mean)
                    row.append("never" if be is None else f"{be:,.0f}")
                else:
                    row.append("")
                rows.append(row + [_memory_ratio(eager, comp)])
    return Table(
        "",
        ["hardware", "Task/Model", "batch", "compiled variant", "status", "speed-up", "95% CI", "verdict", "interval from",
         "cold compile s", "warm compile s", "break-even (inferences)", "peak memory compiled / eager"],
        rows,
        notes=["speed-up = eager time / compiled time, from each side's per-process means (geometric, in log space): "
               "the interval widens with how much a rerun moves. Paired: the variants shared each process "
               "(--interleave), and the interval comes from the per-process ratios.",
               verdict_note(min_effect),
               "cold compile: the first repeat, from an empty compiler state; warm: later repeats, from the on-disk "
               "state the first left. break-even: cold compile seconds / per-inference saving, the number of "
               "inferences after which compiling has paid for itself; never when the compiled model saves nothing.",
               "peak memory: CUDA max_memory_allocated of each case on a GPU; on a CPU the process's peak RSS, which for "
               "a compiled case includes the compiler itself."],
    )


def _memory_ratio(eager: Result | None, compiled: Result) -> str:
    e, c = eager and eager.peak_mem_bytes, compiled.peak_mem_bytes
    if not e or not c or eager.peak_mem_kind != compiled.peak_mem_kind:
        return ""
    return f"{c / e:.2f}x ({c / 2**20:,.0f} / {e / 2**20:,.0f} MiB)"


def recommendation_table(results: list[Result], min_effect: float = MIN_EFFECT) -> Table:
    """Per hardware, torch version, batch size and model: the fastest variant measured ok (correct, no recompile)
    whose verdict against plain eager is `faster`, with its speed-up, interval and break-even; else no compile."""
    rows = []
    for g in data.groups(results):
        for torch_label in dict.fromkeys(c.torch for c in g.columns):
            eagers = [c for c in g.columns if c.torch == torch_label and not c.variant.compiled]
            if not eagers:
                continue
            baseline = min(eagers, key=lambda c: (len(c.settings), c.variant.order))  # plain eager where there is one
            for model in g.models:
                base = g.cells.get((model, baseline))
                if comparison.mean(base) is None:
                    continue
                others = [(c, g.cells.get((model, c))) for c in g.columns if c != baseline and c.torch == torch_label]
                measured = [(cr, comparison.speedup(base, cr[1], min_effect)) for cr in others]
                undecided = sum(1 for _, s in measured if s is not None and s.verdict == Verdict.inconclusive)
                picked = comparison.best(measured)
                best = (picked[0][0], picked[1], picked[0][1]) if picked else None
                row = [g.hardware, f"torch {torch_label}", str(g.batch_size), g.label(model)]
                if best is None:
                    why = (f"nothing measured is faster than eager beyond {min_effect:.0%}"
                           + (f" ({undecided} inconclusive: more repeats or --interleave may decide)" if undecided else ""))
                    row += ["no compile", "", "", "", why]
                else:
                    c, s, r = best
                    be = stats.break_even(r.compile_s, comparison.mean(base), r.mean) if c.variant.compiled else 0
                    row += [c.header.removeprefix(f"torch {torch_label} - "), f"{s.value:.3f}x",
                            interval(s.low, s.high, "{:.3f}x"), "never" if be is None else f"{be:,.0f}", ""]
                rows.append(row)
    return Table(
        "",
        ["hardware", "torch", "batch", "Task/Model", "recommended", "speed-up", "95% CI", "break-even (inferences)", "why"],
        rows,
        notes=["The fastest variant measured ok (outputs within tolerance of eager, no recompile while timed) whose "
               f"speed-up over plain eager is `faster`: its whole 95% interval above {min_effect:.0%}. A lower-precision "
               "variant is checked against eager in its own dtype: decide separately whether that precision is "
               "acceptable for your task."],
    )


def _by_hardware(results: list[Result]) -> dict[str, list[Group]]:
    out: dict[str, list[Group]] = defaultdict(list)
    for g in data.groups(results):
        if not g.generation:
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


def version_tables(results: list[Result], min_effect: float = MIN_EFFECT) -> list[Table]:
    """The guide's "PyTorch Nightly" section: per hardware holding more than one torch version, every version's
    eager and compiled means side by side, and how much the newest changed each against the oldest, with verdict."""
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
            out = []
            for a, b in pairs:
                s = comparison.speedup(g.cells.get((model, a)), g.cells.get((model, b)), min_effect)
                out.append("" if s is None else f"{pct(s.improvement)} ({s.verdict})")
            return out

        header = ["Task/Model", "Batch Size"] + [c.header for c in columns]
        header += [data.with_settings(f"% faster torch {new} vs {old}, {a.variant.label}", a.settings) for a, _ in pairs]
        tables.append(Table(f"{hw}: torch versions", header, _batch_rows(groups, columns, extra), [verdict_note(min_effect)]))
    return tables


def mode_tables(results: list[Result], min_effect: float = MIN_EFFECT) -> list[Table]:
    """The guide's "Reduce Overhead" section: per hardware and torch version holding more than one compile mode,
    eager and every mode side by side with each mode's % improvement and verdict."""
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
                    out = []
                    for c in compiled:
                        s = comparison.speedup(g.cells.get((model, c.eager)), g.cells.get((model, c)), min_effect)
                        out.append("" if s is None else f"{pct(s.improvement)} ({s.verdict})")
                    return out

                header = ["Task/Model", "Batch Size"] + [c.header for c in mine]
                header += [f"% improvement{_tag(c, default=True)}" for c in compiled]
                title = data.with_settings(f"{hw}: compile modes, torch {torch_label}", setting)
                tables.append(Table(title, header, _batch_rows(groups, mine, extra), [verdict_note(min_effect)]))
    return tables


def _estimate(summary: Estimate | None, digits: int = 3) -> tuple[str, str]:
    """An estimate between processes and its interval, as cells."""
    if not summary or summary.mean is None:
        return "", ""
    return f"{summary.mean:.{digits}f}", interval(summary.ci95_low, summary.ci95_high, f"{{:.{digits}f}}")


def generation_tables(results: list[Result], min_effect: float = MIN_EFFECT) -> list[Table]:
    """Text generation, one table per (hardware, batch size, prompt length, new tokens): per model and variant the
    time to first token, the time per decoded token and tokens per second, each with its interval, and against
    eager the % improvement of each with its interval and verdict."""
    tables = []
    for g in data.groups(results):
        if not g.generation:
            continue
        rows = []
        for model in g.models:
            for c in g.columns:
                r = g.cells.get((model, c))
                if r is None:
                    continue
                gen = r.generation
                ok = comparison.mean(r) is not None
                ttft, ttft_ci = _estimate(gen.get("ttft") if ok else None)
                tok, tok_ci = _estimate(gen.get("per_token") if ok else None)
                row = [g.label(model), c.header, r.status, ttft, ttft_ci, tok, tok_ci,
                       num(data.decode_tokens_per_s(r), 1), num(data.e2e_tokens_per_s(r), 1)]
                base = g.cells.get((model, c.eager)) if c != c.eager else None
                for metric in (data.TTFT, data.PER_TOKEN):
                    s = comparison.speedup(base, r, min_effect, metric) if base is not None else None
                    row.append("" if s is None else f"{pct(s.improvement)} ({interval(*s.improvement_interval)}) {s.verdict}")
                first = r.repeats[0].generation.get("first_calls") or [] if r.repeats else []
                row.append(" / ".join(f"{f['total_ms'] / 1e3:.2f}" for f in first))
                rows.append(row)
        tables.append(Table(
            g.title,
            ["Task/Model", "variant", "status", "TTFT ms", "TTFT 95% CI", "ms/token", "ms/token 95% CI",
             "decode tokens/s", "end-to-end tokens/s", "TTFT vs no compile", "per token vs no compile",
             "first calls s (repeat 1)"],
            rows,
            notes=["TTFT: time to first token (the prefill). ms/token: each decoded token after the first. Tokens/s "
                   "count every sequence of the batch. vs no compile: % improvement (95% interval) and verdict "
                   "against eager generation with the dynamic cache.", verdict_note(min_effect),
                   "first calls: the first generate() calls of the first repeat, one by one: compiling (prefill and "
                   "decode compile apart; CUDA graphs record on later calls) ends where they level off."],
        ))
    return tables
