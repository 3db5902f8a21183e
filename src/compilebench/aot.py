"""The aot-inductor variant: the model exported with the case's inputs (`torch.export.export`), packaged by
AOTInductor (`torch._inductor.aoti_compile_and_package`), and loaded (`aoti_load_package`) by the worker that
times it. The first repeat that finds no package builds it (its export and package seconds are the variant's
compile cost); every later repeat is a fresh process that only loads it, as a replica would start."""

from __future__ import annotations

import hashlib
import os
import time


class ExportFailed(Exception):
    """torch.export could not capture the model: the variant's error, with export's own reason."""


def package_path(folder: str, case) -> str:
    return os.path.join(folder, hashlib.sha1(case.key().encode()).hexdigest()[:16] + ".pt2")


def build(model, inputs: dict, path: str, options: dict) -> dict:
    """Export and package the model, written whole to `path` (a worker starting meanwhile never loads half of
    it): the seconds of each step and the package's size."""
    import torch

    with torch.inference_mode(False), torch.no_grad():  # export traces autograd-free, outside inference mode
        start = time.perf_counter()
        _as_normal_tensors(model)
        inputs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        try:
            program = torch.export.export(model, args=(), kwargs=inputs)
        except Exception as exc:
            text = str(exc).strip()
            raise ExportFailed(f"torch.export could not export the model: {text.splitlines()[0] if text else type(exc).__name__}") from exc
        exported = time.perf_counter()
        tmp = f"{path[:-len('.pt2')]}.{os.getpid()}.tmp.pt2"
        torch._inductor.aoti_compile_and_package(program, package_path=tmp, inductor_configs=options or None)
        os.replace(tmp, path)
    return {"export_s": exported - start, "package_s": time.perf_counter() - exported,
            "package_bytes": os.path.getsize(path)}


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


def load(path: str):
    """The packaged model, callable with the inputs it was exported with, and the seconds loading took."""
    import torch

    start = time.perf_counter()
    runner = torch._inductor.aoti_load_package(path)
    return runner, {"load_s": time.perf_counter() - start, "package_bytes": os.path.getsize(path)}


def prepare(model, inputs: dict, folder: str, case) -> tuple[object, dict]:
    """The callable to time, and what it took: built here (export, package) where no earlier repeat left a
    package, then loaded."""
    path = package_path(folder, case)
    built = {} if os.path.exists(path) else {**build(model, inputs, path, dict(case.variant.options)), "built": True}
    runner, loaded = load(path)
    return runner, {**built, **loaded}
