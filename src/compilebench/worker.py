"""run_case(case) -> Result: the one function every executor calls, in a fresh process or inline.

Also the entry point of a worker process: python -m compilebench.worker JOB.json RESULT.json PHASE_FD"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
import os
import resource
import sys
import traceback
from typing import Callable

from compilebench import correctness, envinfo, timing, variants, zoo
from compilebench.result import Result
from compilebench.spec import Case, TimingPolicy

TRACEBACK_LINES = 60  # the end of a traceback: where it was raised, and the message


def default_image_path() -> str:
    return str(importlib.resources.files("compilebench") / "data" / "chelsea-640x480.jpg")


def load_image(path: str):
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")


def one_line(exc: BaseException, limit: int = 500) -> str:
    """'Type: first line', plus the innermost cause when it says something the outer line does not
    (dynamo wraps a backend's exception as 'BackendCompilerFailed: backend=... raised:')."""

    def first_line(e: BaseException) -> str:
        text = str(e).strip()
        return f"{type(e).__name__}: {text.splitlines()[0]}" if text else type(e).__name__

    root = exc
    while root.__cause__ is not None:
        root = root.__cause__
    line = first_line(exc)
    if line.endswith(":"):  # the reason is on the next line
        rest = [l.strip() for l in str(exc).strip().splitlines()[1:] if l.strip()]
        line = f"{line} {rest[0]}" if rest else line
    if root is not exc and first_line(root) not in line:
        line = f"{line} (caused by {first_line(root)})"
    return line[:limit]


def _is_oom(exc: BaseException) -> bool:
    import torch

    while exc is not None:
        if isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or "out of memory" in str(exc).lower():
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _peak_memory(device: str) -> tuple[int, str]:
    import torch

    if device.startswith("cuda"):
        return torch.cuda.max_memory_allocated(device), "cuda_max_allocated"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "host_max_rss"  # Linux reports KiB


def run_case(
    case: Case,
    policy: TimingPolicy,
    *,
    isolation: str = "process",
    on_phase: Callable[[str], None] = lambda phase: None,
    clock: timing.HostClock | None = None,
) -> Result:
    """Build, check and time one case. Never raises for a problem of the case itself: an OOM or an exception
    becomes the Result's status, with the phase it happened in."""
    import torch

    result = Result(case, "ok", isolation=isolation, timing_policy=vars(policy).copy())
    phase = "setup"

    def enter(p: str) -> None:
        nonlocal phase
        phase = p
        on_phase(p)

    try:
        entry = zoo.get(case.model, case.task)
        result.label, result.task = entry.label, entry.task
        if clock is None:
            clock = timing.CudaClock(case.device) if case.device.startswith("cuda") else timing.HostClock()
        result.clock = clock.name
        with torch.inference_mode(), _tf32(case.tf32), _compile_cache(case.compile_cache), _autocast(case):
            result.env = envinfo.collect(case.device)  # inside: it records the TF32 setting this case ran with
            result.machine_id = envinfo.machine_id(result.env)
            variants.reset_dynamo()
            enter("build")
            model, inputs = _prepare(entry, case)
            reference = None
            if case.variant.compiled:
                enter("eager reference")
                reference = correctness.snapshot(model(**inputs))
                if case.compile_cache == "warm":
                    enter("warming the compile cache")
                    variants.apply(model, case.variant)(**inputs)
                    variants.forget_compiled()  # what stays is on disk, as for a second process
            if case.device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(case.device)
            fn = variants.apply(model, case.variant)

            m = timing.measure(
                lambda: fn(**inputs),
                iters=policy.iters,
                warmup=policy.warmup_for(case.variant),
                max_time_s=policy.max_time_s,
                clock=clock,
                graph_count=variants.graph_count if case.variant.compiled else None,
                on_phase=enter,
            )
            result.first_call_s = m.first_call_ns / 1e9
            result.warmup_iters = m.warmup_iters
            result.iters_requested = m.iters_requested
            result.stopped_early = m.stopped_early
            result.loop_wall_s = m.loop_wall_ns / 1e9
            result.set_samples(m.samples_ns)
            result.peak_mem_bytes, result.peak_mem_kind = _peak_memory(case.device)
            if case.variant.compiled:
                enter("check")
                result.compile_s = variants.compile_seconds()
                result.graphs = variants.graph_count()
                result.compile_cache_hits = variants.cache_hits()
                result.graph_breaks, result.break_reasons = variants.graph_breaks()
                result.recompiles_in_timed_loop = m.recompiles
                verdict = correctness.check(reference, correctness.snapshot(fn(**inputs)), case.dtype)
                result.max_abs_err, result.max_rel_err = verdict.max_abs_err, verdict.max_rel_err
                result.agreement = verdict.agreement
                if m.recompiles:
                    result.status = "invalid"
                    result.message = f"{m.recompiles} recompile(s) inside the timed loop: the samples mix compiled graphs"
                elif not verdict.ok:
                    result.status = "mismatch"
                    result.message = "compiled output differs from eager: " + "; ".join(verdict.problems)
    except Exception as exc:  # a failing case is a result, never the end of the sweep
        result.status = "oom" if _is_oom(exc) else "error"
        result.message = one_line(exc)
        if case.variant.fullgraph and phase == "first call" and result.status == "error":
            result.message = f"fullgraph=True could not capture the model in one graph: {result.message}"
        result.traceback = "\n".join("".join(traceback.format_exception(exc)).splitlines()[-TRACEBACK_LINES:])
        result.phase = phase
    return result


def _prepare(entry, case: Case):
    """The model and its inputs on the device, in the case's dtype, memory format and attention."""
    import torch

    dtype = torch.float32 if case.autocast else getattr(torch, case.dtype)  # autocast casts per op instead
    model = entry.build(case.weights, case.model_size)
    if case.attn is not None:
        if not hasattr(model, "set_attn_implementation"):
            raise ValueError(f"--attn {case.attn}: {case.model} has no attention implementation to choose")
        model.set_attn_implementation(case.attn)
    model = model.to(device=case.device, dtype=dtype)
    if case.channels_last:
        model = model.to(memory_format=torch.channels_last)
    image = load_image(case.image or default_image_path())
    inputs = {}
    for k, v in entry.inputs(image, case.batch_size, case.weights, case.model_size).items():
        v = v.to(case.device, dtype=dtype if v.is_floating_point() else v.dtype)
        inputs[k] = v.contiguous(memory_format=torch.channels_last) if case.channels_last and v.dim() == 4 else v
    return model, inputs


@contextlib.contextmanager
def _compile_cache(mode: str):
    """cold (default) and warm: a private, empty inductor (and triton) cache for this case, removed afterwards.
    Anything else is a directory kept across runs: its state (cold the first time, warm later) is the user's."""
    from torch._inductor.utils import clear_caches, fresh_inductor_cache

    if mode in ("cold", "warm"):
        with fresh_inductor_cache():
            yield
        return
    saved = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = mode
    os.environ["TRITON_CACHE_DIR"] = os.path.join(mode, "triton")
    clear_caches()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _tf32(allow: bool | None):
    """TF32 on or off for this case (None: as it is), put back afterwards for the next inline case."""
    import torch

    if allow is None:
        yield
        return
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32, torch.get_float32_matmul_precision())
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved[:2]
        torch.set_float32_matmul_precision(saved[2])


def _autocast(case: Case):
    import torch

    if not case.autocast:
        return contextlib.nullcontext()
    return torch.autocast(case.device.split(":")[0], dtype=getattr(torch, case.dtype))


def main(argv: list[str]) -> int:
    job_path, result_path, phase_fd = argv[0], argv[1], int(argv[2])
    with open(job_path) as f:
        job = json.load(f)
    phases = os.fdopen(phase_fd, "w", buffering=1)

    def on_phase(p: str) -> None:
        phases.write(p + "\n")

    result = run_case(
        Case.from_dict(job["case"]),
        TimingPolicy(**job["policy"]),
        isolation="process",
        on_phase=on_phase,
    )
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result.to_dict(), f)
    os.replace(tmp, result_path)  # the driver sees a whole result or none
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
