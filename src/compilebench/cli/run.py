"""`compilebench run`: options -> RunSpec, checked whole before anything is measured or written; then the sweep,
the tables and the report of what it ran."""

from __future__ import annotations

import dataclasses
import os
import sys

from compilebench import report as reportmod
from compilebench.cli import resume
from compilebench.cli.reports import default_out, main_file
from compilebench.core import machine, settings, spec as specmod, suites
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.measure import compiler
from compilebench.report import details, markdown, tables
from compilebench.report.view import View
from compilebench.run import devices, dispatch, interpreters, plan, sweep
from compilebench.storage import store as storemod

EXECUTORS = ("local", "ray")
EXIT_FAILED = 1  # the environment failed the sweep (a full disk, a locked results file): nothing of it was lost


def cmd_run(args) -> int:
    settings.integer("--requests", args.requests, 1)  # the report's: refused before anything is measured
    return execute(args, run_spec(args), _guide_tables)


def _guide_tables(view: View) -> str:
    return (markdown.tables([*tables.guide_tables(view), *tables.generation_tables(view), details.details_table(view)])
            + "\n\nRecommendation\n\n" + markdown.table(tables.recommendation_table(view)))


def execute(args, spec: specmod.RunSpec, show, check=lambda prepared: None) -> int:
    """Measure a spec as `run` does (every check first, then the sweep into the results file), print `show(view)`
    of what it ran and write its report. `check(prepared)`: the command's own checks of the prepared run."""
    formats = reportmod.parse_formats(args.format)
    storemod.check_path(args.db)
    out_dir = args.out or default_out(args.db)
    reportmod.check_out_dir(out_dir)
    prepared = plan.prepare(spec, lambda s: where(args, s))
    check(prepared)

    with storemod.Store.open(args.db) as store:  # the last check: nothing is written before it
        try:
            outcome = prepared.run(store, quiet=args.quiet)
        except sweep.StoreFailed as exc:
            print(f"error: {exc.message}. Every result stored before it is kept; to resume: {resume.command(args)}",
                  file=sys.stderr)
            return EXIT_FAILED
        results = prepared.results(store)

    if results:
        view = View(results, prepared.spec.min_effect, args.requests, getattr(args, "mix", None))
        print(show(view))
        written = reportmod.write(view, out_dir, formats, [args.db])
        print(f"report: {main_file(written, out_dir)}", file=sys.stderr)
    print(summary(outcome, args.db), file=sys.stderr)
    if outcome.interrupted:
        print(resume.interrupted(args), file=sys.stderr)
        return 128 + outcome.interrupted
    return 0


def summary(outcome: sweep.SweepOutcome, db: str) -> str:
    parts = [f"{len(outcome.results)} repeat(s) measured into {db}"]
    if outcome.recovered:
        parts.append(f"{outcome.recovered} result(s) an earlier run could not store were stored now")
    if outcome.done_before:
        parts.append(f"{outcome.done_before} stored earlier were kept (--rerun measures them again)")
    if outcome.retried:
        parts.append(f"{outcome.retried} that had crashed or timed out were tried again")
    if outcome.not_retried:
        parts.append(f"{outcome.not_retried} that failed earlier (error, oom) were left as they are "
                     "(--retry-failed tries them again)")
    if outcome.held_elsewhere:
        parts.append(f"{outcome.held_elsewhere} were measured by another run at the same time")
    if outcome.after_failure:
        parts.append(f"{outcome.after_failure} were not run because an earlier repeat of the case failed")
    return "; ".join(parts)


def _settings(args) -> dict:
    """Every setting whose option has its name (settings.py declares them), then those the command line spells
    otherwise or whose paths must outlive the working folder."""
    given = {name: getattr(args, name) for name in settings.names() if name in vars(args)}
    return {**given, "model_size": "tiny" if args.tiny else "full",
            "compile_cache": _compile_cache(args.compile_cache),
            "image": os.path.abspath(args.image) if args.image else None}


def _compile_cache(given: str) -> str:
    """Its folder as an absolute path (the workers run elsewhere, and a later run must find it again)."""
    if given in settings.COMPILE_CACHES:
        return given
    kept = settings.mega_dir(given)
    if kept is not None:
        return f"{settings.MEGA}:{os.path.abspath(kept)}" if kept else given  # mega: with no folder is refused later
    return os.path.abspath(given)


def run_spec(args) -> specmod.RunSpec:
    """Explicit options win over the suite's; no --model and no --suite means the quick suite."""
    if args.image is not None:
        _check_image(args.image)
    options = [compiler.parse_option(o) for o in args.inductor_option] + ([("freezing", True)] if args.freezing else [])
    if len(dict(options)) != len(options):
        raise UserError(f"--inductor-option: {[k for k, _ in options]}: an option is given twice")
    given = suites.fill(suites.choose(args.suite, args.models), {
        "models": args.models, "batch_sizes": args.batch_size, "variants": args.variant, "fullgraph": args.fullgraph,
        "warmup": args.warmup, "max_time_s": args.max_time})
    return specmod.RunSpec(
        models=tuple(given["models"]),
        batch_sizes=tuple(given.get("batch_sizes", (1,))),
        variants=tuple(given.get("variants", ("eager", "default"))),
        backend=args.backend,
        fullgraph=given["fullgraph"],
        dynamic=args.dynamic,
        inductor_options=tuple(options),
        compile_scope=args.compile_scope or ("regions" if args.region else "model"),
        regions=tuple(args.region),
        **_settings(args),
        timing=specmod.TimingPolicy(
            iters=args.iters,
            warmup=given.get("warmup", specmod.DEFAULT_WARMUP),
            max_time_s=given.get("max_time_s"),
            min_iters=_first(args.min_iters, specmod.DEFAULT_MIN_ITERS if args.iters is None else min(specmod.DEFAULT_MIN_ITERS, args.iters)),
            first_calls=args.first_calls,
            warmup_s=args.warmup_time,
        ),
        repeats=args.repeats,
        min_effect=args.min_effect,
        timeout_s=args.timeout,
        isolation=args.isolation,
        rerun=args.rerun,
        retry_failed=args.retry_failed,
        environments=interpreters.declare(args.env, args.env_set),
        profile=args.profile,
        compile_trace=args.compile_trace,
    )


def where(args, spec: specmod.RunSpec) -> tuple[specmod.RunSpec, dispatch.Dispatcher, list[dispatch.Target]]:
    """Where the cases run: one device here, every listed local GPU at once, or a Ray cluster; and the spec with
    the device its cases are keyed by. The devices are learnt without initializing CUDA in this process."""
    if args.executor not in EXECUTORS:
        raise UnknownChoice("executor", args.executor, EXECUTORS)
    ray_only = {"--ray-address": args.ray_address, "--accelerator-type": args.accelerator_type,
                "--cpus-per-case": args.cpus_per_case}
    if args.executor == "ray":
        kept = [option for option, on in (("--profile", spec.profile), ("--compile-trace", spec.compile_trace),
                                          ("--compile-cache mega", settings.is_mega(spec.compile_cache)),
                                          ("--variant aot-inductor", specmod.AOT_INDUCTOR in spec.variants)) if on]
        if kept:
            raise UserError(f"{kept[0]} keeps its files on this host (beside the results file, or the artifacts and "
                            "packages a later repeat loads); --executor ray runs cases on other hosts (use --executor "
                            "local)")
        if args.gpus is not None:
            raise UserError("--gpus is for --executor local; Ray gives each case one whole GPU of its own")
        if spec.isolation == "inline":
            raise UserError("--isolation inline runs cases in this process; --executor ray runs them on the cluster")
        if args.cpus_per_case is not None and args.cpus_per_case < 1:
            raise UserError(f"--cpus-per-case must be an integer >= 1, got {args.cpus_per_case}")
        from compilebench.run import ray_cluster

        dispatcher = ray_cluster.RayDispatcher(
            address=args.ray_address, accelerator_types=args.accelerator_type, device=spec.device,
            cpus_per_case=args.cpus_per_case, timeout_s=spec.timeout_s)
        return dataclasses.replace(spec, device=dispatcher.device), dispatcher, dispatcher.targets()
    given = [name for name, value in ray_only.items() if value is not None]
    if given:
        raise UserError(f"{given[0]} is for --executor ray")
    if args.gpus is None:
        return plan.this_device(spec)
    if spec.device not in (None, "cuda"):
        raise UserError(f"--gpus {args.gpus} with --device {spec.device}: give one of them")
    if spec.isolation == "inline":
        raise UserError("--gpus runs a worker process per GPU; --isolation inline runs cases in this process")
    found = devices.probe("cuda", args.gpus)
    env = found["env"]
    return (dataclasses.replace(spec, device="cuda:0"),
            dispatch.LocalPool(dispatch.gpu_slots(found["gpus"], spec.timeout_s, found["gpu_ids"], spec.models,
                                                   spec.uses_inductor, found["gpu_cpus"])),
            [dispatch.Target(f"GPUs {args.gpus}", machine.machine_id(env), env)])


def _first(*values):
    return next((v for v in values if v is not None), None)


def _check_image(path: str) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.verify()
    except FileNotFoundError:
        raise UserError(f"--image {path!r}: no such file") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise UserError(f"--image {path!r} is not an image file Pillow can read ({exc})") from None
