"""`compilebench shapes`: what one process recorded of each shape it served, and what a case sums up of them over
its processes."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from compilebench.core import stats
from compilebench.core.record import Record, part, parts


@dataclass(kw_only=True)
class ShapeServed(Record):
    """One shape in one process: its first call and what it compiled, its steady samples, the second pass's call,
    and its output against eager's."""

    served_as: str | None = None  # the bucket a padded setting served it as (a shape token); None: as it came
    swap_s: float | None = None  # its LoRA adapter swapped in before its first call (a pipeline's): seconds
    first_call_s: float | None = None
    compiles: int = 0  # graphs its first call compiled
    compile_s: float = 0.0
    recompile_reasons: list[str] = field(default_factory=list)  # dynamo's, one per recompile
    limit_hits: int = 0  # frames given up at dynamo's recompile limit
    warmup_iters: int | None = None
    samples_ms: list[float] = field(default_factory=list)
    recompiles_in_timed_loop: int | None = None
    stopped_early: bool = False
    samples_over_wall: float | None = None  # CUDA events: the samples' sum over the loop's wall time
    second_call_ms: float | None = None  # its call in the second pass
    second_compiles: int | None = None  # graphs the second pass compiled for it (a setting that settled: 0)
    max_rel_err: float | None = None
    agreement: dict = field(default_factory=dict)  # task-aware checks: {"top1": 1.0}
    problems: list[str] = field(default_factory=list)  # why its output is not eager's

    @property
    def steady_ms(self) -> float:
        return sum(self.samples_ms) / len(self.samples_ms)


@dataclass(kw_only=True)
class ShapesServed(Record):
    """One process's shapes, in the order served, and its record of each."""

    served: list[str] = field(default_factory=list)  # shape tokens
    per_shape: dict[str, ShapeServed] = parts(ShapeServed)


@dataclass(kw_only=True)
class ShapeSummary(Record):
    """One shape over the processes that served every shape: its steady latency's estimate between processes (as a
    case's), the median first call and compile seconds, the most compiles any process made (in the first pass and
    in the second, which must make none) and the worst correctness."""

    served_as: str | None = None
    swap_s: float | None = None  # the median LoRA swap before its first call
    steady: stats.Estimate = part(stats.Estimate)
    first_call_s: float | None = None
    compile_s: float = 0.0
    compiles: int = 0
    recompiles: int = 0
    recompile_reasons: list[str] = field(default_factory=list)
    second_compiles: int = 0
    limit_hits: int = 0
    max_rel_err: float | None = None
    agreement: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, per: list[ShapeServed]) -> ShapeSummary:
        errs = [p.max_rel_err for p in per if p.max_rel_err is not None]
        keys = dict.fromkeys(k for p in per for k in p.agreement)
        swaps = [p.swap_s for p in per if p.swap_s is not None]
        return cls(served_as=per[0].served_as, steady=stats.case_summary([p.samples_ms for p in per]),
                   swap_s=statistics.median(swaps) if swaps else None,
                   first_call_s=statistics.median(p.first_call_s for p in per),
                   compile_s=statistics.median(p.compile_s for p in per), compiles=max(p.compiles for p in per),
                   recompiles=max(len(p.recompile_reasons) for p in per),
                   recompile_reasons=list(dict.fromkeys(x for p in per for x in p.recompile_reasons)),
                   second_compiles=max(p.second_compiles or 0 for p in per), limit_hits=max(p.limit_hits for p in per),
                   max_rel_err=max(errs) if errs else None,
                   agreement={k: min(p.agreement[k] for p in per if k in p.agreement) for k in keys},
                   problems=list(dict.fromkeys(x for p in per for x in p.problems)))


@dataclass(kw_only=True)
class Shapes(Record):
    """A case's shapes over its processes: each shape's summary, and the totals."""

    per_shape: dict[str, ShapeSummary] = parts(ShapeSummary)
    repeats: int = 0  # the processes that served every shape
    compiles: int = 0
    recompiles: int = 0
    second_compiles: int = 0
    limit_hits: int = 0
    compile_s: float = 0.0

    @classmethod
    def of(cls, reps: list, measured: tuple[str, ...]) -> Shapes:
        """From the repeats (`measured`: the statuses that timed every shape to the end)."""
        served = [r for r in reps if r.shapes and r.status in measured]
        if not served:
            return cls()
        out = {t: ShapeSummary.of([r.shapes.per_shape[t] for r in served]) for t in served[0].shapes.served}
        return cls(per_shape=out, repeats=len(served), compiles=sum(p.compiles for p in out.values()),
                   recompiles=sum(p.recompiles for p in out.values()),
                   second_compiles=sum(p.second_compiles for p in out.values()),
                   limit_hits=sum(p.limit_hits for p in out.values()), compile_s=sum(p.compile_s for p in out.values()))
