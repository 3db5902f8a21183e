"""What a run was asked to do, as frozen data (RunSpec), with every check of it; and the one way to ask for one by
its options' names (`asked`), which `compilebench run`, `shapes`, `tune` and the Python API all call. No I/O."""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import json
import math
from dataclasses import dataclass, field

from compilebench.core import sequential, settings as settingsmod, stats, suites, traffic
from compilebench.core.case import Case
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.interpreter import Interpreter
from compilebench.core.job import TimingPolicy
from compilebench.core.settings import Settings, integer as _integer
from compilebench.core.variant import MODES, SCOPES, TORCH_WAYS, Variant

ISOLATIONS = ("process", "inline")
DEFAULT_REPEATS = 3  # fresh processes per case: the unit of independence
# Repeats until decided: an undecided case gets rounds up to this many processes (looks at 3, 5, 7, 9 and 11, at
# 98.1%, 99.0%, 99.2%, 99.3% and 99.4%: sequential.confidence). Chosen from benchmarks/decide.py on a 2-core VM (a
# known 10% effect, paired by round, needed 9 rounds in the median): see docs/trust.md.
DEFAULT_MAX_REPEATS = 11
DEFAULT_TIMEOUT_S = 3600.0
MAX_REPEATS = 100


@dataclass(frozen=True)
class ModelKind:
    """What making a model's cases needs to know of it (a zoo entry says it too): what is timed, a forward pass
    ("vision"), generate() ("generation") or a pipeline's image ("image"), and a text model's prompt length or a
    pipeline's steps where the run names none."""

    kind: str = "vision"
    default_prompt_len: int | None = None
    default_steps: int | None = None  # a text-to-image pipeline's denoiser steps where the run names none


@dataclass(frozen=True, kw_only=True)
class RunSpec(Settings):
    """Everything `compilebench run` was asked to do: the grid (models x batch sizes x variants), how to compile,
    the settings every case shares, and how to time and repeat them."""

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...] = (1,)
    variants: tuple[str, ...] = ("eager", "default")
    # How every compiled variant is compiled (backend, fullgraph, dynamic, inductor options, scope), its mode aside.
    compile: Variant = Variant("default")
    # --backend: each torch.compile backend the compiled modes are crossed with (compile.backend is the first);
    # none given: compile's alone
    backends: tuple[str, ...] = ()
    device: str | None = settingsmod.asked("device")
    new_tokens: int = settingsmod.asked("new_tokens")
    timing: TimingPolicy = field(default_factory=TimingPolicy)
    repeats: int = DEFAULT_REPEATS
    # Repeats until decided: up to this many processes per undecided case (None: `repeats`, a fixed design), its
    # extra rounds within extra_time_s seconds (None: 1.5x as long as the planned repeats took)
    max_repeats: int | None = None
    extra_time_s: float | None = None
    # the run's label in a history (--tag): None takes COMPILEBENCH_TAG, else the git commit of the folder it runs in
    tag: str | None = None
    min_effect: float = stats.DEFAULT_MIN_EFFECT
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    isolation: str = "process"
    rerun: bool = False
    retry_failed: bool = False
    environments: tuple[Interpreter, ...] = ()  # --env: every case under each; none: the driver's own interpreter
    # --quantize: every variant of every model under each (the quantize setting where none is given), beside one
    # eager float baseline
    quantizations: tuple[str, ...] = ()
    profile: bool = False  # --profile: where the time goes, from a profiled pass after each case's timed loop
    compile_trace: bool = False  # --compile-trace: keep each compiled case's TORCH_TRACE log (and tlparse's HTML)
    # `compilebench shapes`: each model serves its shapes (the batch sizes at each --image-size, or each
    # --prompt-len) under eager and each of these compile settings (traffic.DYNAMIC_SETTINGS), and padded to pad_to
    shapes: bool = False
    image_sizes: tuple[tuple[int, int], ...] = ()
    prompt_lens: tuple[int, ...] = ()
    dynamic_settings: tuple[str, ...] = ()
    pad_to: tuple[int, ...] = ()
    lora_ranks: tuple[int, ...] = ()  # a pipeline's LoRA adapters (by rank), each swapped in before its shapes
    lora_hotswap: bool = False  # also: the first compiled setting with the adapters hot-swapped
    regional: bool = False  # also: the first compiled setting with each repeated block compiled alone

    def __post_init__(self):
        # A value given twice (`--batch-size 1 1`) is one case, measured once.
        for name in ("models", "batch_sizes", "variants", "quantizations"):
            object.__setattr__(self, name, tuple(dict.fromkeys(getattr(self, name))))
        validate(self)

    @property
    def most_repeats(self) -> int:
        return self.max_repeats or self.repeats

    @property
    def looks(self) -> list[int]:
        """The processes per case at which the run looks at its verdicts (one look: a fixed design)."""
        return sequential.looks(self.repeats, self.most_repeats)

    @property
    def all_backends(self) -> tuple[str, ...]:
        return self.backends or (self.compile.backend,)

    @property
    def uses_inductor(self) -> bool:
        """Whether some case of the run compiles with inductor (torch.compile's backend, or AOTInductor)."""
        torch_compiled = [v for v in self.variants if Variant.named(v).compiled and not Variant.named(v).engine]
        return bool(torch_compiled) and ("inductor" in self.all_backends
                                         or any(Variant.named(v).ahead_of_time for v in self.variants))

    def compiled_by(self, name: str) -> list[Variant]:
        """A variant named on the command line, once per backend where torch.compile runs it (an engine, eager and
        AOTInductor take none): `--backend inductor openvino` crosses each mode with both; inductor's options go
        to inductor alone."""
        plain = Variant.named(name, self.compile)
        if not plain.compiled or plain.prepared:
            return [plain]
        return [Variant.named(name, dataclasses.replace(self.compile, backend=b,
                                                        options=self.compile.options if b == "inductor" else ()))
                for b in self.all_backends]

    def cases(self, models: dict[str, ModelKind] | None = None) -> list[Case]:
        """The grid, model-major (eager before its compiled variants: the order of odd rounds, run/rounds.py),
        each under every quantization (eager float beside them) and every environment. `models`: what each model
        is (a ModelKind, or its zoo entry); one it does not name is a vision model."""
        known = {m: (models or {}).get(m) or ModelKind() for m in self.models}
        names = [e.name for e in self.environments] or [None]
        if self.shapes:
            return [c for m, env in itertools.product(self.models, names) for c in self._shape_cases(m, env, known[m])]
        out = []
        quantized = self.quantizations or (self.quantize,)
        for m, b in itertools.product(self.models, self.batch_sizes):
            taken = self._settings_for(known[m])
            if "none" not in quantized:  # the eager float baseline every quantization is read against
                out += [Case(m, b, Variant(), env, **{**taken, "quantize": "none"}) for env in names]
            out += [Case(m, b, variant, env, **{**taken, "quantize": q})
                    for q, v, env in itertools.product(quantized, self.variants, names) for variant in self.compiled_by(v)]
        return list(dict.fromkeys(out))

    def shape_settings(self) -> list[Variant]:
        """`compilebench shapes`: eager, then one compiled variant per dynamic setting, then the padded one (static
        shapes: one graph per bucket)."""
        mode = next((v for v in self.variants if v in MODES), "default")  # tune's pick may use another mode
        compiled = dataclasses.replace(self.compile, mode=mode)
        dynamic = {"auto": {}, "true": {"dynamic": True}, "false": {"dynamic": False}, "mark": {"mark_dynamic": True}}
        out = [Variant()] + [dataclasses.replace(compiled, **dynamic[d]) for d in self.dynamic_settings]
        if self.pad_to:
            out.append(dataclasses.replace(compiled, dynamic=False, pad_to=self.pad_to))
        if self.lora_hotswap:
            out.append(dataclasses.replace(out[1], lora_hotswap=True))
        if self.regional:  # the blocks' inputs are made inside the model: nothing marked or padded reaches them
            out.append(dataclasses.replace(next((v for v in out[1:] if not (v.mark_dynamic or v.pad_to)), compiled),
                                           scope="regions"))
        return out

    def served(self, kind: str, default_prompt_len: int | None = None) -> tuple[traffic.Shape, ...]:
        """The shapes a model of this kind serves: the batch sizes at each photo size, or at each prompt length."""
        if kind == "generation":
            return traffic.shapes_of(self.batch_sizes, prompts=self.prompt_lens or (self.prompt_len or default_prompt_len,))
        return traffic.shapes_of(self.batch_sizes, images=self.image_sizes, loras=self.lora_ranks)

    def _settings_for(self, known: ModelKind) -> dict:
        """The run's settings as a model of this kind takes them, with its own defaults where the run names none."""
        taken = self.for_kind(known.kind)
        if known.kind == "generation":
            taken["prompt_len"] = self.prompt_len or known.default_prompt_len
        if known.kind == "image":
            taken["steps"] = self.steps or known.default_steps
        return taken

    def _shape_cases(self, model: str, env: str | None, known: ModelKind) -> list[Case]:
        kind = known.kind
        if self.lora_ranks and kind != "image":
            raise UserError(f"--lora: {model} is not a text-to-image pipeline (`compilebench models` lists them); "
                            "its LoRA adapters cannot be served")
        shapes = self.served(kind, known.default_prompt_len)
        if len(shapes) < 2:
            raise UserError(f"compilebench shapes: {model} would serve one shape ({shapes[0].words}); give several "
                            f"--batch-size{' or --prompt-len' if kind == 'generation' else ' or --image-size'} values "
                            "(one shape is what `compilebench run` measures)")
        traffic.check_pad_to(shapes, self.pad_to)
        taken = self._settings_for(known)
        if kind == "generation":
            taken["prompt_len"] = max(s.prompt for s in shapes)  # the static cache holds the longest prompt
        return [Case(model, max(s.batch for s in shapes), v, env, shapes=tuple(s.token for s in shapes), **taken)
                for v in self.shape_settings()]


def asked(*, models=None, suite: str | None = None, batch_sizes=None, variants=None, backend="inductor",
          fullgraph: bool | None = None, dynamic: bool | None = None, inductor_options=(), compile_scope=None,
          regions=(), compile_decoder: bool = False, iters: int | None = None, warmup: int | None = None,
          max_time_s: float | None = None, min_iters: int | None = None, first_calls: int | None = None,
          warmup_s: float | None = None, warmup_cap_s: float | None = None, shapes: bool = False, image_sizes=(),
          prompt_lens=(), dynamic_settings=None, pad_to=(), lora_ranks=(), lora_hotswap: bool = False,
          regional: bool = False, repeats: int | None = None, max_repeats: int | None = None, quantizations=None,
          interleave: bool | None = None, **rest) -> RunSpec:
    """The RunSpec of a run asked for by its options' names (the Python API's keywords; the command line's options
    reach it under the same names). What is not given is the suite's where one is taken (no model and no suite:
    the quick suite), else the default; `shapes` serves each model's shapes (`compilebench shapes`). Repeats:
    neither given, 3 and more until decided (up to 11, or the suite's most); `repeats` alone, a fixed design of
    that many."""
    taken = suites.choose(suite, models)
    if max_repeats is None and repeats is None and not shapes:
        max_repeats = (taken and taken.max_repeats) or DEFAULT_MAX_REPEATS
    given = suites.fill(taken, {
        "models": tuple(models) if models else None, "batch_sizes": batch_sizes, "variants": variants,
        "fullgraph": fullgraph, "warmup": warmup, "max_time_s": max_time_s, "interleave": interleave,
        "quantizations": (quantizations,) if isinstance(quantizations, str) else quantizations or None})
    options = tuple(inductor_options.items() if isinstance(inductor_options, dict) else inductor_options)
    if len(dict(options)) != len(options):
        raise UserError(f"--inductor-option: {[k for k, _ in options]}: an option is given twice")
    backends = (backend,) if isinstance(backend, str) else tuple(dict.fromkeys(backend)) or ("inductor",)
    compiling = Variant("default", backend=backends[0], fullgraph=bool(given.get("fullgraph")), dynamic=dynamic,
                        options=options, scope=compile_scope or ("regions" if regions else "model"),
                        regions=tuple(regions), decoder=compile_decoder)
    timing = TimingPolicy(iters=iters, warmup=given.get("warmup"), max_time_s=given.get("max_time_s"),
                          min_iters=min_iters, first_calls=first_calls, warmup_s=warmup_s, warmup_cap_s=warmup_cap_s)
    served = dict(shapes=True, image_sizes=tuple(traffic.parse_image_size(s) if isinstance(s, str) else tuple(s)
                                                 for s in image_sizes),
                  prompt_lens=tuple(prompt_lens), pad_to=tuple(sorted(set(pad_to))),
                  lora_ranks=tuple(dict.fromkeys(lora_ranks)), lora_hotswap=lora_hotswap, regional=regional,
                  dynamic_settings=tuple(dict.fromkeys(dynamic_settings or traffic.DEFAULT_DYNAMIC))) if shapes else {}
    return RunSpec(models=given.get("models", ()), batch_sizes=tuple(given.get("batch_sizes", (1,))),
                   variants=tuple(given.get("variants", ("eager", "default"))), compile=compiling,
                   backends=backends if len(backends) > 1 else (), timing=timing, **served, **rest,
                   repeats=DEFAULT_REPEATS if repeats is None else repeats, max_repeats=max_repeats,
                   quantizations=tuple(given.get("quantizations", ())), interleave=bool(given.get("interleave")))


# Every name `asked` takes: its own keywords and the spec's fields (the command line's option destinations and the
# Python API's keywords are these names).
ASKED = frozenset(set(inspect.signature(asked).parameters) - {"rest"} | {f.name for f in dataclasses.fields(RunSpec)}
                  - {"compile", "timing", "backends"})


def recorded(spec: RunSpec) -> dict:
    """The spec as a run's record keeps it: every field, as JSON holds it."""
    return json.loads(json.dumps(dataclasses.asdict(spec)))


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
        raise UserError(f"no variant given (allowed: {', '.join(TORCH_WAYS)}, or an engine: `compilebench "
                        "run --help` lists them)")
    # A variant's name is checked against every kind (kinds/: torch's ways and the engines) where the run is
    # prepared (run/plan.py), which asks each for its refusal.
    if spec.isolation not in ISOLATIONS:
        raise UnknownChoice("isolation", spec.isolation, list(ISOLATIONS))
    for q in spec.quantizations:
        if q not in settingsmod.QUANTIZATIONS:
            raise UnknownChoice("quantization", q, list(settingsmod.QUANTIZATIONS))
    if (spec.quantizations or spec.quantize != "none") and spec.shapes:
        raise UserError("--quantize is measured by `compilebench run`; `shapes` serves the model in its dtype")
    if spec.environments and spec.isolation != "process":
        raise UserError("--env starts each case's workers from the environment's interpreter; --isolation inline runs "
                        "them in this one")
    if len({e.name for e in spec.environments}) != len(spec.environments):
        raise UserError("--env: an environment is named twice; give each a name of its own")
    settingsmod.check(spec)
    if spec.interleave and len(spec.variants) < 2:
        raise UserError("--interleave needs at least two variants to alternate (e.g. --variant eager default)")
    _validate_compile(spec.compile)
    if any(not b for b in spec.backends):
        raise UserError("--backend must name a torch.compile backend, e.g. inductor")
    _validate_timing(spec.timing)
    _seconds("--timeout", spec.timeout_s)
    _integer("--repeats", spec.repeats, 1, MAX_REPEATS)
    if spec.max_repeats is not None:
        _integer("--max-repeats", spec.max_repeats, 1, MAX_REPEATS)
        if spec.max_repeats < spec.repeats:
            raise UserError(f"--max-repeats {spec.max_repeats} is fewer than --repeats {spec.repeats}: the most "
                            "processes per case cannot be fewer than those planned")
    _seconds("--extra-time", spec.extra_time_s)
    if spec.tag is not None and (not spec.tag.strip() or len(spec.tag) > 200 or "\n" in spec.tag):
        raise UserError(f"--tag {spec.tag!r} must be one line of 1 to 200 characters")
    stats.check_min_effect(spec.min_effect)
    _integer("--new-tokens", spec.new_tokens, 1)  # a run always says how many tokens its generation cases make
    if spec.shapes:
        _validate_shapes(spec)


def _validate_compile(c: Variant) -> None:
    if not c.backend:
        raise UserError("--backend must name a torch.compile backend, e.g. inductor")
    if c.scope not in SCOPES:
        raise UnknownChoice("compile scope", c.scope, list(SCOPES))
    if c.regions and c.scope != "regions":
        raise UserError("--region names the blocks --compile-scope regions compiles; with --compile-scope model the "
                        "whole model is compiled")


def _validate_timing(t: TimingPolicy) -> None:
    for option, value, least in (("--iters", t.iters, 1), ("--warmup", t.warmup, 0), ("--min-iters", t.min_iters, 1),
                                 ("--first-calls", t.first_calls, 1)):
        if value is not None:
            _integer(option, value, least)
    if t.iters is not None and t.min_iters is not None and t.min_iters > t.iters:
        raise UserError(f"--min-iters {t.min_iters} is more than --iters {t.iters}: a timed loop cannot end before it starts")
    _seconds("--max-time", t.max_time_s)
    for option, value in (("--warmup-time", t.warmup_s), ("--warmup-cap", t.warmup_cap_s)):
        if value is not None and not (_finite(value) and value >= 0):
            raise UserError(f"{option} must be a finite number of seconds >= 0, got {value!r}")


def shape_variants(mode: str) -> tuple[str, str]:
    """`compilebench shapes --mode` (and shapes(mode=)): eager beside every compiled setting in this mode."""
    if mode not in MODES:
        raise UnknownChoice("--mode", mode, list(MODES))
    return ("eager", mode)


def _validate_shapes(spec: RunSpec) -> None:
    for d in spec.dynamic_settings:
        if d not in traffic.DYNAMIC_SETTINGS:
            raise UnknownChoice("--dynamic setting", d, list(traffic.DYNAMIC_SETTINGS))
    if not spec.dynamic_settings and not spec.pad_to:
        raise UserError("compilebench shapes needs a compiled setting to compare with eager: --dynamic "
                        f"{' '.join(traffic.DYNAMIC_SETTINGS)} and/or --pad-to SIZE [SIZE ...]")
    for p in spec.prompt_lens:
        _integer("--prompt-len", p, 1)
    for r in spec.lora_ranks:
        _integer("--lora", r, 1)
    if spec.lora_hotswap and not spec.lora_ranks:
        raise UserError("--lora-hotswap swaps LoRA adapters in place: name their ranks with --lora RANK [RANK ...]")
    if spec.backends:
        raise UserError("compilebench shapes compiles with one --backend; measure another in a shapes run of its own")
    if spec.interleave:
        raise UserError("--interleave alternates one shape's variants in one process; compilebench shapes serves "
                        "each setting's shapes in a process of its own")
    if spec.compile.scope != "model":
        raise UserError("compilebench shapes compiles the whole model (--compile-scope model); its settings are the "
                        "--dynamic and --pad-to ones, and --regional adds one with each repeated block compiled alone")
