"""run_cases(job) -> repeats: the one function every executor calls, in a fresh process or inline.

It measures one repeat of one case, or (--interleave) one repeat of the variants of one model measured together,
with the timed unit the model's task calls for: a forward pass (vision) or a generate() call (text generation).
A problem of the case itself (an OOM, an exception) becomes the result's status, never an exception.

Also the entry point of a worker process: python -m compilebench.measure.worker JOB.json RESULT.json PHASE_FD"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import json
import os
import signal
import sys
import time
import traceback
import uuid
from typing import Callable

from compilebench import zoo
from compilebench.core import interpreter
from compilebench.core.case import Case
from compilebench.core.environment import HostPeaks, is_cuda
from compilebench.core.job import SPAWNED_AT, Job, TimingPolicy
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.starts import MegaCache
from compilebench.core.why import CompileTrace
from compilebench.diagnostics import bandwidth, traces
from compilebench.kinds import quantize
from compilebench.kinds.exported import Unsupported
from compilebench.measure import (
    allocator,
    compiler,
    compiler_state,
    conditions,
    fingerprint,
    invariants,
    precision,
    recording,
    timing,
    weights,
)
from compilebench.measure.recording import Measuring

PR_SET_PDEATHSIG = 1  # linux/prctl.h
TRACEBACK_LINES = 60  # the end of a traceback: where it was raised, and the message


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


def run_case(case: Case, policy: TimingPolicy, **kwargs) -> Result:
    """One repeat of one case, timed by `policy` (resolved here for the case, as a plan would), as a Result of one
    repeat (tests, and the Python API's inline models)."""
    job = Job([case], policy.resolve(case.timed_unit, case.device))
    return Result(case, run_cases(job, **kwargs))


def run_cases(
    job: Job,
    *,
    isolation: str = "process",
    on_phase: Callable[[str], None] = lambda phase: None,
    clock: timing.HostClock | None = None,
    watch: conditions.Watch | None = None,
) -> list[Repeat]:
    """Measure one repeat of the job's cases; a Repeat for each (in the job's order), whatever happens."""
    import torch

    cases, first = job.cases, job.cases[0]
    process = uuid.uuid4().hex  # the variants of an interleaved process share it: their repeats pair up
    measuring = [Measuring(c, Repeat(index=job.repeat, process=process, compile_cache=job.compile_cache or c.compile_cache))
                 for c in cases]
    phase, since, spent = "setup", time.perf_counter(), {}
    if isolation == "process" and os.environ.get(SPAWNED_AT):
        spent["start"] = time.monotonic() - float(os.environ[SPAWNED_AT])

    def enter(p: str) -> None:
        nonlocal phase, since
        now = time.perf_counter()
        spent[phase] = spent.get(phase, 0.0) + now - since
        phase, since = p, now
        on_phase(p)

    try:
        entry = zoo.get(first.model, first.task, first.inputs)
        if is_cuda(first.device):
            torch.cuda.set_device(first.device)  # "the current device" is the case's, for any code that asks for it
        clock = clock or recording.make_clock(first.device)
        with torch.inference_mode(), precision.tf32(first.tf32), _autocast(first):
            # inside: it records the TF32 setting the cases ran with
            env = fingerprint.collect(first.device, **(interpreter.recorded(job.environment) if job.environment else {}))
            untaken = precision.not_taken(first.tf32, precision.effective()) if is_cuda(first.device) else None
            if is_cuda(first.device):
                invariants.check_device(first.device, os.environ.get(invariants.EXPECTED_GPU), env.gpu_uuid)
            for m in measuring:
                m.repeat.environment, m.repeat.clock, m.repeat.cpus = env, clock.name, env.cpu_affinity
                m.repeat.inline_model = entry.in_process_only
                if untaken:
                    recording.self_check(m.repeat, untaken)
            compiler.reset_dynamo()
            _measure(entry, measuring, job, clock, watch or recording.make_watch(first.device), enter)
        if job.measure_machine and first.device == "cpu":
            enter("measuring the machine")  # after everything timed: its buffers stay out of the peak memory
            measuring[0].repeat.host_peaks = _measure_machine(first.dtype)
    except Exception as exc:  # a failing case is a result, never the end of the sweep
        for m in measuring:
            failed(m.repeat, exc, phase, m.case)
    spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - since
    for m in measuring:
        m.repeat.phases = {k: round(v, 4) for k, v in spent.items()}
        recording.record_start(m.repeat, m.case)
    return [m.repeat for m in measuring]


def _measure(entry, results: list[Measuring], job: Job, clock: timing.HostClock, watch, enter) -> None:
    """The cases' timed unit (a forward pass or generation), between loading the mega-cache's artifacts (a new
    replica's start: before anything is built) and saving them (after every timed loop)."""
    import torch

    from compilebench.measure import forward, generation, serving

    loaded = None
    if job.compile_cache == "mega":
        enter("loading the mega-cache")
        loaded = compiler_state.load_artifacts(job.mega_path)
    case = results[0].case
    unit = serving if case.shapes else generation if case.generation else forward
    torch.manual_seed(weights.SEED)
    entry = weights.reusing(entry, case, job.weights, enter)
    with _compile_trace(job, results):
        unit.run(entry, results, job, clock, watch, enter)
    if loaded is not None:
        _mega(results, loaded)
    elif job.mega_path and job.compile_cache == "cold":
        enter("saving the mega-cache")
        _mega(results, _saved(job.mega_path))


def _mega(results: list[Measuring], what: dict) -> None:
    """The mega-cache artifacts loaded or saved, into each compiled repeat; a repeat that loaded them and still
    compiled a graph inductor's cache did not hold says how many it missed (read from the compile counters)."""
    for r in results:
        rep = r.repeat
        if r.case.variant.compiled:
            rep.mega_cache = MegaCache.from_dict(what)
            if "loaded_bytes" in what and rep.graphs is not None:
                rep.mega_cache.missed = max(0, rep.graphs - (rep.compile_cache_hits or 0))


def _saved(path: str) -> dict:
    """Saving is a note beside a measured case, never its failure (a later repeat then compiles cold)."""
    try:
        return compiler_state.save_artifacts(path)
    except Exception as exc:  # noqa: BLE001
        return {"problem": f"saving the artifacts failed: {one_line(exc)}"}


def _measure_machine(dtype: str) -> HostPeaks:
    """A CPU's peaks; a failure to measure them is recorded with them, never the case's failure."""
    try:
        return HostPeaks(dtype=dtype, **bandwidth.host_peaks(dtype))
    except Exception as exc:  # noqa: BLE001 - the case was measured: this is a note beside it
        return HostPeaks(dtype=dtype, error=one_line(exc))


def _compile_trace(job: Job, results: list[Measuring]):
    """--compile-trace: the job's compile logged to a folder named after its first compiled case (an interleaved
    job's variants compile in one process, one log)."""
    compiled = [r for r in results if r.case.variant.compiled]
    if not (job.compile_trace and job.traces and compiled):
        return contextlib.nullcontext()
    trace_dir = traces.compile_trace_dir(job.traces, compiled[0].case, job.repeat)
    for r in compiled:
        r.repeat.compile_trace = CompileTrace(dir=trace_dir)
    return traces.compile_trace(trace_dir)


def failed(rep: Repeat, exc: Exception, phase: str, case: Case) -> None:
    beyond = quantize.beyond_kernels(exc, case)  # a shape the device's quantized kernels cannot take
    rep.status = ("oom" if _is_oom(exc) else "unsupported" if isinstance(exc, Unsupported) or beyond
                  else "error")
    rep.message = beyond or (str(exc)[:500] if isinstance(exc, Unsupported) else one_line(exc))
    if case.variant.fullgraph and phase.startswith("first call") and rep.status == "error":
        rep.message = f"fullgraph=True could not capture the model in one graph: {rep.message}"
    rep.traceback = "\n".join("".join(traceback.format_exception(exc)).splitlines()[-TRACEBACK_LINES:])
    rep.phase = phase


def _autocast(case: Case):
    import torch

    if not case.autocast:
        return contextlib.nullcontext()
    return torch.autocast(case.device.split(":")[0], dtype=getattr(torch, case.dtype))


def confine() -> None:
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
        threads_as_started_here()


def threads_as_started_here() -> None:
    """torch's threads, and inductor's compile workers, as a process started on its cores would count them. The
    launcher a worker was forked from, or the driver that started it, imported torch on other cores (every core,
    or, once the driver keeps to its own, those 2), and torch counts its threads as it is imported: one H200 run's
    repeats of a case ran with 16 threads on 14 cores and with 2 (2026-11-27). A count the run or the user set
    (OMP_NUM_THREADS, TORCHINDUCTOR_COMPILE_THREADS) stands; what is imported later counts the cores it is on."""
    torch, config = sys.modules.get("torch"), sys.modules.get("torch._inductor.config")
    if torch is not None and "OMP_NUM_THREADS" not in os.environ:
        torch.set_num_threads(len(os.sched_getaffinity(0)))
    if config is not None and "TORCHINDUCTOR_COMPILE_THREADS" not in os.environ:
        config.compile_threads = config.decide_compile_threads()


def serve(job_path: str, result_path: str, phase_fd: int) -> None:
    """Run the job in a file, write its results to another (whole, by rename), relaying phases to a pipe."""
    with open(job_path) as f:
        job = Job.from_dict(json.load(f))
    phases = os.fdopen(phase_fd, "w", buffering=1)
    repeats = run_cases(job, isolation="process", on_phase=lambda p: phases.write(p + "\n"))
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump([r.to_dict() for r in repeats], f)
    os.replace(tmp, result_path)  # the driver sees a whole result or none


def main(argv: list[str]) -> int:
    """JOB RESULT PHASE_FD CRASH: a crash in native code (a segfault while packaging, say) writes every thread's
    Python stack to CRASH, which the driver keeps as the crashed repeat's traceback (run/crashes.py)."""
    crash = open(argv[3], "w")  # noqa: SIM115 - faulthandler writes to it until the process ends
    faulthandler.enable(file=crash, all_threads=True)
    confine()
    allocator.keep_freed_memory()  # before the model is built: every process in the same allocator state
    serve(argv[0], argv[1], int(argv[2]))
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    # The result is written whole: the driver waits for this process's end before the next one starts, and an
    # interpreter's teardown with torch loaded took 0.9 s here (forked workers end the same way).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
