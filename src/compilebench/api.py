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
import os
import sys
import tempfile
from typing import Callable

from compilebench import tune, zoo
from compilebench.core import (
    settings as settingsmod,
    shards,
    spec as specmod,
    stats,
    suites as suitesmod,
    traffic,
)
from compilebench.core.errors import UserError
from compilebench.report import data
from compilebench.report.results import Results, ShapesResults
from compilebench.report.view import DEFAULT_REQUESTS
from compilebench.run import interpreters, plan
from compilebench.run.placement import Placement
from compilebench.storage import schema, store as storemod


def load(path: str, min_effect: float = stats.DEFAULT_MIN_EFFECT, requests: int = DEFAULT_REQUESTS,
         mix: str | None = None) -> Results:
    """A results file (read-only; it is not changed) as Results."""
    return Results(data.load([path]), path, min_effect, requests, mix)


# The run's other options, by the names core/spec.asked takes them (benchmark() and shapes() take these by their own).
_SETTINGS = specmod.ASKED - {"models", "suite", "batch_sizes", "variants", "device", "inputs", "iters", "isolation",
                             "shapes", "image_sizes", "prompt_lens", "dynamic_settings", "pad_to", "lora_ranks",
                             "lora_hotswap", "regional"}
_NOT_SHAPES = {"interleave", "compile_scope", "regions"}  # shapes() serves whole-model compiles, one per process


def benchmark(model=None, *, suite: str | None = None, inputs: str | Callable[[int], dict] | None = None,
              variants=None, batch_sizes=None, device: str | None = None, iters: int | None = None,
              db: str | None = None, quiet: bool = True, gpus=None, executor: str = "local",
              ray_address: str | None = None, accelerator_type: str | None = None, cpus_per_case: int | None = None,
              shard: str | None = None, **settings) -> Results:
    """Measure `model` (or a suite's models) as `compilebench run` would, and return its results.

    Args:
        model: a zoo name, a hub id or local checkpoint folder, a "module:function" factory, or an nn.Module.
        suite: a named sweep ("quick", "seed", ...: `compilebench run --suite`); its models, batch sizes, variants
            and timing unless given.
        inputs: the keyword arguments of one call for a batch size, for a model your code builds.
        variants, batch_sizes, device, iters: as --variant, --batch-size, --device, --iters (each unit's own
            default iterations: 300 forward passes, 20 generate() calls); another engine is a variant too
            ("onnxruntime", "openvino", "tensorrt", "executorch": each names its extra where it is missing).
        db: the results file (default: a new one in a temporary folder). quiet: no progress bar.
        gpus, executor, ray_address, accelerator_type, cpus_per_case: where the cases run, as --gpus ("0,1",
            [0, 1] or "all") and --executor ray (pip install compilebench[ray]).
        shard: "i/N" (or "auto", "auto/N": a Slurm array's or Kubernetes Indexed Job's), as --shard: only that
            part of the cases, each shard into its own db; the results it returns are its part.
        **settings: the run's other options by their names: repeats, max_repeats, extra_time_s, min_effect, dtype,
            autocast, channels_last, tf32, attn, backend (a name, or several: ("inductor", "openvino")), fullgraph,
            dynamic, inductor_options (a dict), compile_scope ("model" or "regions"), regions, compile_decoder (a
            pipeline's), compile_cache, interleave, sync_each_call, weights, model_size ("tiny"), task, prompt_len,
            new_tokens, timeout_s, rerun, retry_failed, profile, compile_trace, tag, quantizations (torchao's:
            "int8-weight-only" or a list, as --quantize; pip install compilebench[quant]); the timing's warmup,
            warmup_s, warmup_cap_s, max_time_s, min_iters, first_calls; environments ({name: interpreter or virtual
            environment folder}: --env) and environment_vars ({name: {variable: value}}: --env-set).
    """
    _declare_environments(settings)
    _check_known("benchmark()", settings, _SETTINGS)
    if model is None and suite is None:
        raise UserError("benchmark() needs a model, or a suite (" + ", ".join(suitesmod.SUITES) + ")")
    name, inputs_ref, inline = _model_name(model, inputs) if model is not None else (None, None, False)
    where = _placement(gpus, executor, ray_address, accelerator_type, cpus_per_case)
    try:
        spec = specmod.asked(models=(name,) if name else None, suite=suite, batch_sizes=batch_sizes, variants=variants,
                             device=device, inputs=inputs_ref, iters=iters,
                             isolation="inline" if inline else "process", **settings)
        return _benchmark(spec, where, db, quiet, shard=shards.Shard.parse(shard) if shard else None)
    finally:
        if inline:
            zoo.REGISTRY.pop(name, None)  # registered for this call only


@dataclasses.dataclass
class Tuned:
    """What `compilebench tune` found: the search (each configuration tried, its speed-up, why one was dropped, the
    winner: tune.Outcome), the winner's results served over several batch sizes under each dynamic-shape setting
    (where several were asked), and the results file every measurement is in."""

    outcome: tune.Outcome
    served: Results | None
    path: str

    @property
    def winner(self) -> tune.Tried | None:
        """The fastest configuration `faster` than eager; None: keep the model uncompiled."""
        return self.outcome.winner

    def code(self) -> str | None:
        """The winner as code to paste."""
        return self.winner.config.code(self.outcome.part) if self.winner else None


def fastest(model: str, *, batch_sizes=(1,), budget: str | float = "20m", device: str | None = None,
            weights: str = "random", model_size: str = "full", task: str | None = None,
            min_effect: float = stats.DEFAULT_MIN_EFFECT, requests: int = DEFAULT_REQUESTS, mix: str | None = None,
            db: str | None = None, quantizations=(), min_agreement: float | None = None, engines=(),
            shard: str | None = None, quiet: bool = True) -> Tuned:
    """`compilebench tune` from Python: the fastest correct way to compile `model` here, searched within `budget`
    (seconds, or "90s", "20m", "1h"); with several `batch_sizes` the search runs at the largest, then its pick
    serves them all under each dynamic-shape setting, weighed by `requests` of the `mix`. Quantization only where
    asked: `quantizations` (torchao's, as tune --quantize) or a quality floor `min_agreement` (tune
    --min-agreement). Other engines only where asked: `engines` (any of kinds.engines(), as tune
    --engine). `shard` ("i/N"): search only that share of the configurations, as tune --shard. `quiet=False` says
    what it measures on stderr. Results go to `db` (default: a new results file in a temporary folder)."""
    path = db or os.path.join(tempfile.mkdtemp(prefix="compilebench-"), "results.db")
    found = tune.tuning(model, path, batch_sizes=batch_sizes, budget=budget, device=device, weights=weights,
                        model_size=model_size, task=task, min_effect=min_effect, mix=mix, requests=requests,
                        quantizations=quantizations, engines=engines,
                        shard=shards.Shard.parse(shard) if shard else None,
                        min_agreement=min_agreement, quiet=quiet, say=(lambda text: None) if quiet else (lambda text: print(text, file=sys.stderr)))
    served = ShapesResults(found.served, path, min_effect, requests, mix) if found.served else None
    return Tuned(found.outcome, served, path)


def _check_known(who: str, settings: dict, allowed: set[str]) -> None:
    unknown = set(settings) - allowed
    if unknown:
        raise UserError(f"{who} got unknown setting(s) {', '.join(sorted(unknown))} (allowed: "
                        f"{', '.join(sorted(allowed))})")


def _placement(gpus, executor, ray_address, accelerator_type, cpus_per_case) -> Placement:
    """--gpus and --executor ray by keyword: gpus as "0,1", "all" or a list of indices."""
    if gpus is not None and not isinstance(gpus, str):
        gpus = ",".join(str(g) for g in gpus)
    return Placement(executor, gpus, ray_address, accelerator_type, cpus_per_case)


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
           lora_ranks=(), lora_hotswap: bool = False, regional: bool = False, mode: str = "default",
           mix: str | None = None, requests: int = DEFAULT_REQUESTS, inputs=None,
           device: str | None = None, iters: int | None = None, db: str | None = None, quiet: bool = True, gpus=None,
           executor: str = "local", ray_address: str | None = None, accelerator_type: str | None = None,
           cpus_per_case: int | None = None, **settings) -> ShapesResults:
    """`compilebench shapes` from Python: `model` serves each shape (batch_sizes, at each of image_sizes ((W, H)
    or "WxH") or prompt_lens) under eager and each setting of `dynamic` (auto, true, false, mark) and, with
    `pad_to`, padded to those buckets, each compiled in `mode` (default, reduce-overhead, ...); a pipeline's
    shapes each with every LoRA adapter of `lora_ranks`, swapped in first (`lora_hotswap`: also in place);
    `regional`: also each repeated block compiled alone. `compile_cache` ("mega": a new process's start from torch's
    portable cache artifacts) as benchmark()'s. `mix` ("1:50,4:30,16:20") and `requests` weigh the time to serve.
    Other settings, and where the cases run, as benchmark()'s (repeats, dtype, backend, warmup, gpus, ...)."""
    _declare_environments(settings)
    _check_known("shapes()", settings, _SETTINGS - _NOT_SHAPES)
    name, inputs_ref, inline = _model_name(model, inputs)
    where = _placement(gpus, executor, ray_address, accelerator_type, cpus_per_case)
    try:
        spec = specmod.asked(models=(name,), batch_sizes=batch_sizes, device=device, inputs=inputs_ref, iters=iters,
                             isolation="inline" if inline else "process", shapes=True, image_sizes=image_sizes,
                             prompt_lens=prompt_lens, dynamic_settings=tuple(dynamic), pad_to=pad_to,
                             lora_ranks=lora_ranks, lora_hotswap=lora_hotswap, regional=regional,
                             variants=specmod.shape_variants(mode), **settings)
        return _benchmark(spec, where, db, quiet, ShapesResults, requests, mix)
    finally:
        if inline:
            zoo.REGISTRY.pop(name, None)


def _benchmark(spec: specmod.RunSpec, where: Placement, db: str | None, quiet: bool, kind: type = Results,
               requests: int = DEFAULT_REQUESTS, mix: str | None = None, shard: shards.Shard | None = None) -> Results:
    if db is not None:
        schema.check_path(db)  # as `run` does: a results file that cannot be written is refused before anything runs
    prepared = plan.prepare(spec, where, f"python: compilebench.{'shapes' if spec.shapes else 'benchmark'}() "
                                         f"of {', '.join(spec.models)}", shard)
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


__all__ = ["Results", "ShapesResults", "Tuned", "benchmark", "fastest", "load", "shapes"]
