"""AOTInductor (`--variant aot-inductor`): the model exported with the case's inputs (`torch.export.export`),
packaged by AOTInductor (`torch._inductor.aoti_compile_and_package`), and loaded (`aoti_load_package`) by the
worker that times it. The first repeat that finds no package builds it (its export and package seconds are the
variant's compile cost); every later repeat is a fresh process that only loads it, as a replica would start. Its
package stays on this host for later repeats; it is refused on CUDA under the torch whose package load crashes."""

from __future__ import annotations

import contextlib
import os
import time

from compilebench.core.environment import is_cuda
from compilebench.core.variant import AOT_INDUCTOR
from compilebench.kinds import exported
from compilebench.kinds.base import Asked, Kind

# Loading a CUDA package died of SIGSEGV under these torch releases in every process benchmarks/aot_load.py tried
# (an H200, 2026-11-27, torch 2.11.0+cu130: where it was built, in a fresh interpreter, forked from a launcher-like
# process, and forked then built; on an H100 and another H200 before, in the product's first repeat): there is no
# path that works, so a run refuses it there. On a CPU it loads and runs.
CRASHING_ON_CUDA = ((2, 11, 0),)


class AotInductor(Kind):
    name, title = AOT_INDUCTOR, "AOTInductor"
    keeps_files = True  # its package, which a later repeat loads
    prepares = True

    def refusal(self, asked: Asked) -> str | None:
        from packaging.version import InvalidVersion, Version

        if not is_cuda(asked.device) or not asked.torch:
            return None
        try:
            release = Version(asked.torch).release[:3]
        except InvalidVersion:
            return None
        if release in CRASHING_ON_CUDA:
            return (f"--variant aot-inductor on CUDA under torch {asked.torch}: loading its package dies of SIGSEGV "
                    "in every process (built there, a fresh interpreter, forked: benchmarks/aot_load.py on an H200, "
                    "2026-11-27), so no number could come of it; measure it on a CPU (--device cpu), or under "
                    "another torch (--env), where benchmarks/aot_load.py loads it")
        return None


    def prepare(self, model, inputs: dict, folder: str, case, enter=lambda phase: None):
        return built_and_loaded(model, inputs, folder, case, enter)


KIND = AotInductor()


class ExportFailed(Exception):
    """torch.export could not capture the model: the variant's error, with export's own reason."""


def package_path(folder: str, case) -> str:
    return exported.path(folder, case, ".pt2")


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
        exported.as_normal_tensors(model)
        inputs = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        try:
            program = torch.export.export(model, args=(), kwargs=inputs)
        except Exception as exc:
            text = str(exc).strip()
            why = text.splitlines()[0] if text else type(exc).__name__
            raise ExportFailed(f"torch.export could not export the model: {why}") from exc
        export_end = time.perf_counter()
        tmp = f"{path[:-len('.pt2')]}.{os.getpid()}.tmp.pt2"
        enter(COMPILING)
        with _announced_packaging(enter):
            torch._inductor.aoti_compile_and_package(program, package_path=tmp, inductor_configs=options or None)
        os.replace(tmp, path)
    return {"export_s": export_end - start, "package_s": time.perf_counter() - export_end,
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


def load(path: str, device: str = "cpu"):
    """The packaged model on the case's device (cuda:N: that GPU, not the one the package names), callable with
    the inputs it was exported with, and the seconds loading took."""
    import torch

    index = torch.device(device).index if is_cuda(device) else None
    start = time.perf_counter()
    runner = torch._inductor.aoti_load_package(path, device_index=-1 if index is None else index)
    return runner, {"load_s": time.perf_counter() - start, "package_bytes": os.path.getsize(path)}


def built_and_loaded(model, inputs: dict, folder: str, case, enter=lambda phase: None) -> tuple[object, dict]:
    """The callable to time, and what it took: built here (export, compile, package) where no earlier repeat left
    a package, then loaded. A package holds the weights of the process that built it: one built from other weights
    than this process's model (whose eager output it is checked against) is refused, never compared."""
    path, build_here = exported.kept(folder, case, ".pt2", model, refused=(
        "the AOTInductor package was built from other weights than this process's model, so its outputs cannot be "
        "checked against eager (random weights must be built from the same seed in every process)"))
    built = {**build(model, inputs, path, dict(case.variant.options), enter), "built": True} if build_here else {}
    enter(LOADING)
    runner, loaded = load(path, case.device)
    return runner, {**built, **loaded}
