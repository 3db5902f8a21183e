"""Random weights drawn once a run and loaded by every process that measures the model.

A model built from its config with random weights spends most of its build drawing them: ResNet-50, 0.31 s of a
forked worker's 0.34 s build on 2 CPU cores (torch's default initialization, then transformers' own over it),
more for the larger models, in every repeat of every variant. So the first process of a run that needs a model's
random weights draws them (seeded: the same draw as every process made before) and saves them in the run's
folder; every process then builds the model's skeleton on the meta device (no memory, no random numbers) and
loads the saved tensors into it. Every process's build is the same work, the first one's included; the draw is a
phase of its own ("making the random weights"), once a run, part of no start-up."""

from __future__ import annotations

import hashlib
import itertools
import os

SEED = 0  # every process draws the same random weights: a package one repeat built is checked against another's eager
MAKING = "making the random weights"


class Reused:
    """A zoo entry whose random weights come from a file of the run's: its build() loads them."""

    def __init__(self, entry, path: str):
        self._entry, self.path = entry, path

    def __getattr__(self, name):
        return getattr(self._entry, name)

    def build(self, weights: str, size: str):
        if weights != "random":
            return self._entry.build(weights, size)
        return load(self._entry, size, self.path)


def reusing(entry, case, folder: str | None, enter):
    """`entry`, or (random weights of a model built from its config, in a run with a weights folder) an entry
    that loads them from the folder, where this process saves them first if no process has."""
    import torch

    if folder is None or case.weights != "random" or not entry.random_weights_reusable:
        return entry
    path = os.path.join(folder, _name(entry.name, case.model_size, case.environment) + ".pt")
    if not os.path.exists(path):
        enter(MAKING)
        torch.manual_seed(SEED)
        try:
            save(entry.build("random", case.model_size), path)
        except OSError:  # no room for them: this process, and each after it, draws its own
            return entry
        finally:
            torch.manual_seed(SEED)  # the same random state after the build in every process
    return Reused(entry, path)


def _name(model: str, size: str, environment: str | None) -> str:
    """A file name per model, size and --env environment (whose transformers may draw other weights)."""
    return hashlib.sha1(f"{model}|{size}|{environment or ''}".encode()).hexdigest()[:16]


def save(model, path: str) -> None:
    """Every parameter and buffer (non-persistent buffers too), each shared tensor once with the names that share
    it (tied embeddings), written whole: a process that finds the file finds all of it."""
    import torch

    tensors, names, first = {}, {}, {}
    for name, tensor in itertools.chain(model.named_parameters(remove_duplicate=False),
                                        model.named_buffers(remove_duplicate=False)):
        names[name] = first.setdefault(id(tensor), name)
        if names[name] == name:
            tensors[name] = tensor.detach()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        torch.save({"names": names, "tensors": tensors}, tmp)
        os.replace(tmp, path)
    except OSError:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


class Mismatch(Exception):
    """The skeleton built on the meta device does not take the saved tensors as they were built."""


def load(entry, size: str, path: str):
    """The model's skeleton, built on the meta device, with the saved tensors in it (on the CPU, in eval mode, as
    entry.build returns it); a model whose meta-device build does not match them is built in full instead."""
    import torch

    saved = torch.load(path, map_location="cpu", weights_only=True)
    with torch.device("meta"):
        skeleton = entry.build("random", size)
    try:
        return _filled(skeleton, saved)
    except Mismatch:
        torch.manual_seed(SEED)
        return entry.build("random", size)


def _filled(model, saved: dict):
    import torch

    params = dict(model.named_parameters(remove_duplicate=False))
    buffers = dict(model.named_buffers(remove_duplicate=False))
    if set(saved["names"]) != set(params) | set(buffers):
        raise Mismatch("other parameters or buffers")
    made = {}
    for name, key in saved["names"].items():
        owner, _, attr = name.rpartition(".")
        module = model.get_submodule(owner)
        kept, wanted = saved["tensors"][key], params.get(name, buffers.get(name))
        if kept.shape != wanted.shape or kept.dtype != wanted.dtype:
            raise Mismatch(f"{name} is {tuple(wanted.shape)} {wanted.dtype}, saved {tuple(kept.shape)} {kept.dtype}")
        if name in params:
            if key not in made:
                made[key] = torch.nn.Parameter(saved["tensors"][key], requires_grad=params[name].requires_grad)
            module._parameters[attr] = made[key]
        else:
            module._buffers[attr] = made.setdefault(key, saved["tensors"][key])
    for module in model.modules():  # a tensor kept as a plain attribute has no saved value: still on meta
        if any(isinstance(v, torch.Tensor) and v.is_meta for v in vars(module).values()):
            raise Mismatch(f"{type(module).__name__} holds a tensor that is neither a parameter nor a buffer")
    return model
