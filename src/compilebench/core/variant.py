"""How a model runs: eagerly, or through torch.compile (or AOTInductor, or another engine) with these settings. A run's compile
settings are a Variant too (`RunSpec.compile`), which each of its compiled variants takes with its own mode; `tune`
searches them. Declared once here, with the words every report and `tune` say them in."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from compilebench.core.errors import UserError

# "eager" is the uncompiled baseline; the torch.compile modes follow ("default" is mode=None).
# "eager-static-cache" is eager generation with the static KV cache compiled generation uses: the control that
# tells what the cache does from what the compiler does (text generation only).
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# "aot-inductor" is compiled ahead of time: torch.export, packaged by AOTInductor, loaded by each worker
# (kinds/aot_inductor.py).
AOT_INDUCTOR = "aot-inductor"
# "eager-cudagraphs" is the eager model's call captured once in a CUDA graph and replayed (a GPU only): the control
# that tells what reduce-overhead's CUDA graphs do from what the compiler does (kinds/eager.py).
# "regional" is the default mode on each repeated block alone: --compile-scope regions as a variant of its own, so
# one run compares it with the whole model's compile (a pipeline's denoiser: diffusers' compile_repeated_blocks).
REGIONAL = "regional"
# Every other name is the model run by another engine than torch (onnxruntime, openvino, ...): kinds/ lists them.
TORCH_WAYS = ("eager", "eager-static-cache", "eager-cudagraphs", *MODES, REGIONAL, AOT_INDUCTOR)
_TORCH_MODES = ("eager", *MODES, AOT_INDUCTOR)
SCOPES = ("model", "regions")  # --compile-scope: torch.compile of the whole model, or of each repeated block


@dataclass(frozen=True)
class Variant:
    """How the model runs: eagerly, or through torch.compile with these settings."""

    mode: str = "eager"
    backend: str = "inductor"
    fullgraph: bool = False
    dynamic: bool | None = None  # None: torch's own automatic dynamic shapes
    options: tuple[tuple[str, object], ...] = ()  # inductor config options, sorted by name: (("freezing", True),)
    cache: str | None = None  # generation's KV cache: None is the variant's own (eager dynamic, compiled static)
    cudagraph: bool = False  # eager only: its call captured once in a CUDA graph, replayed (eager-cudagraphs)
    scope: str = "model"  # what is compiled: the whole model, or each of its repeated blocks ("regions")
    regions: tuple[str, ...] = ()  # the block classes "regions" compiles (--region); none: the model's own list
    # Serving shapes (`compilebench shapes`): the batch (or sequence) dimension of each input marked dynamic before
    # its first call; or each input padded up to the smallest of these sizes, its outputs sliced back.
    mark_dynamic: bool = False
    pad_to: tuple[int, ...] = ()
    # A pipeline's LoRA adapters swapped in place (diffusers' enable_lora_hotswap, every adapter padded to the
    # largest rank served), so a swap need not compile anything; else each adapter is loaded as a new one
    lora_hotswap: bool = False
    # A pipeline's decoder (its VAE's decode) compiled too, as diffusers' docs do; else its denoiser alone
    decoder: bool = False

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(sorted((str(k), v) for k, v in self.options)))
        object.__setattr__(self, "regions", tuple(self.regions))
        object.__setattr__(self, "pad_to", tuple(sorted(self.pad_to)))
        if self.mode == REGIONAL:
            object.__setattr__(self, "mode", "default")
            object.__setattr__(self, "scope", "regions")
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
            object.__setattr__(self, "lora_hotswap", False)
            object.__setattr__(self, "decoder", False)
        else:
            object.__setattr__(self, "cudagraph", False)  # a compiled mode's CUDA graphs are its mode's
        if self.mode == AOT_INDUCTOR or self.engine:  # not torch.compile: only inductor's options apply
            object.__setattr__(self, "backend", "inductor" if self.mode == AOT_INDUCTOR else "none")
            object.__setattr__(self, "fullgraph", False)
            object.__setattr__(self, "dynamic", None)
            object.__setattr__(self, "scope", "model")
            object.__setattr__(self, "regions", ())
            object.__setattr__(self, "decoder", False)
            if self.engine:
                object.__setattr__(self, "options", ())

    @classmethod
    def named(cls, name: str, compile: Variant | None = None) -> Variant:
        """The variant a user names (`eager`, `eager-static-cache`, `default`, ...), compiled with the run's compile
        settings (`compile`: a variant whose mode is left aside)."""
        if name == "eager-static-cache":
            return cls("eager", cache="static")
        if name == "eager-cudagraphs":
            return cls("eager", cudagraph=True)
        return dataclasses.replace(compile or cls("default"), mode=name)

    @property
    def name(self) -> str:
        if self.mode == "eager" and self.cache == "static":
            return "eager-static-cache"
        if self.mode == "default" and self.scope == "regions":
            return REGIONAL
        return "eager-cudagraphs" if self.cudagraph else self.mode

    @property
    def compile_mode(self) -> str | None:
        """torch.compile's mode argument: None for `default` (no mode given), else its name."""
        return None if self.mode == "default" else self.mode

    @property
    def compiled(self) -> bool:
        return self.mode != "eager"

    @property
    def against_eager(self) -> bool:
        """Read against plain eager (a speed-up, a correctness check): a compiled variant, and an eager one changed
        in what it runs (the static KV cache, a CUDA graph)."""
        return self.compiled or self.cache is not None or self.cudagraph

    @property
    def ahead_of_time(self) -> bool:
        """Exported and packaged before the worker runs it (AOTInductor), not compiled by torch.compile."""
        return self.mode == AOT_INDUCTOR

    @property
    def engine(self) -> str | None:
        """The engine that runs the model instead of torch (onnxruntime, openvino, ...), or None."""
        return self.mode if self.mode not in _TORCH_MODES else None

    @property
    def prepared(self) -> bool:
        """Made ready before it is timed by something else than torch.compile (an AOTInductor package, an engine),
        whose preparation is its compile cost: dynamo's counters say nothing of it, and it leaves its files (the
        package, the exported model, the engine's cache) for the case's later repeats."""
        return self.ahead_of_time or self.engine is not None

    @property
    def uses_cudagraphs(self) -> bool:
        return self.mode in ("reduce-overhead", "max-autotune")

    @property
    def order(self) -> int:
        """Where it sits among variants in a table: eager first, then the modes in the order above, then the
        engines (by their label, which tables sort by next)."""
        return TORCH_WAYS.index(self.name) if self.name in TORCH_WAYS else len(TORCH_WAYS)

    def words(self) -> list[str]:
        """What sets this way of compiling apart from its mode's plain call, one word (or KEY=VALUE) each: its
        scope, backend, fullgraph, dynamic shapes, shape handling and inductor options. The column headers and
        `tune` both say a variant in these words."""
        compiled = self.compile_words()
        shapes = [*(["dynamic" if self.dynamic else "static"] if self.dynamic is not None else []),
                  *(["mark dynamic"] if self.mark_dynamic else []),
                  *([f"pad to {'/'.join(map(str, self.pad_to))}"] if self.pad_to else []),
                  *(["LoRA hot-swap"] if self.lora_hotswap else [])]
        return compiled[:len(compiled) - len(self.options)] + shapes + compiled[len(compiled) - len(self.options):]

    def compile_words(self) -> list[str]:
        """words() without how shapes are handled: its scope, backend, fullgraph, decoder and inductor options."""
        return [*([f"regions {'+'.join(self.regions)}" if self.regions else "regions"] if self.scope != "model" else []),
                *([f"backend={self.backend}"] if self.backend not in ("inductor", "none") else []),
                *(["fullgraph"] if self.fullgraph else []), *(["decoder compiled"] if self.decoder else []),
                *(f"{k}={v}" for k, v in self.options)]

    @property
    def label(self) -> str:
        """Short name for column headers: 'no compile', 'compile', 'compile (reduce-overhead, fullgraph)'."""
        if not self.compiled:
            if self.cudagraph:
                return "no compile, CUDA graph"
            return "no compile, static cache" if self.cache == "static" else "no compile"
        if self.engine:
            name, extras = self.engine, []
        elif self.ahead_of_time:
            name, extras = "AOTInductor", self.words()
        else:
            name, extras = "compile", ([] if self.mode == "default" else [self.mode]) + self.words()
        return name + (f" ({', '.join(extras)})" if extras else "")

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), "options": [list(kv) for kv in self.options], "regions": list(self.regions),
                "pad_to": list(self.pad_to)}

    @classmethod
    def from_dict(cls, d: dict) -> Variant:
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        kw["options"] = tuple(tuple(kv) for kv in kw.get("options") or ())
        return cls(**kw)


def parse_option(text: str) -> tuple[str, object]:
    """--inductor-option KEY=VALUE, the value read as a bool, int, float or string, as written (the installed
    torch's inductor checks the key: measure/compiler.check_options)."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise UserError(f"--inductor-option {text!r}: expected KEY=VALUE, such as freezing=True")
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("true", "false"):
        return key.strip(), lowered == "true"
    for kind in (int, float):
        try:
            return key.strip(), kind(value)
        except ValueError:
            pass
    return key.strip(), value
