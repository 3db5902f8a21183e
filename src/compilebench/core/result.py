"""Result: a case on one machine, with one Repeat per worker process. What is stored is the case, its identity
(where it resumes, its row label) and its repeats, each with its own environment and raw samples; the runs that
measured the repeats are stored once each, apart (core/run.py). Everything a case shows (its status, estimate and
interval, compile times, flags and every metric its repeats declare) is derived from its repeats and their runs
whenever a Result is made or a repeat joins it: never stored, so never stale (an export may include it).

Fields a newer compilebench wrote and this one does not know are kept (`extra`) and written back unchanged."""

from __future__ import annotations

import dataclasses
import statistics as pystats
import uuid
from dataclasses import dataclass, field

from compilebench.core import stats
from compilebench.core.case import Case, eager_key_of, key_of
from compilebench.core.engines import EngineStart
from compilebench.core.environment import Environment, disagreements
from compilebench.core.generation import Generation
from compilebench.core.repeat import METRICS, Repeat, derived, empty, utc_now
from compilebench.core.run import Run
from compilebench.core.served import Shapes
from compilebench.core.starts import AotStart, MegaStart
from compilebench.core.stats import Group
from compilebench.core.vocab import FLAGS, MEASURED, SELF_CHECK, SEVERITY, UNSTABLE
from compilebench.core.why import CompilePhases

# What a Result derives from its repeats, beside every metric they declare (core/repeat.py's Figures): never stored.
DERIVED = ("status", "message", "stats", "compile_s", "cold_compile_s", "warm_compile_s", "mega_cache",
           "compile_phases", "aot_inductor", "engine", "flags", "generation", "shapes", "unstable")


@dataclass
class Result:
    """A case on one machine: its repeats and what it is stored under. Derived when made and when a repeat joins
    (not fields): every figure its repeats declare (first_call_s, graphs, max_rel_err, peak_mem_bytes, ...; core/
    repeat.py's Figures), each by its rule, and `status`, `message`, `stats` (the estimate between processes),
    `compile_s` (cold where a repeat compiled cold, else warm), `cold_compile_s`, `warm_compile_s`, `mega_cache`,
    `compile_phases`, `aot_inductor`, `engine` (another engine's preparation, cold and warm), `flags`,
    `generation`, `shapes` and `unstable` (its per-process figures in two groups far apart, each group's mean and
    when)."""

    case: Case
    repeats: list[Repeat] = field(default_factory=list)
    machine_id: str = ""  # the machine and software it resumes on (Environment.machine_id of where it ran)
    placement: str = ""  # what a Ray sweep asked for ("ray|H100|torch ...|transformers ..."): its resume identity
    label: str = ""  # the guide's "Task/Model" row label
    task: str = ""
    result_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: str = field(default_factory=utc_now)
    runs: tuple[Run, ...] = ()  # the runs its repeats belong to, as the runs table holds them (not stored here)
    extra: dict = field(default_factory=dict)  # fields a newer compilebench wrote, kept as they were
    case_extra: dict = field(default_factory=dict)  # the same, inside the case

    def __post_init__(self):
        self.runs = tuple(self.runs)
        self.derive()

    def add(self, repeat: Repeat) -> None:
        """A repeat joins the result, replacing an earlier attempt at the same index (a retried failure)."""
        self.repeats = sorted([r for r in self.repeats if r.index != repeat.index] + [repeat], key=lambda r: r.index)
        self.derive()

    def derive(self) -> None:
        """Everything the case shows, from its repeats: the status and message of the most telling one, the estimate
        between processes, the compile seconds (cold and warm), the summaries of starts, generation and shapes, and
        every metric its repeats declare (core/repeat.py), each by its rule. Called when the result is made and
        when a repeat joins; again only by code that changed a repeat in place (a test's hand-made repeat)."""
        reps = sorted(self.repeats, key=lambda r: r.index)
        measured = [r for r in reps if r.status in MEASURED and r.samples_ms]
        metrics = derived(reps, measured) if reps else {f.name: empty(f) for f in METRICS}
        for name, value in metrics.items():
            setattr(self, name, value)
        self.status, self.message, self.stats, self.flags, self.unstable = "ok", None, stats.Estimate(), [], []
        self.compile_s = self.cold_compile_s = self.warm_compile_s = None
        self.mega_cache, self.compile_phases, self.aot_inductor = MegaStart(), CompilePhases(), AotStart()
        self.engine = EngineStart()
        self.generation, self.shapes = Generation(), Shapes()
        if not reps:
            return
        self.status = min((r.status for r in reps), key=SEVERITY.index)
        worst = next(r for r in reps if r.status == self.status)
        self.message = None if self.status == "ok" else (
            worst.message if len(reps) == 1 else f"repeat {worst.index}: {worst.message}")
        self.stats = stats.case_summary([r.samples_ms for r in measured])
        self._derive_compile(reps)
        self.flags = [f for f in FLAGS if any(f in r.flags for r in measured)]
        self.generation = Generation.of(measured)
        self.shapes = Shapes.of(reps, MEASURED)
        if self.shapes:  # its loops' conditions are per shape: every repeat that served them to the end
            self.flags = [f for f in FLAGS if any(f in r.flags for r in reps if r.status in MEASURED)]
        self.unstable = _unstable(measured)
        if self.unstable:
            self.flags.append(UNSTABLE.name)
        if any(r.self_checks for r in reps):  # a figure that failed its own check: said, whatever the status
            self.flags.append(SELF_CHECK.name)

    def _derive_compile(self, reps: list[Repeat]) -> None:
        """Compile seconds cold (the first repeat, from an empty compiler state) and warm (the median of those that
        started from a warm one), the phases of the compile `compile_s` is, and the starts of the mega-cache and of
        an AOTInductor package."""
        cold = [r.compile_s for r in reps if r.compile_s is not None and r.compile_cache == "cold"]
        warm = [r.compile_s for r in reps if r.compile_s is not None and r.compile_cache not in ("cold", "mega")]
        self.cold_compile_s = cold[0] if cold else None
        self.warm_compile_s = pystats.median(warm) if warm else None
        self.mega_cache = MegaStart.of(reps)
        self.aot_inductor = AotStart.of(reps)
        self.engine = EngineStart.of(reps)
        self.compile_s = self.cold_compile_s if cold else (self.warm_compile_s if warm else self.mega_cache.compile_s)
        phased = [r for r in reps if r.compile_phases]
        self.compile_phases = next((r.compile_phases for r in phased if r.compile_cache == "cold" or not cold),
                                   CompilePhases())

    @property
    def case_key(self) -> str:
        """The resume key of its case, as stored (with settings a newer compilebench wrote)."""
        return key_of({**self.case_extra, **self.case.to_dict()})

    @property
    def eager_key(self) -> str:
        """The resume key of its case's eager twin, as stored."""
        return eager_key_of({**self.case_extra, **self.case.to_dict()})

    # -- what its repeats' environments say ----------------------------------------------------------------------

    @property
    def env(self) -> Environment:
        """The environment its repeats share: the first's that recorded one (a repeat killed before it read its
        own has the driver's). Where they disagree on what must be common, `disagreements` says so."""
        return next((r.environment for r in sorted(self.repeats, key=lambda r: r.index) if r.environment),
                    Environment(device=self.case.device))

    @property
    def environments(self) -> list[Environment]:
        """Each repeat's environment, in repeat order (every recorded one)."""
        return [r.environment for r in sorted(self.repeats, key=lambda r: r.index) if r.environment]

    @property
    def gpus(self) -> list[str]:
        """The GPUs its repeats ran on, by UUID, in the order first met (--gpus spreads repeats over several)."""
        return list(dict.fromkeys(e.gpu_uuid for e in self.environments if e.gpu_uuid))

    @property
    def disagreements(self) -> dict[str, list]:
        """What its repeats must share and do not (GPU model, torch, driver, ...): each with its values."""
        return disagreements(self.environments)

    # -- what its runs say --------------------------------------------------------------------------------------

    def run_of(self, rep: Repeat) -> Run | None:
        return next((run for run in self.runs if run.run_id == rep.run), None)

    @property
    def run_ids(self) -> set[str]:
        """The runs that measured it, where recorded (results written before runs were: none)."""
        return {rep.run for rep in self.repeats if rep.run and (run := self.run_of(rep)) is not None and run.recorded}

    def _runs(self) -> list[Run]:
        """Its repeats' runs, in repeat order, once each."""
        found = (self.run_of(r) for r in sorted(self.repeats, key=lambda r: r.index))
        return list({id(x): x for x in found if x is not None}.values())

    @property
    def tag(self) -> str | None:
        """Its newest run's label (--tag, $COMPILEBENCH_TAG or the git commit): `history` reads a series by it."""
        return next((run.tag for run in reversed(self._runs()) if run.tag), None)

    @property
    def looks(self) -> int | None:
        """The most looks at its verdicts its runs' designs allowed (None or 1: a fixed design, 95%)."""
        return max((run.looks for run in self._runs() if run.looks), default=None)

    @property
    def design(self) -> list[int]:
        """The processes at each look of its runs' design (sequential.looks): which look a reading is."""
        return next((run.design for run in self._runs() if run.design), [])

    @property
    def pair_from(self) -> int | None:
        """The rounds from which its runs pair a comparison's processes by round (None: never)."""
        return max((run.pair_from for run in self._runs() if run.pair_from), default=None)

    @property
    def undecided_by(self) -> str | None:
        """Why its last run stopped adding repeats before its verdict was decided ("max-repeats", "time budget");
        None where the data decided it."""
        return next((run.undecided[self.result_id] for run in reversed(self._runs())
                     if self.result_id in run.undecided), None)

    @property
    def timing(self):
        """How it was timed (core/job.Timing): its first run's timing of its kind of timed unit."""
        return next((run.timing[self.case.timed_unit] for run in self._runs() if self.case.timed_unit in run.timing),
                    None)

    @property
    def isolation(self) -> str:
        return next((run.isolation for run in self._runs()), "process")

    @property
    def mean(self) -> float | None:
        """The number a table may average: ok results only (invalid and failures have no number)."""
        return self.stats.mean if self.status == "ok" else None

    @property
    def measured_mean(self) -> float | None:
        """The mean of any result that was timed to the end, for the details table and FLOP/s."""
        return self.stats.mean if self.status in MEASURED and self.stats.n else None

    def process_figures(self, metric=None) -> dict[str, float]:
        """One figure per worker process that timed the case to the end (stats.per_process: the median of its
        calls), by process id: the unit of independence. `metric` picks another per-call series from a repeat
        (generation: its time to first token or per token)."""
        return {process_id(rep): m for rep, m in self._figures(metric)}

    def round_figures(self, metric=None) -> dict[tuple[str, int], float]:
        """The same figures by the round that measured them: (run, repeat index). A repeat whose run is not
        recorded has none."""
        known = self.run_ids
        return {(rep.run, rep.index): m for rep, m in self._figures(metric) if rep.run in known}

    def _figures(self, metric):
        for rep in sorted(self.repeats, key=lambda r: r.index):
            values = (metric(rep) if metric else rep.samples_ms) if rep.status in MEASURED else None
            if values:
                yield rep, stats.per_process(values)

    def to_dict(self) -> dict:
        """As stored: its case, identity and repeats (never what is derived from them; never its runs, stored apart)."""
        out = {**self.extra}
        for f in dataclasses.fields(self):
            if f.name not in ("case", "repeats", "extra", "case_extra", "runs"):
                out[f.name] = getattr(self, f.name)
        out["case"] = {**self.case_extra, **self.case.to_dict()}
        out["case_key"] = self.case_key
        out["repeats"] = [r.to_dict() for r in sorted(self.repeats, key=lambda r: r.index)]
        return out

    def export(self) -> dict:
        """The whole result as JSON holds it, for a reader of its own (the tests, the benchmarks): as stored, with
        what it derives beside (its status, estimate, every metric, ...), the environment its repeats shared and
        its runs' facts (tag, isolation, the timing of its kind). Never read back: Result.from_dict reads to_dict's."""
        from compilebench.core.record import plain

        return {**self.to_dict(), **{name: plain(getattr(self, name)) for name in (*DERIVED, *(f.name for f in METRICS))},
                "env": self.env.shown(), "tag": self.tag, "isolation": self.isolation, "looks": self.looks,
                "design": self.design, "pair_from": self.pair_from, "undecided_by": self.undecided_by,
                "timing": self.timing.to_dict() if self.timing else None}

    @classmethod
    def from_dict(cls, d: dict, runs: tuple[Run, ...] | dict = ()) -> Result:
        """As stored (Result.to_dict); `runs`: the runs its repeats name (or every run of its file, by id)."""
        names = {f.name for f in dataclasses.fields(cls)} - {"runs"}
        kw = {k: v for k, v in d.items() if k in names and k not in ("case", "repeats", "extra", "case_extra")}
        extra = {k: v for k, v in d.items() if k not in names and k != "case_key"}
        case_fields = {f.name for f in dataclasses.fields(Case)}
        case_extra = {k: v for k, v in d["case"].items() if k not in case_fields}
        repeats = [Repeat.from_dict(r) for r in d.get("repeats") or []]
        if isinstance(runs, dict):
            runs = tuple(runs[x] for x in dict.fromkeys(r.run for r in repeats) if x in runs)
        return cls(Case.from_dict(d["case"]), repeats, **kw, runs=runs, extra=extra, case_extra=case_extra)


def process_id(rep: Repeat) -> str:
    """The worker process a repeat ran in (its index where not recorded): what process_figures keys by."""
    return rep.process or str(rep.index)


def _unstable(measured: list[Repeat]) -> list[Group]:
    """The per-process figures in two groups far apart (stats.groups); none where they are one group."""
    reps = [r for r in measured if r.samples_ms]
    figures = [stats.per_process(r.samples_ms) for r in reps]
    return [Group(mean_ms=stats.estimate([figures[i] for i in g])[0], repeats=sorted(reps[i].index for i in g),
                  started=min(reps[i].created_at for i in g), ended=max(reps[i].created_at for i in g))
            for g in stats.groups(figures) or []]
