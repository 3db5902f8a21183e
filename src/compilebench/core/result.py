"""Result: what a case produced, one Repeat per worker process. Raw samples are kept per repeat; the case's
status, estimate and compile times are derived from its repeats (derive), never stored apart from them.

Fields a newer compilebench wrote and this one does not know are kept (`extra`) and written back unchanged."""

from __future__ import annotations

import dataclasses
import datetime
import statistics as pystats
import uuid
from dataclasses import dataclass, field

from compilebench.core import stats
from compilebench.core.case import Case, eager_key_of, key_of
from compilebench.core.vocab import FLAGS, MEASURED, NOISY, SEVERITY, STATUSES


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


@dataclass
class Repeat:
    """What one worker process measured for one case."""

    index: int = 1  # 1..R: which repeat of the case
    status: str = "ok"
    process: str = field(default_factory=lambda: uuid.uuid4().hex)  # shared by the variants of an interleaved process
    run: str | None = None  # the run (one command's plan) that measured it: drift.py tells runs apart by it
    message: str | None = None  # one line: why it is not ok
    traceback: str | None = None
    phase: str | None = None  # the phase it was in when it failed
    created_at: str = field(default_factory=_now)
    samples_ms: list[float] = field(default_factory=list)
    stats: dict = field(default_factory=dict)  # within this process only: see stats.summarize
    first_call_s: float | None = None  # the first call alone; for a compiled model it holds the compilation
    compile_s: float | None = None  # dynamo's own compile timer, summed over every graph compiled
    compile_cache: str | None = None  # the on-disk compiler state it started from: cold, warm or dir
    compile_cache_hits: int | None = None  # inductor FX-graph cache hits of the measured compile
    warmup_iters: int | None = None
    warmup_s: float | None = None
    iters_requested: int | None = None
    min_iters: int | None = None
    stopped_early: bool = False  # the time budget ended the timed loop before iters_requested
    loop_wall_s: float | None = None
    loop_started_at: float | None = None  # wall clock (epoch seconds) around the timed loop: when it held the device
    loop_ended_at: float | None = None
    peak_mem_bytes: int | None = None  # CUDA: the steady state's (reset after warm-up); host: the process's peak RSS
    peak_mem_kind: str | None = None  # "cuda_max_allocated" or "host_max_rss"
    peak_mem_reserved_bytes: int | None = None  # CUDA: what the caching allocator held at the steady state's peak
    compile_peak_mem_bytes: int | None = None  # CUDA: the peak of the first call and warm-up (compile, autotuning)
    timing: str | None = None  # "throughput" (pipelined calls, one synchronize) or "latency" (each call to completion)
    samples_over_wall: float | None = None  # CUDA events: the samples' sum over the loop's wall time (the clock check)
    energy_per_call_j: float | None = None  # NVML's energy counter over the loop, per timed call
    cpu_energy_per_call_j: float | None = None  # the CPU packages' RAPL counters over the loop, per timed call
    cudagraph_skips: int | None = None  # graphs inductor did not record as CUDA graphs (a GPU compiled variant)
    cudagraphs_recorded: int | None = None
    cudagraph_skip_reasons: list[str] = field(default_factory=list)
    math: str | None = None  # what the correctness tolerance was chosen for: float32, tf32, float16, bfloat16
    rel_tolerance: float | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    break_reasons: list[str] = field(default_factory=list)
    recompile_reasons: list[str] = field(default_factory=list)  # dynamo's reason for each recompile (a guard failed)
    compile_phases: dict = field(default_factory=dict)  # compile seconds by phase: dynamo, aot, inductor (codegen)
    recompiles_in_timed_loop: int | None = None
    recompile_limit_hits: int | None = None  # frames dynamo stopped compiling at its recompile limit (run eagerly)
    regions: dict = field(default_factory=dict)  # --compile-scope regions: the blocks compiled, by class
    max_abs_err: float | None = None
    max_rel_err: float | None = None  # max abs error over the reference's largest magnitude
    agreement: dict = field(default_factory=dict)  # task-aware checks: {"top1": 1.0}, {"tokens": 1.0}
    conditions: dict = field(default_factory=dict)  # what else used the machine during the timed loop
    flags: list[str] = field(default_factory=list)  # busy, throttled, noisy
    generation: dict = field(default_factory=dict)  # text generation: per-call prefill / decode samples, first calls
    cpus: int | None = None  # CPU cores the worker could run on
    phases: dict = field(default_factory=dict)  # seconds the worker spent in each phase, from its start
    bytes_moved: int | None = None  # per call: eager, its operators' inputs and outputs; compiled, inductor's count
    profile: dict = field(default_factory=dict)  # --profile: where the time goes (profiling.summarize), and its trace
    compile_trace: dict = field(default_factory=dict)  # --compile-trace: the TORCH_TRACE folder, tlparse's HTML
    mega_cache: dict = field(default_factory=dict)  # --compile-cache mega: the artifacts saved or loaded (compiler_state)
    aot_inductor: dict = field(default_factory=dict)  # aot-inductor: export, package (the repeat that built it), load
    start: dict = field(default_factory=dict)  # until the first answer: build_s, load_s, first_call_s (recording.py)
    shapes: dict = field(default_factory=dict)  # `compilebench shapes`: each shape's first call, compiles, samples
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r} is not one of {STATUSES}")

    def set_samples(self, samples_ns: list[int]) -> None:
        self.samples_ms = [s / 1e6 for s in samples_ns]
        self.stats = stats.summarize(self.samples_ms)
        if NOISY.raised_by(self.stats.get("cv")) and "noisy" not in self.flags:
            self.flags.append(NOISY.name)

    @property
    def mean_ms(self) -> float | None:
        return self.stats.get("mean") if self.status in MEASURED and self.samples_ms else None

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        return {**d.pop("extra"), **d}

    @classmethod
    def from_dict(cls, d: dict) -> Repeat:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names and k != "extra"},
                   extra={k: v for k, v in d.items() if k not in names})


@dataclass
class Result:
    """A case on one machine: its repeats and what they add up to."""

    case: Case
    repeats: list[Repeat] = field(default_factory=list)
    machine_id: str = ""
    label: str = ""  # the guide's "Task/Model" row label
    task: str = ""
    env: dict = field(default_factory=dict)
    isolation: str = "process"
    placement: str = ""  # what a Ray sweep asked for ("ray|H100|torch ...|transformers ..."): its resume identity
    timing_policy: dict = field(default_factory=dict)
    clock: str | None = None
    flops: int | None = None  # of one eager forward of the whole batch (torch.utils.flop_counter: matmuls, convs)
    inline_model: bool = False  # an nn.Module object measured in the caller's process (the Python API)
    result_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=_now)
    extra: dict = field(default_factory=dict)  # fields a newer compilebench wrote, kept as they were
    case_extra: dict = field(default_factory=dict)  # the same, inside the case
    # Derived from the repeats by derive():
    status: str = "ok"
    message: str | None = None
    stats: stats.Estimate = field(default_factory=stats.Estimate)
    first_call_s: float | None = None
    compile_s: float | None = None  # the cold compile where a repeat had one, else the warm one
    cold_compile_s: float | None = None
    warm_compile_s: float | None = None  # median over the repeats that compiled from a warm on-disk cache
    mega_cache: dict = field(default_factory=dict)  # --compile-cache mega: artifacts' size, load and start (medians)
    aot_inductor: dict = field(default_factory=dict)  # aot-inductor: build seconds, package size, load and start
    compile_cache_hits: int | None = None
    graphs: int | None = None
    graph_breaks: int | None = None
    break_reasons: list[str] = field(default_factory=list)
    recompile_reasons: list[str] = field(default_factory=list)
    compile_phases: dict = field(default_factory=dict)  # of the compile compile_s is
    recompiles_in_timed_loop: int | None = None
    recompile_limit_hits: int | None = None
    regions: dict = field(default_factory=dict)
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    agreement: dict = field(default_factory=dict)
    peak_mem_bytes: int | None = None
    peak_mem_kind: str | None = None
    peak_mem_reserved_bytes: int | None = None
    compile_peak_mem_bytes: int | None = None
    energy_per_call_j: float | None = None  # median over the repeats
    cpu_energy_per_call_j: float | None = None  # median over the repeats
    cudagraph_skip_reasons: list[str] = field(default_factory=list)
    math: str | None = None
    rel_tolerance: float | None = None
    flags: list[str] = field(default_factory=list)
    stopped_early: bool = False
    bytes_moved: int | None = None  # per call (bandwidth.py): the first repeat's that counted them
    profile: dict = field(default_factory=dict)  # --profile: the first repeat's that has one
    compile_trace: dict = field(default_factory=dict)  # --compile-trace: the first repeat's that kept one
    generation: dict = field(default_factory=dict)  # new_tokens, batch_size; ttft and per_token as Estimates
    shapes: dict = field(default_factory=dict)  # `compilebench shapes`: per shape, over the repeats (_shapes_summary)

    def __post_init__(self):
        if isinstance(self.stats, dict):  # as stored
            self.stats = stats.Estimate.from_dict(self.stats)
        self.generation = {k: stats.Estimate.from_dict(v) if k in _ESTIMATES else v for k, v in self.generation.items()}
        self.derive()

    def add(self, repeat: Repeat) -> None:
        """A repeat joins the result, replacing an earlier attempt at the same index (a retried failure)."""
        self.repeats = sorted([r for r in self.repeats if r.index != repeat.index] + [repeat], key=lambda r: r.index)
        self.derive()

    def derive(self) -> None:
        reps = sorted(self.repeats, key=lambda r: r.index)
        if not reps:
            return
        self.status = min((r.status for r in reps), key=SEVERITY.index)
        worst = next(r for r in reps if r.status == self.status)
        self.message = None if self.status == "ok" else (
            worst.message if len(reps) == 1 else f"repeat {worst.index}: {worst.message}")
        measured = [r for r in reps if r.status in MEASURED and r.samples_ms]
        self.stats = stats.case_summary([r.samples_ms for r in measured])
        self.first_call_s = reps[0].first_call_s
        cold = [r.compile_s for r in reps if r.compile_s is not None and r.compile_cache == "cold"]
        warm = [r.compile_s for r in reps if r.compile_s is not None and r.compile_cache not in ("cold", "mega")]
        self.cold_compile_s = cold[0] if cold else None
        self.warm_compile_s = pystats.median(warm) if warm else None
        self.mega_cache = _mega_summary(reps)
        self.aot_inductor = _aot_summary(reps)
        self.compile_s = self.cold_compile_s if cold else (self.warm_compile_s if warm else self.mega_cache.get("compile_s"))
        phased = [r for r in reps if r.compile_phases]
        self.compile_phases = next((r.compile_phases for r in phased if r.compile_cache == "cold" or not cold), {})
        self.compile_cache_hits = reps[0].compile_cache_hits
        self.graphs = _max(r.graphs for r in reps)
        self.graph_breaks = _max(r.graph_breaks for r in reps)
        self.break_reasons = sorted({b for r in reps for b in r.break_reasons})
        self.recompile_reasons = list(dict.fromkeys(x for r in reps for x in r.recompile_reasons))
        self.recompiles_in_timed_loop = _max(r.recompiles_in_timed_loop for r in reps)
        self.recompile_limit_hits = _max(r.recompile_limit_hits for r in reps)
        self.regions = next((r.regions for r in reps if r.regions), {})
        self.max_abs_err = _max(r.max_abs_err for r in reps)
        self.max_rel_err = _max(r.max_rel_err for r in reps)
        self.agreement = {k: min(r.agreement[k] for r in reps if k in r.agreement)
                          for k in dict.fromkeys(k for r in reps for k in r.agreement)}
        self.peak_mem_bytes = _max(r.peak_mem_bytes for r in reps)
        self.peak_mem_kind = next((r.peak_mem_kind for r in reps if r.peak_mem_kind), None)
        self.peak_mem_reserved_bytes = _max(r.peak_mem_reserved_bytes for r in reps)
        self.compile_peak_mem_bytes = _max(r.compile_peak_mem_bytes for r in reps)
        for name in ("energy_per_call_j", "cpu_energy_per_call_j"):
            energy = [getattr(r, name) for r in measured if getattr(r, name) is not None]
            setattr(self, name, pystats.median(energy) if energy else None)
        self.cudagraph_skip_reasons = list(dict.fromkeys(x for r in reps for x in r.cudagraph_skip_reasons))
        self.math = next((r.math for r in reps if r.math), None)
        self.rel_tolerance = _max(r.rel_tolerance for r in reps)
        self.flags = [f for f in FLAGS if any(f in r.flags for r in measured)]
        self.stopped_early = any(r.stopped_early for r in reps)
        self.profile = next((r.profile for r in reps if r.profile), {})
        self.bytes_moved = next((r.bytes_moved for r in reps if r.bytes_moved), None)
        self.compile_trace = next((r.compile_trace for r in reps if r.compile_trace), {})
        self.generation = _generation_summary(measured)
        self.shapes = _shapes_summary(reps)
        if self.shapes:  # its loops' conditions are per shape: every repeat that served them to the end
            self.flags = [f for f in FLAGS if any(f in r.flags for r in reps if r.status in MEASURED)]

    @property
    def case_key(self) -> str:
        """The resume key of its case, as stored (with settings a newer compilebench wrote)."""
        return key_of({**self.case_extra, **self.case.to_dict()})

    @property
    def eager_key(self) -> str:
        """The resume key of its case's eager twin, as stored."""
        return eager_key_of({**self.case_extra, **self.case.to_dict()})

    @property
    def mean(self) -> float | None:
        """The number a table may average: ok results only (invalid and failures have no number)."""
        return self.stats.mean if self.status == "ok" else None

    @property
    def measured_mean(self) -> float | None:
        """The mean of any result that was timed to the end, for the details table and FLOP/s."""
        return self.stats.mean if self.status in MEASURED and self.stats.n else None

    def process_means(self, metric=None) -> dict[str, float]:
        """One mean per worker process that timed the case to the end, by process id: the unit of independence.
        `metric` picks another per-call series from a repeat (generation: its time to first token or per token)."""
        out = {}
        for rep in sorted(self.repeats, key=lambda r: r.index):
            values = (metric(rep) if metric else rep.samples_ms) if rep.status in MEASURED else None
            if values:
                out[rep.process or str(rep.index)] = sum(values) / len(values)
        return out

    def to_dict(self) -> dict:
        out = {**self.extra}
        for f in dataclasses.fields(self):
            if f.name not in ("case", "repeats", "extra", "case_extra"):
                out[f.name] = getattr(self, f.name)
        out["stats"] = self.stats.to_dict()
        out["generation"] = {k: v.to_dict() if k in _ESTIMATES else v for k, v in self.generation.items()}
        out["case"] = {**self.case_extra, **self.case.to_dict()}
        out["case_key"] = self.case_key
        out["repeats"] = [r.to_dict() for r in sorted(self.repeats, key=lambda r: r.index)]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        names = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in names and k not in ("case", "repeats", "extra", "case_extra")}
        extra = {k: v for k, v in d.items() if k not in names and k != "case_key"}
        case_fields = {f.name for f in dataclasses.fields(Case)}
        case_extra = {k: v for k, v in d["case"].items() if k not in case_fields}
        return cls(Case.from_dict(d["case"]), [Repeat.from_dict(r) for r in d.get("repeats") or []], **kw, extra=extra,
                   case_extra=case_extra)


_ESTIMATES = ("ttft", "per_token")  # the generation summary's estimates


def _max(values):
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _aot_summary(reps: list[Repeat]) -> dict:
    """aot-inductor: the build (export and package seconds, the package's size) and, over the repeats, the
    median load seconds and start (load + first call). The start is taken from the repeats that only loaded
    (fresh processes, as a replica) where there are any; `start_from` says which."""
    done = [r for r in reps if r.aot_inductor and r.first_call_s is not None]
    if not done:
        return {}
    built = next((r.aot_inductor for r in done if r.aot_inductor.get("built")), {})
    loaded = [r for r in done if not r.aot_inductor.get("built")] or done
    median = lambda xs: pystats.median(xs)  # noqa: E731
    return {**{k: built[k] for k in ("export_s", "package_s") if k in built},
            "package_bytes": done[0].aot_inductor["package_bytes"],
            "load_s": median([r.aot_inductor["load_s"] for r in loaded]),
            "first_call_s": median([r.first_call_s for r in loaded]),
            "start_s": median([r.aot_inductor["load_s"] + r.first_call_s for r in loaded]),
            "start_from": "fresh processes that loaded it" if loaded is not done or not built
            else "the process that built it"}


def _mega_summary(reps: list[Repeat]) -> dict:
    """--compile-cache mega: the artifacts' size; over the repeats that loaded them, the median load seconds,
    compile seconds left after loading, first call, and start (load + first call: what a new replica waits)."""
    saved = next((r.mega_cache for r in reps if "saved_bytes" in r.mega_cache), {})
    loads = [r for r in reps if "loaded_bytes" in r.mega_cache and r.first_call_s is not None]
    out = {"bytes": saved["saved_bytes"]} if saved else {}
    if loads:
        median = lambda xs: pystats.median(xs) if xs else None  # noqa: E731
        out.update(bytes=loads[0].mega_cache["loaded_bytes"], repeats=len(loads),
                   load_s=median([r.mega_cache["load_s"] for r in loads]),
                   compile_s=median([r.compile_s for r in loads if r.compile_s is not None]),
                   first_call_s=median([r.first_call_s for r in loads]),
                   start_s=median([r.mega_cache["load_s"] + r.first_call_s for r in loads]),
                   missed=max(r.mega_cache.get("missed") or 0 for r in loads))
    problem = next((r.mega_cache["problem"] for r in reps if "problem" in r.mega_cache), None)
    return {**out, **({"problem": problem} if problem else {})}


def _shapes_summary(reps: list[Repeat]) -> dict:
    """`compilebench shapes`: per shape, over the repeats that served every shape, the steady latency's estimate
    between processes (as a case's), the median first call and compile seconds, the most compiles any repeat made
    (in the first pass and in the second, which must make none) and the worst correctness; and the totals."""
    served = [r for r in reps if r.shapes and r.status in MEASURED]
    if not served:
        return {}
    out = {}
    for token in served[0].shapes["served"]:
        per = [r.shapes["per_shape"][token] for r in served]
        errs = [p["max_rel_err"] for p in per if p.get("max_rel_err") is not None]
        agreement = {k: min(p["agreement"][k] for p in per if k in p.get("agreement", {}))
                     for k in dict.fromkeys(k for p in per for k in p.get("agreement", {}))}
        out[token] = {"served_as": per[0]["served_as"], "steady": stats.case_summary([p["samples_ms"] for p in per]).to_dict(),
                      "first_call_s": pystats.median(p["first_call_s"] for p in per),
                      "compile_s": pystats.median(p["compile_s"] for p in per),
                      "compiles": max(p["compiles"] for p in per),
                      "recompiles": max(len(p["recompile_reasons"]) for p in per),
                      "recompile_reasons": list(dict.fromkeys(x for p in per for x in p["recompile_reasons"])),
                      "second_compiles": max(p["second_compiles"] for p in per),
                      "limit_hits": max(p["limit_hits"] for p in per),
                      "max_rel_err": max(errs) if errs else None, "agreement": agreement,
                      "problems": list(dict.fromkeys(x for p in per for x in p.get("problems", [])))}
    return {"per_shape": out, "repeats": len(served),
            "compiles": sum(p["compiles"] for p in out.values()),
            "recompiles": sum(p["recompiles"] for p in out.values()),
            "second_compiles": sum(p["second_compiles"] for p in out.values()),
            "limit_hits": sum(p["limit_hits"] for p in out.values()),
            "compile_s": sum(p["compile_s"] for p in out.values())}


def _generation_summary(measured: list[Repeat]) -> dict:
    """Text generation: prefill (time to first token), per-token decode and tokens/s estimated over the repeats,
    as the call time is."""
    gen = [r.generation for r in measured if r.generation]
    if not gen:
        return {}
    ttft = stats.case_summary([g["ttft_ms"] for g in gen])
    per_token = stats.case_summary([g["per_token_ms"] for g in gen])
    moved = next((g["decode_bytes"] for g in gen if g.get("decode_bytes")), None)
    return {"new_tokens": gen[0].get("new_tokens"), "batch_size": gen[0].get("batch_size"), "ttft": ttft,
            "per_token": per_token, **({"decode_bytes": moved} if moved else {})}


def upgrade_v1(d: dict) -> dict:
    """A result written by schema 1 (one process, its samples at the top) as one repeat of a schema-2 result."""
    repeat_fields = {f.name for f in dataclasses.fields(Repeat)}
    rep = {k: d[k] for k in repeat_fields if k in d and k not in ("index", "process", "flags", "extra", "stats")}
    rep["compile_cache"] = "cold" if d.get("compile_cache", "cold") == "cold" else (
        "warm" if d.get("compile_cache") == "warm" else "dir")
    repeat = Repeat(index=1, process=d["result_id"], **rep)
    repeat.set_samples([round(s * 1e6) for s in d.get("samples_ms") or []])
    keep = {f.name for f in dataclasses.fields(Result)} | {"case_key"}
    top = {k: v for k, v in d.items() if k in keep and k not in ("repeats", "status", "stats", "message")}
    return Result.from_dict({**top, "repeats": [repeat.to_dict()]}).to_dict()
