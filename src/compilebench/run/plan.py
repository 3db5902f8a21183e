"""A run made ready, the one way into a run for `compilebench run`, `shapes`, `tune` and the Python API:
`prepare(spec, placement)` looks every model up once, refuses settings that cannot work, and finds where the cases
run (run/placement.py: this machine's device, found without initializing CUDA in this process, its GPUs, or a Ray
cluster); `plan.run(store)` measures, `plan.results(store)` reads back what it measured."""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass

from compilebench import kinds, zoo
from compilebench.core import (
    case as casemod,
    interpreter,
    sequential,
    settings,
    shards,
    spec as specmod,
    traffic,
)
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.core.variant import Variant
from compilebench.measure import compiler, fingerprint, quantization
from compilebench.run import costs, dispatch, interpreters, sweep, tags
from compilebench.run.placement import Placement
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
    if generation and (spec.image or spec.channels_last):
        raise UserError(f"{'--image' if spec.image else '--channels-last'} is for vision models; {generation[0]} generates text")
    if (spec.prompt_len is not None or spec.prompt_lens) and not generation:
        raise UserError("--prompt-len is for text-generation models (`compilebench models` lists them)")
    if spec.image_sizes and not vision:
        raise UserError(f"--image-size resizes the photo of a vision model; {generation[0]} generates text")
    check_kinds(spec, entries)
    torch_compiled = any(Variant.named(v).compiled and not Variant.named(v).prepared for v in spec.variants)
    for backend in spec.all_backends if torch_compiled else ():
        if backend == "inductor":
            continue
        try:
            kinds.register_backend(backend)  # an engine's own backend (openvino) registers as it is imported
        except ImportError as exc:
            raise UserError(str(exc)) from None
        if backend not in compiler.backends():  # listing them imports dynamo: seconds
            raise UnknownChoice("backend", backend, compiler.backends())
    if spec.compile.options and "inductor" not in spec.all_backends:
        raise UserError(f"--inductor-option configures inductor; --backend {spec.compile.backend} would ignore it")


def check_kinds(spec: specmod.RunSpec, entries: dict) -> None:
    """Each way of running a model that the run asks for (kinds/), asked in one loop whether it can run what is
    asked (the device as asked, the dtype, the models, --interleave) and whether its packages are installed, before
    anything runs; an unknown name refused with the names allowed."""
    asked = kinds.Asked(device=spec.device, dtype=spec.dtype, interleave=spec.interleave,
                        generation=next((n for n, e in entries.items() if e.kind == "generation"), None),
                        vision=next((n for n, e in entries.items() if e.kind != "generation"), None))
    for kind in map(kinds.get, spec.variants):
        why = kind.refusal(asked) or kind.missing()
        if why:
            raise UserError(why)


def check_devices(quantized: list[str], spec: specmod.RunSpec, targets) -> None:
    """What the devices the cases will run on cannot run, refused before anything runs: a quantization (int4 and
    float8 need CUDA, float8 a recent GPU), and each kind asked on each target's device and torch (TensorRT needs
    CUDA, eager-cudagraphs too, AOTInductor's package crashes on CUDA under one torch)."""
    for t in targets:
        device = str(t.env.device or spec.device or "cpu")
        for q in quantized:
            why = quantization.refusal(q, device, t.env.compute_capability)
            if why:
                raise UserError(why)
        there = kinds.Asked(device=device, dtype=spec.dtype, torch=t.env.torch)
        for kind in map(kinds.get, spec.variants):
            why = kind.refusal(there)
            if why:
                raise UserError(why)


def check_quantizations(quantized: list[str], entries: dict, spec: specmod.RunSpec) -> None:
    """A quantization of a model without a linear layer, refused before anything runs (the model's skeleton built
    on the meta device: no memory, no weights)."""
    if not quantized:
        return
    import torch

    for name, entry in entries.items():
        try:
            with torch.device("meta"):
                skeleton = entry.build("random", spec.model_size)
        except Exception:  # noqa: BLE001 - a model that cannot be built on meta is checked by its worker instead
            continue
        if not quantization.linear_layers(skeleton):
            raise UserError(f"--quantize {quantized[0]}: {name} has no linear layer to quantize (torchao quantizes "
                            "nn.Linear layers; its convolutions would stay as they are)")


@dataclass
class Plan:
    """What a run measures and where: its spec (the device resolved), its models, cases and targets."""

    spec: specmod.RunSpec
    models: dict  # name -> zoo entry
    dispatcher: dispatch.Dispatcher
    targets: list[dispatch.Target]
    command: str | None = None  # as typed, for the run's record
    shard: shards.ShardPlan | None = None  # --shard: the whole plan's partition, this run measuring its own part

    def new_run(self, spec: specmod.RunSpec, cases: list[casemod.Case]) -> Run:
        """The record of one sweep of `cases` under `spec` (a run; tune measures a run per rung): its command, spec,
        tag, design, and its timing resolved once per kind of timed unit its cases have, for the device found."""
        units = dict.fromkeys(c.timed_unit for c in cases)
        return Run(command=self.command, spec=specmod.recorded(spec), tag=spec.tag or tags.default(),
                   design=list(spec.looks), looks=len(spec.looks), pair_from=sequential.PAIR_FROM,
                   timing={u: spec.timing.resolve(u, spec.device) for u in units}, isolation=spec.isolation,
                   compilebench=fingerprint.version("compilebench"), host=socket.gethostname(),
                   shard=self.shard.to_dict() if self.shard else None)

    @property
    def cases(self) -> list[casemod.Case]:
        """The cases this run measures: the plan's, or under --shard the shard's part of them."""
        every = self.spec.cases(self.models)
        return [c for c in every if self.shard.mine(c.key())] if self.shard else every

    def check_mix(self, mix: str | None) -> None:
        """--mix names shapes that every shapes case serves: refused (a UserError) before anything runs."""
        for c in self.cases:
            traffic.parse_mix(mix, tuple(traffic.Shape.parse(t) for t in c.shapes))

    @property
    def labels(self) -> dict[str, tuple[str, str]]:
        """Each model's row label and task, for results that come back without them (a timeout)."""
        return {name: (e.label, e.task) for name, e in self.models.items()}

    def run(self, store, *, cases: list[casemod.Case] | None = None, spec: specmod.RunSpec | None = None,
            states=None, quiet: bool = False) -> sweep.SweepOutcome:
        """Measure every repeat of the plan's cases (or of `cases`, under `spec`: tune's rungs) not stored yet, as one
        run."""
        spec, cases = spec or self.spec, self.cases if cases is None else cases
        return sweep.run(spec, store, self.dispatcher, self.targets, self.new_run(spec, cases), cases=cases,
                         labels=self.labels, states=states, quiet=quiet)

    def results(self, store, cases: list[casemod.Case] | None = None) -> list[Result]:
        """The newest stored result of each case on each target, whoever measured it (this run or another
        process on the same file): as `compilebench run` reports them."""
        found = (store.latest(c.key(), t.resume_id) for c in (self.cases if cases is None else cases)
                 for t in self.targets if t.takes(c))
        return [r for r in found if r is not None]


def prepare(spec: specmod.RunSpec, placement: Placement = Placement(), command: str | None = None,
            shard: shards.Shard | None = None, shard_history: str | None = None,
            shared_command: str | None = None) -> Plan:
    """Check everything a run needs before anything runs or is written; a UserError names what is wrong. `command`:
    the run as typed (or the API's call), for its record. `shard`: measure only that part of the cases, balanced
    by their expected seconds (from `shard_history`, a results file, where given); `shared_command`: the command as
    every shard types it, part of the plan's identity."""
    if spec.image is not None:
        check_image(spec.image)
    # the workers, and a later run that resumes, may stand in another folder
    spec = dataclasses.replace(spec, image=spec.image and os.path.abspath(spec.image),
                               compile_cache=absolute_cache(spec.compile_cache))
    compiler.check_options(spec.compile.options)
    models = resolve_models(spec)
    check_variants(spec, models)
    quantized = [q for q in spec.quantizations or (spec.quantize,) if q != "none"]
    quantization.check_installed(quantized)
    fingerprints = interpreters.probe(spec.environments)
    spec, dispatcher, targets = placement.resolve(spec)
    check_devices(quantized, spec, targets)
    check_quantizations(quantized, models, spec)
    if spec.environments:
        targets = environment_targets(spec.environments, fingerprints, targets)
    made = Plan(spec, models, dispatcher, targets, command)
    if shard is not None:
        made.shard = costs.plan_of(shard, spec, made.cases, models, shard_history, shared_command or command,
                                   fingerprint.version("compilebench"))
    made.cases  # a case that cannot be made (a model serving one shape) is refused here, before anything is written
    return made


def environment_targets(declared, fingerprints: dict[str, dict],
                        targets: list[dispatch.Target]) -> list[dispatch.Target]:
    """Each target once per environment (--env): its cases, its fingerprint (torch, transformers, triton: what its
    results are resumed by), its interpreter."""
    if any(t.placement for t in targets):
        raise UserError("--env starts workers from interpreters of this machine; --executor ray runs them on the "
                        "cluster's (run a sweep per environment there instead)")
    out = []
    for t in targets:
        for e in declared:
            env = dataclasses.replace(t.env, **fingerprints[e.name], **interpreter.recorded(e.to_dict()))
            out.append(dispatch.Target(f"{t.name} [{e.name}]", env.machine_id, env, environment=e))
    return out


def check_image(path: str) -> None:
    """--image must be a photo Pillow can read: refused before anything runs."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.verify()
    except FileNotFoundError:
        raise UserError(f"--image {path!r}: no such file") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise UserError(f"--image {path!r} is not an image file Pillow can read ({exc})") from None


def absolute_cache(given: str) -> str:
    """--compile-cache's folder as an absolute path (the workers run elsewhere, and a later run must find it)."""
    if given in settings.COMPILE_CACHES:
        return given
    kept = settings.mega_dir(given)
    if kept is not None:  # mega: with no folder is refused by the check
        return f"{settings.MEGA}:{os.path.abspath(kept)}" if kept else given
    return os.path.abspath(given)
