"""A search measured for real (`compilebench tune` and `compilebench.fastest`): the plan checked whole before
anything runs, each rung measured through the run's sweep into the results file (a configuration's compiler state
kept across rungs, so a later repeat compiles warm), then, with several batch sizes, the pick served over them
under each dynamic-shape setting (as `compilebench shapes`)."""

from __future__ import annotations

import dataclasses
import shlex
import time
from dataclasses import dataclass, field
from typing import Callable

from compilebench import kinds
from compilebench.core import settings, shards, spec as specmod
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.measure import compiler_state, correctness, fingerprint
from compilebench.run import plan, refusals
from compilebench.storage import interrupts, schema, store as storemod
from compilebench.tune.halving import SHAPES_SHARE, Outcome, parse_budget, search, served_config, served_spec, space


@dataclass
class Tuning:
    """What a search found (Outcome), and where several batch sizes were asked, the stored results of its pick
    served over them under each dynamic-shape setting."""

    outcome: Outcome
    served: list[Result] = field(default_factory=list)


def tuning(model: str, db: str, *, batch_sizes=(1,), budget: str | float = "20m", device: str | None = None,
           weights: str = "random", model_size: str = "full", task: str | None = None, min_effect: float,
           mix: str | None = None, requests: int = 1, quantizations: tuple[str, ...] = (), engines=(),
           min_agreement: float | None = None, quiet: bool = True, shard: shards.Shard | None = None,
           say: Callable[[str], None] = lambda text: None, command: str | None = None) -> Tuning:
    """Search the configurations that can matter for `model` here within `budget` (seconds, or "90s", "20m", "1h"),
    at the largest of `batch_sizes`, every measurement into the results file `db`; then serve the pick over the
    batch sizes. Quantization only where asked: `quantizations` (torchao's), or a quality floor `min_agreement`
    alone (every quantization the device runs); a quantized configuration below the floor (0.99 unless given) is
    dropped. Other engines (kinds.engines()) only where asked: `engines`, each in every dtype it runs here. `shard`:
    search only its share of the configurations (dealt round-robin, the likeliest first), each shard into its own
    file; a report over the files holds the best of all. `say` is told what it measures (each rung); `quiet`: no
    progress bar; `command`: as typed, for the record of each of its runs (a rung, the pick served)."""
    seconds = budget if isinstance(budget, (int, float)) and not isinstance(budget, bool) else parse_budget(budget)
    settings.integer("--requests", requests, 1)
    if min_agreement is not None and not 0 < min_agreement <= 1:
        raise UserError(f"--min-agreement must be a fraction above 0 and at most 1 (0.99: 99%), got {min_agreement:g}")
    batches = tuple(dict.fromkeys(batch_sizes or (1,)))
    named = (quantizations,) if isinstance(quantizations, str) else quantizations  # fastest(quantizations="int8-...")
    asked_q = tuple(q for q in dict.fromkeys(named) if q != "none")
    spec = specmod.asked(models=(model,), batch_sizes=(max(batches),), variants=("eager", "default"), device=device,
                         weights=weights, model_size=model_size, task=task, min_effect=min_effect, repeats=1,
                         quantizations=asked_q)  # refused here as a run refuses them: device, model, torchao
    schema.check_path(db)
    prepared = plan.prepare(spec, command=command or f"python: compilebench.fastest() of {model}")
    engines = _engines(engines, prepared)
    tried_q = asked_q or (_runnable(prepared) if min_agreement is not None else ())
    floor = (min_agreement if min_agreement is not None else correctness.MIN_AGREEMENT) if tried_q else None
    kind = (entry := prepared.models[model]).kind
    configs = space(prepared.spec.device, kind == "vision", tried_q, engines, pipeline=kind == "image")
    if shard is not None:
        configs = shards.dealt(configs, shard)
        prepared.shard = shards.ShardPlan.of_search(shard, shards.shared_command(shlex.split(prepared.command or "")),
                                                    fingerprint.version("compilebench"))
    if len(batches) > 1:  # the mix and the shapes refused before anything runs
        _plan_of(prepared, served_spec(prepared.spec, served_config(Outcome(None)), batches)).check_mix(mix)
        seconds *= SHAPES_SHARE
    with storemod.Store.open(db) as store:  # a file it cannot use is refused before anything is said or made
        share = f" (shard {shard}: its share; a report over every shard's file holds the best of all)" if shard else ""
        say(f"tuning {model} (batch {max(batches)}) on {prepared.targets[0].env.hardware}: {len(configs)} "
            f"configurations{share}, budget {seconds:.0f} s" + (f", then its pick over batch sizes "
                                                          f"{', '.join(map(str, batches))}" if len(batches) > 1 else ""))
        states = compiler_state.StateFolders()

        def rung(cases, repeats, policy) -> dict:
            spec_ = dataclasses.replace(prepared.spec, repeats=repeats, timing=policy)
            return dict(zip((c.key() for c in cases), _measured(prepared, store, spec_, cases, states, quiet)))

        try:
            outcome = search(prepared.cases[0], configs, rung, time.monotonic, seconds, min_effect,
                             on_rung=lambda r, n: say(f"rung {r + 1}: {n} configuration(s)"), min_agreement=floor)
            outcome.part = getattr(entry, "denoiser_name", None)  # a pipeline's code compiles its denoiser
            if len(batches) < 2:
                return Tuning(outcome)
            say(f"serving batch sizes {', '.join(map(str, batches))} under each dynamic-shape setting")
            spec_ = served_spec(prepared.spec, served_config(outcome), batches)
            found = _measured(prepared, store, spec_, _plan_of(prepared, spec_).cases, None, quiet)
            return Tuning(outcome, [r for r in found if r is not None])
        finally:
            states.close()


def _runnable(prepared: plan.Plan) -> tuple[str, ...]:
    """The quantizations this run's device can run on this model (--min-agreement without --quantize); torchao
    missing is refused in one line, as --quantize is."""
    found = []
    for q in settings.QUANTIZATIONS[1:]:
        refusals.check_installed([q])  # torchao missing: refused, as --quantize is
        try:
            refusals.check_devices([q], prepared.spec, prepared.targets)
            refusals.check_quantizations([q], prepared.models, prepared.spec)
        except UserError:
            continue
        found.append(q)
    return tuple(found)


def _engines(given, prepared: plan.Plan) -> tuple[str, ...]:
    """--engine's engines, refused as a run refuses them: an unknown one, its package missing, a text-generation
    model, a device it cannot run on."""
    engines = (given,) if isinstance(given, str) else tuple(dict.fromkeys(given))
    for e in engines:
        kinds.get(e, "engine")
    if engines:
        asked = dataclasses.replace(prepared.spec, variants=("eager", *engines))
        refusals.check_kinds(asked, prepared.models)
        refusals.check_devices([], asked, prepared.targets)
    return engines


def _plan_of(prepared: plan.Plan, spec: specmod.RunSpec) -> plan.Plan:
    return plan.Plan(spec, prepared.models, prepared.dispatcher, prepared.targets, prepared.command)


def _measured(prepared: plan.Plan, store, spec: specmod.RunSpec, cases: list, states, quiet: bool) -> list:
    """The cases measured under `spec` into the store (an interruption raised as one): their stored results (None
    where a case has none)."""
    outcome = prepared.run(store, cases=cases, spec=spec, states=states, quiet=quiet)
    if outcome.interrupted:
        raise interrupts.Interrupted(outcome.interrupted)
    (target,) = prepared.targets
    return [store.latest(c.key(), target.resume_id) for c in cases]
