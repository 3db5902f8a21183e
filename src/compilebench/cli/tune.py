"""`compilebench tune --model M [--batch-size B [B ...]] [--budget 20m]`: search the compile settings that can
matter on this device for the fastest correct one, and print it as code to paste. With several batch sizes the
search runs at the largest, then its pick serves them all under each dynamic-shape setting (as `compilebench
shapes`), and the one that serves --requests of the --mix soonest is printed too. Every measurement lands in the
results file, as any run's does."""

from __future__ import annotations

import sys

from compilebench import kinds, tune
from compilebench.cli import groups, resume
from compilebench.cli.run import EXIT_FAILED
from compilebench.core import drift, generation, shards, speedups, stats, traffic
from compilebench.core.result import Result
from compilebench.report import cells, markdown, quantization, shapes, start
from compilebench.report.cells import Table, interval
from compilebench.report.view import View
from compilebench.run import sweep


def cmd_tune(args) -> int:
    try:
        found = tune.tuning(args.model, args.db, batch_sizes=args.batch_sizes or (1,), budget=args.budget,
                            device=args.device, weights=args.weights, model_size="tiny" if args.tiny else "full",
                            task=args.task, min_effect=args.min_effect, mix=args.mix, requests=args.requests,
                            quantizations=tuple(args.quantizations or ()), min_agreement=args.min_agreement,
                            engines=tuple(args.engines or ()),
                            shard=shards.Shard.parse(args.shard) if args.shard else None,
                            quiet=args.quiet, say=lambda text: print(text, file=sys.stderr), command=resume.command(args))
    except sweep.StoreFailed as exc:
        print(resume.failed(exc.message, args), file=sys.stderr)
        return EXIT_FAILED
    served = View(found.served, args.min_effect, args.requests, args.mix) if found.served else None
    print(render(found.outcome, args.min_effect, args.db) + (_served(found.outcome, served) if served else ""))
    return 0


def _served(outcome: tune.Outcome, view: View) -> str:
    """The pick over every batch size, under each dynamic-shape setting: the one that serves --requests of the
    --mix soonest, as code, and the shapes table."""
    config = tune.served_config(outcome)
    batches = sorted({traffic.Shape.parse(t).batch for r in view.served for t in r.case.shapes})
    out = ["", f"Dynamic shapes, serving batch sizes {', '.join(map(str, batches))}:"]
    for m in shapes.models(view):
        pick, _, why = shapes.best(view, m)
        if pick is None or not pick.result.case.variant.compiled:
            out.append(f"keep it uncompiled for this traffic: {why}.")
        else:
            code = tune.shapes_code(config, pick.result.case.variant, outcome.part)
            out += [f"{pick.name}: {why}.", "", "```python", code, "```"]
        out += ["", markdown.table(shapes.summary_table(view, m))]
    return "\n".join(out)


def render(result: tune.Outcome, min_effect: float, db: str) -> str:
    out = []
    w = result.winner or (result.ranked[0] if result.ranked else None)  # the pick, else the best that was not
    per = generation.per(result.eager.case) if result.eager is not None else ""
    if w is None:
        out.append("No configuration was measured ok: the table says why each was dropped.")
    else:
        s = w.speedup
        saving = stats_break_even(result.eager, w.result)
        if w is result.winner:
            out.append(f"Fastest correct configuration: {w.config.describe()}: {s.value:.2f}x eager{per} "
                       f"(95% CI {interval(s.low, s.high, '{:.2f}x')}), {s.verdict}.")
            if (found := result.rival(min_effect)) is not None:  # the pick edged it: no surer than that
                r, over = found
                out.append(f"Not told apart from {r.config.describe()} ({r.value:.2f}x eager{per}): the pick over it "
                           f"{over.value:.2f}x ({interval(over.low, over.high, '{:.2f}x')}), {over.verdict}; "
                           "either serves, or a larger --budget may tell them apart.")
        else:
            seen = speedups.out_of_reach(s, min_effect)  # an undecided best: what the search could not see
            out.append(f"Nothing measured is faster than eager beyond {min_effect:.0%}: keep the model uncompiled. "
                       f"The best was {w.config.describe()}: {s.value:.2f}x eager{per} "
                       f"(95% CI {interval(s.low, s.high, '{:.2f}x')}), {s.verdict}" + (f": {seen}." if seen else "."))
        kept = quantization.quality_words(w.result)
        if kept:  # a quantized pick: what it kept of the float model's predictions
            out.append(f"Quality against the float model: {kept}.")
        out += ["", "```python", w.config.code(result.part), "```", ""]
        out.append(_compile_cost(result, w, saving, min_effect))
    rows, noise = [], compile_noise(result)
    for t in [*result.ranked, *(t for t in result.tried if t.dropped)]:
        s = t.speedup
        r = t.result
        first = start.first_start(r) if r else None
        how = f"{start.seconds_said(first, noise.value)} ({first.name.rsplit(', ', 1)[-1]})" if first else ""
        rows.append([t.config.describe(), str(t.rungs), r.status if r else "",
                     f"{s.value:.3f}x" if s else "", interval(s.low, s.high, "{:.3f}x") if s else "",
                     cells.verdict_reach(s), cells.compile_s(r, noise.value, cold_only=True), how, t.dropped or ""])
    notes = [cells.verdict_note(min_effect), cells.compile_note(noise, "cold " + cells.COLD),
             TUNE_START_NOTE]
    out += ["", markdown.table(Table("Configurations measured", ["configuration", "rungs", "status", f"speed-up{per}",
                                                                   "95% CI", "verdict", "cold compile s",
                                                                   "start s (how)", "dropped"], rows, notes))]
    if result.untried:
        out.append(f"Not tried within the budget ({len(result.untried)}): "
                   + "; ".join(c.describe() for c in result.untried) + ". A larger --budget tries them.")
    out.append(f"Searched for {result.elapsed_s:.0f} s; every measurement is in {db} (`compilebench report {db}`).")
    return "\n".join(out)


def _compile_cost(result: tune.Outcome, w: tune.Tried, saving: int | None, min_effect: float) -> str:
    """The pick's compile seconds and the calls after which it pays for itself, with the calls at the ends of the
    interval of its speed-up in calls (a language model's verdict is per token: its whole generate() calls' here),
    the compile as far shorter or longer as one moves from another."""
    cold, warm = w.result.cold_compile_s, w.result.warm_compile_s
    calls = speedups.speedup(result.eager, w.result, min_effect)
    noise = compile_noise(result)
    ends = stats.break_even_range(cold, speedups.mean(result.eager), calls.low, calls.high, noise.value) \
        if calls else None
    between = f" ({cells.ends_said(ends, ' to ')} at the interval's ends, {cells.spread_said(noise)})" if ends else ""
    return (f"Compile cost: {cells.ranged(cold, noise.value)} s cold"
            + (f", {cells.ranged(warm, noise.value)} s from a warm cache" if warm else "")
            + (f"; it pays for itself after {saving:,} calls{between}." if saving else "; it saves nothing per call."))


def compile_noise(result: tune.Outcome) -> drift.Drift:
    """How far one cold compile of a configuration moves from another, from the search's own results (else the
    default): the break-even's range and the cold compile's."""
    return drift.estimate([t.result for t in result.tried if t.result], lambda r: r.compile_s, drift.COMPILE_DEFAULT)


TUNE_START_NOTE = ("start: the seconds a new process waited for its first answer (build, load, first call with any "
                   "compile), from the first start each configuration measured: a cold compile, or (AOTInductor) "
                   "loading the package its export built; cold compile s is then the export and packaging, paid "
                   "once ahead of time. In brackets: the same with its first call (which holds the compile) as far "
                   "shorter or longer as one compile moves from another.")


def stats_break_even(eager: Result | None, compiled: Result | None) -> int | None:
    e, c = speedups.mean(eager), speedups.mean(compiled)
    return stats.break_even(compiled.cold_compile_s, e, c) if e and c else None


def add_parser(sub):
    """`compilebench tune`: its options."""
    tune = sub.add_parser("tune", help="search the compile settings that matter here for the fastest correct one")
    tune.add_argument("--model", required=True, metavar="NAME", help="a zoo model, a hub id or a local checkpoint directory")
    tune.add_argument("--batch-size", nargs="+", action="extend", type=int, default=None, dest="batch_sizes",
                      metavar="N",
                      help="batch size (default: 1); several: the search runs at the largest, then the dynamic-shape "
                           "settings of its pick serve them all (as `compilebench shapes`)")
    tune.add_argument("--budget", default="20m", metavar="TIME",
                      help="wall time the search may take, e.g. 90s, 20m, 1h (default: 20m)")
    groups.task(tune)
    groups.device(tune)
    groups.weights(tune)
    groups.db(tune)
    groups.min_effect(tune, "the smallest speed-up worth acting on")
    groups.quantize(tune, "tried as well, each on every mode and dtype, and kept only where its quality against the "
                          "float model is at least --min-agreement")
    tune.add_argument("--min-agreement", type=float, default=None, metavar="F",
                      help="the quality floor of a quantized configuration: each of its task's measures (top-1, "
                           "greedy tokens, ...) agreeing with the float model at least F (default with --quantize: "
                           "0.99); given alone, every quantization this device runs is tried")
    tune.add_argument("--engine", nargs="+", action="extend", default=None, dest="engines", metavar="NAME",
                      help=f"other engines to try as well ({', '.join(k.name for k in kinds.engines())}), each in "
                           "every dtype it runs here (default: torch.compile's configurations alone)")
    tune.add_argument("--shard", default=None, metavar="i/N",
                      help="search the i-th of N shares of the configurations (dealt round-robin, the likeliest "
                           "first), each shard into its own --db; `compilebench report` over the files holds the best "
                           "of all (auto, auto/N: a Slurm array's or Kubernetes Indexed Job's index, as run --shard)")
    groups.quiet(tune)
    groups.requests(tune)
    groups.mix(tune)
    return tune
