"""The skeleton every timed unit follows (a forward pass, a generate() call, a sequence of shapes), its steps in
one order, so a check made for one holds for all three:

1. build the model and its inputs;
2. keep one eager output as the expected one (where a compiled variant is checked against it);
3. --compile-cache warm: compile each compiled variant once into the job's fresh folder, then forget it in
   memory (what stays is on disk, as for a second process);
4. make each variant's call ready (compiled lazily; an AOTInductor package built and loaded) and time the loops
   inside the recorder (peak memory's steady point, the CUDA graphs inductor records);
5. per variant: record the measurement, then finish it: memory, what the compiler did, a recompile while timed
   voids it, the correctness check makes a mismatch, and an eager process that compiled a graph is `invalid`;
6. --profile: a profiled pass, after everything timed.

A unit fills in what differs: how it builds, what its reference is, its loops and what a repeat records of them."""

from __future__ import annotations

from typing import Callable

from compilebench.core.job import Job
from compilebench.diagnostics import bandwidth
from compilebench.measure import compiler, timing
from compilebench.measure.recording import Measuring, Recorder, record_profiles


class TimedUnit:
    """One process's measurement of a job's cases with one kind of call. Subclasses fill in the steps."""

    profiled_calls = 0  # calls of a --profile pass; 0: the unit has none
    reference_may_compile = False  # its eager calls may compile (generate()): nothing they did may count

    def __init__(self, entry, results: list[Measuring], job: Job, clock: timing.HostClock, watch,
                 enter: Callable[[str], None]):
        self.entry, self.results, self.job, self.clock, self.watch, self.enter = entry, results, job, clock, watch, enter
        self.cases = [r.case for r in results]
        self.first = self.cases[0]
        self.compiled = [c for c in self.cases if c.variant.compiled]

    def run(self) -> None:
        """Measure the job's cases; fills each result's repeat, raises on a failure of the case."""
        self.enter("build")
        self.build()
        weights = bandwidth.weight_bytes(self.model)  # as built (and quantized): before a replica drops the model
        if self.wants_reference():
            self.enter("eager reference")
            self.reference()
            if self.reference_may_compile:
                compiler.reset_dynamo()
        if self.compiled and self.first.compile_cache == "warm":
            self.enter("warming the compile cache")
            self.warm()
            compiler.forget_compiled()
        self.recorder = recorder = Recorder(self.first, self.results[0].repeat.environment)
        self.variants()
        graphs = compiler.graph_count()
        with recorder.loops():
            measured = self.loops(recorder)
        self.after_loops()
        self.enter("check")
        stats = compiler.compile_stats() if self.compiled else None
        eager_graphs = 0 if self.compiled else compiler.graph_count() - graphs
        for r in self.results:
            rep, m = r.repeat, measured[r.case.variant.label]
            rep.weight_bytes = weights
            self.record(r, m)
            recorder.finish(rep, r.case, m, stats, self.check_of(r) or list)
            if eager_graphs:  # not what its label says
                rep.status = "invalid"
                rep.message = f"{eager_graphs} graph(s) compiled while measuring {r.case.variant.label}: it was not eager"
        if self.profiled_calls:
            record_profiles(self.results, self.job, self.profiled(), self.profiled_calls, self.clock, self.enter)

    # -- the steps a unit fills in ------------------------------------------------------------------------------

    def build(self) -> None:
        """The model (self.model) and its inputs, on the device."""
        raise NotImplementedError

    def wants_reference(self) -> bool:
        """Whether an eager output is kept as the expected one."""
        return bool(self.compiled) and self.job.check

    def reference(self) -> None:
        """The eager output the compiled ones are checked against."""

    def warm(self) -> None:
        """Compile each compiled variant once (--compile-cache warm)."""
        raise NotImplementedError

    def variants(self) -> None:
        """Each variant's call made ready, before its loop (memory from here on is the variants')."""

    def loops(self, recorder: Recorder) -> dict:
        """The timed loops: each variant's measurement, by label."""
        raise NotImplementedError

    def after_loops(self) -> None:
        """Whatever must wait for every timed loop (counting an eager model's FLOPs)."""

    def record(self, r: Measuring, m) -> None:
        """The measurement `m` into the result's repeat."""
        raise NotImplementedError

    def check_of(self, r: Measuring) -> Callable[[], list[str]] | None:
        """The correctness check of a variant's output (its problems), or None: nothing to check."""
        return None

    def profiled(self) -> dict[str, Callable[[], object]]:
        """Each variant's call, by label, for a --profile pass."""
        return {}
