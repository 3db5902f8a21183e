"""Repeat: what one worker process measured for one case (its raw samples, how its loop ended, its conditions and
what the compiler did). Each figure a case shows of its repeats is declared once, here, as a `metric` with the
rule that makes the case's figure from its repeats' (the worst error, the first call of the first repeat, ...):
a Result derives it by that rule, and the CSV's columns follow the declaration.

Fields a newer compilebench wrote and this one does not know are kept (`extra`) and written back unchanged."""

from __future__ import annotations

import dataclasses
import datetime
import statistics as pystats
import uuid
from dataclasses import dataclass, field
from typing import Callable

from compilebench.core import stats
from compilebench.core.conditions import Conditions
from compilebench.core.engines import EnginePrepared
from compilebench.core.environment import Environment, HostPeaks
from compilebench.core.generation import GenerateCalls
from compilebench.core.record import Record, coerce, part, plain, typed
from compilebench.core.served import ShapesServed
from compilebench.core.starts import AotPackage, MegaCache, Start
from compilebench.core.vocab import MEASURED, NOISY, STATUSES
from compilebench.core.why import CompilePhases, CompileTrace, Launchers, Profile

# A rule: the case's figure from its repeats' values (every repeat, oldest index first), the values of the repeats
# timed to the end (`measured`), and the field's empty value.
Rule = Callable[[list, list, object], object]


def first(values: list, measured: list, empty):
    """The first repeat's (the cold one, where the first compiled)."""
    return values[0]


def found(values: list, measured: list, empty):
    """The first repeat's that has one."""
    return next((v for v in values if v), empty)


def most(values: list, measured: list, empty):
    """The largest: the worst error, the most graphs, the highest peak."""
    known = [v for v in values if v is not None]
    return max(known) if known else None


def last(values: list, measured: list, empty):
    """The last repeat's (a later repeat supersedes what an earlier one said)."""
    return values[-1]


def any_of(values: list, measured: list, empty) -> bool:
    return any(values)


def each(values: list, measured: list, empty) -> list:
    """Every item any repeat has, in the order they first appear."""
    return list(dict.fromkeys(x for v in values for x in v))


def each_sorted(values: list, measured: list, empty) -> list:
    return sorted({x for v in values for x in v})


def median_measured(values: list, measured: list, empty):
    """The median of the repeats that were timed to the end (energy is per timed call)."""
    known = [v for v in measured if v is not None]
    return pystats.median(known) if known else None


def most_through_triton(values: list, measured: list, empty):
    """The process whose Triton kernels went most through Triton's own launcher (measure/launches.py)."""
    return max(values, key=lambda v: v.triton or 0, default=empty)


def least_each(values: list, measured: list, empty) -> dict:
    """Per key, the worst (least) agreement any repeat had."""
    return {k: min(v[k] for v in values if k in v) for k in dict.fromkeys(k for v in values for k in v)}


def metric(default=None, *, over: Rule, csv: bool = False):
    """A per-repeat figure a case shows too, derived from its repeats `over` this rule; `csv`: a column of its own
    in the CSV and JSON rows (the others are shown in columns of their own making: report/flat.py)."""
    kind = {"default_factory": default} if callable(default) else {"default": default}
    record = {"record": default} if isinstance(default, type) and issubclass(default, Record) else {}
    return field(**kind, metadata={"over": over, "csv": csv, **record})


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@dataclass(kw_only=True)
class Figures:
    """Every figure a case shows of its repeats, declared once: a Repeat holds its own, a Result (core/result.py)
    the case's, each made from its repeats' by the rule its declaration names (derived)."""

    # the first call alone; for a compiled model it holds the compilation
    first_call_s: float | None = metric(over=first, csv=True)
    compile_cache_hits: int | None = metric(over=first, csv=True)  # inductor FX-graph cache hits of the measured compile
    stopped_early: bool = metric(False, over=any_of, csv=True)  # the time budget ended the timed loop before iters_requested
    # CUDA: the steady state's (reset after warm-up), its CUDA graphs' pools included; host: the process's peak RSS
    peak_mem_bytes: int | None = metric(over=most, csv=True)
    # "cuda_steady" (allocated + graph pools), "host_max_rss", or "cuda_max_allocated" (results written before the
    # pools were counted: a reduce-overhead case read too low)
    peak_mem_kind: str | None = metric(over=found, csv=True)
    # CUDA: what the caching allocator held at the steady state's peak
    peak_mem_reserved_bytes: int | None = metric(over=most, csv=True)
    # CUDA: the peak of the first call and warm-up (compile, autotuning)
    compile_peak_mem_bytes: int | None = metric(over=most, csv=True)
    cudagraph_pool_bytes: int | None = metric(over=most, csv=True)  # CUDA: what the CUDA graphs' private pools reserve
    # NVML's energy counter over the loop, per timed call; the CPU packages' RAPL counters over it
    energy_per_call_j: float | None = metric(over=median_measured, csv=True)
    cpu_energy_per_call_j: float | None = metric(over=median_measured, csv=True)
    cudagraph_skip_reasons: list[str] = metric(list, over=each)
    self_checks: list[str] = metric(list, over=each)  # the self-checks it failed, in words (vocab.SELF_CHECK)
    # what the correctness tolerance was chosen for: float32, tf32, float16, bfloat16
    math: str | None = metric(over=found, csv=True)
    rel_tolerance: float | None = metric(over=most, csv=True)
    graphs: int | None = metric(over=most, csv=True)
    graph_breaks: int | None = metric(over=most, csv=True)
    break_reasons: list[str] = metric(list, over=each_sorted)
    recompile_reasons: list[str] = metric(list, over=each)  # dynamo's reason for each recompile (a guard failed)
    recompiles_in_timed_loop: int | None = metric(over=most, csv=True)
    recompile_limit_hits: int | None = metric(over=most)  # frames dynamo stopped compiling at its recompile limit
    regions: dict = metric(dict, over=found)  # --compile-scope regions: the blocks compiled, by class
    max_abs_err: float | None = metric(over=most, csv=True)
    max_rel_err: float | None = metric(over=most, csv=True)  # max abs error over eager's largest magnitude
    # how far two eager calls on the same input differed (relative, as max_rel_err): the tolerance's floor
    eager_self_rel_err: float | None = metric(over=most, csv=True)
    # how far eager's output moved when its input moved by one rounding step (relative, as max_rel_err): a floor too
    sensitivity_rel_err: float | None = metric(over=most, csv=True)
    agreement: dict = metric(dict, over=least_each)  # task-aware checks: {"top1": 1.0}, {"tokens": 1.0}
    # --quantize: its predictions against the float model's on the same input, in the task's terms ({"top1": 0.98,
    # "top5": 1.0}; generation: {"tokens": 0.9, "first_divergence": 12})
    quality: dict = metric(dict, over=least_each)
    weight_bytes: int | None = metric(over=most, csv=True)  # the model's parameters and buffers as stored (quantized)
    # a pipeline's image: the share of its time after its last denoiser step (the decoder's), from calls timed to
    # the device's end after the timed loop
    decoder_share: float | None = metric(over=median_measured, csv=True)
    # of one eager forward of the whole batch (torch.utils.flop_counter: matmuls, convs): counted by one process of
    # the model's first case, given to the later ones (compiling does not change the math of one eager forward)
    flops: int | None = metric(over=found, csv=True)
    inline_model: bool = metric(False, over=any_of)  # an nn.Module object measured in the caller's process (the API)
    # per call: eager, its operators' inputs and outputs; compiled, inductor's count
    bytes_moved: int | None = metric(over=found)
    # --profile: where the time goes (diagnostics/profiling.summarize), and its trace
    profile: Profile = metric(Profile, over=found)
    compile_trace: CompileTrace = metric(CompileTrace, over=found)  # --compile-trace: the TORCH_TRACE folder, tlparse's HTML
    # CUDA: the calling thread's CPU ms per timed call up to its loop's synchronize: the launches (measure/launches.py)
    launch_cpu_ms: float | None = metric(over=median_measured, csv=True)
    triton_launchers: Launchers = metric(Launchers, over=most_through_triton)  # compiled, CUDA: Triton kernels


@dataclass(kw_only=True)
class Warmed(Record):
    """How a process's warm-up ended (measure/timing.warm_up): steady (a window of calls no faster than the one
    before, and on a GPU its SM clock at the highest seen), or at its cap; each window's time per call."""

    ended: str | None = None  # "steady" or "cap"
    windows_ms: list[float] = field(default_factory=list)
    sm_clock_mhz: int | None = None  # the GPU's SM clock as it ended (NVML)
    after_switch: int | None = None  # interleaved: the untimed calls that opened each of its loop's blocks


@dataclass
class Repeat(Figures):
    """What one worker process measured for one case: its figures (Figures) and the rest below."""

    index: int = 1  # 1..R: which repeat of the case
    status: str = "ok"
    process: str = field(default_factory=lambda: uuid.uuid4().hex)  # shared by the variants of an interleaved process
    run: str | None = None  # the run that measured it (core/run.py): its tag, design and timing are there
    message: str | None = None  # one line: why it is not ok
    traceback: str | None = None
    phase: str | None = None  # the phase it was in when it failed
    created_at: str = field(default_factory=utc_now)
    samples_ms: list[float] = field(default_factory=list)
    stats: stats.Summary = part(stats.Summary)  # within this process only
    compile_s: float | None = None  # dynamo's own compile timer, summed over every graph compiled
    compile_cache: str | None = None  # the on-disk compiler state it started from: cold, warm or dir
    warmup_iters: int | None = None
    warmup_s: float | None = None
    warmed: Warmed = part(Warmed)  # why its warm-up ended
    iters_requested: int | None = None
    min_iters: int | None = None
    loop_wall_s: float | None = None
    loop_started_at: float | None = None  # wall clock (epoch seconds) around the timed loop: when it held the device
    loop_ended_at: float | None = None
    timing: str | None = None  # "throughput" (pipelined calls, one synchronize) or "latency" (each call to completion)
    samples_over_wall: float | None = None  # CUDA events: the samples' sum over the loop's wall time (the clock check)
    cudagraph_skips: int | None = None  # graphs inductor did not record as CUDA graphs (a GPU compiled variant)
    cudagraphs_recorded: int | None = None
    compile_phases: CompilePhases = part(CompilePhases)  # compile seconds by phase: dynamo, aot, inductor (codegen)
    conditions: Conditions = part(Conditions)  # what else used the machine during the timed loop
    flags: list[str] = field(default_factory=list)  # busy, throttled, noisy
    generation: GenerateCalls = part(GenerateCalls)  # text generation: per-call prefill / decode samples, first calls
    cpus: int | None = None  # CPU cores the worker could run on
    environment: Environment = part(Environment)  # this process's: its host, GPU, software, threads
    host_peaks: HostPeaks = part(HostPeaks)  # a CPU's bandwidth and matmul rate, where this process measured them
    clock: str | None = None  # what timed its calls: "cuda_events", "perf_counter"
    phases: dict = field(default_factory=dict)  # seconds the worker spent in each phase, from its start
    mega_cache: MegaCache = part(MegaCache)  # --compile-cache mega: the artifacts saved or loaded
    aot_inductor: AotPackage = part(AotPackage)  # aot-inductor: export, package (the repeat that built it), load
    engine: EnginePrepared = part(EnginePrepared)  # another engine (kinds/): export, build, its precision
    start: Start = part(Start)  # until the first answer
    shapes: ShapesServed = part(ShapesServed)  # `compilebench shapes`: each shape's first call, compiles, samples
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        coerce(self)
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")

    def set_samples(self, samples_ns: list[int]) -> None:
        self.samples_ms = [s / 1e6 for s in samples_ns]
        self.stats = stats.summarize(self.samples_ms)
        if NOISY.raised_by(self.stats.cv) and "noisy" not in self.flags:
            self.flags.append(NOISY.name)

    @property
    def mean_ms(self) -> float | None:
        return self.stats.mean if self.status in MEASURED and self.samples_ms else None

    def to_dict(self) -> dict:
        """Every field (its records as their dicts), with the fields a newer compilebench wrote."""
        return {**self.extra, **{f.name: plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                                 if f.name != "extra"}}

    @classmethod
    def from_dict(cls, d: dict) -> Repeat:
        return cls(**typed(cls, d))


METRICS = dataclasses.fields(Figures)
COLUMNS = tuple(f.name for f in METRICS if f.metadata["csv"])  # the metrics with a CSV column of their own


def empty(f: dataclasses.Field):
    """A metric's value where no repeat has one."""
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def derived(repeats: list[Repeat], measured: list[Repeat]) -> dict:
    """Every metric of a case, each by its rule over the repeats (oldest index first)."""
    return {f.name: f.metadata["over"]([getattr(r, f.name) for r in repeats], [getattr(r, f.name) for r in measured],
                                       empty(f)) for f in METRICS}
