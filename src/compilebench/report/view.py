"""The report's model of a set of results, built once: the guide's groups (one table each), each cell holding its
result and its speed-up against its column's eager baseline, and every other speed-up a table or chart asks for,
each computed once. Every table, chart, CSV row and the recommendation read a View, so they cannot disagree."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from compilebench.core import drift, generation, pairing, settings as settingsmod, speedups, stats, traffic
from compilebench.core.drift import Drift
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.speedups import Speedup
from compilebench.report import data
from compilebench.report.data import Column

DEFAULT_REQUESTS = 10_000


@dataclass(frozen=True)
class Cell:
    """One result in its table. Its speed-ups are against its column's eager baseline (the same torch and settings,
    no compile): None for the baseline itself and wherever either side was not measured ok."""

    result: Result
    eager: Result | None = None  # its eager twin (the same case uncompiled, on the same torch): what it is held to
    speedup: Speedup | None = None
    ttft: Speedup | None = None  # text generation: the time to first token
    per_token: Speedup | None = None  # text generation: each decoded token after the first

    @property
    def verdict(self) -> Speedup | None:
        """The speed-up its verdict is (core/generation.verdict_metric): per decoded token for text generation."""
        metric = generation.verdict_metric(self.result.case)
        return {generation.TTFT: self.ttft, generation.PER_TOKEN: self.per_token}.get(metric, self.speedup)


@dataclass
class Group:
    """The results of one table: one hardware, one batch size (and, for text generation, one prompt length and
    number of new tokens)."""

    hardware: str
    batch_size: int
    columns: list[Column]
    models: list[str]
    cells: dict[tuple[str, Column], Cell]  # (model, column) -> its cell
    results: list[Result]
    tokens: tuple[int, int] | None = None  # text generation: (prompt length, new tokens)

    @property
    def generation(self) -> bool:
        return self.tokens is not None

    @property
    def key(self) -> tuple:
        """What sets this table apart; a chart drawn for it carries the same key."""
        return ("group", self.hardware, self.batch_size) + ((self.tokens,) if self.tokens else ())

    @property
    def title(self) -> str:
        if self.tokens:
            return (f"{self.hardware} (batch size: {self.batch_size}, prompt: {self.tokens[0]} tokens, "
                    f"{self.tokens[1]} new tokens)")
        return f"{self.hardware} (batch size: {self.batch_size})"

    @property
    def compiled_columns(self) -> list[Column]:
        return [c for c in self.columns if c.variant.compiled]

    def label(self, model: str) -> str:
        return data.model_label(self.results, model)

    def baseline(self, torch: str) -> Column | None:
        """The eager column a torch version's speed-ups are read against: plain eager where there is one (no
        settings, no static cache), else the simplest; None where the table has no eager column of that torch."""
        eagers = [c for c in self.columns if c.torch == torch and not c.variant.compiled]
        return min(eagers, key=lambda c: (len(c.settings), c.variant.order)) if eagers else None

    def result(self, model: str, column: Column) -> Result | None:
        cell = self.cells.get((model, column))
        return cell.result if cell else None

    def speedup(self, model: str, column: Column) -> Speedup | None:
        cell = self.cells.get((model, column))
        return cell.speedup if cell else None

    def verdict(self, model: str, column: Column) -> Speedup | None:
        """The speed-up a cell's verdict is: Cell.verdict."""
        cell = self.cells.get((model, column))
        return cell.verdict if cell else None

    def eager(self, model: str, column: Column) -> Result | None:
        """The eager twin a cell's speed-ups are against."""
        cell = self.cells.get((model, column))
        return cell.eager if cell else None


class View:
    """A set of results as the report shows them. `results` keeps every result (superseded reruns too, for the CSV);
    `latest` the newest of each case on each machine; `groups` the guide's tables; `served` the newest of each
    case that served a sequence of shapes (`compilebench shapes`: report/shapes.py), which no guide table holds."""

    def __init__(self, results: list[Result], min_effect: float = stats.DEFAULT_MIN_EFFECT,
                 requests: int = DEFAULT_REQUESTS, mix: str | None = None, shards: list | None = None):
        self.results = results
        self.shards = shards or []  # core/shards.Coverage of each sharded plan the results came from
        self.min_effect = stats.check_min_effect(min_effect)
        settingsmod.integer("--requests", requests, 1)
        self.requests = requests  # the traffic a start must pay off within (--requests): the start-up view
        self.mix = mix  # --mix: the shares of the shapes served (None: uniform)
        newest = data.latest(results)
        self.latest = [r for r in newest if not r.case.shapes]
        self.served = [r for r in newest if r.case.shapes]
        for r in self.served:
            self.mix_for(tuple(traffic.Shape.parse(t) for t in r.case.shapes))  # a mix naming no shape: said now
        if mix and not self.served:  # it would weigh nothing, and the report would not say so
            raise UserError(f"--mix {mix!r}: these results hold no shapes served (`compilebench shapes`), so there is "
                            "nothing for it to weigh; leave it out")
        labels = data.torch_labels(results)
        # a % improvement names its torch (and environment) only where there is a choice
        self.versions = len({data.stack(r, labels) for r in results})
        self._speedups: dict[tuple, Speedup | None] = {}
        # what each result is read against: within its hardware, torch and --env, its own machine's first
        self.pairing = pairing.Pairing(newest, pairing.HARDWARE)
        self.groups = self._group()

    def speedup(self, base: Result | None, other: Result | None, metric=None) -> Speedup | None:
        """speedups.speedup at this report's minimum effect, computed once per pair; widened by the machine's
        drift where the two were measured in different runs (results that do not record their run: one run)."""
        key = (base and base.result_id, other and other.result_id, metric)
        if key not in self._speedups:
            self._speedups[key] = speedups.speedup(base, other, self.min_effect, metric, self.drift_between(base, other))
        return self._speedups[key]

    def drift_between(self, a: Result | None, b: Result | None) -> Drift | None:
        """The drift a comparison of two results is widened by: this machine's, where they come from different runs."""
        across = a is not None and b is not None and drift.across_runs(a, b, unknown=False)
        return self.drift if across else None

    def mix_for(self, shapes: tuple[traffic.Shape, ...]) -> dict[str, float]:
        """The share of each shape token in the requests served."""
        return traffic.parse_mix(self.mix, shapes)

    @functools.cached_property
    def drift(self) -> Drift:
        """The run-to-run drift these results show (or the default), for speed-ups across runs."""
        return drift.estimate(self.results)

    @functools.cached_property
    def compile_drift(self) -> Drift:
        """How far one compile of a case moves from another here (or drift.COMPILE_DEFAULT): a break-even's
        range holds it, since each case compiled cold once."""
        return drift.estimate(self.results, lambda r: r.compile_s, drift.COMPILE_DEFAULT)

    @property
    def looks(self) -> int:
        """The most looks at its verdicts a run of these results allowed (1: fixed designs alone)."""
        return max((r.looks or 1 for r in self.results), default=1)

    @property
    def design(self) -> list[int]:
        """The processes at each look of the longest design among these results (repeats until decided)."""
        return max((r.design or [] for r in self.results), key=len, default=[])

    @property
    def across_runs(self) -> bool:
        """Whether any speed-up asked for so far compared results of different runs (a table's note says so)."""
        return any(s is not None and s.drift is not None for s in self._speedups.values())

    def verdict(self, r: Result) -> Speedup | None:
        """A result's speed-up over its eager twin as its verdict reads it (core/generation.verdict_metric: per
        decoded token for text generation); None for eager or where unmeasured."""
        eager = self.eager_of(r)
        return self.speedup(eager, r, generation.verdict_metric(r.case)) if eager is not None else None

    def rival(self, base: Result, picked: Result, others: list[Result]) -> tuple[Result, Speedup] | None:
        """The runner-up to a pick (speedups.best): of the others `faster` than `base`, the fastest, with the pick's
        speed-up over it, where that is not itself `faster`: the run cannot tell the two apart, so the pick is no
        surer than its rival (speedups.rival). None where the pick beats it beyond the minimum effect, or nothing
        else is faster."""
        metric = generation.verdict_metric(picked.case)
        return speedups.rival(((r, self.speedup(base, r, metric)) for r in others if r is not picked),
                              lambda r: self.speedup(r, picked, metric))

    def eager_of(self, r: Result) -> Result | None:
        """What a compiled (or cached) result is measured against in every table, chart and row: its eager twin
        (self.pairing); None for an eager result."""
        return self.pairing.of(r)

    def _group(self) -> list[Group]:
        """Results split into guide tables. Where two machines of the same hardware measured the same cell, the
        newest result fills it (the details table lists both), read against its own machine's eager twin."""
        labels = data.torch_labels(self.latest)
        split: dict[tuple, list[Result]] = {}
        for r in sorted(self.latest, key=lambda r: r.created_at):
            c = r.case
            tokens = (c.prompt_len, c.new_tokens) if c.generation else ()
            split.setdefault((data.hardware(r), c.batch_size, tokens), []).append(r)
        out = []
        for (hw, batch, tokens), rs in sorted(split.items()):
            placed = {(r.case.model, data.column(r, labels)): r for r in rs}
            cells = {k: self._cell(r, self.eager_of(r)) for k, r in placed.items()}
            out.append(Group(hardware=hw, batch_size=batch, columns=sorted({c for _, c in placed}),
                             models=data.model_order(rs), cells=cells, results=rs, tokens=tokens or None))
        return out

    def _cell(self, r: Result, eager: Result | None) -> Cell:
        if eager is None:
            return Cell(r)
        if not r.case.generation:
            return Cell(r, eager, self.speedup(eager, r))
        return Cell(r, eager, self.speedup(eager, r), self.speedup(eager, r, generation.TTFT),
                    self.speedup(eager, r, generation.PER_TOKEN))
