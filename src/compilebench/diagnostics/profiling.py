"""Where the time goes (--profile): a short torch.profiler pass of a few steady calls, run after the timed loop (it
never enters it), kept as a Chrome trace, and summed up per inference.

The summary splits each call's wall time three ways: matmul and convolution, other kernels, and outside them
(Python, the dispatcher, dynamo's guards, CUDA-graph and wrapper code: framework overhead). On a GPU the first two
are the device's kernel times and the rest is time the device waited for the host, read against the timed loop's
own time per call (its CUDA events), not the profiled pass's: the profiler slows the host's launches (on an H200 a
compiled ResNet-50 took 4.7 ms a call profiled against 2.7 unprofiled), which would have passed for framework
overhead. On a CPU they are
the operators' own (self) times; inductor's generated C++ kernels run inside its compiled graph's call and have no
event of their own, so that call's self time counts as other kernels. `summarize` reads plain Event records, so
its arithmetic is tested without a profiler."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Callable

from compilebench.core.environment import is_cuda

CALL = "compilebench call"  # the record around each profiled call: its self time is code outside any operator
FORWARD_CALLS = 5  # steady forward calls profiled (after the timed loop)
GENERATE_CALLS = 1  # generate() calls profiled: each makes --new-tokens tokens
TOP = 10
COVERAGE = 0.9  # the events' own times must add up to the profiled calls' time within 10%

MATMUL_CONV = "matmul/conv"
OTHER = "other kernels"
OUTSIDE = "outside kernels"
SHARES = (MATMUL_CONV, OTHER, OUTSIDE)

# Operators and kernels that are matrix products or convolutions: aten's names on a CPU, and the kernel names of
# cuBLAS, cuDNN, CUTLASS and inductor's matmul/conv templates (triton_tem_) on a GPU.
_MATMUL_CONV = re.compile(r"(^|[^a-z])(b?mm|addmm|baddbmm|addmv|mv|matmul|linear|conv\w*|_convolution|"
                          r"mkldnn_\w*(conv|linear|matmul)\w*|_scaled_dot_product\w*|scaled_dot_product\w*)($|[^a-z])"
                          r"|gemm|gemv|cublas|cudnn|cutlass|xmma|implicit_convolve|triton_tem_", re.IGNORECASE)
COMPILED_GRAPH = "## Call CompiledFxGraph"  # inductor's record around its generated code
# dynamo's and AOT autograd's records around a compiled call: plumbing, not kernels
_PLUMBING = ("Torch-Compiled Region", "TorchDynamo Cache Lookup", "Pregraph bytecode", "AOTDispatcher",
             "CompiledFunction")


@dataclass(frozen=True)
class Event:
    """One profiler event: its name, its own time in microseconds (a CPU event's self time, or a kernel's
    duration), and whether it ran on the device (a GPU kernel)."""

    name: str
    self_us: float
    on_device: bool = False
    total_us: float = 0.0  # a CPU event's whole span, its children's included (a CALL record: one call)


def kind(event: Event) -> str:
    """Which share an event's own time belongs to."""
    name = event.name
    if name.startswith(COMPILED_GRAPH):
        return OTHER  # inductor's generated kernels, on a CPU, run inside this call
    if name == CALL or name.startswith(_PLUMBING):
        return OUTSIDE
    if event.on_device or name.startswith("aten::") or name.startswith("mkldnn"):
        return MATMUL_CONV if _MATMUL_CONV.search(name) else OTHER
    return OUTSIDE  # CUDA runtime calls, Python functions, other records


def shown_name(name: str) -> str:
    if name == CALL:
        return "outside any operator (Python, framework)"
    return "compiled graph (inductor's generated code)" if name.startswith(COMPILED_GRAPH) else name


def summarize(events: list[Event], calls: int, wall_ns: int, on_device: bool, steady_ms: float | None = None) -> dict:
    """Per inference: the shares of its wall time, its top operators (or kernels) by own time, how many operator
    calls it made and (GPU) the kernels it ran (launched one by one, or replayed by a CUDA graph), and how much of
    the wall the events account for. `steady_ms`: the timed loop's own time per call, the basis on a GPU."""
    timed = [e for e in events if e.on_device == on_device]
    host_ms = wall_ns / 1e6 / calls
    spans = sum(e.total_us for e in events if e.name == CALL and not e.on_device)
    # The basis of the shares: on a CPU the calls' spans in the trace (the profiler's own bookkeeping between
    # them is not the model's); on a GPU the timed loop's time per call, which the kernels must fit in (else the
    # host's wall around the profiled calls, slowed by the profiler).
    if on_device:
        wall_ms = steady_ms or host_ms
    else:
        wall_ms = spans / 1e3 / calls if spans else host_ms
    per_call = lambda us: us / 1e3 / calls  # noqa: E731
    shares = {MATMUL_CONV: 0.0, OTHER: 0.0}
    by_name: dict[str, list] = {}  # shown name -> [ms per call, events, share]
    for e in timed:
        share = kind(e)
        if share in shares:
            shares[share] += per_call(e.self_us)
        entry = by_name.setdefault(shown_name(e.name), [0.0, 0, share])
        entry[0] += per_call(e.self_us)
        entry[1] += 1
    profiled_ms = per_call(sum(e.self_us for e in timed))
    shares[OUTSIDE] = max(0.0, wall_ms - shares[MATMUL_CONV] - shares[OTHER])
    top = sorted(by_name.items(), key=lambda kv: -kv[1][0])
    rest = top[TOP:]
    rows = [{"name": n, "self_ms": t, "calls": c / calls, "share": share} for n, (t, c, share) in top[:TOP]]
    if rest:
        rows.append({"name": f"{len(rest)} others", "self_ms": sum(t for _, (t, _, _) in rest),
                     "calls": sum(c for _, (_, c, _) in rest) / calls, "share": None})
    out = {"calls": calls, "wall_ms": wall_ms, "host_wall_ms": host_ms, "profiled_ms": profiled_ms,
           "shares_ms": shares, "top": rows, "basis": "device kernels" if on_device else "CPU self time",
           "wall_from": "timed loop" if on_device and steady_ms else "profiled pass"}
    if on_device:
        out["kernels"] = len(timed) / calls
        out["op_calls"] = sum(1 for e in events if not e.on_device and e.name.startswith("aten::")) / calls
        out["coverage"] = None  # device time is not meant to fill the host's wall: the rest is the host's
        if profiled_ms > wall_ms * 1.05:  # the self-check: kernels cannot outlast the calls that launched them
            out["kernels_over_wall"] = True
            around = "the timed loop's" if steady_ms else "the"
            out["problem"] = (f"kernels took {profiled_ms:.3f} ms per call, more than {around} {wall_ms:.3f} ms wall "
                              "time around them: the trace is not of these calls")
    else:
        out["op_calls"] = sum(1 for e in timed if e.name.startswith("aten::")) / calls
        out["coverage"] = profiled_ms / wall_ms if wall_ms else None
        if out["coverage"] is not None and not COVERAGE <= out["coverage"] <= 2 - COVERAGE:
            out["problem"] = (f"the events' own times add up to {out['coverage']:.0%} of the profiled calls' time "
                              f"(outside {COVERAGE:.0%}-{2 - COVERAGE:.0%}): its shares are rough")
        if wall_ms > host_ms * 1.01:
            out["problem"] = (f"the calls took {wall_ms:.3f} ms each in the trace, more than the {host_ms:.3f} ms "
                              "the host clock saw around them: the trace is not of these calls")
    return out


def events_of(prof) -> list[Event]:
    """torch.profiler's events as Event records: CPU events with their self time, device kernels with their
    duration. Kineto mirrors every user-scope record (ours around each call, inductor's around each compiled
    graph) onto the GPU timeline as an event of device type CUDA spanning the kernels it wraps: those are not
    kernels, and torch leaves them out of its own device totals too (is_user_annotation)."""
    from torch.autograd import DeviceType

    out = []
    for e in prof.events():
        if e.device_type == DeviceType.CPU:
            out.append(Event(e.name, float(e.self_cpu_time_total), total_us=float(e.cpu_time_total)))
        elif e.device_type == DeviceType.CUDA and not getattr(e, "is_user_annotation", False):
            out.append(Event(e.name, float(e.time_range.elapsed_us()), on_device=True))
    return out


def profile(call: Callable[[], object], calls: int, device: str, trace_path: str,
            sync: Callable[[], None] = lambda: None, steady_ms: float | None = None) -> dict:
    """Profile `calls` calls of `call` (each inside a CALL record), write the Chrome trace to trace_path, and
    summarize it; `sync` waits for the device at both ends, so the wall time holds the kernels. `steady_ms`: the
    timed loop's time per call, the basis of a GPU's shares."""
    from torch.autograd.profiler import record_function
    from torch.profiler import ProfilerActivity, profile as torch_profile

    cuda = is_cuda(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch_profile(activities=activities) as prof:
        sync()
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            with record_function(CALL):
                call()
        sync()
        wall_ns = time.perf_counter_ns() - t0
    prof.export_chrome_trace(trace_path)
    return {**summarize(events_of(prof), calls, wall_ns, cuda, steady_ms), "trace": trace_path}
