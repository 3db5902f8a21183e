"""History: every run of every case that some results files hold, as series over time, one per machine, case and
metric, with the steps found in each (core/steps.py) and what differed between the runs around each step.

A point is one run's measurement of one case: the repeats that run measured (a result that several runs added
repeats to, by resuming, is split by run: the runs table says which run each repeat is), with its estimate and
interval between processes. A machine is its host and its hardware, never its software (Environment.machine): a
torch upgrade is a point in a series, said beside the step it makes; a new machine starts new series. Cases whose
settings differ are different cases, so different series. A compiled case's speed-up is read against the eager
case of the same run (core/pairing.py, scope RUN)."""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

from compilebench.core import generation, pairing, speedups, steps as stepsmod
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.report import data

LATENCY, SPEEDUP, COMPILE, TOKENS = "latency ms", "speed-up", "compile s", "tokens/s"
SPEEDUP_PER_TOKEN = SPEEDUP + " per token"  # a text-generation case's: the figure its verdict reads
HIGHER_IS_BETTER = {SPEEDUP, SPEEDUP_PER_TOKEN, TOKENS}
GATED = (LATENCY, SPEEDUP, SPEEDUP_PER_TOKEN, TOKENS, COMPILE)  # what `check --history` reads
# What a step's "what changed" compares between the runs around it: the software and the run's label.
CHANGES = ("torch", "transformers", "triton", "python", "cuda", "driver", "compilebench", "torch_threads")


@dataclass(frozen=True)
class Measured:
    """One case measured in one run: its repeats of that run, as a Result, and the run."""

    result: Result
    run: Run | None  # None: a result written before runs were recorded
    at: str  # when its first repeat was measured (UTC, ISO)

    @property
    def tag(self) -> str | None:
        return self.run.tag if self.run else None

    @property
    def run_id(self) -> str | None:
        """Its run's id where the run was recorded."""
        return self.run.run_id if self.run and self.run.recorded else None

    @property
    def label(self) -> str:
        return self.tag or self.at[:16].replace("T", " ")


@dataclass
class Series:
    machine: str  # host and hardware
    case: str  # the case in words
    metric: str
    runs: list[Measured]
    points: list[stepsmod.Point]
    steps: list[stepsmod.Step] = dataclasses.field(default_factory=list)
    drift: stepsmod.Drift = stepsmod.Drift(0.0)  # how far one run moves from the next beyond its interval

    def changed(self, step: stepsmod.Step) -> list[str]:
        """What differed between the last run before the step and the first after it."""
        a, b = self.runs[step.at - 1], self.runs[step.at]
        said = [f"{k} {getattr(a.result.env, k)} to {getattr(b.result.env, k)}" for k in CHANGES
                if getattr(a.result.env, k) != getattr(b.result.env, k)]
        return said + ([f"tag {a.tag} to {b.tag}"] if a.tag != b.tag and a.tag and b.tag else [])

    def worse(self, step: stepsmod.Step) -> bool:
        return step.ratio < 1 if self.metric in HIGHER_IS_BETTER else step.ratio > 1


def by_run(r: Result) -> list[Measured]:
    """A result's repeats split by the run that measured them (a result resumed by several runs is several points)."""
    runs: dict[str | None, list] = {}
    for rep in r.repeats:
        runs.setdefault(rep.run, []).append(rep)
    out = []
    for run, reps in runs.items():
        part = r if len(runs) == 1 else dataclasses.replace(r, repeats=reps)
        out.append(Measured(part, r.run_of(reps[0]), min(rep.created_at for rep in reps)))
    return out


def series(results: list[Result], min_effect: float, until: str | None = None, gate: bool = False) -> list[Series]:
    """Every series the results hold (`until`: of the runs measured by then, as a look then saw them), each with its
    steps (`gate`: as the gate reads them, each one boundary named by the run that asks about it, else as places the
    search picked: core/steps.find); the drift of each machine's metric is estimated from that metric's series there
    (where they hold too few moves: from its latency's, or the compile's default)."""
    runs: dict[tuple[str, str], list[Measured]] = {}
    for r in results:
        for run in by_run(r):
            if until is None or run.at <= until:
                runs.setdefault((r.env.machine, r.case_key), []).append(run)
    out: list[Series] = []
    for (where, key), found in runs.items():
        found.sort(key=lambda x: x.at)
        # its settings (dtype, quantization, ...) set two series of one model apart
        case = found[-1].result.case.describe() + data.settings_said(found[-1].result)
        out += _metrics(where, case, found, runs.get((where, pairing.baseline_key(found[-1].result)), []))
    for where in {s.machine for s in out}:
        mine = [s for s in out if s.machine == where]
        # each metric moves between runs by its own drift, estimated from its own series where they hold enough
        # moves: one cold compile a run far more than a latency measured over processes (weighted by the latency's,
        # 20 histories of pure ±20% compile noise found 62 steps), and a speed-up, a ratio of two latencies, by up
        # to both's, √2 of one where its sides move apart (weighted by the latency's, 26 of 60 speed-up series of
        # pure noise, each side ±3% apart, found a step; by its own, 8); tokens/s as its time per token
        latency = stepsmod.drift([s.points for s in mine if s.metric == LATENCY])
        assumed = {COMPILE: stepsmod.Drift(stepsmod.DEFAULT_COMPILE_DRIFT), SPEEDUP: latency.times(math.sqrt(2)),
                   SPEEDUP_PER_TOKEN: latency.times(math.sqrt(2)), TOKENS: latency}
        drift = {metric: stepsmod.drift([s.points for s in mine if s.metric == metric], assumed[metric])
                 if metric in assumed else latency for metric in {s.metric for s in mine}}
        for s in mine:
            s.drift = drift[s.metric]
            s.steps = stepsmod.find(s.points, s.drift, min_effect, searched=not gate)
    return sorted(out, key=lambda s: (s.machine, s.case, s.metric))


def _metrics(where: str, case: str, runs: list[Measured], eager: list[Measured]) -> list[Series]:
    """A case's series: latency (and decoded tokens/s for generation) of every run measured ok; for a compiled case
    its speed-up over the eager case of the same run (per decoded token for generation, as its verdict reads it),
    and its compile seconds."""
    ok = [r for r in runs if r.result.mean is not None]
    made = {LATENCY: [(r, stepsmod.Point(r.result.stats.mean, r.result.stats.ci95_low, r.result.stats.ci95_high))
                      for r in ok]}
    if ok and ok[0].result.case.variant.compiled:
        same_run = pairing.Pairing([e.result for e in eager], pairing.RUN)
        metric = generation.verdict_metric(ok[0].result.case)
        pairs = [(r, speedups.speedup(same_run.of(r.result), r.result, metric=metric)) for r in ok]
        made[SPEEDUP if metric is None else SPEEDUP_PER_TOKEN] = [
            (r, stepsmod.Point(s.value, s.low, s.high)) for r, s in pairs if s is not None]
        made[COMPILE] = [(r, stepsmod.Point(r.result.compile_s)) for r in ok if r.result.compile_s]
    made[TOKENS] = [(r, p) for r in ok if (p := _tokens(r.result))]
    return [Series(where, case, metric, [r for r, _ in pts], [p for _, p in pts])
            for metric, pts in made.items() if pts]


def _tokens(r: Result) -> stepsmod.Point | None:
    """Tokens decoded per second (every sequence of the batch), with the interval its time per token has."""
    value, e = data.decode_tokens_per_s(r), r.generation.per_token
    if value is None:
        return None
    per = r.case.batch_size * 1e3
    return stepsmod.Point(value, per / e.ci95_high if e.ci95_high else None, per / e.ci95_low if e.ci95_low else None)


def newest_step(s: Series) -> stepsmod.Step | None:
    """The step the newest runs complete: the last step, where its far side is exactly the newest MIN_SEGMENT runs
    (the newest run confirms it; a later run does not say it again)."""
    n = len(s.points)
    last = s.steps[-1] if s.steps else None
    return last if last and last.after == (n - stepsmod.MIN_SEGMENT, n) else None


def open_step(s: Series, limit: float, looks) -> stepsmod.Step | None:
    """The step `check --history` reads: the one the newest runs complete, or an older last step for the worse that
    no look since has decided: each earlier look (`looks(at)`: every series as the runs measured by then made them)
    found it beyond `limit` but not yet a regression, or did not find it. So an undecided step is said undecided
    until a run decides it ("the next run decides" holds), and a step found only once more runs stood behind it is
    gated; a step decided once (failed, or within its limit) is not said again."""
    step = newest_step(s)
    last = s.steps[-1] if s.steps else None
    if step is not None or last is None or not s.worse(last):
        return step
    for n in range(last.at + stepsmod.MIN_SEGMENT, len(s.points)):
        cut = looks(s.runs[n - 1].at).get((s.machine, s.case, s.metric))
        seen = cut.steps[-1] if cut and cut.steps else None  # open at that look: no look before it decided it
        if seen is not None and abs(seen.at - last.at) < stepsmod.MIN_SEGMENT and _decided(cut, seen, limit):
            return None
    return last


def _decided(s: Series, step: stepsmod.Step, limit: float) -> bool:
    """Whether a look at this step said what it is: a regression, or no step for the worse beyond `limit`."""
    return regression(s, step, limit) or not (s.worse(step) and worse_beyond(s, limit)(step.ratio))


def regression(s: Series, step: stepsmod.Step, limit: float) -> bool:
    """A step for the worse beyond `limit`, each run since beyond it against the runs before the step, and (compile
    seconds) its whole interval beyond it."""
    if not s.worse(step):
        return False
    before = [p.value for p in s.points[step.before[0]:step.before[1]]]
    base = sum(before) / len(before)
    beyond = worse_beyond(s, limit)
    return (beyond(step.ratio) and all(beyond(p.value / base) for p in s.points[step.after[0]:])
            and cleared(s, step, beyond))


def gate(results: list[Result], min_effect: float, max_slowdown: float, max_compile_increase: float,
         made: list[Series] | None = None) -> list[tuple[Series, stepsmod.Step | None, bool]]:
    """`check --history`: per latency, speed-up, decoded tokens/s and compile seconds series of `results` (`made`: those
    series as a gate reads them, series(gate=True), where already made), the step it reads (open_step: the one its
    newest runs complete, or one no run has decided since; None: none) and whether it is a regression: for the
    worse, its size beyond its limit (max_slowdown; compile seconds: max_compile_increase), and each run since the
    step beyond it against the runs before the step (the HUD's rule: the last two runs, not one). A compile series'
    step must also lie beyond its limit over its whole 95% interval (cleared()): one cold compile a run moves
    10-20%, and two runs that happen high after two that happened low failed 2-4 in 100 simulated 10-run histories
    of three models with nothing changed; with the interval, none in 100 (a 1.5x step at ±20% noise still fails 194
    of 300 series, the rest said undecided; gated at every run, as a nightly gate is, no pure-noise history failed:
    benchmarks/compile_gate.py)."""
    @functools.cache
    def looks(at: str) -> dict[tuple[str, str, str], Series]:
        return {(s.machine, s.case, s.metric): s for s in series(results, min_effect, until=at, gate=True)}

    out = []
    for s in series(results, min_effect, gate=True) if made is None else made:
        if s.metric not in GATED or len(s.points) < 2 * stepsmod.MIN_SEGMENT:
            continue
        limit = max_compile_increase if s.metric == COMPILE else max_slowdown
        step = open_step(s, limit, looks)
        out.append((s, step, step is not None and regression(s, step, limit)))
    return out


def cleared(s: Series, step: stepsmod.Step, beyond) -> bool:
    """Whether a compile series' step lies beyond its limit over its whole interval (its near end beyond it too);
    any other series' needs its estimate alone."""
    return s.metric != COMPILE or beyond(step.low)


def worse_beyond(s: Series, limit: float):
    """Whether a ratio (newer over older) of this series is worse beyond `limit`: lower for a figure where higher is
    better, higher otherwise."""
    if s.metric in HIGHER_IS_BETTER:
        return lambda r: r < 1 / (1 + limit)
    return lambda r: r > 1 + limit
