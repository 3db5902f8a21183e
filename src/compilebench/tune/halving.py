"""The search: successive halving over the configurations that can matter (Config, space), climbing from the best so
far in the first rung; what it found (Outcome) and the code of a configuration. The measuring is injected
(`Measure`): a real run's (tune/session.py), or a fake with a fake clock in tests."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Protocol

from compilebench import kinds
from compilebench.core import generation, speedups, stats, traffic
from compilebench.core.case import Case
from compilebench.core.environment import is_cuda
from compilebench.core.errors import UserError
from compilebench.core.job import TimingPolicy
from compilebench.core.result import Result
from compilebench.core.settings import Settings
from compilebench.core.variant import AOT_INDUCTOR, MODES, Variant
from compilebench.core.vocab import STATUS_WORDS
from compilebench.tune.as_code import config_code

# (share of the budget a rung may use up to, repeats a configuration has after it, how many go on, timing)
RUNGS = (
    (0.55, 1, 1 / 3, TimingPolicy(iters=40, warmup=3, max_time_s=1.5, min_iters=5)),
    (0.85, 2, 2, TimingPolicy(iters=100, warmup=5, max_time_s=3.0, min_iters=10)),
    (1.00, 3, 0, TimingPolicy(iters=200, warmup=5, max_time_s=5.0, min_iters=10)),
)


@dataclass(frozen=True)
class Config:
    """One way to compile (and prepare) the model: how torch.compile is called (a Variant: the settings a run
    compiles with, in the words it says them in) and the case settings it changes (those a run takes)."""

    variant: Variant = Variant("default")
    settings: Settings = Settings()

    @classmethod
    def make(cls, mode: str = "default", options: tuple = (), *, fullgraph: bool = False, dynamic: bool | None = None,
             scope: str = "model", decoder: bool = False, **settings) -> Config:
        return cls(Variant(mode, fullgraph=fullgraph, dynamic=dynamic, options=options, scope=scope, decoder=decoder),
                   Settings(**settings))

    def compiled(self, **changes) -> Config:
        """This configuration with its way of compiling changed: `dynamic=False`, `scope="model"`."""
        return dataclasses.replace(self, variant=dataclasses.replace(self.variant, **changes))

    def case(self, base: Case) -> Case:
        return dataclasses.replace(base, variant=self.variant, **self.settings.changes())

    def describe(self) -> str:
        return ", ".join([self.variant.mode, *self.variant.words(), *self.settings.words()])

    def code(self, part: str | None = None) -> str:
        """The ready-to-paste lines that prepare and compile a model this way (tune/as_code.py); `part`: a
        pipeline's denoiser (its attribute: unet, transformer), what is compiled and quantized of the pipeline."""
        return config_code(self, part)


def space(device: str, vision: bool, quantizations: tuple[str, ...] = (), engines: tuple[str, ...] = (),
          pipeline: bool = False) -> list[Config]:
    """The configurations that can matter here, the likeliest first (a small budget tries those). `quantizations`:
    torchao's to try as well (only where asked: a quantized model is judged by the quality it keeps, not by
    matching float), each on every mode and dtype of the float ones. `engines`: other engines to try as well (only
    where asked), each in every dtype it runs here. `pipeline`: a text-to-image pipeline, whose decoder may be
    compiled too."""
    gpu = is_cuda(device)
    modes = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs") if gpu else (
        "default", "max-autotune-no-cudagraphs")
    dtypes = ("float32", "bfloat16", "float16") if gpu else ("float32", "bfloat16")
    option_sets: list[tuple] = [(), (("freezing", True),)]
    if gpu:
        option_sets.append((("coordinate_descent_tuning", True),))
    if vision:  # exported ahead of time: no compile in the process that serves (generation does not export)
        modes += (AOT_INDUCTOR,)
    out = []
    for mode, options, dtype, channels_last in itertools.product(modes, option_sets, dtypes, (False, True) if vision else (False,)):
        out.append(Config.make(mode, options, dtype=dtype, channels_last=channels_last))
    # fullgraph, static shapes and regional compilation change nothing (or only the compile) for a model that has
    # no graph break, one shape and few repeated layers; tried once, on the plainest configuration, they say
    # whether they can matter
    out += [Config.make(fullgraph=True), Config.make(dynamic=False), Config.make(scope="regions")]
    if pipeline:  # its decoder's share of an image is its own: compiled beside the denoiser, once
        out.append(Config.make(decoder=True))
    for q, mode, dtype in itertools.product(quantizations, modes, dtypes):
        if not Variant(mode).ahead_of_time:  # torchao's tensor subclasses: exported ahead of time is not what it documents
            out.append(Config.make(mode, dtype=dtype, quantize=q))
    out += [Config.make(e, dtype=dtype) for e, dtype in itertools.product(engines, dtypes)
            if kinds.get(e).refusal(kinds.Asked(device=device, dtype=dtype)) is None]
    return sorted(set(out), key=_prior)


# The changes likeliest to pay, first. Measured for ResNet-50 on 2 CPU cores: bfloat16 2.1x plain compile;
# channels-last 1.4x; max-autotune 0.85x alone but 1.17x on top of both; freezing 0.98-1.01x in every company.
_LIKELIEST = ("dtype", "quantize", "channels_last", "mode", ("option", "freezing"), ("option", "coordinate_descent_tuning"),
              "fullgraph", "dynamic", "scope", "decoder")


def _prior(c: Config) -> tuple:
    """Fewer changes from plain torch.compile first; among as many, the changes likeliest to pay first."""
    def rank(change: tuple) -> int:
        kind = change[:2] if change[0] == "option" else change[0]
        return _LIKELIEST.index(kind) if kind in _LIKELIEST else len(_LIKELIEST)

    ranks = sorted(rank(change) for change in _changes(c))
    return len(ranks), ranks, c.describe()


class Measure(Protocol):
    def __call__(self, cases: list[Case], repeats: int, policy: TimingPolicy) -> dict[str, Result | None]:
        """Bring every case (eager first) to `repeats` stored repeats; return each one's stored result by case key."""
        ...


@dataclass
class Tried:
    config: Config
    result: Result | None = None
    speedup: speedups.Speedup | None = None
    dropped: str | None = None  # why it left the search (a failure, a wrong output, a recompile)
    rungs: int = 0

    @property
    def value(self) -> float:
        return self.speedup.value if self.speedup else 0.0


@dataclass
class Outcome:
    eager: Result | None
    tried: list[Tried] = field(default_factory=list)
    untried: list[Config] = field(default_factory=list)  # the budget ran out before these
    elapsed_s: float = 0.0
    part: str | None = None  # a pipeline's: the denoiser its code compiles (Config.code)

    @property
    def ranked(self) -> list[Tried]:
        alive = [t for t in self.tried if not t.dropped and t.speedup]
        return sorted(alive, key=lambda t: (-t.rungs, -t.value))

    @property
    def winner(self) -> Tried | None:
        """The fastest configuration that is `faster` than eager, of those that went furthest (the report's rule for
        the best variant); None where none is: then keep the model uncompiled."""
        furthest = [t for t in self.ranked if t.rungs == self.ranked[0].rungs] if self.ranked else []
        picked = speedups.best((t, t.speedup) for t in furthest)
        return picked[0] if picked else None

    def rival(self, min_effect: float) -> tuple[Tried, speedups.Speedup] | None:
        """The runner-up to the winner among those that went as far and are `faster` than eager, with the winner's
        speed-up over it, where the search could not tell the two apart (that is not `faster` itself); else None."""
        w = self.winner
        if w is None:
            return None
        metric = generation.verdict_metric(w.result.case)
        return speedups.rival(((t, t.speedup) for t in self.ranked if t is not w and t.rungs == w.rungs),
                              lambda t: speedups.speedup(t.result, w.result, min_effect, metric))


def _changes(c: Config) -> frozenset:
    """What a configuration changes from plain torch.compile, one item per change."""
    v = c.variant
    changes = {("option", *o) for o in v.options}
    if v.compile_mode:
        changes.add(("mode", v.mode))
    changes |= set(c.settings.changes().items())  # (name, value): ranked by the name
    if v.fullgraph:
        changes.add(("fullgraph",))
    if v.dynamic is not None:
        changes.add(("dynamic", v.dynamic))
    if v.scope != "model":
        changes.add(("scope", v.scope))
    if v.decoder:
        changes.add(("decoder",))
    return frozenset(changes)


def _climb(pending: list[Config], best: Config | None) -> Config:
    """The next configuration to measure in the first rung: the likeliest that adds one change to the best so far,
    else the likeliest left."""
    if best is not None:
        have = _changes(best)
        for c in pending:
            more = _changes(c)
            if more > have and len(more) == len(have) + 1:
                return c
    return pending[0]


def _why_dropped(r: Result | None, min_agreement: float | None = None) -> str | None:
    if r is None:
        return "not measured"
    if r.status != "ok":
        return f"{STATUS_WORDS[r.status]}: {r.message or ''}".rstrip(": ")
    if r.case.quantize != "none":
        kept = {k: v for k, v in r.quality.items() if k != "first_divergence"}
        if not kept:
            return "its quality against the float model was not measured"
        below = {k: v for k, v in kept.items() if min_agreement is not None and v < min_agreement}
        if below:
            return (f"quality {', '.join(f'{k} {v:.1%}' for k, v in below.items())} of the float model's predictions, "
                    f"below --min-agreement {min_agreement:.1%}")
    return None


def search(base: Case, configs: list[Config], measure: Measure, now: Callable[[], float], budget_s: float,
           min_effect: float = stats.DEFAULT_MIN_EFFECT, on_rung: Callable[[int, int], None] = lambda rung, n: None,
           min_agreement: float | None = None) -> Outcome:
    """Successive halving over `configs` against eager (float); a quantized configuration whose quality falls below
    `min_agreement` (any of its task's measures) is dropped, saying so."""
    start = now()
    eager_case = base
    metric = generation.verdict_metric(base)  # per decoded token for text generation, as a run's verdicts read it
    tried = {c: Tried(c) for c in configs}
    alive = list(configs)
    untried: list[Config] = []
    eager = None
    costs: list[float] = []  # seconds one configuration took in the first rung
    order: list[Config] = []  # as first measured
    for rung, (share, repeats, keep, policy) in enumerate(RUNGS):
        on_rung(rung, len(alive))
        measured = []
        pending, best, best_value = list(alive), None, 0.0
        while pending:
            config = _climb(pending, best) if rung == 0 else pending[0]
            pending.remove(config)
            last = rung == len(RUNGS) - 1
            spent = now() - start
            guess = (sorted(costs)[len(costs) // 2] if costs else 0.0) * (1 if rung == 0 else 0.5)  # warm later
            if measured and not last and spent + guess > share * budget_s:
                untried += [c for c in alive if c not in measured] if rung == 0 else []
                break
            t0 = now()
            got = measure([eager_case, config.case(base)], repeats, policy)
            if rung == 0:
                costs.append(now() - t0)
            eager = got.get(eager_case.key(), eager)
            t = tried[config]
            t.result, t.rungs = got.get(config.case(base).key()), rung + 1
            t.dropped = _why_dropped(t.result, min_agreement)
            measured.append(config)
            if config not in order:
                order.append(config)
            so_far = speedups.speedup(eager, t.result, min_effect, metric) if not t.dropped else None
            if so_far and so_far.value > best_value:  # against eager as it stands: where the climb goes next
                best, best_value = config, so_far.value
        for config in measured:  # eager gained repeats along the rung: every speed-up against the same eager
            t = tried[config]
            if not t.dropped:
                t.speedup = speedups.speedup(eager, t.result, min_effect, metric)
        ok = sorted((c for c in measured if not tried[c].dropped and tried[c].speedup),
                    key=lambda c: -tried[c].value)
        n = max(1, math.ceil(len(ok) * keep)) if keep < 1 else int(keep)
        alive = ok[:n] if keep else []
        if not alive:
            break
    return Outcome(eager, [tried[c] for c in order], untried, now() - start)


SHAPES_SHARE = 0.6  # of the budget, the search's where several batch sizes are served: the rest is the shapes'
SHAPES_TIMING = TimingPolicy(iters=10, warmup=2, min_iters=3)
SHAPES_REPEATS = 3  # each compiles cold: the compiles vary between processes, and are in the time to serve


def served_config(outcome: Outcome) -> Config:
    """What serves several batch sizes: the pick (or plain compile), as a whole-model torch.compile (an AOTInductor
    package or a regional compile takes no dynamic-shape setting here)."""
    config = outcome.winner.config if outcome.winner else Config()
    return config.compiled(scope="model", mode=_served_mode(config.variant))


def served_spec(spec, config: Config, batches: tuple[int, ...]):
    """The configuration served over the batch sizes under every dynamic-shape setting, and padded to the largest
    (as `compilebench shapes`): a RunSpec."""
    v = config.variant
    return dataclasses.replace(spec, shapes=True, batch_sizes=batches, variants=("eager", _served_mode(v)),
                               dynamic_settings=traffic.DYNAMIC_SETTINGS, pad_to=(max(batches),),
                               compile=Variant("default", fullgraph=v.fullgraph, options=v.options, decoder=v.decoder),
                               repeats=SHAPES_REPEATS, timing=SHAPES_TIMING, **config.settings.changes())


def _served_mode(v: Variant) -> str:
    """The torch.compile mode a pick serves shapes with: its own, or plain compile for an AOTInductor package."""
    return v.mode if v.mode in MODES else "default"


def parse_budget(text: str) -> float:
    """'90s', '20m', '1h', '1h30m' or a number of seconds."""
    text = text.strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", text)
        if not parts or not any(parts.groups()):
            raise UserError(f"--budget {text!r}: expected a time such as 90s, 20m, 1h or 1h30m") from None
        h, m, s = (float(g) if g else 0.0 for g in parts.groups())
        seconds = h * 3600 + m * 60 + s
    if not seconds > 0 or not math.isfinite(seconds):
        raise UserError(f"--budget {text!r}: must be a positive time")
    return seconds
