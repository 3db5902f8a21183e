"""The option groups of `compilebench run`, one concern each (what to measure, how to compile, model settings, how
to time, why it is (not) faster, where to run, results), which `shapes` shares in part and `tune` and `report`
take `--requests` and `--mix` from. Each destination is the name core/spec.asked takes; values are range-checked
there, here they are only parsed."""

from __future__ import annotations

import argparse

from compilebench import (
    kinds,
    report as reportmod,  # noqa: F401 - registers the report's exporters
)
from compilebench.core import job as jobmod, settings, sharing, shards, spec as specmod, stats, suites
from compilebench.report import exporters
from compilebench.report.view import DEFAULT_REQUESTS
from compilebench.run import rounds
from compilebench.storage import schema
from compilebench.zoo import hub


def percent(text: str) -> float:
    """'2%' or '2' -> 0.02."""
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a percentage such as 2%, got {text!r}") from None
    return value / 100


def what_to_measure(run) -> None:
    g = run.add_argument_group("what to measure")
    g.add_argument("--model", nargs="+", action="extend", dest="models", metavar="NAME",
                   help="zoo short names (`compilebench models`), hub ids or local checkpoint directories")
    g.add_argument("--suite", default=None, metavar="NAME",
                   help=f"a named sweep: {', '.join(f'{k} ({v.description})' for k, v in suites.SUITES.items())}. "
                        f"With no --model and no --suite: {suites.DEFAULT_SUITE}")
    task(g)
    g.add_argument("--batch-size", nargs="+", action="extend", type=int, default=None, dest="batch_sizes", metavar="N",
                   help="batch sizes (default: 1); given twice, both count")
    g.add_argument("--variant", nargs="+", action="extend", default=None, dest="variants", metavar="V",
                   help=f"eager, torch.compile modes, aot-inductor (exported and packaged ahead of time) and/or "
                        f"another engine: {', '.join(kinds.names())} (default: eager default)")
    quantize(g, "each crossed with every variant (beside eager in the model's dtype, the baseline)")
    g.add_argument("--prompt-len", type=int, default=None, metavar="L",
                   help="text generation: prompt tokens (default: the model's, `compilebench models`)")
    inputs_and_weights(g)


def inputs_and_weights(g) -> None:
    """The model's inputs and weights, as `run` and `shapes` take them."""
    g.add_argument("--image", default=None, metavar="PATH", help="vision: the photo to preprocess (default: the one shipped)")
    g.add_argument("--new-tokens", type=int, default=settings.DEFAULT_NEW_TOKENS, metavar="K",
                   help=f"text generation: tokens each generate() call makes (default: {settings.DEFAULT_NEW_TOKENS})")
    g.add_argument("--steps", type=int, default=None, metavar="N",
                   help="text-to-image: denoiser steps per image (default: the pipeline's, `compilebench models`)")
    weights(g)


def weights(g) -> None:
    g.add_argument("--weights", default=settings.default("weights"),
                   help="random (offline, default) or pretrained (from_pretrained)")
    g.add_argument("--tiny", action="store_true",
                   help="build each model from a tiny config of the same architecture (a smoke test; not comparable)")


def task(g) -> None:
    g.add_argument("--task", default=None, help=f"task of a checkpoint whose config does not say: {', '.join(hub.TASKS)}")


def compile_flags(g, dynamic: bool = True) -> None:
    """torch.compile's arguments beside its mode, as `run` and `shapes` take them (`shapes` compares --dynamic
    settings of its own)."""
    g.add_argument("--backend", nargs="+", default=["inductor"], metavar="NAME",
                   help="torch.compile backends (default: inductor); several: each compiled mode under each (--backend "
                        "inductor openvino)")
    g.add_argument("--fullgraph", action="store_true", help="compile with fullgraph=True: a graph break is an error")
    if dynamic:
        g.add_argument("--dynamic", action=argparse.BooleanOptionalAction, default=None,
                       help="compile with dynamic=True/False (default: torch's automatic dynamic shapes)")
    g.add_argument("--compile-decoder", action="store_true",
                   help="text-to-image: compile the pipeline's decoder (its VAE's decode) too (default: its denoiser "
                        "alone)")
    g.add_argument("--inductor-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an inductor config option for the compiled variants, e.g. freezing=True (repeatable)")
    g.add_argument("--freezing", action="store_true", help="shorthand for --inductor-option freezing=True")


def quantize(g, how: str) -> None:
    g.add_argument("--quantize", nargs="+", action="extend", default=None, dest="quantizations", metavar="Q",
                   help=f"torchao quantizations of the linear layers, {how}: {', '.join(settings.QUANTIZATIONS)} "
                        "(default: none; pip install compilebench[quant])")


def min_effect(g, what: str = "the smallest speed-up worth acting on: faster/slower need the whole 95%% interval "
                                "beyond it, same needs it inside") -> None:
    g.add_argument("--min-effect", type=percent, default=stats.DEFAULT_MIN_EFFECT, metavar="P",
                   help=f"{what} (default: {stats.DEFAULT_MIN_EFFECT * 100:g}%%)")


def drift(g) -> None:
    g.add_argument("--drift", type=percent, default=None, metavar="P",
                   help="how far a mean moves between runs on the machine(s) measured (default: estimated from the "
                        "files' history, else 25%%)")


def how_to_compile(run) -> None:
    g = run.add_argument_group("how to compile")
    compile_flags(g)
    g.add_argument("--compile-scope", default=None, metavar="SCOPE",
                   help="model (default: torch.compile of the whole model) or regions (each repeated block compiled "
                        "alone, so identical blocks share one graph: the model's own list of repeated layers, or "
                        "--region)")
    g.add_argument("--region", nargs="+", action="extend", default=[], dest="regions", metavar="CLASS",
                   help="the block class(es) --compile-scope regions compiles, e.g. LlamaDecoderLayer (implies it)")
    compile_cache(g)


def compile_cache(g) -> None:
    g.add_argument("--compile-cache", default=settings.default("compile_cache"), metavar="MODE",
                   help="cold (default: a private, empty compiler state per case; its later repeats start from what "
                        "the first left, recorded as warm), warm (compiled once first, then timed from the on-disk "
                        "cache), mega or mega:DIR (torch's portable cache artifacts, saved by repeat 1 and loaded by "
                        "the later repeats into an empty state; DIR keeps them across runs) or a directory kept "
                        "across runs")


def model_settings(run) -> None:
    g = run.add_argument_group("model settings")
    g.add_argument("--dtype", default=settings.default("dtype"), help=f"model dtype: {', '.join(settings.DTYPES)} (the model is cast)")
    g.add_argument("--autocast", action="store_true",
                   help="keep the model float32 and run it under torch.autocast(--dtype) instead of casting it")
    g.add_argument("--channels-last", action="store_true", help="model and image inputs in channels-last memory format")
    g.add_argument("--tf32", action=argparse.BooleanOptionalAction, default=None,
                   help="allow TF32 matmuls and convolutions, or not (default: torch's setting, recorded)")
    g.add_argument("--attn", default=None, help=f"attention implementation: {', '.join(settings.ATTNS)} (default: the model's)")


def how_to_time(run) -> None:
    g = run.add_argument_group("how to time")
    g.add_argument("--repeats", type=int, default=None, metavar="R",
                   help=f"fresh worker processes per case, measured in rounds across the run (default: "
                        f"{specmod.DEFAULT_REPEATS}, then more until decided); intervals and verdicts come from the "
                        "per-process figures (each process's median call). R alone: exactly R, a fixed design. A "
                        "larger R on a stored sweep adds the missing repeats")
    g.add_argument("--max-repeats", type=int, default=None, metavar="M",
                   help=f"repeats until decided: a case whose verdict is still inconclusive after R gets more rounds, "
                        f"two at a time, up to M processes (default: {specmod.DEFAULT_MAX_REPEATS} unless --repeats "
                        "is given); each look's interval is widened so a false verdict over all looks stays within 5%%")
    g.add_argument("--extra-time", type=float, default=None, dest="extra_time_s", metavar="S",
                   help=f"at most S seconds of those extra rounds (default: {rounds.EXTRA_SHARE:g}x as long as the planned "
                        "repeats took); "
                        "a case the budget ended undecided says so")
    g.add_argument("--iters", type=int, default=None,
                   help=f"timed calls per repeat (default: {jobmod.DEFAULT_ITERS}, as the guide; generation: "
                        f"{jobmod.DEFAULT_GENERATION_ITERS} generate() calls)")
    g.add_argument("--warmup", type=int, default=None,
                   help=f"warm-up calls after the first call (default: {jobmod.DEFAULT_WARMUP}; "
                        f"at least {jobmod.MIN_WARMUP_CUDAGRAPHS} for CUDA-graph modes)")
    g.add_argument("--warmup-time", type=float, default=None, dest="warmup_s", metavar="S",
                   help=f"warm-up goes on until S seconds have passed too (default: {jobmod.DEFAULT_GPU_WARMUP_S:g} on a "
                        "GPU, so even a 3 ms model reaches steady clocks; 0 on a CPU). --interleave: the process's, "
                        f"spent on its first variant's warm-up; the others warm up over {sharing.SETTLED} windows at "
                        "least")
    g.add_argument("--warmup-cap", type=float, default=None, dest="warmup_cap_s", metavar="S",
                   help=f"after --warmup calls and --warmup-time, warm-up goes on until the calls stop getting faster "
                        f"(and a GPU's clock stops rising), for at most S seconds (default: "
                        f"{jobmod.DEFAULT_WARMUP_CAP_S:g}); each repeat records why its warm-up ended. 0: no more "
                        "than --warmup and --warmup-time")
    g.add_argument("--sync-each-call", action="store_true",
                   help="time each call to completion: a request's latency, host launch overhead included (default: "
                        "the pipelined loop, calls queued back to back and one synchronize at the end: throughput-style). "
                        "Part of the case; on a CPU both are the same")
    g.add_argument("--max-time", type=float, default=None, dest="max_time_s", metavar="S",
                   help="time budget of one repeat's timed loop, in seconds; the real N is recorded")
    g.add_argument("--min-iters", type=int, default=None, metavar="N",
                   help=f"no budget ends a timed loop before N calls (default: {jobmod.DEFAULT_MIN_ITERS}, or --iters "
                        "if fewer)")
    g.add_argument("--first-calls", type=int, default=None, metavar="K",
                   help=f"text generation: generate() calls timed one by one before the steady state (default: "
                        f"{jobmod.DEFAULT_FIRST_CALLS}): where compiling stops costing anything")
    g.add_argument("--interleave", action=argparse.BooleanOptionalAction, default=None,
                   help="time the variants of each model and batch in one process per repeat, alternating blocks of "
                        "10 calls, so drift hits them alike and speed-ups pair up per process (the quick suite's "
                        "default; --no-interleave: a process each, paired by round)")
    min_effect(g)
    g.add_argument("--timeout", type=float, default=specmod.DEFAULT_TIMEOUT_S, dest="timeout_s", metavar="S",
                   help="kill a case after this many seconds (process isolation; default: 3600)")


def why_it_is(run) -> None:
    g = run.add_argument_group("why it is (not) faster")
    g.add_argument("--profile", action="store_true",
                   help="after each case's timed loop, profile a few more calls with torch.profiler: a Chrome trace "
                        "beside the results file and, in the report, where the time goes (never inside the timed loop)")
    g.add_argument("--compile-trace", action="store_true",
                   help="keep each compiled case's TORCH_TRACE log beside the results file, and the HTML tlparse "
                        "makes of it when tlparse is installed (pip install tlparse)")


def db(g) -> None:
    g.add_argument("--db", default=schema.DEFAULT_PATH, help=f"results file (default: {schema.DEFAULT_PATH})")


def quiet(g) -> None:
    g.add_argument("--quiet", action="store_true", help="no progress bar or per-case messages")


def device(g) -> None:
    g.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")


def formats(g, page: str = "report") -> None:
    """--format: a page's formats (report/exporters.py), comma-separated, all by default."""
    allowed = ",".join(exporters.formats(page))
    g.add_argument("--format", default=allowed, help=f"{page} formats, comma-separated: {allowed} (default: all)")


def where_to_run(run) -> None:
    g = run.add_argument_group("where to run")
    device(g)
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
    g.add_argument("--shard", default=None, metavar="i/N", help=shards.SHARD_HELP + " (docs/sweeps.md)")
    g.add_argument("--shard-history", default=None, metavar="DB",
                   help="balance the shards by how long each case took in this results file (default: estimated "
                        "from the plan: compiles by the model's size, the timed loop by its budget)")


def requests(g) -> None:
    g.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, metavar="N",
                   help="the requests one process serves: the start-up view recommends the fastest start that pays "
                        "for itself within them, and the shapes view times serving them of the --mix (default: "
                        f"{DEFAULT_REQUESTS:,})")


def mix(g) -> None:
    g.add_argument("--mix", default=None, metavar="SHAPE:WEIGHT,...",
                   help="shapes served: the requests' shares of the shapes, e.g. 1:50,4:30,16:20 (default: uniform); "
                        "a shape is named by what varies: its batch size, WxH or prompt length")


def details(g) -> None:
    g.add_argument("--details", action="store_true",
                   help="print the guide's tables, every result's details and the legends (as in the report files) "
                        "instead of the summary that fits 100 columns")


def where_results_go(run) -> None:
    g = run.add_argument_group("results")
    db(g)
    g.add_argument("--rerun", action="store_true", help="measure cases again even if the results file has them")
    g.add_argument("--retry-failed", action="store_true",
                   help="on resume, measure again the repeats that failed with error or oom too (crashed and timed "
                        "out ones are always tried again)")
    quiet(g)
    g.add_argument("--tag", default=None, metavar="TEXT",
                   help="this run's label in `compilebench history`: a commit, a nightly's date, a version (default: "
                        "$COMPILEBENCH_TAG, else the git commit of the current folder when it is in a repository)")
    details(g)
    g.add_argument("--out", default=None, metavar="DIR",
                   help="where the report of this run goes (default: a report/ folder beside --db)")
    formats(g)
    requests(g)
