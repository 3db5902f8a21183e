"""run_case(case) -> Result: the one function every executor calls, in a fresh process or inline.

Also the entry point of a worker process: python -m compilebench.worker JOB.json RESULT.json PHASE_FD"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.resources
import json
import os
import resource
import signal
import sys
import traceback
from typing import Callable

from compilebench import correctness, envinfo, timing, variants, zoo
from compilebench.result import Result
from compilebench.spec import Case, TimingPolicy

PR_SET_PDEATHSIG = 1  # linux/prctl.h
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
    return run_cases([case], policy, isolation=isolation, on_phase=on_phase, clock=clock)[0]


def run_cases(
    cases: list[Case],
    policy: TimingPolicy,
    *,
    isolation: str = "process",
    on_phase: Callable[[str], None] = lambda phase: None,
    clock: timing.HostClock | None = None,
) -> list[Result]:
    """One case, or (--interleave) the variants of one model and batch measured in alternating blocks on one
    model in one process. Cases of a group differ only in their variant; they succeed or fail together."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    first = cases[0]
    results = [Result(c, "ok", isolation=isolation, timing_policy=vars(policy).copy()) for c in cases]
    phase = "setup"

    def enter(p: str) -> None:
        nonlocal phase
        phase = p
        on_phase(p)

    try:
        entry = zoo.get(first.model, first.task)
        if clock is None:
            clock = timing.CudaClock(first.device) if first.device.startswith("cuda") else timing.HostClock()
        with torch.inference_mode(), _tf32(first.tf32), _compile_cache(first.compile_cache), _autocast(first):
            env = envinfo.collect(first.device)  # inside: it records the TF32 setting the cases ran with
            for r in results:
                r.label, r.task, r.clock, r.env, r.machine_id = entry.label, entry.task, clock.name, env, envinfo.machine_id(env)
            variants.reset_dynamo()
            enter("build")
            model, inputs = _prepare(entry, first)
            compiled = [c for c in cases if c.variant.compiled]
            reference = None
            if compiled:
                enter("eager reference")
                with FlopCounterMode(display=False) as flop_counter:  # the reference call is counted, not repeated
                    reference = correctness.snapshot(model(**inputs))
                if first.compile_cache == "warm":
                    enter("warming the compile cache")
                    for c in compiled:
                        variants.apply(model, c.variant)(**inputs)
                    variants.forget_compiled()  # what stays is on disk, as for a second process
            if first.device.startswith("cuda"):
                torch.cuda.reset_peak_memory_stats(first.device)
            fns = {c.variant.label: variants.apply(model, c.variant) for c in cases}
            graph_count = variants.graph_count if compiled else None
            if len(cases) == 1:
                fn = fns[first.variant.label]
                measured = {first.variant.label: timing.measure(
                    lambda: fn(**inputs), iters=policy.iters, warmup=policy.warmup_for(first.variant),
                    max_time_s=policy.max_time_s, clock=clock, graph_count=graph_count, on_phase=enter)}
            else:
                measured = timing.measure_interleaved(
                    {name: (lambda f=f: f(**inputs)) for name, f in fns.items()}, iters=policy.iters,
                    warmup={c.variant.label: policy.warmup_for(c.variant) for c in cases},
                    max_time_s=policy.max_time_s, clock=clock, graph_count=graph_count, on_phase=enter)
            peak = _peak_memory(first.device)
            if not compiled:
                enter("counting FLOPs")  # after timing: an extra call before would not leave the first call first
                with FlopCounterMode(display=False) as flop_counter:
                    model(**inputs)
            if compiled:
                enter("check")
                compile_s, graphs, hits, breaks = (variants.compile_seconds(), variants.graph_count(),
                                                   variants.cache_hits(), variants.graph_breaks())
            for r in results:
                m = measured[r.case.variant.label]
                _record(r, m)
                r.peak_mem_bytes, r.peak_mem_kind = peak
                r.flops = flop_counter.get_total_flops()
                if r.case.variant.compiled:
                    # Shared by the compiled variants of an interleaved group: dynamo counts per process.
                    r.compile_s, r.graphs, r.compile_cache_hits = compile_s, graphs, hits
                    r.graph_breaks, r.break_reasons = breaks
                    _check(r, m, reference, correctness.snapshot(fns[r.case.variant.label](**inputs)))
    except Exception as exc:  # a failing case is a result, never the end of the sweep
        for r in results:
            _failed(r, exc, phase)
    return results


def _record(result: Result, m: timing.Measurement) -> None:
    result.first_call_s = m.first_call_ns / 1e9
    result.warmup_iters = m.warmup_iters
    result.iters_requested = m.iters_requested
    result.stopped_early = m.stopped_early
    result.loop_wall_s = m.loop_wall_ns / 1e9
    result.set_samples(m.samples_ns)


def _check(result: Result, m: timing.Measurement, reference: dict, actual: dict) -> None:
    verdict = correctness.check(reference, actual, result.case.dtype)
    result.max_abs_err, result.max_rel_err = verdict.max_abs_err, verdict.max_rel_err
    result.agreement = verdict.agreement
    result.recompiles_in_timed_loop = m.recompiles
    if m.recompiles:
        result.status = "invalid"
        result.message = f"{m.recompiles} recompile(s) inside the timed loop: the samples mix compiled graphs"
    elif not verdict.ok:
        result.status = "mismatch"
        result.message = "compiled output differs from eager: " + "; ".join(verdict.problems)


def _failed(result: Result, exc: Exception, phase: str) -> None:
    result.status = "oom" if _is_oom(exc) else "error"
    result.message = one_line(exc)
    if result.case.variant.fullgraph and phase.startswith("first call") and result.status == "error":
        result.message = f"fullgraph=True could not capture the model in one graph: {result.message}"
    result.traceback = "\n".join("".join(traceback.format_exception(exc)).splitlines()[-TRACEBACK_LINES:])
    result.phase = phase


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


def _confine() -> None:
    """Die with the driver, so a killed driver (or Ray worker) leaves no orphan holding a device; and keep to
    the CPUs the driver gave this case (--gpus shares the host's cores out among the GPUs)."""
    parent = int(os.environ.get("COMPILEBENCH_PARENT_PID", "0"))
    if sys.platform == "linux" and parent:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the driver died before the line above took effect
            os._exit(1)
    cpus = os.environ.get("COMPILEBENCH_CPUS")
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def main(argv: list[str]) -> int:
    _confine()
    job_path, result_path, phase_fd = argv[0], argv[1], int(argv[2])
    with open(job_path) as f:
        job = json.load(f)
    phases = os.fdopen(phase_fd, "w", buffering=1)

    def on_phase(p: str) -> None:
        phases.write(p + "\n")

    results = run_cases(
        [Case.from_dict(c) for c in job["cases"]],
        TimingPolicy(**job["policy"]),
        isolation="process",
        on_phase=on_phase,
    )
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump([r.to_dict() for r in results], f)
    os.replace(tmp, result_path)  # the driver sees a whole result or none
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
