"""The aot-inductor variant: the model exported with the case's inputs (`torch.export.export`), packaged by
AOTInductor (`torch._inductor.aoti_compile_and_package`), and loaded (`aoti_load_package`) by the worker that
times it. The first repeat that finds no package builds it (its export and package seconds are the variant's
compile cost); every later repeat is a fresh process that only loads it, as a replica would start."""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import math
import os
import time

from compilebench.core.environment import is_cuda


class ExportFailed(Exception):
    """torch.export could not capture the model: the variant's error, with export's own reason."""


# Loading a CUDA package died of SIGSEGV under these torch releases in every process benchmarks/aot_load.py tried
# (an H200, 2026-11-27, torch 2.11.0+cu130: where it was built, in a fresh interpreter, forked from a launcher-like
# process, and forked then built; on an H100 and another H200 before, in the product's first repeat): there is no
# path that works, so a run refuses it there. On a CPU it loads and runs.
CRASHING_ON_CUDA = ((2, 11, 0),)


def refusal(device: str, torch_version: str | None) -> str | None:
    """Why aot-inductor cannot be measured on this device under this torch (None: it can)."""
    from packaging.version import InvalidVersion, Version

    if not is_cuda(device) or not torch_version:
        return None
    try:
        release = Version(torch_version).release[:3]
    except InvalidVersion:
        return None
    if release in CRASHING_ON_CUDA:
        return (f"--variant aot-inductor on CUDA under torch {torch_version}: loading its package dies of SIGSEGV in "
                "every process (built there, a fresh interpreter, forked: benchmarks/aot_load.py on an H200, "
                "2026-11-27), so no number could come of it; measure it on a CPU (--device cpu), or under another "
                "torch (--env), where benchmarks/aot_load.py loads it")
    return None


def package_path(folder: str, case) -> str:
    return os.path.join(folder, hashlib.sha1(case.key().encode()).hexdigest()[:16] + ".pt2")


# A worker's phases while it makes the package, each its own: a crash (AOTInductor's died of SIGSEGV on an H200 and
# an H100, torch 2.11) is then named by the step it happened in.
EXPORTING, COMPILING, PACKAGING, LOADING = ("exporting", "compiling ahead of time", "packaging", "loading the package")


def build(model, inputs: dict, path: str, options: dict, enter=lambda phase: None) -> dict:
    """Export, compile and package the model, written whole to `path` (a worker starting meanwhile never loads
    half of it): the seconds of each step and the package's size."""
    import torch

    with torch.inference_mode(False), torch.no_grad():  # export traces autograd-free, outside inference mode
        enter(EXPORTING)
        start = time.perf_counter()
        _as_normal_tensors(model)
        inputs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        try:
            program = torch.export.export(model, args=(), kwargs=inputs)
        except Exception as exc:
            text = str(exc).strip()
            why = text.splitlines()[0] if text else type(exc).__name__
            raise ExportFailed(f"torch.export could not export the model: {why}") from exc
        exported = time.perf_counter()
        tmp = f"{path[:-len('.pt2')]}.{os.getpid()}.tmp.pt2"
        enter(COMPILING)
        with _announced_packaging(enter):
            torch._inductor.aoti_compile_and_package(program, package_path=tmp, inductor_configs=options or None)
        os.replace(tmp, path)
    return {"export_s": exported - start, "package_s": time.perf_counter() - exported,
            "package_bytes": os.path.getsize(path)}


@contextlib.contextmanager
def _announced_packaging(enter):
    """aoti_compile_and_package compiles, then calls torch._inductor.package.package_aoti: the worker's phase
    changes there (where a torch has no such function, the compile's phase covers packaging too)."""
    import torch._inductor.package as package

    original = getattr(package, "package_aoti", None)
    if original is None:
        yield
        return

    def announced(*args, **kwargs):
        enter(PACKAGING)
        return original(*args, **kwargs)

    package.package_aoti = announced
    try:
        yield
    finally:
        package.package_aoti = original


def _as_normal_tensors(model) -> None:
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


def load(path: str, device: str = "cpu"):
    """The packaged model on the case's device (cuda:N: that GPU, not the one the package names), callable with
    the inputs it was exported with, and the seconds loading took."""
    import torch

    index = torch.device(device).index if is_cuda(device) else None
    start = time.perf_counter()
    runner = torch._inductor.aoti_load_package(path, device_index=-1 if index is None else index)
    return runner, {"load_s": time.perf_counter() - start, "package_bytes": os.path.getsize(path)}


def weights_fingerprint(model) -> list[float]:
    """The sum of every parameter and buffer, in float64: equal for the same weights in any process."""
    import torch

    return [float(t.detach().double().sum()) for t in itertools.chain(model.parameters(), model.buffers())
            if isinstance(t, torch.Tensor) and t.is_floating_point()]


def prepare(model, inputs: dict, folder: str, case, enter=lambda phase: None) -> tuple[object, dict]:
    """The callable to time, and what it took: built here (export, compile, package) where no earlier repeat left
    a package, then loaded. A package holds the weights of the process that built it: one built from other weights
    than this process's model (whose eager output it is checked against) is refused, never compared."""
    path = package_path(folder, case)
    mine = weights_fingerprint(model)
    if os.path.exists(path):
        built = {}
        with open(path + ".weights.json") as f:
            theirs = json.load(f)
        same = len(theirs) == len(mine) and all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
                                                for a, b in zip(theirs, mine))
        if not same:
            raise ValueError("the AOTInductor package was built from other weights than this process's model, so "
                             "its outputs cannot be checked against eager (random weights must be built from the "
                             "same seed in every process)")
    else:
        with open(path + ".weights.json", "w") as f:  # before the package: a loader that finds it finds this
            json.dump(mine, f)
        built = {**build(model, inputs, path, dict(case.variant.options), enter), "built": True}
    enter(LOADING)
    runner, loaded = load(path, case.device)
    return runner, {**built, **loaded}
