"""Before a run measures anything: every model looked up once, settings that cannot work refused, and this
machine's device found (without initializing CUDA in this process). Shared by `run`, `tune` and the Python API."""

from __future__ import annotations

import dataclasses

from compilebench import dispatch, envinfo, executors, locks, probe, spec as specmod, variants, zoo
from compilebench.errors import UnknownChoice, UserError
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
    generation = [n for n, e in entries.items() if isinstance(e, zoo.TextGenerationEntry)]
    vision = [n for n in entries if n not in generation]
    if "eager-static-cache" in spec.variants and vision:
        raise UserError(f"--variant eager-static-cache is for text generation; {vision[0]} is a {entries[vision[0]].task} model")
    if generation and (spec.image or spec.channels_last):
        raise UserError(f"{'--image' if spec.image else '--channels-last'} is for vision models; {generation[0]} generates text")
    if spec.prompt_len is not None and not generation:
        raise UserError("--prompt-len is for text-generation models (`compilebench models` lists them)")
    needs_backend = spec.backend != "inductor" and any(v not in ("eager", "eager-static-cache") for v in spec.variants)
    if needs_backend and spec.backend not in variants.backends():  # listing them imports dynamo: seconds
        raise UnknownChoice("backend", spec.backend, variants.backends())
    if spec.inductor_options and spec.backend != "inductor":
        raise UserError(f"--inductor-option configures inductor; --backend {spec.backend} would ignore it")


def this_device(spec: specmod.RunSpec) -> tuple[specmod.RunSpec, dispatch.Dispatcher, list[dispatch.Target]]:
    """One device of this machine, one case at a time, under its lock. Where the device is not named (the probe
    cannot refuse it), the workers' launchers start first and import while it is probed (half a second of the
    driver's start here); a named device is checked before anything starts."""
    executor = executors.make(spec.isolation, spec.timeout_s, spec.models, spec.uses_inductor)
    if spec.device is None:
        executor.start_launchers(range(1, spec.repeats + 1), wait=False)
    found = probe.probe(spec.device)
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
            [dispatch.Target(device, envinfo.machine_id(env), env)])
