"""Every command and option of the command line, in groups of one concern each. Values are range-checked where
they become a RunSpec (spec.validate); here they are only parsed."""

from __future__ import annotations

import argparse

from compilebench import __version__, report as reportmod
from compilebench.core import job as jobmod, settings, spec as specmod, stats, suites, traffic, variant as variantmod
from compilebench.report.view import DEFAULT_REQUESTS
from compilebench.storage import schema
from compilebench.zoo import hub

EXIT_BAD_INPUT = 2


class _Once(argparse._StoreAction):
    """An option of one value, given twice, is refused: which of two typed values the user meant is not ours to
    guess (list options, --model, --batch-size, --variant, --inductor-option, add up instead)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", set())
        if self.dest in given:
            parser.error(f"{option_string} given twice ({getattr(namespace, self.dest)!r}, then {values!r}): give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _Once)  # every plain option of this parser and its groups
        self.register("action", "store", _Once)

    def error(self, message: str):  # argparse's default prints the usage too: keep bad input to one line
        self.exit(EXIT_BAD_INPUT, f"error: {message} (see `{self.prog} --help`)\n")


def percent(text: str) -> float:
    """'2%' or '2' -> 0.02."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 2%, got {text!r}") from None
    return value / 100


def parser(commands: dict) -> argparse.ArgumentParser:
    """`commands` maps each command name to the function that runs it."""
    p = Parser(prog="compilebench", description="Measure what torch.compile does for Hugging Face models.")
    p.add_argument("--version", action="version", version=f"compilebench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="measure eager vs compiled latency and store every result")
    _what(run)
    _compile(run)
    _settings(run)
    _timing(run)
    _why(run)
    _where(run)
    _results(run)
    run.set_defaults(func=commands["run"])

    _shapes(sub, commands)
    _tune(sub, commands)
    _report(sub, commands)

    cmp_ = sub.add_parser("compare", help="two results files side by side per case, with the ratio B/A and a verdict")
    cmp_.add_argument("a", metavar="A.db")
    cmp_.add_argument("b", metavar="B.db", nargs="?", default=None,
                      help="default: A.db again, for two environments of one run (--env-a, --env-b)")
    cmp_.add_argument("--env-a", default=None, metavar="NAME", help="use A's results measured under --env NAME")
    cmp_.add_argument("--env-b", default=None, metavar="NAME", help="the same for B")
    cmp_.add_argument("--machine-a", default=None, metavar="TEXT",
                      help="use A's results from the machine whose id or hardware name contains TEXT")
    cmp_.add_argument("--machine-b", default=None, metavar="TEXT", help="the same for B")
    cmp_.add_argument("--min-effect", type=percent, default=stats.DEFAULT_MIN_EFFECT, metavar="P",
                      help="the smallest difference worth calling faster or slower (default: 2%%)")
    cmp_.set_defaults(func=commands["compare"])

    _check(sub, commands)

    env = sub.add_parser("env", help="print this machine's environment fingerprint")
    env.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available)")
    env.add_argument("--json", action="store_true", help="print JSON")
    env.set_defaults(func=commands["env"])

    models = sub.add_parser("models", help="list the model zoo")
    models.set_defaults(func=commands["models"])
    return p


def _shapes(sub, commands: dict) -> None:
    """`compilebench shapes`: what it serves and the settings it compares; how to time, where and the results as
    `run` takes them."""
    shp = sub.add_parser("shapes", help="serve a sequence of input shapes: recompiles, dynamic-shape settings and the "
                                        "time to serve a mix of requests")
    g = shp.add_argument_group("what it serves")
    g.add_argument("--model", nargs="+", action="extend", dest="models", required=True, metavar="NAME",
                   help="zoo short names (`compilebench models`), hub ids or local checkpoint directories")
    g.add_argument("--batch-size", nargs="+", action="extend", type=int, default=None, dest="batch_sizes", metavar="N",
                   help="batch sizes served, in this order (default: 1)")
    g.add_argument("--image-size", nargs="+", action="extend", default=[], dest="image_sizes", metavar="WxH",
                   help="vision: the photo resized to each size before the processor, so models that keep the "
                        "aspect ratio (DETR's) see other shapes: 800x600 640x640 ...")
    g.add_argument("--prompt-len", nargs="+", action="extend", type=int, default=[], dest="prompt_lens", metavar="L",
                   help="text generation: prompt lengths served, in this order (default: the model's)")
    g.add_argument("--new-tokens", type=int, default=settings.DEFAULT_NEW_TOKENS, metavar="K",
                   help=f"text generation: tokens each generate() call makes (default: {settings.DEFAULT_NEW_TOKENS})")
    g.add_argument("--task", default=None, help=f"task of a checkpoint whose config does not say: {', '.join(hub.TASKS)}")
    g.add_argument("--image", default=None, metavar="PATH", help="vision: the photo (default: the one shipped)")
    g.add_argument("--weights", default=settings.default("weights"),
                   help="random (offline, default) or pretrained (from_pretrained)")
    g.add_argument("--tiny", action="store_true", help="a tiny config of the same architecture (a smoke test)")
    g = shp.add_argument_group("settings compared (each beside eager)")
    g.add_argument("--dynamic", nargs="+", action="extend", default=None, dest="dynamic_settings", metavar="SETTING",
                   help=f"{', '.join(traffic.DYNAMIC_SETTINGS)}: torch's automatic dynamic shapes, dynamic=True, "
                        "dynamic=False (a graph per shape), mark_dynamic on the batch (text: sequence) dimension "
                        f"before each first call (default: {' '.join(traffic.DEFAULT_DYNAMIC)})")
    g.add_argument("--pad-to", nargs="+", action="extend", type=int, default=[], metavar="SIZE",
                   help="also: each input padded up to the smallest of these bucket sizes (batch, or prompt length), "
                        "compiled with dynamic=False, its outputs sliced back")
    g.add_argument("--mix", default=None, metavar="SHAPE:WEIGHT,...",
                   help="the requests' shares of the shapes, e.g. 1:50,4:30,16:20 (default: uniform); a shape is "
                        "named by what varies: its batch size, WxH or prompt length")
    g.add_argument("--backend", default="inductor", help="torch.compile backend (default: inductor)")
    g.add_argument("--fullgraph", action="store_true", help="compile with fullgraph=True")
    g.add_argument("--inductor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an inductor config option, e.g. freezing=True (repeatable)")
    g.add_argument("--freezing", action="store_true", help="shorthand for --inductor-option freezing=True")
    _settings(shp)
    _timing(shp)
    _where(shp)
    _results(shp)
    shp.set_defaults(func=commands["shapes"])


def _tune(sub, commands: dict) -> None:
    """`compilebench tune`: its options."""
    tune = sub.add_parser("tune", help="search the compile settings that matter here for the fastest correct one")
    tune.add_argument("--model", required=True, metavar="NAME", help="a zoo model, a hub id or a local checkpoint directory")
    tune.add_argument("--batch-size", nargs="+", action="extend", type=int, default=None, dest="batch_sizes",
                      metavar="N",
                      help="batch size (default: 1); several: the search runs at the largest, then the dynamic-shape "
                           "settings of its pick serve them all (as `compilebench shapes`)")
    tune.add_argument("--budget", default="20m", metavar="TIME",
                      help="wall time the search may take, e.g. 90s, 20m, 1h (default: 20m)")
    tune.add_argument("--task", default=None, help="task of a checkpoint whose config does not say")
    tune.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    tune.add_argument("--weights", default=settings.default("weights"),
                   help="random (offline, default) or pretrained (from_pretrained)")
    tune.add_argument("--db", default=schema.DEFAULT_PATH, help=f"results file (default: {schema.DEFAULT_PATH})")
    tune.add_argument("--tiny", action="store_true", help="a tiny config of the same architecture (a smoke test)")
    tune.add_argument("--min-effect", type=percent, default=stats.DEFAULT_MIN_EFFECT, metavar="P",
                      help="the smallest speed-up worth acting on (default: 2%%)")
    tune.add_argument("--quiet", action="store_true", help="no progress bar")
    _requests(tune)
    _mix(tune)
    tune.set_defaults(func=commands["tune"])


def _report(sub, commands: dict) -> None:
    """`compilebench report`: its options."""
    rep = sub.add_parser("report", help="render tables, charts, HTML, CSV and JSON from one or more results files")
    rep.add_argument("dbs", nargs="*", metavar="DB", help=f"results files to merge (default: {schema.DEFAULT_PATH})")
    rep.add_argument("--out", default=None, metavar="DIR", help="output folder (default: a report/ folder beside the first DB)")
    rep.add_argument("--format", default=",".join(reportmod.FORMATS),
                     help=f"comma-separated: {','.join(reportmod.FORMATS)} (default: all)")
    rep.add_argument("--min-effect", type=percent, default=stats.DEFAULT_MIN_EFFECT, metavar="P",
                     help="the smallest speed-up worth calling faster or slower (default: 2%%)")
    rep.add_argument("--reference", default=None, metavar="NAME",
                     help="set published figures beside yours: guide (the transformers guide's A100, V100 and T4 "
                          "speed-ups)")
    _requests(rep)
    _mix(rep)
    rep.set_defaults(func=commands["report"])


def _check(sub, commands: dict) -> None:
    """`compilebench check`: its options."""
    chk = sub.add_parser("check", help="a regression gate for CI: exit 1 when the candidate is worse than the baseline")
    chk.add_argument("candidate", metavar="CANDIDATE.db")
    chk.add_argument("--baseline", default=None, metavar="BASELINE.db",
                     help="the results file to hold it against (default: CANDIDATE.db itself, with --baseline-env)")
    chk.add_argument("--baseline-env", default=None, metavar="NAME",
                     help="the baseline is the environment NAME (--env) of its run: `check RUN.db --baseline-env stable`")
    chk.add_argument("--candidate-env", default=None, metavar="NAME",
                     help="the candidate is the environment NAME of its run (default: the one other environment)")
    chk.add_argument("--max-slowdown", type=percent, default=0.05, metavar="P",
                     help="latency or speed-up over eager worse beyond this is a regression (default: 5%%)")
    chk.add_argument("--max-compile-increase", type=percent, default=0.15, metavar="P",
                     help="compile seconds up beyond this is a regression (default: 15%%)")
    chk.add_argument("--max-memory-increase", type=percent, default=0.10, metavar="P",
                     help="peak memory up beyond this is a regression (default: 10%%)")
    chk.add_argument("--drift", type=percent, default=None, metavar="P",
                     help="how far a mean moves between runs on the machine(s) measured (default: estimated from "
                          "the files' history, else 25%%)")
    chk.add_argument("--machine", default=None, metavar="TEXT",
                     help="use the results of the machine whose id or hardware name contains TEXT")
    chk.add_argument("--min-effect", type=percent, default=stats.DEFAULT_MIN_EFFECT, metavar="P",
                     help="the smallest difference worth calling faster or slower (default: 2%%)")
    chk.add_argument("--summary", default=None, metavar="FILE", help="also write the table as markdown (a CI job summary)")
    chk.add_argument("--junit", default=None, metavar="FILE", help="also write JUnit XML, one test case per case and metric")
    chk.set_defaults(func=commands["check"])

def _what(run) -> None:
    g = run.add_argument_group("what to measure")
    g.add_argument("--model", nargs="+", action="extend", dest="models", metavar="NAME",
                   help="zoo short names (`compilebench models`), hub ids or local checkpoint directories")
    g.add_argument("--suite", default=None, metavar="NAME",
                   help=f"a named sweep: {', '.join(f'{k} ({v.description})' for k, v in suites.SUITES.items())}. "
                        f"With no --model and no --suite: {suites.DEFAULT_SUITE}")
    g.add_argument("--task", default=None, help=f"task of a checkpoint whose config does not say: {', '.join(hub.TASKS)}")
    g.add_argument("--batch-size", nargs="+", action="extend", type=int, default=None, dest="batch_sizes", metavar="N",
                   help="batch sizes (default: 1); given twice, both count")
    g.add_argument("--variant", nargs="+", action="extend", default=None, dest="variants", metavar="V",
                   help=f"eager, torch.compile modes and/or aot-inductor (exported and packaged ahead of time): "
                        f"{', '.join(variantmod.VARIANTS)} (default: eager default)")
    g.add_argument("--image", default=None, metavar="PATH", help="vision: the photo to preprocess (default: the one shipped)")
    g.add_argument("--prompt-len", type=int, default=None, metavar="L",
                   help="text generation: prompt tokens (default: the model's, `compilebench models`)")
    g.add_argument("--new-tokens", type=int, default=settings.DEFAULT_NEW_TOKENS, metavar="K",
                   help=f"text generation: tokens each generate() call makes (default: {settings.DEFAULT_NEW_TOKENS})")
    g.add_argument("--weights", default=settings.default("weights"),
                   help="random (offline, default) or pretrained (from_pretrained)")
    g.add_argument("--tiny", action="store_true",
                   help="build each model from a tiny config of the same architecture (a smoke test; not comparable)")


def _compile(run) -> None:
    g = run.add_argument_group("how to compile")
    g.add_argument("--backend", default="inductor", help="torch.compile backend (default: inductor)")
    g.add_argument("--fullgraph", action="store_true", help="compile with fullgraph=True: a graph break is an error")
    g.add_argument("--dynamic", action=argparse.BooleanOptionalAction, default=None,
                   help="compile with dynamic=True/False (default: torch's automatic dynamic shapes)")
    g.add_argument("--inductor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an inductor config option for the compiled variants, e.g. freezing=True (repeatable)")
    g.add_argument("--freezing", action="store_true", help="shorthand for --inductor-option freezing=True")
    g.add_argument("--compile-scope", default=None, metavar="SCOPE",
                   help="model (default: torch.compile of the whole model) or regions (each repeated block compiled "
                        "alone, so identical blocks share one graph: the model's own list of repeated layers, or "
                        "--region)")
    g.add_argument("--region", nargs="+", action="extend", default=[], dest="regions", metavar="CLASS",
                   help="the block class(es) --compile-scope regions compiles, e.g. LlamaDecoderLayer (implies it)")
    g.add_argument("--compile-cache", default=settings.default("compile_cache"), metavar="MODE",
                   help="cold (default: a private, empty compiler state per case; its later repeats start from what "
                        "the first left, recorded as warm), warm (compiled once first, then timed from the on-disk "
                        "cache) or a directory kept across runs")


def _settings(run) -> None:
    g = run.add_argument_group("model settings")
    g.add_argument("--dtype", default=settings.default("dtype"), help=f"model dtype: {', '.join(settings.DTYPES)} (the model is cast)")
    g.add_argument("--autocast", action="store_true",
                   help="keep the model float32 and run it under torch.autocast(--dtype) instead of casting it")
    g.add_argument("--channels-last", action="store_true", help="model and image inputs in channels-last memory format")
    g.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=None,
                   help="allow TF32 matmuls and convolutions, or not (default: torch's setting, recorded)")
    g.add_argument("--attn", default=None, help=f"attention implementation: {', '.join(settings.ATTNS)} (default: the model's)")


def _timing(run) -> None:
    g = run.add_argument_group("how to time")
    g.add_argument("--repeats", type=int, default=specmod.DEFAULT_REPEATS, metavar="R",
                   help=f"fresh worker processes per case (default: {specmod.DEFAULT_REPEATS}); intervals and verdicts "
                        "come from the per-process means. A larger R on a stored sweep adds the missing repeats")
    g.add_argument("--iters", type=int, default=None,
                   help=f"timed calls per repeat (default: {jobmod.DEFAULT_ITERS}, as the guide; generation: "
                        f"{jobmod.DEFAULT_GENERATION_ITERS} generate() calls)")
    g.add_argument("--warmup", type=int, default=None,
                   help=f"warm-up calls after the first call (default: {jobmod.DEFAULT_WARMUP}; "
                        f"at least {jobmod.MIN_WARMUP_CUDAGRAPHS} for CUDA-graph modes)")
    g.add_argument("--warmup-time", type=float, default=None, dest="warmup_s", metavar="S",
                   help=f"warm-up goes on until S seconds have passed too (default: {jobmod.DEFAULT_GPU_WARMUP_S:g} on a "
                        "GPU, so even a 3 ms model reaches steady clocks; 0 on a CPU)")
    g.add_argument("--sync-each-call", action="store_true",
                   help="time each call to completion: a request's latency, host launch overhead included (default: "
                        "the pipelined loop, calls queued back to back and one synchronize at the end: throughput-style). "
                        "Part of the case; on a CPU both are the same")
    g.add_argument("--max-time", type=float, default=None, dest="max_time_s", metavar="S",
                   help="time budget of one repeat's timed loop, in seconds; the real N is recorded")
    g.add_argument("--min-iters", type=int, default=None, metavar="N",
                   help=f"no budget ends a timed loop before N calls (default: {jobmod.DEFAULT_MIN_ITERS}, or --iters "
                        "if fewer)")
    g.add_argument("--first-calls", type=int, default=jobmod.DEFAULT_FIRST_CALLS, metavar="K",
                   help=f"text generation: generate() calls timed one by one before the steady state (default: "
                        f"{jobmod.DEFAULT_FIRST_CALLS}): where compiling stops costing anything")
    g.add_argument("--interleave", action="store_true",
                   help="time the variants of each model and batch in one process per repeat, alternating blocks of "
                        "10 calls, so drift hits them alike and speed-ups pair up per process")
    g.add_argument("--min-effect", type=percent, default=stats.DEFAULT_MIN_EFFECT, metavar="P",
                   help="the smallest speed-up worth acting on: faster/slower need the whole 95%% interval beyond it, "
                        "same needs it inside (default: 2%%)")
    g.add_argument("--timeout", type=float, default=specmod.DEFAULT_TIMEOUT_S, dest="timeout_s", metavar="S",
                   help="kill a case after this many seconds (process isolation; default: 3600)")


def _why(run) -> None:
    g = run.add_argument_group("why it is (not) faster")
    g.add_argument("--profile", action="store_true",
                   help="after each case's timed loop, profile a few more calls with torch.profiler: a Chrome trace "
                        "beside the results file and, in the report, where the time goes (never inside the timed loop)")
    g.add_argument("--compile-trace", action="store_true",
                   help="keep each compiled case's TORCH_TRACE log beside the results file, and the HTML tlparse "
                        "makes of it when tlparse is installed (pip install tlparse)")


def _where(run) -> None:
    g = run.add_argument_group("where to run")
    g.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    g.add_argument("--isolation", default="process",
                   help="process (default: a fresh process and private compiler state per repeat) or inline")
    g.add_argument("--executor", default="local",
                   help="local (default: this machine, one case per device at a time) or ray (a Ray cluster)")
    g.add_argument("--gpus", default=None, metavar="LIST",
                   help="local GPUs to use at once, one case on each: 0,1,2,3 or all (default: one device)")
    g.add_argument("--ray-address", default=None, metavar="ADDR",
                   help="Ray cluster to join (default: RAY_ADDRESS, or a local one started for the sweep)")
    g.add_argument("--accelerator-type", default=None, metavar="TYPES",
                   help="Ray GPU types to run the whole matrix on, each: H100,A100 or all (default: any GPU)")
    g.add_argument("--env", action="append", default=[], metavar="NAME=PATH",
                   help="measure every case under this environment: PATH a Python interpreter or a virtual "
                        "environment's folder (another torch, say). Repeatable: each case is measured under every one "
                        "named (and no other), repeats alternating between them")
    g.add_argument("--env-set", nargs=2, action="append", default=[], metavar=("NAME", "KEY=VALUE"),
                   help="an environment variable for one --env environment's workers only (repeatable)")
    g.add_argument("--cpus-per-case", type=int, default=None, metavar="N",
                   help="CPUs a Ray task reserves, and threads its case runs (default: a node's CPUs per GPU; a "
                        "whole node for CPU cases)")


def _requests(g) -> None:
    g.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, metavar="N",
                   help="the requests one process serves: the start-up view recommends the fastest start that pays "
                        "for itself within them, and the shapes view times serving them of the --mix (default: "
                        f"{DEFAULT_REQUESTS:,})")


def _mix(g) -> None:
    g.add_argument("--mix", default=None, metavar="SHAPE:WEIGHT,...",
                   help="shapes results: the requests' shares of the shapes served, e.g. 1:50,4:30,16:20 (default: "
                        "uniform)")


def _results(run) -> None:
    g = run.add_argument_group("results")
    g.add_argument("--db", default=schema.DEFAULT_PATH, help=f"results file (default: {schema.DEFAULT_PATH})")
    g.add_argument("--rerun", action="store_true", help="measure cases again even if the results file has them")
    g.add_argument("--retry-failed", action="store_true",
                   help="on resume, measure again the repeats that failed with error or oom too (crashed and timed "
                        "out ones are always tried again)")
    g.add_argument("--quiet", action="store_true", help="no progress bar or per-case messages")
    g.add_argument("--out", default=None, metavar="DIR",
                   help="where the report of this run goes (default: a report/ folder beside --db)")
    g.add_argument("--format", default=",".join(reportmod.FORMATS),
                   help=f"report formats, comma-separated: {','.join(reportmod.FORMATS)} (default: all)")
    _requests(g)
