"""The answer at a glance, for a terminal: per hardware and batch size one row per model (eager, the best compiled
variant, the speed-up with its interval and verdict, what compiling costs), then one line per model in words. It
fits WIDTH columns; the guide's tables, the details and the legends are in the report files (and `--details`).
Every figure is the View's, so the summary and the report cannot disagree."""

from __future__ import annotations

import shutil
import sys
import textwrap
from dataclasses import dataclass, replace

from compilebench.core import speedups, stats
from compilebench.core.generation import Generation
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.core.vocab import Verdict
from compilebench.report import data, engines, quantization, stability, suite
from compilebench.report.cells import break_even, break_even_range, cell, may_decide, spread_said, verdict_reach
from compilebench.report.data import Column
from compilebench.report.text_columns import fit
from compilebench.report.view import Group, View

WIDTH = 100  # hyperfine's and pytest-benchmark's summaries fit a common terminal; a wider one gains nothing
HEADER = ["model", "eager ms", "best compiled", "ms", "speed-up", "interval", "verdict", "compile s",
          "break-even"]


def width() -> int:
    """The summary's width: the terminal's, up to WIDTH; WIDTH when the output is not a terminal (a log, a pipe),
    so a log reads the same everywhere."""
    if not sys.stdout.isatty():
        return WIDTH
    return max(60, min(WIDTH, shutil.get_terminal_size((WIDTH, 24)).columns))


@dataclass(frozen=True)
class Row:
    """One model of one group against one eager baseline: the compiled variant shown (the recommended one where
    one is `faster`, else the one with the best point estimate) and what it says."""

    name: str
    eager: Result
    compiled: Result | None
    column: Column | None
    speedup: Speedup | None
    recommended: bool
    full_name: str  # with its batch size, for the lines in words when the run had several groups
    spread: float  # how far one compile moves from another here (View.compile_drift): the break-even range holds it
    # a runner-up not told apart (View.rival): its column, its speed-up, ours over it
    rival: tuple[Column, Speedup, Speedup] | None = None

    def cells(self) -> list[str]:
        s, c = self.speedup, self.compiled
        return [self.name, cell(self.eager), _variant(self.column), cell(c),
                f"{s.value:.2f}x" if s else "", _interval(s), _verdict(s),
                f"{c.compile_s:.1f}" if c is not None and c.compile_s is not None else "", _break_even(self)]

    def words(self, min_effect: float, full: bool = False) -> str | None:
        """The recommendation in words: 'DETR: compile (default) - 1.72x [1.62-1.82], pays off after 63 calls';
        None where nothing but eager was measured. `full`: the name with its batch size."""
        if self.column is None:
            return None
        said = self._words(min_effect)
        return said.replace(self.name, self.full_name, 1) if full else said

    def _words(self, min_effect: float) -> str:
        s = self.speedup
        if self.recommended:
            be, between = _break_even(self, ranged=False), break_even_range(self.compiled, self.eager, s, self.spread)
            pays = "" if be in ("", "never") else f", pays off after {be} calls{f' [{between}]' if between else ''}"
            verb = "compile" if self.column.variant.compiled else "run"  # an eager setting can win too
            kept = quantization.quality_words(self.compiled)  # a quantized pick says what it kept of float's
            return (f"{self.name}: {verb} ({_variant(self.column)}) - {s.value:.2f}x {_interval(s)}{pays}"
                    + (f"; quality against float: {kept}" if kept else "") + self._rival())
        if s is None:
            if self.eager.status != "ok":
                return f"{self.name}: eager {cell(self.eager)}, so no speed-up to read (compiled: {cell(self.compiled)})"
            return f"{self.name}: no compile - no compiled variant measured ok"
        said = " ".join(filter(None, [_variant(self.column), f"{s.value:.2f}x", _interval(s)])) + f", {_verdict(s)}"
        if s.verdict == Verdict.inconclusive:
            return (f"{self.name}: no compile - not shown faster beyond {min_effect:.0%} ({said}); "
                    f"{may_decide([s], min_effect)}")
        return f"{self.name}: no compile - nothing measured is faster than eager beyond {min_effect:.0%} ({said})"

    def _rival(self) -> str:
        """A runner-up the pick is not shown faster than (View.rival): said, so the pick reads no surer than it is."""
        if self.rival is None:
            return ""
        c, theirs, over = self.rival
        return (f"; not told apart from {_variant(c)} ({theirs.value:.2f}x {_interval(theirs)}): "
                f"{_variant(self.column)} over it {over.value:.2f}x {_interval(over)}, {_verdict(over)}")


def notes(view: View, width: int) -> str:
    """Where the machine moved, or a verdict was left undecided (report/stability), and why a case has no number or
    a voided one (failures), each line wrapped to `width`."""
    lines = [*stability.notes(view), *failures(view)]
    return "\n".join(textwrap.fill(line, width, subsequent_indent="  ") for line in lines)


def failures(view: View) -> list[str]:
    """Each case the tables show as a status word, with its message's first line (the report's details hold it
    whole): 'error: Image Classification/ViT: b1 default (int8-dynamic): RuntimeError: self.size(0) needs ...'."""
    out = []
    for r in view.latest + view.served:
        if r.status != "ok":
            first, *more = (r.message or "").strip().splitlines() or [""]
            said = f"{r.status}: {stability.case_name(r)}" + (f": {first}" if first else "")
            out.append(said + (" ..." if more else ""))
    return out


def _variant(c: Column | None) -> str:
    if c is None:
        return ""
    mode = c.variant.label.removeprefix("compile").strip(" ()")
    mode = mode or ("default" if c.variant.compiled else c.variant.label)
    return " ".join([mode, *c.settings])


def _interval(s: Speedup | None) -> str:
    return f"[{s.low:.2f}-{s.high:.2f}]" if s is not None and s.low is not None and s.high is not None else ""


def _verdict(s: Speedup | None) -> str:
    return "" if s is None else str(s.verdict) + (" (across runs)" if s.drift is not None else "")


def _break_even(row: Row, ranged: bool = True) -> str:
    """The calls until compiling has paid for itself; `ranged`: the range its speed-up's interval gives instead,
    where it has one ('2,712-7,504')."""
    if row.compiled is None or row.speedup is None:
        return ""
    between = break_even_range(row.compiled, row.eager, row.speedup, row.spread) if ranged else ""
    return between or break_even(row.compiled, row.eager)


def rows(view: View, g: Group) -> list[Row]:
    """One row per model and torch version (environment) of a latency group, against its plain eager column."""
    out = []
    torches = list(dict.fromkeys(c.torch for c in g.columns))
    for torch in torches:
        baseline = g.baseline(torch)
        if baseline is None:
            continue
        for m in g.models:
            eager = g.result(m, baseline)
            if eager is None:
                continue
            # torch.compile's answer: another engine's is its own table (engines_summary)
            found = [(c, r, view.speedup(eager, r)) for c in g.columns if c.torch == torch and c != baseline
                     and not c.variant.engine and (r := g.result(m, c)) is not None]
            picked = speedups.best(((c, r), s) for c, r, s in found)
            if picked:
                (c, r), s = picked
            else:  # nothing faster: show the closest call, else the first compiled variant tried
                measured = [x for x in found if x[2] is not None]
                c, r, s = max(measured, key=lambda x: x[2].value) if measured else found[0] if found else (None,) * 3
            name = g.label(m).rsplit("/", 1)[-1] + (f" (torch {torch})" if len(torches) > 1 else "")
            found_r = view.rival(eager, r, [x[1] for x in found]) if picked else None
            rival = next((x[0], x[2], found_r[1]) for x in found if x[1] is found_r[0]) if found_r else None
            if c is not None:  # named by what sets it apart from its eager ("interleaved" in both says nothing)
                c = _apart(c, baseline)
            if rival is not None:
                rival = (_apart(rival[0], baseline), *rival[1:])
            out.append(Row(name, eager, r, c, s, picked is not None, f"{name} b{g.batch_size}",
                           view.compile_drift.value, rival))
    return out


def _apart(c: Column, baseline: Column) -> Column:
    """A column named by what sets it apart from its eager ("interleaved" in both says nothing)."""
    return replace(c, settings=tuple(w for w in c.settings if w not in baseline.settings))


def summary(view: View, width: int = WIDTH) -> str:
    """The run's answer in at most `width` columns."""
    out, said, warm, checks = [], [], False, []
    for g in view.groups:
        if g.generation:
            continue  # text generation has its own few columns: generation_summary
        found = rows(view, g)
        if not found:
            continue
        out += ["", g.title, *fit(HEADER, [r.cells() for r in found], width)]
        warm |= any(r.compiled is not None and r.compiled.compile_s != r.compiled.cold_compile_s for r in found)
        checks += [x for r in found if r.compiled is not None and (x := r.compiled.compile_phases.cpu_checks_s)]
        several = sum(1 for x in view.groups if not x.generation) > 1
        said += [w for r in found if (w := r.words(view.min_effect, several))]
    out += generation_summary(view, width)
    out += quantization_summary(view, width)
    engines_lines = engines_summary(view, width)
    out += engines_lines
    if said:
        out += ["", *[line for s in dict.fromkeys(said) for line in textwrap.wrap(s, width, subsequent_indent="  ")]]
    if out:  # the suite in a few lines: its pass rate, each compiled setting's geomean speed-up and memory
        lines = [f"pass rate: {suite.pass_rate(view)}", *(s.sentence() for s in suite.summaries(view))]
        out += ["", *[line for s in lines for line in textwrap.wrap(s, width, subsequent_indent="  ")]]
    if out:
        per = GEN_WORDS if any(g.generation for g in view.groups) else ""
        fewest, most = stats.moved(1.0, view.compile_drift.value)  # one compile (or preparation) against another
        confidence = ("95%; where a run adds repeats to decide, wider at each look, so that all its looks together "
                      "hold 95%, as --details says"
                      if view.looks > 1 else "95%")
        out += ["", *textwrap.wrap(
            f"ms: {stats.PER_PROCESS_WORDS}, over processes. speed-up: eager ms / compiled ms{per}, with its interval "
            f"between processes ({confidence}). verdict: faster or slower beyond {view.min_effect:.0%}, same within "
            "it, else inconclusive, with the smallest effect it could see."
            + (" compile s: one cold compile, measured once a case" + (WARM_WORDS if warm else "")
               + "; another of the same case may take "
               f"{fewest:.2f}x to {most:.2f}x its seconds here. "
               "break-even: calls until compiling has paid for itself, at each end of the speed-up's interval "
               f"{spread_said(view.compile_drift)} (never: that end saves nothing per call)."
               + cpu_checks_said(checks) if said else "")
            + (ENGINE_WORDS.format(fewest, most) if engines_lines else "") + " The guide's tables (and "
            "its mean of the calls) and every detail: --details, or the report.", width)]
    for c in view.shards:  # a report over shard files says whether it is the whole run
        out += ["", *textwrap.wrap(c.describe(), width, subsequent_indent="  ")]
    return "\n".join(out).lstrip("\n")


def cpu_checks_said(checks: list[float]) -> str:
    """How much of the compile seconds shown was inductor's checks of this CPU (measure/cpu_checks): a machine's
    cost, which the break-even holds as a new replica pays it; '' where none was recorded."""
    if not checks:
        return ""
    low, high = f"{min(checks):.1f}", f"{max(checks):.1f}"
    return (f" On this CPU {low if low == high else f'{low} to {high}'} s of each compile s were inductor's checks of "
            "the CPU's vector instructions: the machine's cost, paid in full by a new container and in part by a "
            "machine that has compiled before (the report's \"What the compiler did\").")


GEN_WORDS = " (text generation: per decoded token, the figure its verdict reads)"
WARM_WORDS = (" (where no repeat compiled cold, as from a --compile-cache folder that held the case, the warm ones' "
              "median)")
GEN_HEADER = ["model", "variant", "TTFT ms", "ms/token", "tokens/s", "per token vs eager", "verdict"]


def generation_summary(view: View, width: int = WIDTH) -> list[str]:
    """Text generation: per group, each variant's time to first token, time per token and tokens/s, and its time per
    token against eager generation."""
    out = []
    for g in (g for g in view.groups if g.generation):
        body = []
        for m in g.models:
            for c in g.columns:
                if (x := g.cells.get((m, c))) is None:
                    continue
                r, s = x.result, x.per_token
                gen = r.generation if speedups.mean(r) is not None else Generation()
                body.append([g.label(m).rsplit("/", 1)[-1], _variant(c), _mean(gen.ttft),
                             _mean(gen.per_token), _tokens(r),
                             "" if s is None else f"{s.value:.2f}x {_interval(s)}", _verdict(s) or r.status])
        if body:
            out += ["", g.title, *fit(GEN_HEADER, body, width, free=(0, 1), left=(0, 1, 6), optional=(4, 2))]
    return out


def _mean(estimate) -> str:
    return "" if not estimate or estimate.mean is None else f"{estimate.mean:.2f}"


def _tokens(r: Result) -> str:
    t = data.decode_tokens_per_s(r)
    return "" if t is None else f"{t:.1f}"


def quantization_summary(view: View, width: int = WIDTH) -> list[str]:
    """--quantize: per model, each quantization's eager and compiled variants, their time, their speed-up over eager
    float and over eager of the same quantization, and the quality kept against the float model."""
    out, found = [], quantization.models(view)
    for m in found:
        unit = "ms/token" if m.metric else "ms"
        body = [[c.quantization, _variant_of(c.variant), quantization.time_cell(c.result, m.metric), _against(c.vs_float),
                 _against(c.vs_same), quantization.quality_words(c.result)] for c in m.cells]
        header = ["quantization", "variant", unit, "vs eager float", "vs same quant.", "quality"]
        out += ["", m.title, *fit(header, body, width, free=(1,), left=(0, 1, 5), optional=(), wrap=(5,))]
    if quantization.random_weights(found):
        out += textwrap.wrap(quantization.RANDOM_WEIGHTS, width)
    return out


ENGINE_HEADER = ["model", "variant", "ms", "vs eager", "interval", "vs compile", "cold/warm s", "precision"]
ENGINE_WORDS = (" vs compile: an engine against the table's best torch.compile setting. cold/warm s: the seconds it "
                "took to prepare, from nothing (once a case) and from its cache; one preparation may take {:.2f}x "
                "to {:.2f}x another's here (the report gives each its range). precision: what it computed in.")


def engines_summary(view: View, width: int = WIDTH) -> list[str]:
    """--variant onnxruntime openvino tensorrt: per table and model, each torch.compile setting and each engine, its
    time (as a guide cell: a status word where its output differed from eager's or it failed), its speed-up over
    eager with its interval and (an engine) over the best torch.compile setting, its preparation cold and warm and
    the precision it computed in."""
    out = []
    for g in (g for g in view.groups if not g.generation):
        body = []
        for m in g.models:
            for w in engines.ways(view, g, m):
                cold, warm = engines.prepared(w.result)
                r = w.result
                body.append([g.label(m).rsplit("/", 1)[-1], _variant_of(w.column.variant),
                             cell(r), _against(w.vs_eager), _interval(w.vs_eager), _against(w.vs_compile),
                             "/".join("" if x is None else f"{x:.1f}" for x in (cold, warm)).strip("/"),
                             engines.precision(w.result)])
        if body:
            out += ["", f"Engines: {g.title}", *fit(ENGINE_HEADER, body, width, free=(1, 0), left=(0, 1, 7),
                                                     optional=(7, 6, 5, 4))]
    return out


def _variant_of(v) -> str:
    if v.engine:
        return v.label
    return (v.label.removeprefix("compile").strip(" ()") or "default") if v.compiled else v.name  # 'eager


def _against(s: Speedup | None) -> str:
    """A side comparison (quantized against float, an engine against compile): no undecided note speaks for it."""
    return "" if s is None else f"{s.value:.2f}x {verdict_reach(s)}"
