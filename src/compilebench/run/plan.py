"""A run made ready, the one way into a run for `compilebench run`, `compilebench tune` and the Python API:
`prepare(spec)` looks every model up once, refuses settings that cannot work, and finds where the cases run
(this machine's device, found without initializing CUDA in this process, or what the caller's `where` gives:
local GPUs, a Ray cluster); `plan.run(store)` measures, `plan.results(store)` reads back what it measured."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Callable

from compilebench import zoo
from compilebench.core import environment as environmentmod, machine, spec as specmod, traffic
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.result import Result
from compilebench.measure import compiler
from compilebench.run import devices, dispatch, executors, interpreters, locks, sweep
from compilebench.zoo import factory, hub


def resolve_models(spec: specmod.RunSpec) -> dict:
    """Every model named, looked up once here (a checkpoint's config is read once, not per case); pretrained
    weights that cannot be had (no network, no local copy) are refused before anything runs."""
    entries = {name: zoo.get(name, spec.task, spec.inputs) for name in spec.models}
    for name, entry in entries.items():
        if spec.model_size == "tiny" and isinstance(entry, (hub.HubModel, hub.HubCausalLM, factory.FactoryModel,
                                                            factory.ObjectModel)):
            raise UserError(f"--tiny: {name} is a checkpoint, not a zoo model with a tiny config")
        if spec.weights == "pretrained" and entry.pretrained_from:
            hub.check_available(entry.pretrained_from)
    return entries


def check_variants(spec: specmod.RunSpec, entries: dict) -> None:
    """Settings that one kind of model cannot take, refused up front rather than failing in every case."""
    generation = [n for n, e in entries.items() if e.kind == "generation"]
    vision = [n for n in entries if n not in generation]
    if "eager-static-cache" in spec.variants and vision:
        raise UserError(f"--variant eager-static-cache is for text generation; {vision[0]} is a {entries[vision[0]].task} model")
    if generation and (spec.image or spec.channels_last):
        raise UserError(f"{'--image' if spec.image else '--channels-last'} is for vision models; {generation[0]} generates text")
    if (spec.prompt_len is not None or spec.prompt_lens) and not generation:
        raise UserError("--prompt-len is for text-generation models (`compilebench models` lists them)")
    if spec.image_sizes and not vision:
        raise UserError(f"--image-size resizes the photo of a vision model; {generation[0]} generates text")
    needs_backend = spec.backend != "inductor" and any(v not in ("eager", "eager-static-cache") for v in spec.variants)
    if needs_backend and spec.backend not in compiler.backends():  # listing them imports dynamo: seconds
        raise UnknownChoice("backend", spec.backend, compiler.backends())
    if spec.inductor_options and spec.backend != "inductor":
        raise UserError(f"--inductor-option configures inductor; --backend {spec.backend} would ignore it")


def this_device(spec: specmod.RunSpec) -> tuple[specmod.RunSpec, dispatch.Dispatcher, list[dispatch.Target]]:
    """One device of this machine, one case at a time, under its lock. Where the device is not named (the probe
    cannot refuse it), the workers' launchers start first and import while it is probed (half a second of the
    driver's start here); a named device is checked before anything starts."""
    executor = executors.make(spec.isolation, spec.timeout_s, spec.models, spec.uses_inductor)
    if spec.device is None:
        executor.start_launchers(range(1, spec.repeats + 1), spec.environments or (None,), wait=False)
    found = devices.probe(spec.device)
    device, env = found["device"], found["env"]
    if device.startswith("cuda") and spec.isolation == "process":
        # As a --gpus slot: the worker sees its GPU alone, as cuda:0, and holds that GPU's lock, by UUID.
        index = int(device.split(":")[1])
        slot = dispatch.gpu_slot(index, executor, found["gpu_ids"].get(index))
    else:  # the CPU, or a GPU in this very process (inline), which can see every GPU
        gpu_id = found["gpu_ids"].get(int(device.split(":")[1])) if device.startswith("cuda") else None
        slot = dispatch.Slot(device, device, executor.run, executor.cancel, locks.names_for(device, gpu_id),
                             executor.start_launchers)
    return (dataclasses.replace(spec, device=device), dispatch.LocalPool([slot]),
            [dispatch.Target(device, machine.machine_id(env), env)])


Where = Callable[[specmod.RunSpec], "tuple[specmod.RunSpec, dispatch.Dispatcher, list[dispatch.Target]]"]


@dataclass
class Plan:
    """What a run measures and where: its spec (the device resolved), its models, cases and targets."""

    spec: specmod.RunSpec
    models: dict  # name -> zoo entry
    dispatcher: dispatch.Dispatcher
    targets: list[dispatch.Target]
    run_id: str = dataclasses.field(default_factory=lambda: uuid.uuid4().hex)  # on every repeat it measures (drift.py)

    @property
    def cases(self) -> list[specmod.Case]:
        prompt_lens = {name: e.default_prompt_len for name, e in self.models.items() if e.kind == "generation"}
        return self.spec.cases(prompt_lens)

    def check_mix(self, mix: str | None) -> None:
        """--mix names shapes that every shapes case serves: refused (a UserError) before anything runs."""
        for c in self.cases:
            traffic.parse_mix(mix, tuple(traffic.Shape.parse(t) for t in c.shapes))

    @property
    def labels(self) -> dict[str, tuple[str, str]]:
        """Each model's row label and task, for results that come back without them (a timeout)."""
        return {name: (e.label, e.task) for name, e in self.models.items()}

    def run(self, store, *, cases: list[specmod.Case] | None = None, spec: specmod.RunSpec | None = None,
            states=None, quiet: bool = False) -> sweep.SweepOutcome:
        """Measure every repeat of the plan's cases (or of `cases`, under `spec`: tune's rungs) not stored yet."""
        return sweep.run(spec or self.spec, store, self.dispatcher, self.targets, cases=self.cases if cases is None else cases,
                         labels=self.labels, states=states, quiet=quiet, run_id=self.run_id)

    def results(self, store, cases: list[specmod.Case] | None = None) -> list[Result]:
        """The newest stored result of each case on each target, whoever measured it (this run or another
        process on the same file): as `compilebench run` reports them."""
        found = (store.latest(c.key(), t.resume_id) for c in (self.cases if cases is None else cases)
                 for t in self.targets if t.takes(c))
        return [r for r in found if r is not None]


def prepare(spec: specmod.RunSpec, where: Where | None = None) -> Plan:
    """Check everything a run needs before anything runs or is written; a UserError names what is wrong."""
    compiler.check_options(spec.inductor_options)
    models = resolve_models(spec)
    check_variants(spec, models)
    fingerprints = interpreters.probe(spec.environments)
    spec, dispatcher, targets = (where or this_device)(spec)
    if spec.environments:
        targets = environment_targets(spec.environments, fingerprints, targets)
    made = Plan(spec, models, dispatcher, targets)
    made.cases  # a case that cannot be made (a model serving one shape) is refused here, before anything is written
    return made


def environment_targets(declared, fingerprints: dict[str, dict], targets: list[dispatch.Target]) -> list[dispatch.Target]:
    """Each target once per environment (--env): its cases, its fingerprint (torch, transformers, triton: what its
    results are resumed by), its interpreter."""
    if any(t.placement for t in targets):
        raise UserError("--env starts workers from interpreters of this machine; --executor ray runs them on the "
                        "cluster's (run a sweep per environment there instead)")
    out = []
    for t in targets:
        for e in declared:
            env = {**t.env, **fingerprints[e.name], **environmentmod.recorded(e.to_dict())}
            out.append(dispatch.Target(f"{t.name} [{e.name}]", machine.machine_id(env), env, environment=e))
    return out
