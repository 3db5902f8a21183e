"""Private on-disk compiler state per case, so a cold compile is cold.

Everything the compiler stack writes or reads between processes goes to one folder per case: inductor's cache
(FX graphs, AOT autograd, compiled kernels), its precompiled C++ headers (inductor puts those under the system
temporary folder, not its cache folder: TMPDIR decides), Triton's cache and home, the CUDA JIT cache, C++
extensions, and every other temporary file. The first repeat of a case starts from an empty folder (cold); later
repeats start from what earlier ones left (warm, recorded as such); the folder is removed after the case's last
repeat. `benchmarks/cold.py` lists what a compile writes outside it: nothing.

A folder of the user's (--compile-cache DIR) holds the same state and is kept.

--compile-cache mega: torch's portable cache artifacts (`torch.compiler.save_cache_artifacts`, the "mega-cache"),
saved by a process that compiled cold and loaded by a fresh one with an empty folder, as a new replica would."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
import uuid

from compilebench.core import settings

ROOT_PREFIX = "compilebench-state-"


def env_for(folder: str) -> dict[str, str]:
    """The environment that sends the compiler stack's state into `folder`."""
    sub = {
        "TORCHINDUCTOR_CACHE_DIR": "inductor",
        "TRITON_CACHE_DIR": "triton",
        "TRITON_HOME": "triton-home",
        "CUDA_CACHE_PATH": "cuda-cache",
        "TORCH_EXTENSIONS_DIR": "torch-extensions",
        "TMPDIR": "tmp",
    }
    env = {}
    for var, name in sub.items():
        path = os.path.join(folder, name)
        os.makedirs(path, exist_ok=True)
        env[var] = path
    return env


def is_empty(folder: str) -> bool:
    """Whether a compile starting from this folder starts cold: no file anywhere in it."""
    return not any(files for _, _, files in os.walk(folder))


class StateFolders:
    """One root folder per sweep (named after the driver's pid, so a later sweep can clear what a killed one
    left), one folder per case inside it."""

    def __init__(self, base: str | None = None):
        base = base or tempfile.gettempdir()
        _clear_stale(base)
        self.root = tempfile.mkdtemp(prefix=f"{ROOT_PREFIX}{os.getpid()}-", dir=base)

    def folder(self, name: str) -> str:
        path = os.path.join(self.root, name)
        os.makedirs(path, exist_ok=True)
        return path

    def remove(self, name: str) -> None:
        shutil.rmtree(os.path.join(self.root, name), ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def _clear_stale(base: str) -> None:
    for name in os.listdir(base):
        if not name.startswith(ROOT_PREFIX):
            continue
        try:
            pid = int(name[len(ROOT_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
        except (ValueError, PermissionError):
            continue


def follow_environment() -> None:
    """Point the folders the compiler stack fixed when it was imported where this process's environment says
    now. Inductor reads its cache folder per call, but its precompiled-header folder (under the temporary folder)
    and dynamo's package folder are set when their modules are imported: a worker forked from a launcher that
    imported them, or a case run inline after another, would otherwise share them with every other case, and a
    cold compile would find the headers an earlier case made. Modules not imported yet read the environment
    themselves when they are."""
    tempfile.tempdir = None  # Python's cached temporary folder: TMPDIR decides again
    codecache = sys.modules.get("torch._inductor.codecache")
    if codecache is None and "torch._dynamo.package" not in sys.modules:
        return
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    if codecache is not None:
        codecache._HEADER_DIR = os.path.join(default_cache_dir(), "precompiled_headers")
        codecache._HEADER_LOCK_DIR = os.path.join(codecache._HEADER_DIR, "locks")
        made = getattr(codecache, "_precompile_header", None)
        if hasattr(made, "cache_clear"):  # it remembers the header files it made, by path
            made.cache_clear()
    package = sys.modules.get("torch._dynamo.package")
    if package is not None and hasattr(getattr(package, "DynamoCache", None), "_path_prefix"):
        inductor = os.path.abspath(os.environ.get("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir())
        package.DynamoCache._path_prefix = os.path.join(inductor, "dynamo")  # as it is made on import


@contextlib.contextmanager
def applied(env: dict[str, str]):
    """`env` in this process while the block runs (inline isolation), put back afterwards, with the compiler's
    folders following it both ways."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    follow_environment()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        follow_environment()


def save_artifacts(path: str) -> dict:
    """The portable artifacts of everything this process compiled, written whole to `path` (a reader never sees
    half a file): their size, the seconds it took and what they hold; or why there are none."""
    import torch

    start = time.perf_counter()
    saved = torch.compiler.save_cache_artifacts()
    if saved is None:
        return {"problem": "the compile left no portable artifacts to save (a backend other than inductor keeps none)"}
    data, info = saved
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    return {"saved_bytes": len(data), "save_s": time.perf_counter() - start, "artifacts": _held(info)}


def load_artifacts(path: str) -> dict:
    """Portable artifacts loaded into this process's (empty) compiler folders before anything compiles: their
    size, the seconds it took (part of the start a replica sees) and what they held."""
    import torch

    start = time.perf_counter()
    with open(path, "rb") as f:
        data = f.read()
    info = torch.compiler.load_cache_artifacts(data)
    return {"loaded_bytes": len(data), "load_s": time.perf_counter() - start, "artifacts": _held(info)}


def _held(info) -> dict[str, int]:
    """What a CacheInfo holds, by kind: {"inductor": 1, "aot_autograd": 1}."""
    return {kind: len(keys) for kind, keys in sorted((getattr(info, "artifacts", None) or {}).items()) if keys}


def is_user_folder(mode: str) -> bool:
    """Whether --compile-cache names the user's own folder (DIR), kept between runs."""
    return mode not in ("cold", "warm") and not settings.is_mega(mode)


def user_folder(path: str) -> tuple[dict[str, str], str]:
    """The user's --compile-cache DIR as a job starts from it, and what it is: cold while it holds nothing (the first
    repeat compiles into it from nothing: recorded as a cache folder, its seconds were a median with the warm
    ones'), else dir."""
    state = "cold" if is_empty(path) else "dir"
    return env_for(path), state


def for_job(mode: str, states: StateFolders, name: str,
            every_repeat_cold: bool = False) -> tuple[dict[str, str], str, str | None]:
    """The private compiler state a job starts from, what it is, and (--compile-cache mega) its artifacts file:
    cold (empty), warm (left by an earlier repeat of the same case), dir (the user's --compile-cache DIR) or mega
    (empty, as a new replica's, with the portable artifacts an earlier repeat or run saved: loaded before the
    first call; without them the repeat compiles cold and saves them). --compile-cache warm warms a fresh folder
    itself. `every_repeat_cold` (a shapes case, whose compiles are part of the time it serves its requests in):
    each cold repeat gets an empty folder of its own, so every process measures the compiles a new one makes."""
    if settings.is_mega(mode):
        kept = settings.mega_dir(mode)
        if kept:
            os.makedirs(kept, exist_ok=True)
        artifacts = os.path.join(kept or states.folder(f"{name}-artifacts"), f"{name}.megacache")
        folder = states.folder(f"{name}-mega-{uuid.uuid4().hex[:8]}")
        return env_for(folder), "mega" if os.path.exists(artifacts) else "cold", artifacts
    if is_user_folder(mode):
        return (*user_folder(mode), None)
    if mode == "warm":
        folder = states.folder(f"{name}-warm-{uuid.uuid4().hex[:8]}")
        return env_for(folder), "warm", None
    folder = states.folder(f"{name}-cold-{uuid.uuid4().hex[:8]}" if every_repeat_cold else name)
    state = "cold" if is_empty(folder) else "warm"
    return env_for(folder), state, None
