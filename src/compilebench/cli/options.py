"""Every command of the command line with its options (`run`'s, in groups of one concern each, are groups.py's).
Values are range-checked where they become a RunSpec (core/spec); here they are only parsed."""

from __future__ import annotations

import argparse

from compilebench import __version__, report as reportmod
from compilebench.cli import groups
from compilebench.core import traffic, variant
from compilebench.storage import schema

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


def parser(commands: dict) -> argparse.ArgumentParser:
    """`commands` maps each command name to the function that runs it."""
    p = Parser(prog="compilebench", description="Measure what torch.compile does for Hugging Face models.")
    p.add_argument("--version", action="version", version=f"compilebench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="measure eager vs compiled latency and store every result")
    groups.what_to_measure(run)
    groups.how_to_compile(run)
    groups.model_settings(run)
    groups.how_to_time(run)
    groups.why_it_is(run)
    groups.where_to_run(run)
    groups.results(run)
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
    groups.min_effect(cmp_, "the smallest difference worth calling faster or slower")
    cmp_.set_defaults(func=commands["compare"])

    _check(sub, commands)
    _history(sub, commands)

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
    groups.task(g)
    groups.inputs_and_weights(g)
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
    g.add_argument("--mode", default="default",
                   help=f"the compile mode of every compiled setting: {', '.join(variant.MODES)} (default: default; "
                        "reduce-overhead records a CUDA graph per shape)")
    groups.compile_flags(g, dynamic=False)
    groups.model_settings(shp)
    groups.how_to_time(shp)
    groups.where_to_run(shp)
    groups.results(shp)
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
    groups.task(tune)
    tune.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda when available, else cpu)")
    groups.weights(tune)
    tune.add_argument("--db", default=schema.DEFAULT_PATH, help=f"results file (default: {schema.DEFAULT_PATH})")
    groups.min_effect(tune, "the smallest speed-up worth acting on")
    tune.add_argument("--quiet", action="store_true", help="no progress bar")
    groups.requests(tune)
    groups.mix(tune)
    tune.set_defaults(func=commands["tune"])


def _report(sub, commands: dict) -> None:
    """`compilebench report`: its options."""
    rep = sub.add_parser("report", help="render tables, charts, HTML, CSV and JSON from one or more results files")
    rep.add_argument("dbs", nargs="*", metavar="DB", help=f"results files to merge (default: {schema.DEFAULT_PATH})")
    rep.add_argument("--out", default=None, metavar="DIR", help="output folder (default: a report/ folder beside the first DB)")
    rep.add_argument("--format", default=",".join(reportmod.FORMATS),
                     help=f"comma-separated: {','.join(reportmod.FORMATS)} (default: all)")
    groups.min_effect(rep, "the smallest difference worth calling faster or slower")
    rep.add_argument("--reference", default=None, metavar="NAME",
                     help="set published figures beside yours: guide (the transformers guide's A100, V100 and T4 "
                          "speed-ups)")
    groups.details(rep)
    groups.requests(rep)
    groups.mix(rep)
    rep.set_defaults(func=commands["report"])


def _history(sub, commands: dict) -> None:
    """`compilebench history`: its options."""
    h = sub.add_parser("history", help="every run of every case over time, per machine, with the steps found in "
                                       "each series and what changed at each")
    h.add_argument("paths", nargs="+", metavar="FILE_OR_DIR", help="results files, or folders of them (*.db)")
    h.add_argument("--out", default=None, metavar="DIR",
                   help="where history.html, history.csv and history.json go (default: a history/ folder beside "
                        "the first path)")
    h.add_argument("--format", default="html,csv,json", help="comma-separated: html, csv, json (default: all)")
    groups.min_effect(h, "the smallest step worth naming")
    h.set_defaults(func=commands["history"])


def _check(sub, commands: dict) -> None:
    """`compilebench check`: its options."""
    chk = sub.add_parser("check", help="a regression gate for CI: exit 1 when the candidate is worse than the baseline")
    chk.add_argument("candidate", metavar="CANDIDATE.db", nargs="?")
    chk.add_argument("--history", nargs="+", default=None, metavar="FILE_OR_DIR",
                     help="gate on a series of runs instead: exit 1 when the newest two runs of a case complete a "
                          "step for the worse beyond --max-slowdown (`compilebench history` shows the series)")
    chk.add_argument("--baseline", default=None, metavar="BASELINE.db",
                     help="the results file to hold it against (default: CANDIDATE.db itself, with --baseline-env)")
    chk.add_argument("--baseline-env", default=None, metavar="NAME",
                     help="the baseline is the environment NAME (--env) of its run: `check RUN.db --baseline-env stable`")
    chk.add_argument("--candidate-env", default=None, metavar="NAME",
                     help="the candidate is the environment NAME of its run (default: the one other environment)")
    chk.add_argument("--max-slowdown", type=groups.percent, default=0.05, metavar="P",
                     help="latency or speed-up over eager worse beyond this is a regression (default: 5%%)")
    chk.add_argument("--max-compile-increase", type=groups.percent, default=0.15, metavar="P",
                     help="compile seconds up beyond this is a regression (default: 15%%)")
    chk.add_argument("--max-memory-increase", type=groups.percent, default=0.10, metavar="P",
                     help="peak memory up beyond this is a regression (default: 10%%)")
    chk.add_argument("--drift", type=groups.percent, default=None, metavar="P",
                     help="how far a mean moves between runs on the machine(s) measured (default: estimated from "
                          "the files' history, else 25%%)")
    chk.add_argument("--machine", default=None, metavar="TEXT",
                     help="use the results of the machine whose id or hardware name contains TEXT")
    groups.min_effect(chk, "the smallest difference worth calling faster or slower")
    chk.add_argument("--summary", default=None, metavar="FILE", help="also write the table as markdown (a CI job summary)")
    chk.add_argument("--junit", default=None, metavar="FILE", help="also write JUnit XML, one test case per case and metric")
    chk.set_defaults(func=commands["check"])
