"""The Python API, for notebooks and scripts:

    import compilebench
    results = compilebench.benchmark("resnet-50", variants=("eager", "default"), batch_sizes=(1, 4))
    results.to_pandas()          # one row per result: model, batch_size, variant, status, mean_ms, ci95_*, speedup...
    print(results.table())       # the guide's tables, with intervals and verdicts
    results.report("report/")    # markdown, HTML, charts, CSV and JSON
    compilebench.benchmark(suite="quick")                 # a suite, as `compilebench run --suite quick`
    compilebench.load("compilebench-results/results.db")  # any results file, as Results
    served = compilebench.shapes("resnet-50", batch_sizes=(1, 2, 4, 8), dynamic=("auto", "false", "mark"), pad_to=(8,))
    served.to_pandas()           # one row per setting and shape: first call, graphs, steady ms, time to serve the mix

`model` is a zoo name, a hub id or a local checkpoint directory, a "module:function" string naming a factory
that returns an nn.Module (a fresh worker process imports it, as for any case), or an nn.Module object (measured
in this process: it cannot be handed to another; each result says so). `inputs` makes the keyword arguments of
one call for a batch size: a "module:function" string, or a callable (which, like an object, runs here).
Measurement is exactly what `compilebench run` does: the same repeats, intervals, verdicts and results file."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
import tempfile
from typing import Callable

from compilebench import report as reportmod, zoo
from compilebench.core import settings as settingsmod, spec as specmod, stats, suites as suitesmod, traffic
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.report import data, flat, markdown, reference as referencemod, shapes as shapesmod, tables
from compilebench.report.view import DEFAULT_REQUESTS, View
from compilebench.run import interpreters, plan
from compilebench.storage import store as storemod


class Results:
    """Results of a benchmark or a results file: rows, tables and reports, with the CLI's numbers."""

    def __init__(self, results: list[Result], path: str | None = None, min_effect: float = stats.DEFAULT_MIN_EFFECT,
                 requests: int = DEFAULT_REQUESTS, mix: str | None = None):
        self.results, self.path, self.min_effect, self.requests, self.mix = results, path, min_effect, requests, mix

    @functools.cached_property
    def view(self) -> View:
        """The report's model of these results, built on first use: tables, rows and files all read it. `requests`:
        the traffic the start-up and shapes views weigh each start against; `mix`: the shapes' shares of it."""
        return View(self.results, self.min_effect, self.requests, self.mix)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    def __repr__(self) -> str:
        ok = sum(1 for r in self.results if r.status == "ok")
        return f"<Results: {len(self.results)} result(s), {ok} ok, from {self.path or 'memory'}>"

    def to_pandas(self):
        """One row per result (pandas.DataFrame): the case, mean_ms and its 95% interval, the speed-up over eager
        with its interval and verdict, compile times, status and flags, the environment as env_*."""
        try:
            import pandas
        except ImportError:
            raise UserError("Results.to_pandas needs pandas: pip install pandas") from None
        return pandas.DataFrame(flat.rows(self.view))

    def table(self) -> str:
        """The guide's tables (and text generation's), as markdown."""
        if not self.results:
            return "(no results)"
        return markdown.tables([*tables.guide_tables(self.view), *tables.generation_tables(self.view)])

    def _repr_markdown_(self) -> str:  # a notebook shows the tables
        return self.table()

    def report(self, out_dir: str, formats: tuple[str, ...] = reportmod.FORMATS, reference: str | None = None) -> list[str]:
        """Write the report (markdown, HTML, charts, CSV, JSON) into out_dir; returns the files written. `reference`:
        "guide" sets the guide's published speed-ups beside these (`compilebench report --reference guide`)."""
        published = (reference, referencemod.load(reference)) if reference else None
        return reportmod.write(self.view, out_dir, tuple(formats), [self.path or "memory"], published)


class ShapesResults(Results):
    """Results of `shapes()`: rows per setting and shape served, and the shapes tables."""

    def to_pandas(self):
        """One row per setting and shape (pandas.DataFrame): the first call and the graphs it compiled, dynamo's
        reasons, the steady latency with its 95% interval and speed-up, and the setting's time to serve the mix."""
        try:
            import pandas
        except ImportError:
            raise UserError("Results.to_pandas needs pandas: pip install pandas") from None
        return pandas.DataFrame(shapesmod.rows(self.view))

    def table(self) -> str:
        found = shapesmod.tables(self.view)
        return markdown.tables(found) if found else "(no results)"


def load(path: str, min_effect: float = stats.DEFAULT_MIN_EFFECT, requests: int = DEFAULT_REQUESTS,
         mix: str | None = None) -> Results:
    """A results file (read-only; it is not changed) as Results."""
    return Results(data.load([path]), path, min_effect, requests, mix)


_SETTINGS = {f.name for f in dataclasses.fields(specmod.RunSpec)} - {
    "models", "batch_sizes", "variants", "timing", "device", "inputs", "isolation",
    "shapes", "image_sizes", "prompt_lens", "dynamic_settings", "pad_to"}  # shapes() takes these by their own names
_NOT_SHAPES = {"interleave", "compile_scope", "regions"}  # shapes() serves whole-model compiles, one per process
_TIMING = {f.name for f in dataclasses.fields(specmod.TimingPolicy)} - {"iters"}


def benchmark(model=None, *, suite: str | None = None, inputs: str | Callable[[int], dict] | None = None,
              variants=None, batch_sizes=None, device: str | None = None, iters: int | None = specmod.DEFAULT_ITERS,
              db: str | None = None, quiet: bool = True, **settings) -> Results:
    """Measure `model` (or a suite's models: suite="quick", "seed", ...; `compilebench run --suite`) as
    `compilebench run` would, and return its results. Variants and batch sizes: the suite's, else eager and
    default at batch 1. `settings` are the run's other options by their names: repeats, min_effect, dtype,
    autocast, channels_last, tf32, attn, backend, fullgraph, dynamic, inductor_options (a dict), compile_scope
    ("model" or "regions"), regions (block class names), compile_cache,
    interleave, sync_each_call, weights, model_size ("tiny"), task, prompt_len, new_tokens, timeout_s, rerun,
    retry_failed, profile, compile_trace (their files beside `db`); and the timing's: warmup, warmup_s,
    max_time_s, min_iters, first_calls. `environments` (a dict of name: interpreter or virtual environment folder)
    measures every case under each, as `--env`, and
    `environment_vars` ({name: {variable: value}}) is `--env-set`. Results go to `db` (default: a new results file
    in a temporary folder)."""
    _declare_environments(settings)
    unknown = set(settings) - _SETTINGS - _TIMING
    if unknown:
        raise UserError(f"benchmark() got unknown setting(s) {', '.join(sorted(unknown))} (allowed: "
                        f"{', '.join(sorted(_SETTINGS | _TIMING))})")
    if model is None and suite is None:
        raise UserError("benchmark() needs a model, or a suite (" + ", ".join(suitesmod.SUITES) + ")")
    chosen = suitesmod.choose(suite, model)
    name, inputs_ref, inline = _model_name(model, inputs) if model is not None else (None, None, False)
    given = suitesmod.fill(chosen, {
        "models": (name,) if name else None, "batch_sizes": batch_sizes, "variants": variants,
        "fullgraph": settings.pop("fullgraph", None), "warmup": settings.pop("warmup", None),
        "max_time_s": settings.pop("max_time_s", None)})
    floor_given = "min_iters" in settings
    timing = specmod.TimingPolicy(iters=iters, **{k: given.pop(k) for k in ("warmup", "max_time_s") if k in given},
                                  **{k: settings.pop(k) for k in list(settings) if k in _TIMING})
    if not floor_given and iters is not None and timing.min_iters > iters:
        timing = dataclasses.replace(timing, min_iters=iters)
    if isinstance(settings.get("inductor_options"), dict):
        settings["inductor_options"] = tuple(settings["inductor_options"].items())
    try:
        spec = specmod.RunSpec(**{"variants": ("eager", "default"), **given}, device=device, inputs=inputs_ref,
                               timing=timing, isolation="inline" if inline else "process", **settings)
        return _benchmark(spec, db, quiet)
    finally:
        if inline:
            zoo.REGISTRY.pop(name, None)  # registered for this call only


def _declare_environments(settings: dict) -> None:
    """environments={name: path} and environment_vars={name: {KEY: VALUE}} as --env and --env-set declare them."""
    given, variables = settings.pop("environments", None) or {}, settings.pop("environment_vars", None) or {}
    if not isinstance(given, dict) or not isinstance(variables, dict):
        raise UserError("environments= is a dict of name: interpreter path; environment_vars= a dict of name: "
                        "{variable: value}")
    if given or variables:
        settings["environments"] = interpreters.declare(
            [f"{name}={path}" for name, path in given.items()],
            [[name, f"{k}={v}"] for name, pairs in variables.items() for k, v in dict(pairs).items()])


def shapes(model, *, batch_sizes=None, image_sizes=(), prompt_lens=(), dynamic=traffic.DEFAULT_DYNAMIC, pad_to=(),
           mix: str | None = None, requests: int = DEFAULT_REQUESTS, inputs=None, device: str | None = None,
           iters: int | None = None, db: str | None = None, quiet: bool = True, **settings) -> ShapesResults:
    """`compilebench shapes` from Python: `model` serves each shape (batch_sizes, at each of image_sizes ((W, H)
    or "WxH") or prompt_lens) under eager and each setting of `dynamic` (auto, true, false, mark) and, with
    `pad_to`, padded to those buckets. `mix` ("1:50,4:30,16:20") and `requests` weigh the time to serve. Other
    settings as benchmark()'s (repeats, dtype, backend, warmup, ...)."""
    allowed = (_SETTINGS | _TIMING) - _NOT_SHAPES
    unknown = set(settings) - allowed
    if unknown:
        raise UserError(f"shapes() got unknown setting(s) {', '.join(sorted(unknown))} (allowed: "
                        f"{', '.join(sorted(allowed))})")
    name, inputs_ref, inline = _model_name(model, inputs)
    timing = specmod.TimingPolicy(iters=iters, warmup=settings.pop("warmup", traffic.DEFAULT_SHAPE_WARMUP),
                                  **{k: settings.pop(k) for k in list(settings) if k in _TIMING})
    if iters is not None and "min_iters" not in settings:
        timing = dataclasses.replace(timing, min_iters=min(timing.min_iters, iters))
    if isinstance(settings.get("inductor_options"), dict):
        settings["inductor_options"] = tuple(settings["inductor_options"].items())
    sizes = tuple(traffic.parse_image_size(s) if isinstance(s, str) else tuple(s) for s in image_sizes)
    try:
        spec = specmod.RunSpec(models=(name,), batch_sizes=tuple(batch_sizes or (1,)), device=device, inputs=inputs_ref,
                               timing=timing, isolation="inline" if inline else "process", shapes=True,
                               image_sizes=sizes, prompt_lens=tuple(prompt_lens), dynamic_settings=tuple(dynamic),
                               pad_to=tuple(sorted(set(pad_to))), **settings)
        return _benchmark(spec, db, quiet, ShapesResults, requests, mix)
    finally:
        if inline:
            zoo.REGISTRY.pop(name, None)


def _benchmark(spec: specmod.RunSpec, db: str | None, quiet: bool, kind: type = Results,
               requests: int = DEFAULT_REQUESTS, mix: str | None = None) -> Results:
    prepared = plan.prepare(spec)
    settingsmod.integer("--requests", requests, 1)  # checked before anything runs
    prepared.check_mix(mix)  # so is the mix
    path = db or os.path.join(tempfile.mkdtemp(prefix="compilebench-"), "results.db")
    with storemod.Store.open(path) as store:
        outcome = prepared.run(store, quiet=quiet)
        results = prepared.results(store)
    if outcome.interrupted:
        raise KeyboardInterrupt
    return kind(results, path, prepared.spec.min_effect, requests, mix)


def _model_name(model, inputs) -> tuple[str, str | None, bool]:
    """The name a model goes by, its inputs reference, and whether it must run in this process."""
    from compilebench.zoo import factory

    if isinstance(model, str):
        if factory.is_ref(model) and not isinstance(inputs, str):
            if inputs is None:
                raise UserError(f"model {model!r} is built by your code: say how to make its inputs (inputs=...)")
            factory.resolve(model, "model")
            entry = factory.ObjectModel(name=model, label=f"Custom/{model.rpartition(':')[2]}", task=factory.CUSTOM,
                                        checkpoint=model, module=factory.resolve(model, "model")(),
                                        make_inputs=inputs)
            zoo.register(entry)  # an inputs callable cannot travel to a worker: this process measures it
            return model, None, True
        if inputs is not None and not factory.is_ref(model):
            raise UserError(f"inputs=... is for models your code builds; {model!r} makes its own inputs")
        return model, inputs if isinstance(inputs, str) else None, False
    import torch

    if not isinstance(model, torch.nn.Module):
        raise UserError(f"model must be a name, a 'module:function' string or an nn.Module, got {type(model).__name__}")
    if inputs is None:
        raise UserError("an nn.Module needs inputs=...: a callable taking a batch size and returning the keyword "
                        "arguments of one call, or a 'module:function' string naming one")
    make = factory.resolve(inputs, "inputs") if isinstance(inputs, str) else inputs
    name = f"{type(model).__name__}@{id(model):x}"
    zoo.register(factory.ObjectModel(name=name, label=f"Custom/{type(model).__name__}", task=factory.CUSTOM,
                                     checkpoint="(object)", module=model, make_inputs=make))
    print(f"compilebench: {name} is an object: it is measured in this process, not in fresh worker processes "
          "(give a 'module:function' factory for those)", file=sys.stderr)
    return name, None, True


__all__ = ["Results", "ShapesResults", "benchmark", "load", "shapes"]
