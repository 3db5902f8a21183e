"""What an exported model needs, whoever exports it (an engine, AOTInductor): the model's tensors made exportable,
its outputs by name, a wrapper that takes keyword inputs and returns a tuple, the file kept per case with its
weights' fingerprint (a later repeat's model must hold the same weights, or its outputs could not be checked
against eager), and an exporter's own reason in one line. torch is imported when called, in a worker."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os


class Unsupported(Exception):
    """The engine (or its exporter) could not take the model: the case's status is `unsupported`."""


def named_tensors(out, prefix: str = ""):
    """(name, tensor) for every tensor in a model output (a ModelOutput is a dict; hidden states are tuples)."""
    import torch

    if isinstance(out, torch.Tensor):
        yield prefix or "output", out
    elif isinstance(out, dict):
        for k, v in out.items():
            yield from named_tensors(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(out, (list, tuple)):
        for i, v in enumerate(out):
            yield from named_tensors(v, f"{prefix}.{i}" if prefix else str(i))


def output_names(model, inputs: dict) -> list[str]:
    import torch

    with torch.no_grad():
        return [name for name, _ in named_tensors(model(**inputs))]


def as_normal_tensors(model) -> None:
    """The worker builds models under inference mode, whose tensors export cannot trace: each parameter and
    buffer becomes an ordinary copy with the same values (the other variants of the model run the same numbers)."""
    import torch

    for module in model.modules():
        for name, p in list(module._parameters.items()):
            if p is not None and p.is_inference():
                module._parameters[name] = torch.nn.Parameter(p.clone(), requires_grad=False)
        for name, b in list(module._buffers.items()):
            if b is not None and b.is_inference():
                module._buffers[name] = b.clone()


def weights_fingerprint(model) -> list[float]:
    """The sum of every parameter and buffer, in float64: equal for the same weights in any process."""
    import torch

    return [float(t.detach().double().sum()) for t in itertools.chain(model.parameters(), model.buffers())
            if isinstance(t, torch.Tensor) and t.is_floating_point()]


def same_weights(theirs: list[float], mine: list[float]) -> bool:
    return len(theirs) == len(mine) and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
                                            for a, b in zip(theirs, mine))


def flat(model, names: list[str]):
    """The model as an exporter sees it: keyword inputs in, a tuple of the eager output's tensors out (in the order
    `names` gives), so an engine's outputs map back to eager's names."""
    import torch

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, **inputs):
            found = dict(named_tensors(self.model(**inputs)))
            return tuple(found[name] for name in names)

    return Flat().eval()  # as the model (dropout off): a new module trains


def path(folder: str, case, suffix: str) -> str:
    """The case's file in the run's folder of packages: one per case, whichever repeat writes it."""
    return os.path.join(folder, hashlib.sha1(case.key().encode()).hexdigest()[:16] + suffix)


def kept(folder: str, case, suffix: str, model, refused: str | None = None) -> tuple[str, bool]:
    """The exported model's path and whether this process must export it (no earlier repeat did); its weights'
    fingerprint kept beside it (before the model: a loader that finds the model finds this), and held against this
    process's where it exists: `refused` (or an engine's line) where they differ."""
    where = path(folder, case, suffix)
    mine = weights_fingerprint(model)
    if os.path.exists(where):
        with open(where + ".weights.json") as f:
            theirs = json.load(f)
        if not same_weights(theirs, mine):
            raise ValueError(refused or f"the {case.variant.mode} model on disk was exported from other weights than "
                             "this process's model, so its outputs cannot be checked against eager")
        return where, False
    with open(where + ".weights.json", "w") as f:
        json.dump(mine, f)
    return where, True


def why(exc: BaseException) -> str:
    """The exporter's own reason in one line: its innermost cause's first line (torch.onnx.export wraps torch.export's
    'Could not guard on data-dependent expression ...' in 'Failed to export the model')."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}"[:400] if first else type(exc).__name__
