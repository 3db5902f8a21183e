"""`compilebench tune --model M [--batch-size B [B ...]] [--budget 20m]`: search the compile settings that can
matter on this device for the fastest correct one, and print it as code to paste. With several batch sizes the
search runs at the largest, then its pick serves them all under each dynamic-shape setting (as `compilebench
shapes`), and the one that serves --requests of the --mix soonest is printed too. Every measurement lands in the
results file, as any run's does."""

from __future__ import annotations

import dataclasses
import sys
import time

from compilebench import tune
from compilebench.cli import resume
from compilebench.cli.run import EXIT_FAILED
from compilebench.core import settings, spec as specmod, traffic
from compilebench.core.machine import hardware_name
from compilebench.core.result import Result
from compilebench.core.variant import MODES, Variant
from compilebench.measure import compiler_state
from compilebench.report import cells, markdown, shapes, start
from compilebench.report.cells import Table, interval
from compilebench.report.view import View
from compilebench.run import plan, sweep
from compilebench.storage import interrupts, schema, store as storemod


def cmd_tune(args) -> int:
    budget = tune.parse_budget(args.budget)
    settings.integer("--requests", args.requests, 1)
    batches = tuple(dict.fromkeys(args.batch_sizes or (1,)))
    spec = specmod.asked(models=(args.model,), batch_sizes=(max(batches),), variants=("eager", "default"),
                         device=args.device, weights=args.weights, model_size="tiny" if args.tiny else "full",
                         task=args.task, min_effect=args.min_effect, repeats=1)
    schema.check_path(args.db)
    prepared = plan.prepare(spec)
    (target,) = prepared.targets
    base = prepared.cases[0]
    configs = tune.space(prepared.spec.device, vision=prepared.models[args.model].kind == "vision")
    served = _shapes_spec(prepared.spec, tune.Config(), batches) if len(batches) > 1 else None
    if served:  # the mix and the shapes refused before anything runs
        plan.Plan(served, prepared.models, prepared.dispatcher, prepared.targets).check_mix(args.mix)
        budget *= tune.SHAPES_SHARE
    with storemod.Store.open(args.db) as store:  # a file it cannot use is refused before anything is said or made
        print(f"tuning {args.model} (batch {max(batches)}) on {hardware_name(target.env)}: {len(configs)} "
              f"configurations, budget {budget:.0f} s" + (f", then its pick over batch sizes "
                                                             f"{', '.join(map(str, batches))}" if served else ""),
              file=sys.stderr)
        states = compiler_state.StateFolders()  # kept across rungs: a configuration measured again compiles warm

        def measure(cases, repeats, policy):
            rung = dataclasses.replace(prepared.spec, repeats=repeats, timing=policy)
            outcome = prepared.run(store, cases=cases, spec=rung, states=states, quiet=args.quiet)
            if outcome.interrupted:
                raise interrupts.Interrupted(outcome.interrupted)
            return {c.key(): store.latest(c.key(), target.resume_id) for c in cases}

        try:
            result = tune.search(base, configs, measure, time.monotonic, budget, args.min_effect,
                                 on_rung=lambda r, n: print(f"rung {r + 1}: {n} configuration(s)", file=sys.stderr))
            shapes_text = _serve_shapes(prepared, result, batches, measure_shapes(prepared, store, args), args) \
                if served else ""
        except sweep.StoreFailed as exc:
            print(resume.failed(exc.message, args), file=sys.stderr)
            return EXIT_FAILED
        finally:
            states.close()
    print(render(result, args.min_effect, args.db) + shapes_text)
    return 0


def _shapes_spec(spec: specmod.RunSpec, config: tune.Config, batches: tuple[int, ...]) -> specmod.RunSpec:
    """The pick (its mode, options and settings) served over the batch sizes under every dynamic-shape setting,
    and padded to the largest."""
    v = config.variant
    return dataclasses.replace(spec, shapes=True, batch_sizes=batches, variants=("eager", _served_mode(v)),
                               dynamic_settings=traffic.DYNAMIC_SETTINGS, pad_to=(max(batches),),
                               compile=Variant("default", fullgraph=v.fullgraph, options=v.options),
                               repeats=tune.SHAPES_REPEATS, timing=tune.SHAPES_TIMING, **config.settings.changes())


def _served_mode(v: Variant) -> str:
    """The torch.compile mode a pick serves shapes with: its own, or plain compile for an AOTInductor package."""
    return v.mode if v.mode in MODES else "default"


def measure_shapes(prepared, store, args):
    """Measure a shapes spec's cases into the store; their stored results."""
    (target,) = prepared.targets

    def measure(spec: specmod.RunSpec) -> list[Result]:
        cases = plan.Plan(spec, prepared.models, prepared.dispatcher, prepared.targets).cases
        outcome = prepared.run(store, cases=cases, spec=spec, quiet=args.quiet)
        if outcome.interrupted:
            raise interrupts.Interrupted(outcome.interrupted)
        return [r for c in cases if (r := store.latest(c.key(), target.resume_id))]

    return measure


def _serve_shapes(prepared, result: tune.Outcome, batches: tuple[int, ...], measure, args) -> str:
    """The pick (or plain compile) over every batch size, under each dynamic-shape setting: the one that serves
    --requests of the --mix soonest, as code, and the shapes table."""
    config = result.winner.config if result.winner else tune.Config()
    # served as a whole-model torch.compile: an AOTInductor package or regional compile takes no dynamic setting here
    config = config.compiled(scope="model", mode=_served_mode(config.variant))
    print(f"serving batch sizes {', '.join(map(str, batches))} under each dynamic-shape setting", file=sys.stderr)
    view = View(measure(_shapes_spec(prepared.spec, config, batches)), args.min_effect, args.requests, args.mix)
    out = ["", f"Dynamic shapes, serving batch sizes {', '.join(map(str, batches))}:"]
    for m in shapes.models(view):
        pick, _, why = shapes.best(view, m)
        if pick is None or not pick.result.case.variant.compiled:
            out.append(f"keep it uncompiled for this traffic: {why}.")
        else:
            out += [f"{pick.name}: {why}.", "", "```python", tune.shapes_code(config, pick.result.case.variant), "```"]
        out += ["", markdown.table(shapes.summary_table(view, m))]
    return "\n".join(out)


def render(result: tune.Outcome, min_effect: float, db: str) -> str:
    out = []
    w = result.winner or (result.ranked[0] if result.ranked else None)  # the pick, else the best that was not
    if w is None:
        out.append("No configuration was measured ok: the table says why each was dropped.")
    else:
        s = w.speedup
        saving = stats_break_even(result.eager, w.result)
        if w is result.winner:
            out.append(f"Fastest correct configuration: {w.config.describe()}: {s.value:.2f}x eager "
                       f"(95% CI {interval(s.low, s.high, '{:.2f}x')}), {s.verdict}.")
        else:
            out.append(f"Nothing measured is faster than eager beyond {min_effect:.0%}: keep the model uncompiled. "
                       f"The best was {w.config.describe()}: {s.value:.2f}x eager "
                       f"(95% CI {interval(s.low, s.high, '{:.2f}x')}), {s.verdict}.")
        out += ["", "```python", w.config.code(), "```", ""]
        cold, warm = w.result.cold_compile_s, w.result.warm_compile_s
        out.append(f"Compile cost: {cold:.1f} s cold" + (f", {warm:.1f} s from a warm cache" if warm else "")
                   + (f"; it pays for itself after {saving:,} calls." if saving else "; it saves nothing per call."))
    rows = []
    for t in [*result.ranked, *(t for t in result.tried if t.dropped)]:
        s = t.speedup
        r = t.result
        first = start.first_start(r) if r else None
        rows.append([t.config.describe(), str(t.rungs), r.status if r else "",
                     f"{s.value:.3f}x" if s else "", interval(s.low, s.high, "{:.3f}x") if s else "",
                     s.verdict if s else "", cells.num(r and r.cold_compile_s, 1),
                     f"{first.seconds:.2f} ({first.name.rsplit(', ', 1)[-1]})" if first else "", t.dropped or ""])
    out += ["", markdown.table(Table("Configurations measured", ["configuration", "rungs", "status", "speed-up",
                                                                   "95% CI", "verdict", "cold compile s",
                                                                   "start s (how)", "dropped"],
                                     rows, [cells.verdict_note(min_effect), TUNE_START_NOTE]))]
    if result.untried:
        out.append(f"Not tried within the budget ({len(result.untried)}): "
                   + "; ".join(c.describe() for c in result.untried) + ". A larger --budget tries them.")
    out.append(f"Searched for {result.elapsed_s:.0f} s; every measurement is in {db} (`compilebench report {db}`).")
    return "\n".join(out)


TUNE_START_NOTE = ("start: the seconds a new process waited for its first answer (build, load, first call with any "
                   "compile), from the first start each configuration measured: a cold compile, or (AOTInductor) "
                   "loading the package its export built; cold compile s is then the export and packaging, paid "
                   "once ahead of time.")


def stats_break_even(eager: Result | None, compiled: Result | None) -> int | None:
    from compilebench.core import speedups, stats

    e, c = speedups.mean(eager), speedups.mean(compiled)
    return stats.break_even(compiled.cold_compile_s, e, c) if e and c else None
