"""Result: a case on one machine, with one Repeat per worker process. Raw samples are kept per repeat; the case's
status, estimate, compile times and metrics are derived from its repeats (derive), never stored apart from them.

Fields a newer compilebench wrote and this one does not know are kept (`extra`) and written back unchanged."""

from __future__ import annotations

import dataclasses
import statistics as pystats
import uuid
from dataclasses import dataclass, field

from compilebench.core import stats
from compilebench.core.case import Case, eager_key_of, key_of
from compilebench.core.generation import Generation
from compilebench.core.record import items, part, plain
from compilebench.core.repeat import METRICS, Figures, Repeat, derived, empty, utc_now
from compilebench.core.served import Shapes
from compilebench.core.starts import AotStart, MegaStart
from compilebench.core.stats import Group
from compilebench.core.vocab import FLAGS, MEASURED, SELF_CHECK, SEVERITY, UNSTABLE
from compilebench.core.why import CompilePhases


@dataclass
class Result(Figures):
    """A case on one machine: its repeats and what they add up to: every figure a repeat declares (core/repeat.py's
    Figures: first_call_s, graphs, max_rel_err, peak_mem_bytes, ...), derived from the repeats by its rule, and the
    fields below."""

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
    created_at: str = field(default_factory=utc_now)
    extra: dict = field(default_factory=dict)  # fields a newer compilebench wrote, kept as they were
    case_extra: dict = field(default_factory=dict)  # the same, inside the case
    # Derived from the repeats by derive():
    status: str = "ok"
    message: str | None = None
    stats: stats.Estimate = field(default_factory=stats.Estimate)
    compile_s: float | None = None  # the cold compile where a repeat had one, else the warm one
    cold_compile_s: float | None = None
    warm_compile_s: float | None = None  # median over the repeats that compiled from a warm on-disk cache
    mega_cache: MegaStart = part(MegaStart)  # --compile-cache mega: artifacts' size, load and start (medians)
    compile_phases: CompilePhases = part(CompilePhases)  # of the compile compile_s is
    aot_inductor: AotStart = part(AotStart)  # aot-inductor: build seconds, package size, load and start
    flags: list[str] = field(default_factory=list)
    generation: Generation = part(Generation)  # text generation: time to first token and per token
    shapes: Shapes = part(Shapes)  # `compilebench shapes`: per shape, over the repeats
    # its per-process means in two groups far apart (the machine changed state): each group's mean and when
    unstable: list[Group] = items(Group)

    def __post_init__(self):
        if isinstance(self.stats, dict):  # as stored
            self.stats = stats.Estimate.from_dict(self.stats)
        self.derive()

    def add(self, repeat: Repeat) -> None:
        """A repeat joins the result, replacing an earlier attempt at the same index (a retried failure)."""
        self.repeats = sorted([r for r in self.repeats if r.index != repeat.index] + [repeat], key=lambda r: r.index)
        self.derive()

    def derive(self) -> None:
        """Everything the case shows, from its repeats: the status and message of the most telling one, the estimate
        between processes, the compile seconds (cold and warm), the summaries of starts, generation and shapes, and
        every metric its repeats declare (core/repeat.py), each by its rule."""
        reps = sorted(self.repeats, key=lambda r: r.index)
        measured = [r for r in reps if r.status in MEASURED and r.samples_ms]
        metrics = derived(reps, measured) if reps else {f.name: empty(f) for f in METRICS}
        for name, value in metrics.items():
            setattr(self, name, value)
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
        return {rep.process or str(rep.index): m for rep, m in self._means(metric)}

    def round_means(self, metric=None) -> dict[tuple[str, int], float]:
        """The same means by the round that measured them: (run, repeat index). A repeat whose run is not recorded
        has none."""
        return {(rep.run, rep.index): m for rep, m in self._means(metric) if rep.run}

    def _means(self, metric):
        for rep in sorted(self.repeats, key=lambda r: r.index):
            values = (metric(rep) if metric else rep.samples_ms) if rep.status in MEASURED else None
            if values:
                yield rep, sum(values) / len(values)

    def to_dict(self) -> dict:
        out = {**self.extra}
        for f in dataclasses.fields(self):
            if f.name not in ("case", "repeats", "extra", "case_extra"):
                out[f.name] = plain(getattr(self, f.name))
        out["stats"] = self.stats.to_dict()
        out["case"] = {**self.case_extra, **self.case.to_dict()}
        out["case_key"] = self.case_key
        out["repeats"] = [r.to_dict() for r in sorted(self.repeats, key=lambda r: r.index)]
        return out

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        names = {f.name for f in dataclasses.fields(cls)}
        derived_ = {f.name for f in METRICS} | {"case_key"}  # made again from the repeats, as its records are
        kw = {k: v for k, v in d.items() if k in names and k not in ("case", "repeats", "extra", "case_extra")
              and k not in derived_ and "record" not in _FIELDS[k].metadata}
        extra = {k: v for k, v in d.items() if k not in names and k not in derived_}
        case_fields = {f.name for f in dataclasses.fields(Case)}
        case_extra = {k: v for k, v in d["case"].items() if k not in case_fields}
        return cls(Case.from_dict(d["case"]), [Repeat.from_dict(r) for r in d.get("repeats") or []], **kw, extra=extra,
                   case_extra=case_extra)


_FIELDS = {f.name: f for f in dataclasses.fields(Result)}


def _unstable(measured: list[Repeat]) -> list[Group]:
    """The per-process means in two groups far apart (stats.groups); none where the means are one group."""
    reps = [r for r in measured if r.samples_ms]
    means = [sum(r.samples_ms) / len(r.samples_ms) for r in reps]
    return [Group(mean_ms=stats.estimate([means[i] for i in g])[0], repeats=sorted(reps[i].index for i in g),
                  started=min(reps[i].created_at for i in g), ended=max(reps[i].created_at for i in g))
            for g in stats.groups(means) or []]
