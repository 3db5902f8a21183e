"""How a timed unit's measurement lands in a Repeat (each case of a job and the repeat its process fills in: a
Measuring), and the device facts measured beside it: the clock to time with, the conditions watch around the
timed loop, and peak memory."""

from __future__ import annotations

import contextlib
import os
import resource
from dataclasses import dataclass
from typing import Callable

from compilebench.core.case import Case
from compilebench.core.engines import EnginePrepared
from compilebench.core.environment import Environment, is_cuda
from compilebench.core.repeat import Repeat, Warmed
from compilebench.core.starts import AotPackage, Start
from compilebench.core.vocab import CLOCK, CUDAGRAPHS_SKIPPED, EAGER_NONDETERMINISTIC, RECOMPILE_LIMIT
from compilebench.core.why import CompilePhases, Launchers, Profile
from compilebench.diagnostics import profiling, traces
from compilebench.measure import conditions, fingerprint, invariants, launches, timing


@dataclass
class Measuring:
    """One case of a job and the repeat its worker process fills in (what the worker returns)."""

    case: Case
    repeat: Repeat


class Memory:
    """Peak memory of the steady state, apart from the compile's: on CUDA the allocator's peaks are reset after
    warm-up (steady) and read before the reset (compile and autotuning workspaces, CUDA-graph recording); on the
    host, the process's peak resident set (it cannot be reset: it holds the compile too). A unit with several timed
    loops (`shapes`: one per shape, each after its own first call) calls steady() before and after_loop() after
    each: the steady peak is the largest of the loops', the compile peak the largest of what came between them.

    On CUDA the steady peak also holds the CUDA graphs' private pools: a graph replays into its pool's memory
    without the allocator knowing, which counts that memory free, so its allocated peak alone leaves the graphs'
    working memory out (a reduce-overhead ResNet-50 read 0 MB beside eager's 35 on an H200). The pools are read from
    the allocator's snapshot after each loop, never inside one."""

    SLACK = 0.05  # the self-check: a steady peak this much over the compile peak (and 1 MiB) cannot be
    KIND = "cuda_steady"  # CUDA: the allocated peak of the loops plus what the graph pools hold that it leaves out

    def __init__(self, device: str):
        self.cuda = is_cuda(device)
        self.device = device
        self.compile_peak: int | None = None
        self.steady_peak: int | None = None  # the loops' own peaks, where after_loop() read them
        self.reserved_peak: int | None = None
        self.pool_bytes: int | None = None  # what the CUDA graphs' private pools reserve, at most, after a loop

    def start(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats(self.device)

    def steady(self) -> None:
        """Right before the timed loop: what was needed so far is the compile's."""
        if self.cuda:
            import torch

            self.compile_peak = max(self.compile_peak or 0, torch.cuda.max_memory_allocated(self.device))
            torch.cuda.reset_peak_memory_stats(self.device)

    def after_loop(self) -> None:
        """Right after a timed loop: its peak is a steady one; what follows (the next shape's compile) is not."""
        if self.cuda:
            import torch

            self.steady_peak = max(self.steady_peak or 0, torch.cuda.max_memory_allocated(self.device) + self._unseen())
            self.reserved_peak = max(self.reserved_peak or 0, torch.cuda.max_memory_reserved(self.device))
            torch.cuda.reset_peak_memory_stats(self.device)

    def _unseen(self) -> int:
        """What the CUDA graphs' private pools on this device hold that the allocator counts free (their reserved
        bytes less their live blocks, which the allocated peak has already); notes the pools' size."""
        import torch

        index = cuda_index(self.device)
        pools = [s for s in torch.cuda.memory_snapshot()
                 if s.get("device") == index and tuple(s.get("segment_pool_id") or (0, 0)) != (0, 0)]
        self.pool_bytes = max(self.pool_bytes or 0, sum(s["total_size"] for s in pools))
        return sum(s["total_size"] - s["allocated_size"] for s in pools)

    def record(self, rep: Repeat) -> None:
        if self.cuda:
            import torch

            steady = (self.steady_peak if self.steady_peak is not None
                      else torch.cuda.max_memory_allocated(self.device) + self._unseen())
            rep.peak_mem_bytes, rep.peak_mem_kind = steady, self.KIND
            rep.peak_mem_reserved_bytes = (self.reserved_peak if self.steady_peak is not None
                                           else torch.cuda.max_memory_reserved(self.device))
            rep.compile_peak_mem_bytes = self.compile_peak
            rep.cudagraph_pool_bytes = self.pool_bytes
            if self.compile_peak is not None and steady > self.compile_peak * (1 + self.SLACK) + 2**20:
                self_check(rep, f"the steady peak memory ({steady / 2**20:,.0f} MiB) is above the compile's "
                                f"({self.compile_peak / 2**20:,.0f} MiB), which also held the first calls: the "
                                "allocator's peaks were not reset where the loops began")
        else:
            rep.peak_mem_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports KiB
            rep.peak_mem_kind = "host_max_rss"


class Recorder:
    """What a timed unit of either kind (a forward pass, a generate() call) does around its loops and after them:
    peak memory from here on (the steady state's apart from the compile's), the CUDA graphs inductor records while
    the loops run, the math whose tolerance judges outputs, and what every repeat gets besides its loop's own
    fields. Start it after the eager call whose outputs are expected (not part of any variant's memory)."""

    def __init__(self, case, env: Environment):
        from compilebench.measure import correctness  # imports torch: only inside a worker

        self.device = case.device
        self.memory = Memory(case.device)
        self.memory.start()
        self.math = correctness.math_of(case.dtype, env.uses_tf32(case.dtype), case.quantize)
        self.cudagraphs: invariants.CudaGraphs | None = None

    @contextlib.contextmanager
    def loops(self):
        """Around the timed loops (warm-up and first calls included): the CUDA graphs inductor records or skips."""
        with invariants.watch_cudagraphs(cuda_index(self.device)) as seen:
            self.cudagraphs = seen
            yield

    def finish(self, rep: Repeat, case, m, compiled, check: Callable[[], list[str]] = list) -> None:
        """Peak memory, what the compiler did for a compiled variant (`compiled`: variants.compile_stats after the
        loops), then the verdict: a recompile while timed voids it, `check()`'s problems make it a mismatch."""
        self.memory.record(rep)
        if case.variant.compiled:
            record_compile(rep, compiled, m.recompiles, self.cudagraphs, case)
        if rep.cudagraphs_recorded and not rep.cudagraph_pool_bytes:
            self_check(rep, f"{rep.cudagraphs_recorded} CUDA graph(s) recorded, but the allocator's snapshot shows no "
                            "private pool: the steady peak memory may leave out the graphs' working memory")
        judge(rep, m.recompiles, check())


def record_profiles(results, job, calls: dict[str, Callable[[], object]], n: int, clock: timing.HostClock,
                    enter: Callable[[str], None]) -> None:
    """--profile: a profiled pass of n calls of each variant (`calls` by label) after everything else is measured
    (never inside a timed loop), its trace kept in the job's traces folder. A pass that fails says so in the
    profile; the timing stands."""
    if not (job.profile and job.traces):
        return
    enter("profile")
    os.makedirs(job.traces, exist_ok=True)
    for r in results:
        rep, case = r.repeat, r.case
        try:
            steady_ms = sum(rep.samples_ms) / len(rep.samples_ms) if rep.samples_ms else None
            rep.profile = Profile.from_dict(profiling.profile(calls[case.variant.label], n, case.device,
                                                              traces.profile_path(job.traces, case, job.repeat),
                                                              clock.sync, steady_ms))
            if rep.profile.kernels_over_wall:
                self_check(rep, f"--profile: {rep.profile.problem}")
        except Exception as exc:  # noqa: BLE001 - a profiler problem must not lose the measurement
            rep.profile = Profile(problem=f"the profiled pass failed: {type(exc).__name__}: {exc}"[:300])


def self_check(rep: Repeat, failed: str) -> None:
    """A check only real hardware can fail, failed: said in the repeat (its result is flagged self-check)."""
    if failed not in rep.self_checks:
        rep.self_checks.append(failed)


def record_loop(rep: Repeat, m, samples_ns: list[int], alone: bool) -> None:
    """What any timed loop (a forward's or generation's measurement) says, into the repeat: its samples, how it
    ended, the conditions around it, and the energy per call (the GPU's, the CPU packages') where it measured this
    variant alone."""
    rep.iters_requested, rep.min_iters, rep.stopped_early = m.iters_requested, m.min_iters, m.stopped_early
    rep.loop_wall_s = m.loop_wall_ns / 1e9
    rep.loop_started_at, rep.loop_ended_at = m.loop_started_at, m.loop_ended_at
    rep.conditions = m.conditions
    rep.flags = conditions.flags(m.conditions)
    rep.set_samples(samples_ns)
    energy, cpu_energy = m.conditions.gpu_energy_j, m.conditions.cpu_energy_j
    if energy is not None and energy <= 0:  # a counter that did not advance over a loop that ran, or wrapped
        self_check(rep, f"the GPU's energy counter moved {energy:g} J over the timed loop: no energy is reported")
        energy = None
    rep.energy_per_call_j = energy / len(samples_ns) if energy is not None and samples_ns and alone else None
    rep.cpu_energy_per_call_j = cpu_energy / len(samples_ns) if cpu_energy is not None and samples_ns and alone else None


def record_warmup(rep: Repeat, w: timing.WarmUp) -> None:
    rep.warmup_iters, rep.warmup_s = w.calls, w.ns / 1e9
    rep.warmed = Warmed(ended=w.ended, windows_ms=[round(x, 6) for x in w.windows_ms], sm_clock_mhz=w.sm_clock_mhz,
                        after_switch=w.after_switch)


def record(rep: Repeat, m: timing.Measurement, clock: timing.HostClock, sync_each_call: bool, alone: bool) -> None:
    """A forward pass's timed loop into the repeat, with the clock's self-check (pipelined CUDA events against the
    loop's wall time)."""
    rep.first_call_s = m.first_call_ns / 1e9
    record_warmup(rep, m.warmup)
    record_loop(rep, m, m.samples_ns, alone)
    rep.timing = "latency" if sync_each_call else "throughput"
    rep.samples_over_wall = clock_check(m, clock, sync_each_call)
    if clock_suspect(rep.samples_over_wall):
        rep.flags.append(CLOCK.name)
    if clock.name == timing.CudaClock.name and not sync_each_call:  # a call synchronized holds its wait too
        rep.launch_cpu_ms = launches.launch_cpu_ms(m.loop_cpu_ns, len(m.samples_ns))


def clock_check(m: timing.Measurement, clock: timing.HostClock, sync_each_call: bool) -> float | None:
    """Pipelined CUDA events: their samples' sum over the loop's wall time (None: a host clock, or calls each synced,
    which leave nothing to check)."""
    if clock.name == timing.CudaClock.name and not sync_each_call:
        return invariants.clock_ratio(m.samples_ns, m.loop_wall_ns)
    return None


def clock_suspect(ratio: float | None) -> bool:
    return ratio is not None and invariants.clock_suspect(ratio)


def record_compile(rep: Repeat, compiled, recompiles: int | None, cudagraphs: invariants.CudaGraphs, case) -> None:
    """What the compiler did for a compiled variant (dynamo counts per process: the compiled variants of an
    interleaved group share it), and whether it recompiled while timed. An aot-inductor variant's compile is its
    package's (record_aot): dynamo's counters say nothing of it."""
    rep.recompiles_in_timed_loop = recompiles
    if case.variant.prepared:
        return
    rep.compile_s, rep.graphs, rep.compile_cache_hits = compiled.compile_s, compiled.graphs, compiled.cache_hits
    if rep.compile_cache == "dir" and compiled.graphs and not compiled.cache_hits:
        rep.compile_cache = "cold"  # the user's folder held none of this case's graphs (another model's, or none)
    rep.graph_breaks, rep.break_reasons = compiled.graph_breaks, compiled.break_reasons
    rep.recompile_reasons, rep.compile_phases = compiled.recompile_reasons, CompilePhases.from_dict(compiled.phases)
    rep.recompile_limit_hits = compiled.limit_hits
    if compiled.limit_hits and RECOMPILE_LIMIT.name not in rep.flags:
        rep.flags.append(RECOMPILE_LIMIT.name)
    record_cudagraphs(rep, cudagraphs, case)
    if is_cuda(case.device):
        rep.triton_launchers = Launchers(**launches.triton_launchers())


def record_aot(rep: Repeat, packaged: dict) -> None:
    """An aot-inductor variant: dynamo compiled nothing (its counters say nothing of it); its compile cost is the
    export and package of the repeat that built the package, and its start the load."""
    rep.aot_inductor = package = AotPackage.from_dict(packaged)
    rep.compile_s = package.export_s + package.package_s if package.built else None
    rep.graphs = rep.graph_breaks = rep.compile_cache_hits = None
    rep.compile_phases = CompilePhases()


def record_engine(rep: Repeat, prepared: EnginePrepared) -> None:
    """An engine's variant: dynamo compiled nothing; its compile cost is its preparation in this process (the
    export and a cold build by the repeat that exported it; a build from the engine's cache by a later one)."""
    rep.engine = prepared
    rep.compile_s, rep.compile_cache = prepared.seconds, prepared.cache
    rep.graphs = rep.graph_breaks = rep.compile_cache_hits = None
    rep.compile_phases = CompilePhases()


def record_start(rep: Repeat, case) -> None:
    """What this process waited for its first answer, once it was running: the model's build (an aot-inductor
    package holds its weights: a replica builds nothing), loading the mega-cache or the package, and the first
    call, which holds any compile. The interpreter's start and imports are left out: the worker is forked from a
    launcher that made them already, and every way of starting pays them alike."""
    if rep.first_call_s is None:
        return
    load = rep.aot_inductor.load_s if rep.aot_inductor.load_s is not None else (
        rep.engine.seconds if rep.engine else rep.mega_cache.load_s)
    rep.start = Start(build_s=None if case.variant.ahead_of_time else rep.phases.get("build", 0.0), load_s=load,
                      first_call_s=rep.first_call_s)


def record_cudagraphs(rep: Repeat, seen: invariants.CudaGraphs, case) -> None:
    """What inductor did about CUDA graphs, for a compiled case on a GPU (on a CPU there are none to record). A
    CUDA-graph variant that recorded no graph ran as plain compile: flagged, with inductor's reason."""
    if not is_cuda(case.device):
        return
    rep.cudagraph_skips, rep.cudagraphs_recorded = seen.skips, seen.recorded
    rep.cudagraph_skip_reasons = seen.reasons
    if case.variant.uses_cudagraphs and not seen.engaged:
        rep.flags.append(CUDAGRAPHS_SKIPPED.name)
        rep.cudagraph_skip_reasons = seen.reasons or [seen.why_not()]


def record_check(rep: Repeat, verdict, math: str) -> list[str]:
    """A correctness verdict into the repeat, with the math and the tolerance that judged it (flagged where eager
    differed from itself, which raised it); returns its problems."""
    rep.max_abs_err, rep.max_rel_err, rep.agreement = verdict.max_abs_err, verdict.max_rel_err, verdict.agreement
    rep.math, rep.rel_tolerance, rep.eager_self_rel_err = math, verdict.tolerance, verdict.eager_self_rel_err
    rep.sensitivity_rel_err = verdict.sensitivity_rel_err
    if EAGER_NONDETERMINISTIC.raised_by(verdict.eager_self_rel_err):
        rep.flags.append(EAGER_NONDETERMINISTIC.name)
    return verdict.problems


def cuda_index(device: str) -> int | None:
    """The index of a CUDA device as this process sees it; None for the CPU."""
    if not is_cuda(device):
        return None
    import torch

    return torch.device(device).index or 0


def make_clock(device: str) -> timing.HostClock:
    return timing.CudaClock(device) if is_cuda(device) else timing.HostClock()


def make_watch(device: str) -> conditions.Watch:
    """Other processes' CPU share always; the GPU's clocks, power and throttling through NVML where it works."""
    if not is_cuda(device):
        return conditions.Watch()
    nvml = conditions.Nvml.open(fingerprint.gpu_uuid(device), cuda_index(device))
    return conditions.Watch(gpu=nvml.read if nvml else None, sm_clock=nvml.sm_clock if nvml else None)


def judge(rep: Repeat, recompiles: int | None, problems: list[str]) -> None:
    """A recompile while timed voids the numbers; an output outside tolerance is a mismatch, kept and shown."""
    if recompiles:
        rep.status = "invalid"
        rep.message = f"{recompiles} recompile(s) inside the timed loop: the samples mix compiled graphs"
    elif problems:
        rep.status = "mismatch"
        rep.message = "compiled output differs from eager: " + "; ".join(problems)
