"""The command line: parse -> RunSpec -> executor -> store -> report. A UserError is one line and exit 2;
any other exception is a bug and keeps its traceback."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys

from compilebench import __version__, dispatch, envinfo, executors, spec as specmod, store as storemod, suites, sweep, variants, zoo
from compilebench import report as reportmod
from compilebench.errors import UnknownChoice, UserError
from compilebench.report import compare as comparemod
from compilebench.report import data as reportdata
from compilebench.report import markdown, tables
from compilebench.zoo import hub

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130
EXECUTORS = ("local", "ray")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's default prints the usage too: keep bad input to one line
        self.exit(EXIT_BAD_INPUT, f"error: {message} (see `{self.prog} --help`)\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="compilebench", description="Measure what torch.compile does for Hugging Face vision models.")
    p.add_argument("--version", action="version", version=f"compilebench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="measure eager vs compiled latency and store every result")
    run.add_argument("--model", action="append", dest="models", metavar="NAME",
                     help="a zoo short name (`compilebench models`), a hub id or a local checkpoint directory (repeatable)")
    run.add_argument("--suite", default=None, metavar="NAME",
                     help=f"a named sweep: {', '.join(f'{k} ({v.description})' for k, v in suites.SUITES.items())}. "
                          f"With no --model and no --suite: {suites.DEFAULT_SUITE}")
    run.add_argument("--task", default=None, help=f"task of a checkpoint whose config does not say: {', '.join(hub.TASKS)}")
    run.add_argument("--image", default=None, metavar="PATH", help="the photo to preprocess (default: the one shipped)")
    run.add_argument("--batch-size", nargs="+", type=int, default=None, metavar="N", help="batch sizes (default: 1)")
    run.add_argument("--variant", nargs="+", default=None, metavar="V",
                     help=f"eager and/or torch.compile modes: {', '.join(specmod.VARIANTS)} (default: eager default)")
    run.add_argument("--backend", default="inductor", help="torch.compile backend (default: inductor)")
    run.add_argument("--fullgraph", action="store_true", help="compile with fullgraph=True: a graph break is an error")
    run.add_argument("--dynamic", action=argparse.BooleanOptionalAction, default=None,
                     help="compile with dynamic=True/False (default: torch's automatic dynamic shapes)")
    run.add_argument("--dtype", default="float32", help=f"model dtype: {', '.join(specmod.DTYPES)} (the model is cast)")
    run.add_argument("--autocast", action="store_true",
                     help="keep the model float32 and run it under torch.autocast(--dtype) instead of casting it")
    run.add_argument("--channels-last", action="store_true", help="model and image inputs in channels-last memory format")
    run.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=None,
                     help="allow TF32 matmuls and convolutions, or not (default: torch's setting, recorded)")
    run.add_argument("--attn", default=None, help=f"attention implementation: {', '.join(specmod.ATTNS)} (default: the model's)")
    run.add_argument("--interleave", action="store_true",
                     help="time the variants of each model and batch in one process, alternating blocks of 10 calls, "
                          "so drift hits them alike (default: one process per case, as the guide)")
    run.add_argument("--compile-cache", default="cold", metavar="MODE",
                     help="cold (default: an empty inductor cache per case), warm (compiled once first, then timed "
                          "from the on-disk cache) or a directory kept across runs")
    run.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    run.add_argument("--weights", default="random", help="random (offline, default) or pretrained (from_pretrained)")
    run.add_argument("--tiny", action="store_true",
                     help="build each model from a tiny config of the same architecture (a smoke test; not comparable)")
    run.add_argument("--iters", type=int, default=specmod.DEFAULT_ITERS, help="timed iterations (default: 300, as the guide)")
    run.add_argument("--warmup", type=int, default=None,
                     help=f"warm-up calls after the first call (default: {specmod.DEFAULT_WARMUP}; "
                          f"at least {specmod.MIN_WARMUP_CUDAGRAPHS} for CUDA-graph modes)")
    run.add_argument("--max-time", type=float, default=None, metavar="S",
                     help="time budget of one case's timed loop, in seconds; the real N is recorded")
    run.add_argument("--timeout", type=float, default=specmod.DEFAULT_TIMEOUT_S, metavar="S",
                     help="kill a case after this many seconds (process isolation; default: 3600)")
    run.add_argument("--isolation", default="process",
                     help="process (default: a fresh process and cold compile cache per case) or inline")
    run.add_argument("--executor", default="local",
                     help="local (default: this machine, one case per device at a time) or ray (a Ray cluster)")
    run.add_argument("--gpus", default=None, metavar="LIST",
                     help="local GPUs to use at once, one case on each: 0,1,2,3 or all (default: one device)")
    run.add_argument("--ray-address", default=None, metavar="ADDR",
                     help="Ray cluster to join (default: RAY_ADDRESS, or a local one started for the sweep)")
    run.add_argument("--accelerator-type", default=None, metavar="TYPES",
                     help="Ray GPU types to run the whole matrix on, each: H100,A100 or all (default: any GPU)")
    run.add_argument("--cpus-per-case", type=int, default=None, metavar="N",
                     help="CPUs a Ray task reserves, and threads its case runs (default: a node's CPUs per GPU; a "
                          "whole node for CPU cases)")
    run.add_argument("--db", default=storemod.DEFAULT_PATH, help=f"results file (default: {storemod.DEFAULT_PATH})")
    run.add_argument("--rerun", action="store_true", help="measure cases again even if the results file has them")
    run.add_argument("--quiet", action="store_true", help="no progress bar or per-case messages")
    run.add_argument("--out", default=None, metavar="DIR",
                     help="where the report of this run goes (default: a report/ folder beside --db)")
    run.add_argument("--format", default=",".join(reportmod.FORMATS),
                     help=f"report formats, comma-separated: {','.join(reportmod.FORMATS)} (default: all)")
    run.set_defaults(func=cmd_run)

    rep = sub.add_parser("report", help="render tables, charts, HTML, CSV and JSON from one or more results files")
    rep.add_argument("dbs", nargs="*", metavar="DB",
                     help=f"results files to merge (default: {storemod.DEFAULT_PATH})")
    rep.add_argument("--out", default=None, metavar="DIR", help="output folder (default: a report/ folder beside the first DB)")
    rep.add_argument("--format", default=",".join(reportmod.FORMATS),
                     help=f"comma-separated: {','.join(reportmod.FORMATS)} (default: all)")
    rep.set_defaults(func=cmd_report)

    cmp_ = sub.add_parser("compare", help="two results files side by side per case, with the ratio B/A")
    cmp_.add_argument("a", metavar="A.db")
    cmp_.add_argument("b", metavar="B.db")
    cmp_.add_argument("--machine-a", default=None, metavar="TEXT",
                      help="use A's results from the machine whose id or hardware name contains TEXT")
    cmp_.add_argument("--machine-b", default=None, metavar="TEXT", help="the same for B")
    cmp_.set_defaults(func=cmd_compare)

    env = sub.add_parser("env", help="print this machine's environment fingerprint")
    env.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    env.add_argument("--json", action="store_true", help="print JSON")
    env.set_defaults(func=cmd_env)

    models = sub.add_parser("models", help="list the model zoo")
    models.set_defaults(func=cmd_models)
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def cmd_run(args) -> int:
    spec = _run_spec(args)
    formats = reportmod.parse_formats(args.format)
    storemod.check_path(args.db)
    out_dir = args.out or _default_out(args.db)
    reportmod.check_out_dir(out_dir)
    for name in spec.models:
        entry = zoo.get(name, spec.task)
        if spec.model_size == "tiny" and isinstance(entry, hub.HubModel):
            raise UserError(f"--tiny: {name} is a checkpoint, not a zoo model with a tiny config")
    needs_backend = spec.backend != "inductor" and any(v != "eager" for v in spec.variants)
    if needs_backend and spec.backend not in variants.backends():  # listing them imports dynamo: seconds
        raise UnknownChoice("backend", spec.backend, variants.backends())
    spec, dispatcher, targets = _dispatch(args, spec)

    with storemod.Store.open(args.db) as store:  # the last check: nothing is written before it
        outcome = sweep.run(spec, store, dispatcher, targets, quiet=args.quiet)
        keys, ids = {c.key() for c in spec.cases()}, {t.resume_id for t in targets}
        results = [r for r in store.results()
                   if r["case_key"] in keys and (r["machine_id"] in ids or r.get("placement") in ids)]

    if results:
        print(markdown.tables([*tables.guide_tables(results), tables.details_table(results)]))
        print("Recommendation\n\n" + markdown.table(tables.recommendation_table(results)))
        written = reportmod.write(results, out_dir, formats, [args.db])
        print(f"report: {_main_file(written, out_dir)}", file=sys.stderr)
    kept = f"{len(outcome.results)} new result(s) in {args.db}"
    if outcome.skipped:
        kept += f"; {outcome.skipped} case(s) already there were skipped (--rerun measures them again)"
    if outcome.interrupted:
        print(f"interrupted: {kept}. Run the same command again to resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    print(kept, file=sys.stderr)
    return 0


def _dispatch(args, spec: specmod.RunSpec) -> tuple[specmod.RunSpec, dispatch.Dispatcher, list[dispatch.Target]]:
    """Where the cases run: one device here, every listed local GPU at once, or a Ray cluster; and the spec
    with the device its cases are keyed by."""
    if args.executor not in EXECUTORS:
        raise UnknownChoice("executor", args.executor, EXECUTORS)
    ray_only = {"--ray-address": args.ray_address, "--accelerator-type": args.accelerator_type,
                "--cpus-per-case": args.cpus_per_case}
    if args.executor == "ray":
        if args.gpus is not None:
            raise UserError("--gpus is for --executor local; Ray gives each case one whole GPU of its own")
        if spec.isolation == "inline":
            raise UserError("--isolation inline runs cases in this process; --executor ray runs them on the cluster")
        if args.cpus_per_case is not None and args.cpus_per_case < 1:
            raise UserError(f"--cpus-per-case {args.cpus_per_case}: must be at least 1")
        from compilebench import ray_executor

        dispatcher = ray_executor.RayDispatcher(
            address=args.ray_address, accelerator_types=args.accelerator_type, device=spec.device,
            cpus_per_case=args.cpus_per_case, timeout_s=spec.timeout_s)
        return dataclasses.replace(spec, device=dispatcher.device), dispatcher, dispatcher.targets()
    given = [name for name, value in ray_only.items() if value is not None]
    if given:
        raise UserError(f"{given[0]} is for --executor ray")
    if args.gpus is None:
        device = envinfo.resolve_device(spec.device)
        env = envinfo.collect(device)
        executor = executors.make(spec.isolation, spec.timeout_s)
        slot = dispatch.Slot(device, device, executor.run_group)
        return (dataclasses.replace(spec, device=device), dispatch.LocalPool([slot]),
                [dispatch.Target(device, envinfo.machine_id(env), env)])
    if spec.device not in (None, "cuda"):
        raise UserError(f"--gpus {args.gpus} with --device {spec.device}: give one of them")
    if spec.isolation == "inline":
        raise UserError("--gpus runs a worker process per GPU; --isolation inline runs cases in this process")
    gpus = envinfo.resolve_gpus(args.gpus)
    env = envinfo.collect(f"cuda:{gpus[0]}")
    return (dataclasses.replace(spec, device="cuda:0"), dispatch.LocalPool(dispatch.gpu_slots(gpus, spec.timeout_s)),
            [dispatch.Target(f"GPUs {args.gpus}", envinfo.machine_id(env), env)])


def _run_spec(args) -> specmod.RunSpec:
    """Explicit options win over the suite's; no --model and no --suite means the quick suite."""
    suite = suites.get(args.suite or suites.DEFAULT_SUITE) if args.suite or not args.models else None
    if args.image is not None:
        _check_image(args.image)
    return specmod.RunSpec(
        models=tuple(args.models or suite.models),
        batch_sizes=tuple(args.batch_size or (suite.batch_sizes if suite else (1,))),
        variants=tuple(args.variant or (suite.variants if suite else ("eager", "default"))),
        backend=args.backend,
        fullgraph=args.fullgraph,
        dynamic=args.dynamic,
        dtype=args.dtype,
        autocast=args.autocast,
        channels_last=args.channels_last,
        tf32=args.tf32,
        attn=args.attn,
        interleave=args.interleave,
        compile_cache=args.compile_cache if args.compile_cache in specmod.COMPILE_CACHES else os.path.abspath(args.compile_cache),
        device=args.device,
        weights=args.weights,
        model_size="tiny" if args.tiny else "full",
        task=args.task,
        image=os.path.abspath(args.image) if args.image else None,
        timing=specmod.TimingPolicy(
            iters=args.iters,
            warmup=_first(args.warmup, suite and suite.warmup, specmod.DEFAULT_WARMUP),
            max_time_s=_first(args.max_time, suite and suite.max_time_s),
        ),
        timeout_s=args.timeout,
        isolation=args.isolation,
        rerun=args.rerun,
    )


def _default_out(db: str) -> str:
    return os.path.join(os.path.dirname(db) or ".", "report")


def _main_file(written: list[str], out_dir: str) -> str:
    """The file to open: the HTML page when there is one."""
    for name in ("report.html", "report.md"):
        if os.path.join(out_dir, name) in written:
            return os.path.join(out_dir, name)
    return out_dir


def cmd_report(args) -> int:
    dbs = args.dbs or [storemod.DEFAULT_PATH]
    formats = reportmod.parse_formats(args.format)
    out_dir = args.out or _default_out(dbs[0])
    reportmod.check_out_dir(out_dir)
    results = reportdata.load(dbs)
    written = reportmod.write(results, out_dir, formats, dbs)
    print(markdown.tables([tables.summary_table(results), *tables.guide_tables(results)]))
    print(f"wrote {len(written)} file(s) to {out_dir}; open {_main_file(written, out_dir)}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    a = comparemod.select(reportdata.load([args.a]), args.machine_a)
    b = comparemod.select(reportdata.load([args.b]), args.machine_b)
    for results, path, option, text in ((a, args.a, "--machine-a", args.machine_a), (b, args.b, "--machine-b", args.machine_b)):
        if not results:
            raise UserError(f"no results in {path}" + (f" from a machine matching {option} {text!r}" if text else ""))
    print(markdown.table(comparemod.compare(a, b, args.a, args.b)))
    return 0


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


def cmd_env(args) -> int:
    env = envinfo.collect(envinfo.resolve_device(args.device))
    if args.json:
        print(json.dumps(env, indent=2))
    else:
        width = max(map(len, env))
        for k, v in env.items():
            print(f"{k:<{width}}  {v}")
    return 0


def cmd_models(args) -> int:
    """Every zoo model with its full-size parameter count (built on the meta device: no memory, no weights)
    and the shapes its processor gives for the shipped photo at batch 1."""
    import torch

    from compilebench.worker import default_image_path, load_image

    image = load_image(default_image_path())
    header = ("name", "label", "task", "checkpoint", "params", "inputs (batch 1)")
    rows = []
    for m in zoo.models():
        with torch.device("meta"):
            params = sum(p.numel() for p in m.build("random", "full").parameters())
        shapes = ", ".join(f"{k} {'x'.join(map(str, v.shape))}" for k, v in m.inputs(image, 1, "random", "full").items())
        rows.append((m.name, m.label, m.task, m.checkpoint, f"{params / 1e6:.2f}M", shapes))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0
