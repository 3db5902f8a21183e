"""What a run refuses before anything runs or is written, each in one line (a UserError, exit 2): a model that
cannot be had, a setting one kind of model cannot take, inductor options the installed torch does not know, each
way of running a model asked (kinds/: one loop, each kind answering for itself, at the run and again on each
target's device and torch), a quantization whose package is missing, that a device cannot run or a model has no
layer for, an image Pillow cannot read. `asked(spec)` checks the run as asked, `where(...)` on the machines found
(run/placement.py); `plan.prepare` calls both, tune its rungs' parts."""

from __future__ import annotations

from compilebench import kinds, zoo
from compilebench.core import spec as specmod
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.variant import Variant
from compilebench.measure import compiler, quantization
from compilebench.zoo import factory, hub


def asked(spec: specmod.RunSpec) -> tuple[dict, list[str]]:
    """The run as asked, refused where it cannot work; its models (name -> zoo entry, each looked up once) and the
    quantizations it measures."""
    if spec.image is not None:
        check_image(spec.image)
    compiler.check_options(spec.compile.options)
    entries = models(spec)
    check_variants(spec, entries)
    quantized = [q for q in spec.quantizations or (spec.quantize,) if q != "none"]
    check_installed(quantized)
    return entries, quantized


def check_installed(quantized: list[str]) -> None:
    """torchao installed where the run quantizes: the extra named in one line."""
    for q in quantized:
        why = kinds.quantization(q).missing()
        if why:
            raise UserError(why)


def where(spec: specmod.RunSpec, targets, entries: dict, quantized: list[str]) -> None:
    """The run on the machines found, refused where their devices cannot run it."""
    check_devices(quantized, spec, targets)
    check_quantizations(quantized, entries, spec)


def models(spec: specmod.RunSpec) -> dict:
    """Every model named, looked up once here (a checkpoint's config is read once, not per case); pretrained
    weights that cannot be had (no network, no local copy) are refused before anything runs."""
    entries = {name: zoo.get(name, spec.task, spec.inputs) for name in spec.models}
    for name, entry in entries.items():
        if spec.model_size == "tiny" and isinstance(entry, (hub.HubModel, hub.HubCausalLM, factory.FactoryModel,
                                                            factory.ObjectModel)):
            raise UserError(f"--tiny: {name} is a checkpoint, not a zoo model with a tiny config")
        if spec.weights == "pretrained" and entry.pretrained_from:
            hub.check_available(entry.pretrained_from)
        for image_size in spec.image_sizes:
            entry.check_size(image_size, spec.model_size)
    return entries


def check_variants(spec: specmod.RunSpec, entries: dict) -> None:
    """Settings that one kind of model cannot take, refused up front rather than failing in every case."""
    generation = [n for n, e in entries.items() if e.kind == "generation"]
    vision = [n for n in entries if n not in generation]
    if generation and (spec.image or spec.channels_last):
        raise UserError(f"{'--image' if spec.image else '--channels-last'} is for vision models; {generation[0]} generates text")
    if (spec.prompt_len is not None or spec.prompt_lens) and not generation:
        raise UserError("--prompt-len is for text-generation models (`compilebench models` lists them)")
    if spec.regional and generation:  # its forward is compiled whole, as generate() calls it
        raise UserError(f"--regional: {generation[0]} generates text, which compilebench shapes compiles whole")
    if spec.image_sizes and not vision:
        raise UserError(f"--image-size resizes the photo of a vision model; {generation[0]} generates text")
    if spec.compile.decoder and (others := [n for n, e in entries.items() if e.kind != "image"]):
        raise UserError(f"--compile-decoder compiles a text-to-image pipeline's decoder; {others[0]} has none "
                        "(`compilebench models` lists the pipelines)")
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
        there = kinds.Asked(device=device, dtype=spec.dtype, torch=t.env.torch, capability=t.env.compute_capability)
        for kind in (*map(kinds.quantization, quantized), *map(kinds.get, spec.variants)):
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
