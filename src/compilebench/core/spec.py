"""What is measured, as frozen data: Variant, Case, TimingPolicy, RunSpec. Validation lives here; no I/O."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field

from compilebench.core import settings as settingsmod, stats, traffic
from compilebench.core.environment import Environment
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.settings import Settings, integer as _integer

# "eager" is the uncompiled baseline; the torch.compile modes follow ("default" is mode=None).
# "eager-static-cache" is eager generation with the static KV cache compiled generation uses: the control that
# tells what the cache does from what the compiler does (text generation only).
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# "aot-inductor" is compiled ahead of time: torch.export, packaged by AOTInductor, loaded by each worker (aot.py).
AOT_INDUCTOR = "aot-inductor"
VARIANTS = ("eager", "eager-static-cache", *MODES, AOT_INDUCTOR)
ISOLATIONS = ("process", "inline")
SCOPES = ("model", "regions")  # --compile-scope: torch.compile of the whole model, or of each repeated block

DEFAULT_ITERS = 300  # the guide: mean of 300 inferences
DEFAULT_GENERATION_ITERS = 20  # steady-state generate() calls: each makes --new-tokens tokens
DEFAULT_WARMUP = 10
DEFAULT_MIN_ITERS = 10  # no time budget ends a repeat's timed loop before this many samples
DEFAULT_REPEATS = 3  # fresh processes per case: the unit of independence
DEFAULT_FIRST_CALLS = 5  # generate() calls timed one by one before the steady state: when does compiling end?
DEFAULT_NEW_TOKENS = 32
# CUDA graphs (reduce-overhead, max-autotune) record on the 2nd-3rd call: never time those.
MIN_WARMUP_CUDAGRAPHS = 3
# A GPU needs time, not just calls, to reach steady clocks: ten calls of a 3 ms model are 30 ms of a ramp.
DEFAULT_GPU_WARMUP_S = 1.0
DEFAULT_TIMEOUT_S = 3600.0
MAX_REPEATS = 100


@dataclass(frozen=True)
class Variant:
    """How the model runs: eagerly, or through torch.compile with these settings."""

    mode: str = "eager"
    backend: str = "inductor"
    fullgraph: bool = False
    dynamic: bool | None = None  # None: torch's own automatic dynamic shapes
    options: tuple[tuple[str, object], ...] = ()  # inductor config options, sorted by name: (("freezing", True),)
    cache: str | None = None  # generation's KV cache: None is the variant's own (eager dynamic, compiled static)
    scope: str = "model"  # what is compiled: the whole model, or each of its repeated blocks ("regions")
    regions: tuple[str, ...] = ()  # the block classes "regions" compiles (--region); none: the model's own list
    # Serving shapes (`compilebench shapes`): the batch (or sequence) dimension of each input marked dynamic before
    # its first call; or each input padded up to the smallest of these sizes, its outputs sliced back.
    mark_dynamic: bool = False
    pad_to: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(sorted((str(k), v) for k, v in self.options)))
        object.__setattr__(self, "regions", tuple(self.regions))
        object.__setattr__(self, "pad_to", tuple(sorted(self.pad_to)))
        if self.mode == "eager":
            # Compile settings mean nothing for eager; normalising them keeps one eager baseline per case.
            object.__setattr__(self, "backend", "none")
            object.__setattr__(self, "fullgraph", False)
            object.__setattr__(self, "dynamic", None)
            object.__setattr__(self, "options", ())
            object.__setattr__(self, "scope", "model")
            object.__setattr__(self, "regions", ())
            object.__setattr__(self, "mark_dynamic", False)
            object.__setattr__(self, "pad_to", ())
        if self.mode == AOT_INDUCTOR:  # not torch.compile: only inductor's options apply
            object.__setattr__(self, "backend", "inductor")
            object.__setattr__(self, "fullgraph", False)
            object.__setattr__(self, "dynamic", None)
            object.__setattr__(self, "scope", "model")
            object.__setattr__(self, "regions", ())

    @classmethod
    def named(cls, name: str, **compile_settings) -> Variant:
        """The variant a user names (`eager`, `eager-static-cache`, `default`, ...) with the run's compile settings."""
        if name == "eager-static-cache":
            return cls("eager", cache="static")
        return cls(name, **compile_settings)

    @property
    def name(self) -> str:
        return "eager-static-cache" if self.mode == "eager" and self.cache == "static" else self.mode

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"

    @property
    def ahead_of_time(self) -> bool:
        """Exported and packaged before the worker runs it (AOTInductor), not compiled by torch.compile."""
        return self.mode == AOT_INDUCTOR

    @property
    def uses_cudagraphs(self) -> bool:
        return self.mode in ("reduce-overhead", "max-autotune")

    @property
    def order(self) -> int:
        """Where it sits among variants in a table: eager first, then the modes in the order above."""
        return VARIANTS.index(self.name)

    @property
    def label(self) -> str:
        """Short name for column headers: 'no compile', 'compile', 'compile (reduce-overhead, fullgraph)'."""
        if not self.compiled:
            return "no compile, static cache" if self.cache == "static" else "no compile"
        if self.ahead_of_time:
            return "AOTInductor" + (f" ({', '.join(f'{k}={v}' for k, v in self.options)})" if self.options else "")
        extras = [] if self.mode == "default" else [self.mode]
        if self.scope != "model":
            extras.append(f"regions {'+'.join(self.regions)}" if self.regions else "regions")
        if self.backend != "inductor":
            extras.append(f"backend={self.backend}")
        if self.fullgraph:
            extras.append("fullgraph")
        if self.dynamic is not None:
            extras.append("dynamic" if self.dynamic else "static")
        if self.mark_dynamic:
            extras.append("mark dynamic")
        if self.pad_to:
            extras.append(f"pad to {'/'.join(map(str, self.pad_to))}")
        extras += [f"{k}={v}" for k, v in self.options]
        return "compile" + (f" ({', '.join(extras)})" if extras else "")

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "options": [list(kv) for kv in self.options], "regions": list(self.regions),
                "pad_to": list(self.pad_to)}

    @classmethod
    def from_dict(cls, d: dict) -> Variant:
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["options"] = tuple(tuple(kv) for kv in kw.get("options") or ())
        return cls(**kw)


@dataclass(frozen=True)
class Case(Settings):
    """One measurement: a model at a batch size under a variant, with its settings. Hashable; its key() is the
    resume key."""

    model: str
    batch_size: int
    variant: Variant
    environment: str | None = None  # --env NAME: the interpreter and variables it ran under (environments.py)
    # `compilebench shapes`: the input shapes one process serves in this order (traffic.Shape tokens); none: the
    # batch size alone, again and again. batch_size is then the largest batch served.
    shapes: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "shapes", tuple(self.shapes))

    def key(self) -> str:
        return key_of(self.to_dict())

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "variant": self.variant.to_dict(), "shapes": list(self.shapes)}

    @classmethod
    def from_dict(cls, d: dict) -> Case:
        """Fields this version does not know (written by a newer one) are ignored here; the stored dict keeps them."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{**{k: v for k, v in d.items() if k in known}, "variant": Variant.from_dict(d["variant"])})

    @property
    def generation(self) -> bool:
        """Whether generate() is timed (a text-generation model): the one place a case says so."""
        return self.new_tokens is not None

    def describe(self) -> str:
        what = f"{len(self.shapes)} shapes {self.variant.label}" if self.shapes else f"b{self.batch_size} {self.variant.name}"
        return f"{self.model} {what}" + (f" [{self.environment}]" if self.environment else "")


_VARIANT_KEY_DEFAULTS = {"options": [], "cache": None, "scope": "model", "regions": [], "mark_dynamic": False,
                         "pad_to": []}
_KEY_DEFAULTS = {**settingsmod.key_defaults(), "environment": None, "shapes": []}


def key_of(case: dict) -> str:
    """Stable identity of what a case (as a dict) measures. The device index is left out: cuda:0 and cuda:1 of one
    machine measure the same thing, and which machine it was is recorded beside the key."""
    d = {**case, "device": str(case["device"]).split(":")[0]}
    d["variant"] = {k: v for k, v in case["variant"].items()
                    if not (k in _VARIANT_KEY_DEFAULTS and v in (_VARIANT_KEY_DEFAULTS[k], None, ()))}
    for name, default in _KEY_DEFAULTS.items():
        if name in d and (d[name] == default or (default == [] and d[name] == ())):
            del d[name]
    return json.dumps(d, sort_keys=True, separators=(",", ":"))


def eager_key_of(case: dict) -> str:
    """The key of the eager baseline of a case: the same model and settings, uncompiled."""
    return key_of({**case, "variant": Variant().to_dict()})


@dataclass(frozen=True)
class TimingPolicy:
    """How a case is timed. Recorded with each result but not part of the case key."""

    iters: int | None = None  # None: the timed unit's default (300 forward calls, 20 generate calls)
    warmup: int = DEFAULT_WARMUP
    max_time_s: float | None = None  # budget for one repeat's timed loop; the real N is recorded
    min_iters: int = DEFAULT_MIN_ITERS  # no budget ends a timed loop before this many samples
    first_calls: int = DEFAULT_FIRST_CALLS  # generation: calls timed one by one before the steady state
    warmup_s: float | None = None  # warm-up goes on until this long has passed too; None: 1 s on a GPU, 0 on a CPU

    def warmup_for(self, variant: Variant) -> int:
        return max(self.warmup, MIN_WARMUP_CUDAGRAPHS) if variant.uses_cudagraphs else self.warmup

    def warmup_s_for(self, device: str) -> float:
        if self.warmup_s is not None:
            return self.warmup_s
        return DEFAULT_GPU_WARMUP_S if device.startswith("cuda") else 0.0

    def iters_for(self, generation: bool) -> int:
        if self.iters is not None:
            return self.iters
        return DEFAULT_GENERATION_ITERS if generation else DEFAULT_ITERS

    def min_iters_for(self, generation: bool) -> int:
        return min(self.min_iters, self.iters_for(generation))


@dataclass
class Job:
    """What one worker process measures: the cases (one, or an interleaved group), which repeat, the on-disk
    compiler state it starts from, and whether to count FLOPs and check outputs (once per case is enough for
    FLOPs; once per case and compiler state for outputs: a repeat compiled from the same warm cache runs the
    same code)."""

    cases: list[Case]
    policy: TimingPolicy
    repeat: int = 1
    compile_cache: str | None = None  # cold, warm, dir or mega: the state of the compiler folders it was given
    count_flops: bool = True
    check: bool = True  # compare compiled outputs with eager's (once per case and compiler state is enough)
    claim: dict | None = None  # the driver's claim (leftovers.py): lets a later run store what a killed driver did not
    environment: dict | None = None  # the Environment its cases run under, as a dict: the worker records it
    traces: str | None = None  # the folder its profile and compile trace go to (traces.py); None: neither is kept
    profile: bool = False  # a profiled pass after the timed loop (--profile; once per case)
    compile_trace: bool = False  # TORCH_TRACE of its compile (--compile-trace; once per case)
    measure_machine: bool = False  # a CPU's bandwidth and matmul rate after the timed loop (once per run and dtype)
    mega_path: str | None = None  # --compile-cache mega: the artifacts file a cold repeat writes and a mega one loads
    packages: str | None = None  # aot-inductor: the folder its packages are built into (by the first repeat) and loaded from

    def to_dict(self) -> dict:
        return {"cases": [c.to_dict() for c in self.cases], "policy": dataclasses.asdict(self.policy), "repeat": self.repeat,
                "compile_cache": self.compile_cache, "count_flops": self.count_flops, "check": self.check,
                "claim": self.claim, "environment": self.environment, "traces": self.traces, "profile": self.profile,
                "compile_trace": self.compile_trace, "measure_machine": self.measure_machine, "mega_path": self.mega_path,
                "packages": self.packages}

    @classmethod
    def from_dict(cls, d: dict) -> Job:
        known = {f.name for f in dataclasses.fields(TimingPolicy)}
        policy = TimingPolicy(**{k: v for k, v in d["policy"].items() if k in known})
        return cls([Case.from_dict(c) for c in d["cases"]], policy, d.get("repeat", 1), d.get("compile_cache"),
                   d.get("count_flops", True), d.get("check", True), d.get("claim"), d.get("environment"),
                   d.get("traces"), d.get("profile", False), d.get("compile_trace", False),
                   d.get("measure_machine", False), d.get("mega_path"), d.get("packages"))


@dataclass(frozen=True, kw_only=True)
class RunSpec(Settings):
    """Everything `compilebench run` was asked to do: the grid (models x batch sizes x variants), how to compile,
    the settings every case shares, and how to time and repeat them."""

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...] = (1,)
    variants: tuple[str, ...] = ("eager", "default")
    backend: str = "inductor"
    fullgraph: bool = False
    dynamic: bool | None = None
    inductor_options: tuple[tuple[str, object], ...] = ()
    compile_scope: str = "model"  # --compile-scope: the whole model, or its repeated blocks ("regions")
    regions: tuple[str, ...] = ()  # --region CLASS: the blocks "regions" compiles; none: the model's own list
    device: str | None = None  # None: cuda when available, else cpu (resolved by the driver)
    prompt_len: int | None = None  # None: each text-generation model's default
    new_tokens: int = DEFAULT_NEW_TOKENS
    timing: TimingPolicy = field(default_factory=TimingPolicy)
    repeats: int = DEFAULT_REPEATS
    min_effect: float = 0.02
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    isolation: str = "process"
    rerun: bool = False
    retry_failed: bool = False
    environments: tuple[Environment, ...] = ()  # --env: every case under each; none: the driver's own interpreter
    profile: bool = False  # --profile: where the time goes, from a profiled pass after each case's timed loop
    compile_trace: bool = False  # --compile-trace: keep each compiled case's TORCH_TRACE log (and tlparse's HTML)
    # `compilebench shapes`: each model serves its shapes (the batch sizes at each --image-size, or each
    # --prompt-len) under eager and each of these compile settings (traffic.DYNAMIC_SETTINGS), and padded to pad_to
    shapes: bool = False
    image_sizes: tuple[tuple[int, int], ...] = ()
    prompt_lens: tuple[int, ...] = ()
    dynamic_settings: tuple[str, ...] = ()
    pad_to: tuple[int, ...] = ()

    def __post_init__(self):
        # A value given twice (`--batch-size 1 1`) is one case, measured once.
        for name in ("models", "batch_sizes", "variants"):
            object.__setattr__(self, name, tuple(dict.fromkeys(getattr(self, name))))
        validate(self)

    @property
    def uses_inductor(self) -> bool:
        """Whether some case of the run compiles with inductor."""
        return self.backend == "inductor" and any(Variant.named(v).compiled for v in self.variants)

    def cases(self, prompt_lens: dict[str, int] | None = None) -> list[Case]:
        """The grid, model-major so one model's cases run together (and eager before its compiled runs), each
        under every environment. `prompt_lens` names the text-generation models, with each one's default prompt
        length."""
        prompt_lens = prompt_lens or {}
        out = []
        names = [e.name for e in self.environments] or [None]
        if self.shapes:
            return [c for m, env in itertools.product(self.models, names) for c in self._shape_cases(m, env, prompt_lens)]
        for m, b, v, env in itertools.product(self.models, self.batch_sizes, self.variants, names):
            kind = "generation" if m in prompt_lens else "vision"
            taken = self.for_kind(kind)
            if kind == "generation":
                taken["prompt_len"] = self.prompt_len or prompt_lens[m]
            variant = Variant.named(v, backend=self.backend, fullgraph=self.fullgraph, dynamic=self.dynamic,
                                    options=self.inductor_options, scope=self.compile_scope, regions=self.regions)
            out.append(Case(m, b, variant, env, **taken))
        return list(dict.fromkeys(out))

    def shape_settings(self) -> list[Variant]:
        """`compilebench shapes`: eager, then one compiled variant per dynamic setting, then the padded one (static
        shapes: one graph per bucket)."""
        compiled = dict(backend=self.backend, fullgraph=self.fullgraph, options=self.inductor_options)
        mode = next((v for v in self.variants if v in MODES), "default")  # tune's pick may use another mode
        dynamic = {"auto": {}, "true": {"dynamic": True}, "false": {"dynamic": False}, "mark": {"mark_dynamic": True}}
        out = [Variant()] + [Variant(mode, **compiled, **dynamic[d]) for d in self.dynamic_settings]
        if self.pad_to:
            out.append(Variant(mode, **compiled, dynamic=False, pad_to=self.pad_to))
        return out

    def served(self, kind: str, default_prompt_len: int | None = None) -> tuple[traffic.Shape, ...]:
        """The shapes a model of this kind serves: the batch sizes at each photo size, or at each prompt length."""
        if kind == "generation":
            return traffic.shapes_of(self.batch_sizes, prompts=self.prompt_lens or (self.prompt_len or default_prompt_len,))
        return traffic.shapes_of(self.batch_sizes, images=self.image_sizes)

    def _shape_cases(self, model: str, env: str | None, prompt_lens: dict[str, int]) -> list[Case]:
        kind = "generation" if model in prompt_lens else "vision"
        shapes = self.served(kind, prompt_lens.get(model))
        if len(shapes) < 2:
            raise UserError(f"compilebench shapes: {model} would serve one shape ({shapes[0].words}); give several "
                            f"--batch-size{' or --prompt-len' if kind == 'generation' else ' or --image-size'} values "
                            "(one shape is what `compilebench run` measures)")
        traffic.check_pad_to(shapes, self.pad_to)
        taken = self.for_kind(kind)
        if kind == "generation":
            taken["prompt_len"] = max(s.prompt for s in shapes)  # the static cache holds the longest prompt
        return [Case(model, max(s.batch for s in shapes), v, env, shapes=tuple(s.token for s in shapes), **taken)
                for v in self.shape_settings()]


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _seconds(option: str, value) -> None:
    if value is not None and not (_finite(value) and value > 0):
        raise UserError(f"{option} must be a positive, finite number of seconds, got {value!r}")


def validate(spec: RunSpec) -> None:
    """Every check on a RunSpec, in one place. Raises UserError naming what is wrong and what is allowed."""
    if not spec.models:
        raise UserError("no model given (use --model NAME; `compilebench models` lists them)")
    if not spec.batch_sizes:
        raise UserError("no batch size given (use --batch-size N [N ...])")
    for b in spec.batch_sizes:
        _integer("--batch-size", b, 1)
    if not spec.variants:
        raise UserError(f"no variant given (allowed: {', '.join(VARIANTS)})")
    for v in spec.variants:
        if v not in VARIANTS:
            raise UnknownChoice("variant", v, list(VARIANTS))
    if spec.isolation not in ISOLATIONS:
        raise UnknownChoice("isolation", spec.isolation, list(ISOLATIONS))
    if spec.environments and spec.isolation != "process":
        raise UserError("--env starts each case's workers from the environment's interpreter; --isolation inline runs "
                        "them in this one")
    if len({e.name for e in spec.environments}) != len(spec.environments):
        raise UserError("--env: an environment is named twice; give each a name of its own")
    settingsmod.check(spec)
    if spec.interleave and len(spec.variants) < 2:
        raise UserError("--interleave needs at least two variants to alternate (e.g. --variant eager default)")
    if not spec.backend:
        raise UserError("--backend must name a torch.compile backend, e.g. inductor")
    if spec.compile_scope not in SCOPES:
        raise UnknownChoice("compile scope", spec.compile_scope, list(SCOPES))
    if spec.regions and spec.compile_scope != "regions":
        raise UserError("--region names the blocks --compile-scope regions compiles; with --compile-scope model the "
                        "whole model is compiled")
    t = spec.timing
    if t.iters is not None:
        _integer("--iters", t.iters, 1)
    _integer("--warmup", t.warmup, 0)
    _integer("--min-iters", t.min_iters, 1)
    if t.iters is not None and t.min_iters > t.iters:
        raise UserError(f"--min-iters {t.min_iters} is more than --iters {t.iters}: a timed loop cannot end before it starts")
    _integer("--first-calls", t.first_calls, 1)
    _seconds("--max-time", t.max_time_s)
    if t.warmup_s is not None and not (_finite(t.warmup_s) and t.warmup_s >= 0):
        raise UserError(f"--warmup-time must be a finite number of seconds >= 0, got {t.warmup_s!r}")
    _seconds("--timeout", spec.timeout_s)
    _integer("--repeats", spec.repeats, 1, MAX_REPEATS)
    stats.check_min_effect(spec.min_effect)
    _integer("--new-tokens", spec.new_tokens, 1)  # a run always says how many tokens its generation cases make
    if spec.shapes:
        _validate_shapes(spec)


def _validate_shapes(spec: RunSpec) -> None:
    for d in spec.dynamic_settings:
        if d not in traffic.DYNAMIC_SETTINGS:
            raise UnknownChoice("--dynamic setting", d, list(traffic.DYNAMIC_SETTINGS))
    if not spec.dynamic_settings and not spec.pad_to:
        raise UserError("compilebench shapes needs a compiled setting to compare with eager: --dynamic "
                        f"{' '.join(traffic.DYNAMIC_SETTINGS)} and/or --pad-to SIZE [SIZE ...]")
    for p in spec.prompt_lens:
        _integer("--prompt-len", p, 1)
    if spec.interleave:
        raise UserError("--interleave alternates one shape's variants in one process; compilebench shapes serves "
                        "each setting's shapes in a process of its own")
    if spec.compile_scope != "model":
        raise UserError("compilebench shapes compiles the whole model (--compile-scope model); its settings are the "
                        "--dynamic and --pad-to ones")

