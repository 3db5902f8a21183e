"""Every table of a report, read from one View and declared as (column name, value) pairs.

The guide's table: one per (hardware, batch size); rows `Task/Model` in the guide's order; a column per torch
version and variant (`torch 2.13 - no compile`, `torch 2.13 - compile`); ms to 3 decimals (the estimate over
processes: core/stats.per_process), `OOM` where
memory ran out and the status word for other failures; beside them the % improvement with its 95% interval and
verdict, and the compile seconds. The guide's other two tables compare torch versions and compile modes, rows
`Task/Model` x `Batch Size`. Every speed-up is the View's, so all tables, charts and files agree."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from compilebench.core import generation, sequential, speedups, stats
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.core.stats import Estimate
from compilebench.core.vocab import FLAGS, Verdict
from compilebench.report import data, quantization
from compilebench.report.cells import (
    COLD_OR_WARM,
    Columns,
    Table,
    break_even,
    break_even_range,
    cell,
    compile_note,
    compile_s,
    improvement,
    improvement_interval,
    improvement_verdict,
    interval,
    may_decide,
    num,
    pct,
    ranged,
    ratio,
    ratio_interval,
    spread_said,
    table,
    verdict,
    verdict_note,
)
from compilebench.report.data import Column
from compilebench.report.view import Group, View


def _tag(c: Column, torch: bool = False, default: bool = False) -> str:
    """What tells one compiled column from another in the headers beside it: '', ' (reduce-overhead)',
    ' (torch 2.1, tiny config)'. `default` names the default mode too (where modes sit side by side)."""
    mode = c.variant.label.removeprefix("compile").strip(" ()")
    words = ([f"torch {c.torch}"] if torch else []) + ([mode] if mode else ["default"] if default else []) + list(c.settings)
    return f" ({', '.join(words)})" if words else ""


def guide_table(view: View, g: Group) -> Table:
    """The guide's table for one group; a % improvement names its torch version only when the report holds
    several."""
    columns: Columns = [("Task/Model", g.label)]
    columns += [(c.header, lambda m, c=c: cell(g.result(m, c))) for c in g.columns]
    for c in g.compiled_columns:
        tag = _tag(c, torch=view.versions > 1)
        columns += [(f"% improvement{tag}", lambda m, c=c: improvement(g.speedup(m, c))),
                    (f"95% CI{tag}", lambda m, c=c: improvement_interval(g.speedup(m, c))),
                    (f"verdict{tag}", lambda m, c=c: verdict(g.speedup(m, c))),
                    (f"compile s{tag}", lambda m, c=c: compile_s(g.result(m, c), view.compile_drift.value))]
    return table(g.title, columns, g.models, [verdict_note(view.min_effect, view.looks, view.design),
                                              compile_note(view.compile_drift, COLD_OR_WARM)]
                 if g.compiled_columns else [])


def guide_tables(view: View) -> list[Table]:
    return [guide_table(view, g) for g in view.groups if not g.generation]


def flags_note(view: View) -> list[str]:
    """How many results carry each flag, each with its remedy."""
    counts = data.flag_counts(view.latest + view.served)
    return [f"- {flag}: {n} result(s). {FLAGS[flag].remedy[0].upper()}{FLAGS[flag].remedy[1:]}." for flag, n in counts.items() if n]


def speedup_table(view: View) -> Table:
    """Every compiled result against its eager baseline: the speed-up its verdict reads (per decoded token for text
    generation) with its 95% interval and verdict, and what compiling cost: cold and warm compile seconds and the
    inferences (whole calls, at the calls' own speed-up and interval) it takes to pay them back."""
    def paired(s: Speedup | None) -> str:
        return "" if s is None else {"process": "paired", "round": "paired by round"}.get(s.paired_by, "unpaired")

    items = [(g, c, m, comp, g.eager(m, c), g.verdict(m, c), g.speedup(m, c)) for g in view.groups
             for c in g.compiled_columns for m in g.models if (comp := g.result(m, c)) is not None]
    columns: Columns = [
        ("hardware", lambda x: x[0].hardware),
        ("Task/Model", lambda x: x[0].label(x[2])),
        ("batch", lambda x: str(x[0].batch_size)),
        ("compiled variant", lambda x: x[1].header),
        ("status", lambda x: x[3].status),
        ("speed-up", lambda x: ratio(x[5])),
        ("95% CI", lambda x: ratio_interval(x[5])),
        ("verdict", lambda x: verdict(x[5])),
        ("interval from", lambda x: paired(x[5])),
        ("cold compile s", lambda x: compile_s(x[3], view.compile_drift.value, cold_only=True)),
        ("warm compile s", lambda x: ranged(x[3].warm_compile_s, view.compile_drift.value)),
        ("break-even (inferences)", lambda x: "" if x[6] is None else break_even(x[3], x[4])),
        ("break-even range", lambda x: break_even_range(x[3], x[4], x[6], view.compile_drift.value)),
        ("peak memory compiled / eager", lambda x: _memory_ratio(x[4], x[3])),
    ]
    return table("", columns, items, [
        f"speed-up = eager time / compiled time, from each side's per-process figures ({stats.PER_PROCESS_WORDS}; "
        "geometric, in log space): the interval widens with how much a rerun moves. Paired: the variants shared "
        "each process (--interleave), and the interval comes from the per-process ratios. Paired by round: from "
        f"{sequential.PAIR_FROM} rounds of one run, the interval comes from the ratios of each round's two processes, "
        "which ran back to back, in an order drawn afresh each round.",
        verdict_note(view.min_effect, view.looks, view.design),
        "cold compile: the first repeat, from an empty compiler state; warm: later repeats, from the on-disk state "
        f"the first left (their median). {compile_note(view.compile_drift, 'Each')} break-even: cold "
        "compile seconds / per-inference saving, the number of inferences after which compiling has paid for itself; "
        "never when the compiled model saves nothing. Its range: the same at each end of the speed-up's 95% interval, "
        f"{spread_said(view.compile_drift)}." + _generation_break_even(view),
        "peak memory: on a GPU the allocator's peak over the steady state, plus the CUDA graphs' pools it counts "
        "free though each replay writes into them; on a CPU the process's peak RSS, which for a "
        "compiled case includes the compiler itself. compiled / eager: from each process's peak (log space, as a "
        "latency), with its 95% interval where the peaks moved from one process to another (a CPU's RSS; a GPU "
        "allocator's does not), beside each side's (the geometric mean of its processes'); `check` reads the same."])


def _generation_break_even(view: View) -> str:
    """What a language model's row reads, where the view holds one."""
    return (" Text generation: its speed-up, interval and verdict are per decoded token, the figure its verdict reads "
            "everywhere; its break-even counts whole generate() calls, and its range is at the ends of the whole "
            "calls' own speed-up interval (the CSV's call_speedup columns)."
            if any(g.generation for g in view.groups) else "")


def _memory_ratio(eager: Result | None, compiled: Result) -> str:
    """'1.18x [1.05-1.32] (1,210 / 1,025 MiB)': data.memory_ratio, beside each side's peak (the geometric mean of
    its processes'); the interval left out where it says no more than the ratio (a GPU allocator's peaks)."""
    found = data.memory_ratio(eager, compiled)
    if found is None:
        both = eager is not None and eager.peak_mem_bytes and compiled.peak_mem_bytes
        return "one process held both" if both and data.shared_process(eager, compiled) else ""
    ratio, low, high = found
    ends = "" if low is None or f"{low:.2f}" == f"{high:.2f}" else f" [{low:.2f}-{high:.2f}]"
    c, e = (stats.estimate(data.process_peaks(r))[0] / 2**20 for r in (compiled, eager))
    return f"{ratio:.2f}x{ends} ({c:,.0f} / {e:,.0f} MiB)"


@dataclass(frozen=True)
class _Pick:
    """The recommendation for one model of one group and torch version."""

    g: Group
    torch: str
    model: str
    base: Result
    best: tuple[Column, Speedup, Result] | None
    undecided: list[Speedup]  # of the candidates whose verdict was inconclusive
    rival: tuple[Column, Speedup] | None = None  # a runner-up the pick is not told apart from, and the pick over it
    calls: Speedup | None = None  # the pick's speed-up in whole calls (text generation's verdict is per token)


def _pick(view: View, g: Group, torch: str, baseline: Column, model: str) -> _Pick | None:
    base = g.result(model, baseline)
    if speedups.mean(base) is None:
        return None
    others = [(c, r) for c in g.columns if c != baseline and c.torch == torch and (r := g.result(model, c)) is not None]
    measured = [(cr, view.speedup(base, cr[1], generation.verdict_metric(cr[1].case))) for cr in others]
    undecided = [s for _, s in measured if s is not None and s.verdict == Verdict.inconclusive]
    picked = speedups.best(measured)
    if not picked:
        return _Pick(g, torch, model, base, None, undecided)
    (c, r), s = picked
    found = view.rival(base, r, [x for _, x in others])
    rival = next((rc, found[1]) for rc, x in others if x is found[0]) if found else None
    return _Pick(g, torch, model, base, (c, s, r), undecided, rival, view.speedup(base, r))


def _recommended(p: _Pick, min_effect: float, spread: float) -> list[str]:
    """recommended, speed-up, 95% CI, break-even and why."""
    if p.best is None:
        why = (f"nothing measured is faster than eager beyond {min_effect:.0%}"
               + (f" ({len(p.undecided)} inconclusive: {may_decide(p.undecided, min_effect)})"
                  if p.undecided else ""))
        return ["no compile", "", "", "", why]
    c, s, r = p.best
    kept = quantization.quality_words(r)  # a quantized pick says what it kept of the float model's predictions
    why = [f"quantized {r.case.quantize}: {kept or 'quality not measured'}" if r.case.quantize != "none" else ""]
    if p.rival is not None:  # a runner-up the run could not tell it from: the pick is no surer than that
        rc, over = p.rival
        why.append(f"not told apart from {rc.header.removeprefix(f'torch {p.torch} - ')}: {ratio(over)} "
                   f"({ratio_interval(over)}) over it, {verdict(over)}")
    # at the ends of the interval of what it counts: whole calls
    between = break_even_range(r, p.base, p.calls, spread) if c.variant.compiled else ""
    return [c.header.removeprefix(f"torch {p.torch} - "), ratio(s), ratio_interval(s),
            (break_even(r, p.base) + (f" [{between}]" if between else "")) if c.variant.compiled else "0",
            "; ".join(filter(None, why))]


def recommendation_table(view: View) -> Table:
    """Per hardware, torch version, batch size and model: the fastest variant measured ok (correct, no recompile)
    whose verdict against plain eager is `faster` (speedups.best, the rule `tune` picks by), with its speed-up,
    interval and break-even; else no compile."""
    picks = []
    for g in view.groups:
        for torch in dict.fromkeys(c.torch for c in g.columns):
            if (baseline := g.baseline(torch)) is not None:
                picks += [p for m in g.models if (p := _pick(view, g, torch, baseline, m))]
    said = {id(p): _recommended(p, view.min_effect, view.compile_drift.value) for p in picks}
    columns: Columns = [("hardware", lambda p: p.g.hardware), ("torch", lambda p: f"torch {p.torch}"),
                        ("batch", lambda p: str(p.g.batch_size)), ("Task/Model", lambda p: p.g.label(p.model))]
    columns += [(name, lambda p, i=i: said[id(p)][i]) for i, name in
                enumerate(["recommended", "speed-up", "95% CI", "break-even (inferences)", "why"])]
    return table("", columns, picks, [
        "The fastest variant measured ok (outputs within tolerance of eager, no recompile while timed) whose speed-up "
        f"over plain eager is `faster`: its whole 95% interval above {view.min_effect:.0%}. A lower-precision variant "
        "is checked against eager in its own dtype: decide separately whether that precision is acceptable for your "
        "task. Where the run could not tell the pick from the next fastest such variant, why says so, with the "
        "pick's speed-up over it. break-even: the inferences after which compiling has paid for itself, and in "
        f"brackets the same at each end of the speed-up's interval, {spread_said(view.compile_drift)}."
        + _generation_break_even(view)])


def _by_hardware(view: View) -> dict[str, list[Group]]:
    out: dict[str, list[Group]] = defaultdict(list)
    for g in view.groups:
        if not g.generation:
            out[g.hardware].append(g)
    return out


def _batch_table(title: str, groups: list[Group], columns: list[Column], extra: Columns, min_effect: float) -> Table:
    """Rows Task/Model x Batch Size over several groups of one hardware, in the guide's model order."""
    models = data.model_order([r for g in groups for r in g.results])
    items = [(g, m) for m in models for g in groups if m in g.models]
    declared: Columns = [("Task/Model", lambda x: x[0].label(x[1])), ("Batch Size", lambda x: str(x[0].batch_size))]
    declared += [(c.header, lambda x, c=c: cell(x[0].result(x[1], c))) for c in columns]
    return table(title, declared + extra, items, [verdict_note(min_effect)])


def version_tables(view: View) -> list[Table]:
    """The guide's "PyTorch Nightly" section: per hardware holding more than one torch version (or environment,
    --env), every one's eager and compiled means side by side, and how much each changed them against the first
    (the oldest torch; environments of one torch by name), with verdict."""
    tables = []
    for hw, groups in _by_hardware(view).items():
        columns = sorted({c for g in groups for c in g.columns})
        versions = list(dict.fromkeys(c.torch for c in columns))
        if len(versions) < 2:
            continue
        old = versions[0]
        pairs = [(c, n) for new in versions[1:] for c in columns if c.torch == old for n in columns
                 if n.torch == new and (n.variant, n.settings) == (c.variant, c.settings)]
        extra: Columns = []
        for a, b in pairs:
            what = f"torch {b.torch} vs {old}, {a.variant.label}"
            extra += [(data.with_settings(f"% faster {what}", a.settings),
                       lambda x, a=a, b=b: improvement_verdict(_between(view, x, a, b))),
                      (data.with_settings(f"95% CI {what}", a.settings),
                       lambda x, a=a, b=b: improvement_interval(_between(view, x, a, b)))]
        envs = any(r.case.environment for g in groups for r in g.results)
        title = "torch versions and environments" if envs else "torch versions"
        tables.append(_batch_table(f"{hw}: {title}", groups, columns, extra, view.min_effect))
    return tables


def _between(view: View, item: tuple[Group, str], a: Column, b: Column) -> Speedup | None:
    """The speed-up of one row's model from column a to column b (two torch versions or environments)."""
    g, model = item
    return view.speedup(g.result(model, a), g.result(model, b))


def mode_tables(view: View) -> list[Table]:
    """The guide's "Reduce Overhead" section: per hardware and torch version holding more than one compile mode,
    eager and every mode side by side with each mode's % improvement and verdict."""
    tables = []
    for hw, groups in _by_hardware(view).items():
        columns = sorted({c for g in groups for c in g.columns})
        for torch in dict.fromkeys(c.torch for c in columns):
            for setting in dict.fromkeys(c.settings for c in columns):
                mine = [c for c in columns if c.torch == torch and c.settings == setting]
                compiled = [c for c in mine if c.variant.compiled]
                if len(compiled) < 2:
                    continue
                extra: Columns = [(f"% improvement{_tag(c, default=True)}",
                                   lambda x, c=c: improvement_verdict(x[0].speedup(x[1], c))) for c in compiled]
                title = data.with_settings(f"{hw}: compile modes, torch {torch}", setting)
                tables.append(_batch_table(title, groups, mine, extra, view.min_effect))
    return tables


def _estimate(summary: Estimate | None, digits: int = 3) -> tuple[str, str]:
    """An estimate between processes and its interval, as cells."""
    if not summary or summary.mean is None:
        return "", ""
    return f"{summary.mean:.{digits}f}", interval(summary.ci95_low, summary.ci95_high, f"{{:.{digits}f}}")


def _against_eager(s: Speedup | None) -> str:
    return "" if s is None else f"{pct(s.improvement)} ({improvement_interval(s)}) {s.verdict}"


def _first_calls(r: Result) -> str:
    first = r.repeats[0].generation.first_calls if r.repeats else []
    return " / ".join(f"{f.total_ms / 1e3:.2f}" for f in first)


def generation_table(view: View, g: Group) -> Table:
    """Text generation for one group: per model and variant the time to first token, the time per decoded token and
    tokens per second, each with its interval, and against eager the % improvement of each with its interval and
    verdict."""
    def measured(x, name: str) -> tuple[str, str]:
        return _estimate(getattr(x[2].result.generation, name) if speedups.mean(x[2].result) is not None else None)

    items = [(m, c, g.cells[(m, c)]) for m in g.models for c in g.columns if (m, c) in g.cells]
    columns: Columns = [
        ("Task/Model", lambda x: g.label(x[0])),
        ("variant", lambda x: x[1].header),
        ("status", lambda x: x[2].result.status),
        ("TTFT ms", lambda x: measured(x, "ttft")[0]),
        ("TTFT 95% CI", lambda x: measured(x, "ttft")[1]),
        ("ms/token", lambda x: measured(x, "per_token")[0]),
        ("ms/token 95% CI", lambda x: measured(x, "per_token")[1]),
        ("decode tokens/s", lambda x: num(data.decode_tokens_per_s(x[2].result), 1)),
        ("end-to-end tokens/s", lambda x: num(data.e2e_tokens_per_s(x[2].result), 1)),
        ("TTFT vs no compile", lambda x: _against_eager(x[2].ttft)),
        ("per token vs no compile", lambda x: _against_eager(x[2].per_token)),
        ("first calls s (repeat 1)", lambda x: _first_calls(x[2].result)),
    ]
    return table(g.title, columns, items, [
        "TTFT: time to first token (the prefill). ms/token: each decoded token after the first. Tokens/s count every "
        "sequence of the batch. vs no compile: % improvement (95% interval) and verdict against eager generation with "
        "the dynamic cache.", verdict_note(view.min_effect, view.looks, view.design),
        "first calls: the first generate() calls of the first repeat, one by one: compiling (prefill and decode "
        "compile apart; CUDA graphs record on later calls) ends where they level off."])


def generation_tables(view: View) -> list[Table]:
    return [generation_table(view, g) for g in view.groups if g.generation]
