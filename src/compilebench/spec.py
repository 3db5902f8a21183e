"""What is measured, as frozen data: Variant, Case, TimingPolicy, RunSpec. Validation lives here; no I/O."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
from dataclasses import dataclass, field

from compilebench.errors import UnknownChoice, UserError

# "eager" is the uncompiled baseline; the others are torch.compile modes ("default" is mode=None).
VARIANTS = ("eager", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
DTYPES = ("float32", "float16", "bfloat16")
ATTNS = ("sdpa", "eager")  # transformers' attention implementations
COMPILE_CACHES = ("cold", "warm")  # or a directory path
WEIGHTS = ("random", "pretrained")
MODEL_SIZES = ("full", "tiny")
ISOLATIONS = ("process", "inline")

DEFAULT_ITERS = 300  # the guide: mean of 300 inferences
DEFAULT_WARMUP = 10
# CUDA graphs (reduce-overhead, max-autotune) record on the 2nd-3rd call: never time those.
MIN_WARMUP_CUDAGRAPHS = 3
DEFAULT_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class Variant:
    """How the model runs: eagerly, or through torch.compile with these settings."""

    mode: str = "eager"
    backend: str = "inductor"
    fullgraph: bool = False
    dynamic: bool | None = None  # None: torch's own automatic dynamic shapes

    def __post_init__(self):
        if self.mode == "eager":
            # Compile settings mean nothing for eager; normalising them keeps one eager baseline per case.
            object.__setattr__(self, "backend", "none")
            object.__setattr__(self, "fullgraph", False)
            object.__setattr__(self, "dynamic", None)

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"

    @property
    def uses_cudagraphs(self) -> bool:
        return self.mode in ("reduce-overhead", "max-autotune")

    @property
    def label(self) -> str:
        """Short name for column headers: 'no compile', 'compile', 'compile (reduce-overhead, fullgraph)'."""
        if not self.compiled:
            return "no compile"
        extras = [] if self.mode == "default" else [self.mode]
        if self.backend != "inductor":
            extras.append(f"backend={self.backend}")
        if self.fullgraph:
            extras.append("fullgraph")
        if self.dynamic is not None:
            extras.append("dynamic" if self.dynamic else "static")
        return "compile" + (f" ({', '.join(extras)})" if extras else "")


@dataclass(frozen=True)
class Case:
    """One measurement: a model at a batch size under a variant. Hashable; its key() is the resume key."""

    model: str
    batch_size: int
    variant: Variant
    dtype: str = "float32"
    device: str = "cpu"
    weights: str = "random"
    model_size: str = "full"
    task: str | None = None  # given with --task for a checkpoint whose config does not say
    image: str | None = None  # absolute path of --image; None: the photo shipped with compilebench
    autocast: bool = False  # the model stays float32 and runs under torch.autocast(dtype)
    channels_last: bool = False  # model weights and 4-D inputs in channels-last memory format
    tf32: bool | None = None  # allow TF32 matmuls/convolutions; None: leave torch's setting (recorded in env)
    attn: str | None = None  # attention implementation (sdpa, eager); None: the model's default
    compile_cache: str = "cold"  # cold, warm, or a directory holding inductor's cache
    interleave: bool = False  # timed in alternating blocks with the other variants of its model and batch

    def key(self) -> str:
        """Stable identity of what is measured. The device index is left out: cuda:0 and cuda:1 of one
        machine measure the same thing, and which machine it was is recorded beside the key. Settings at
        their defaults are left out too, so keys written before a setting existed still match."""
        d = self.to_dict()
        d["device"] = self.device.split(":")[0]
        for name, default in _KEY_DEFAULTS.items():
            if d[name] == default:
                del d[name]
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Case:
        return cls(**{**d, "variant": Variant(**d["variant"])})

    def describe(self) -> str:
        return f"{self.model} b{self.batch_size} {self.variant.mode}"


_KEY_DEFAULTS = {"autocast": False, "channels_last": False, "tf32": None, "attn": None, "compile_cache": "cold",
                 "interleave": False}


@dataclass(frozen=True)
class TimingPolicy:
    """How a case is timed. Recorded with each result but not part of the case key."""

    iters: int = DEFAULT_ITERS
    warmup: int = DEFAULT_WARMUP
    max_time_s: float | None = None  # budget for the timed loop; the real N is recorded

    def warmup_for(self, variant: Variant) -> int:
        return max(self.warmup, MIN_WARMUP_CUDAGRAPHS) if variant.uses_cudagraphs else self.warmup


@dataclass(frozen=True)
class RunSpec:
    """Everything `compilebench run` was asked to do."""

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...] = (1,)
    variants: tuple[str, ...] = ("eager", "default")
    backend: str = "inductor"
    fullgraph: bool = False
    dynamic: bool | None = None
    dtype: str = "float32"
    device: str | None = None  # None: cuda when available, else cpu (resolved by envinfo.resolve_device)
    weights: str = "random"
    model_size: str = "full"
    task: str | None = None
    image: str | None = None
    autocast: bool = False
    channels_last: bool = False
    tf32: bool | None = None
    attn: str | None = None
    compile_cache: str = "cold"
    interleave: bool = False
    timing: TimingPolicy = field(default_factory=TimingPolicy)
    timeout_s: float | None = DEFAULT_TIMEOUT_S
    isolation: str = "process"
    rerun: bool = False

    def __post_init__(self):
        validate(self)

    def cases(self) -> list[Case]:
        """The grid, model-major so one model's cases run together (and eager before its compiled runs)."""
        return [
            Case(
                model=m,
                batch_size=b,
                variant=Variant(v, self.backend, self.fullgraph, self.dynamic),
                dtype=self.dtype,
                device=self.device,
                weights=self.weights,
                model_size=self.model_size,
                task=self.task,
                image=self.image,
                autocast=self.autocast,
                channels_last=self.channels_last,
                tf32=self.tf32,
                attn=self.attn,
                compile_cache=self.compile_cache,
                interleave=self.interleave,
            )
            for m, b, v in itertools.product(self.models, self.batch_sizes, dict.fromkeys(self.variants))
        ]


def _choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UnknownChoice(what, value, list(allowed))


def validate(spec: RunSpec) -> None:
    """Every check on a RunSpec, in one place. Raises UserError naming what is wrong and what is allowed."""
    if not spec.models:
        raise UserError("no model given (use --model NAME; `compilebench models` lists them)")
    if not spec.batch_sizes:
        raise UserError("no batch size given (use --batch-size N [N ...])")
    for b in spec.batch_sizes:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            raise UserError(f"--batch-size must be a positive integer, got {b!r}")
    if not spec.variants:
        raise UserError(f"no variant given (allowed: {', '.join(VARIANTS)})")
    for v in spec.variants:
        _choice("variant", v, VARIANTS)
    _choice("dtype", spec.dtype, DTYPES)
    _choice("weights", spec.weights, WEIGHTS)
    _choice("model size", spec.model_size, MODEL_SIZES)
    _choice("isolation", spec.isolation, ISOLATIONS)
    if spec.autocast and spec.dtype == "float32":
        raise UserError("--autocast needs --dtype float16 or bfloat16 (the dtype autocast computes in)")
    if spec.interleave and len(set(spec.variants)) < 2:
        raise UserError("--interleave needs at least two variants to alternate (e.g. --variant eager default)")
    if spec.attn is not None:
        _choice("attention implementation", spec.attn, ATTNS)
    if spec.compile_cache not in COMPILE_CACHES and not os.path.isdir(spec.compile_cache):
        raise UserError(f"--compile-cache must be cold, warm or an existing directory, got {spec.compile_cache!r}")
    if not spec.backend:
        raise UserError("--backend must name a torch.compile backend, e.g. inductor")
    if spec.device is not None and not (spec.device in ("cpu", "cuda") or _is_cuda_index(spec.device)):
        raise UserError(f"--device must be cpu, cuda or cuda:N, got {spec.device!r}")
    t = spec.timing
    if isinstance(t.iters, bool) or not isinstance(t.iters, int) or t.iters < 1:
        raise UserError(f"--iters must be an integer >= 1, got {t.iters!r}")
    if isinstance(t.warmup, bool) or not isinstance(t.warmup, int) or t.warmup < 0:
        raise UserError(f"--warmup must be an integer >= 0, got {t.warmup!r}")
    if t.max_time_s is not None and not t.max_time_s > 0:
        raise UserError(f"--max-time must be a positive number of seconds, got {t.max_time_s!r}")
    if spec.timeout_s is not None and not spec.timeout_s > 0:
        raise UserError(f"--timeout must be a positive number of seconds, got {spec.timeout_s!r}")


def _is_cuda_index(device: str) -> bool:
    prefix, _, index = device.partition(":")
    return prefix == "cuda" and index.isdigit()
