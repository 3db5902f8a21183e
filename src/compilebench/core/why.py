"""Why a number is what it is, as a repeat records it: where a call's time goes (--profile), the compile's phases
and its trace (--compile-trace)."""

from __future__ import annotations

from dataclasses import dataclass, field

from compilebench.core.record import Record, column, items


@dataclass(kw_only=True)
class ProfiledOp(Record):
    """One of a profiled call's top operators (or kernels) by own time, per call."""

    name: str = ""
    self_ms: float | None = None
    calls: float | None = None
    share: str | None = None  # its share of the call (diagnostics/profiling.SHARES); None: the others, summed


@dataclass(kw_only=True)
class Profile(Record):
    """A profiled pass of a few calls after the timed loop (diagnostics/profiling.summarize): per call, the shares
    of its time, its top operators, how many operator calls and kernels; or the problem that voided it."""

    calls: int | None = None  # calls profiled
    wall_ms: float | None = column(csv="profile_ms")  # a call's time: the timed loop's on a GPU, else the pass's
    host_wall_ms: float | None = None
    profiled_ms: float | None = None  # what the events account for, per call
    shares_ms: dict = field(default_factory=dict)  # per share of the call (profiling.SHARES): milliseconds
    top: list = items(ProfiledOp)
    basis: str | None = None  # "device kernels" or "CPU self time"
    wall_from: str | None = None  # "timed loop" or "profiled pass"
    kernels: float | None = column(csv="profile_gpu_kernels")  # GPU kernels per call
    op_calls: float | None = column(csv="profile_op_calls")  # aten operator calls per call
    coverage: float | None = None  # the events' time over the call's, on a CPU
    kernels_over_wall: bool = False  # a self-check failed: kernels outlasted the loop's time per call
    problem: str | None = None  # why its figures cannot be trusted, or why there are none
    trace: str | None = column(csv="profile_trace")  # the Chrome trace beside the results file


@dataclass(kw_only=True)
class CompilePhases(Record):
    """A compile's seconds split by dynamo's own compilation metrics, summed over the graphs compiled."""

    dynamo_s: float | None = column(csv="compile_dynamo_s")  # dynamo's tracing: the frame outside the backend
    aot_s: float | None = column(csv="compile_aot_s")  # AOT autograd: the backend's time outside inductor
    inductor_s: float | None = column(csv="compile_inductor_s")
    codegen_s: float | None = column(csv="compile_codegen_s")  # part of inductor's
    # part of inductor's too: its checks of this CPU's instruction sets (measure/cpu_checks), the machine's cost
    cpu_checks_s: float | None = column(csv="compile_cpu_checks_s")


@dataclass(kw_only=True)
class CompileTrace(Record):
    """--compile-trace: the TORCH_TRACE folder the compile logged to and the HTML tlparse made of it (by the driver,
    after every measurement), or why there is none."""

    dir: str | None = None
    html: str | None = None
    why_not: str | None = None

    @property
    def rendered(self) -> bool:
        return self.html is not None or self.why_not is not None

    @property
    def shown(self) -> str | None:
        return self.html or self.dir


@dataclass(kw_only=True)
class Launchers(Record):
    """A compiled model's Triton kernels on a GPU by the launcher each runs through (measure/launches.py): inductor's
    static one, or Triton's own, which costs more CPU per launch; every kernel its process had loaded."""

    static: int | None = None
    triton: int | None = None

    @property
    def total(self) -> int:
        return (self.static or 0) + (self.triton or 0)
