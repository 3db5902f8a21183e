"""A case's settings, declared once: everything but the model, the batch size and the variant that changes what
a case measures. `Case` (one measurement) and `RunSpec` (a whole run) are both `Settings`, and `tune` searches
some of them, so a setting is one field here with its validation in `check`; what follows from the field is read
from its declaration:
- the resume key: a setting added after the first release leaves the key at its default, so a key written
  before it existed still matches (`key_defaults`);
- the words a report's column header and `tune` use for it (`words`), or where else the report shows it;
- its column of the CSV and JSON rows (every field, by its name);
- which models it applies to (vision or text generation), so `RunSpec.cases` can copy it for each model.
How to add one: docs/developer.md, "Adding a setting"."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Callable

from compilebench.core.errors import UnknownChoice, UserError

DTYPES = ("float32", "float16", "bfloat16")
ATTNS = ("sdpa", "eager")  # transformers' attention implementations
COMPILE_CACHES = ("cold", "warm", "mega")  # or a directory path, or mega:DIR (the portable artifacts kept there)
MEGA = "mega"
WEIGHTS = ("random", "pretrained")
# torchao's quantization of the linear layers (measure/quantization.py maps each to its config); none: the dtype alone
QUANTIZATIONS = ("none", "int8-weight-only", "int8-dynamic", "int4-weight-only", "float8-dynamic")
MODEL_SIZES = ("full", "tiny")
KINDS = ("vision", "generation", "image")  # what is timed: a forward pass, generate(), or a pipeline making images
DEFAULT_NEW_TOKENS = 32


_CASE_DEFAULT = object()


def setting(default, *, words: Callable | None = None, shown: str | None = None, keyed_at_default: bool = False,
            only: str | None = None, example=None, asked=_CASE_DEFAULT):
    """A setting's declaration. `words(settings)` names a non-default value for a column header (None: nothing to
    say); a setting without words says where the report shows it instead (`shown`). `keyed_at_default`: the
    settings of the first release, always in the key; every later one leaves it at its default. `only`: the kind
    of model it applies to (one of KINDS); for the others it stays at its default. `example`: a
    value other than the default, which the tests use to follow the setting everywhere it must reach. `asked`:
    what a run takes where the user gives nothing, when that differs from a case's default (a run's device is
    found later; its generation cases make 32 tokens, while a vision case makes none)."""
    if (words is None) == (shown is None):
        raise TypeError("a setting has words for the report, or says where else the report shows it")
    return field(default=default, metadata={"words": words, "shown": shown, "keyed_at_default": keyed_at_default,
                                            "only": only, "example": example,
                                            "asked": default if asked is _CASE_DEFAULT else asked})


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def mega_dir(compile_cache: str) -> str | None:
    """The folder of --compile-cache mega:DIR; None for plain mega (artifacts kept for the run only) and the rest."""
    prefix = MEGA + ":"
    return compile_cache[len(prefix):] if compile_cache.startswith(prefix) else None


def is_mega(compile_cache: str) -> bool:
    return compile_cache == MEGA or mega_dir(compile_cache) is not None


def _cache_words(cache: str) -> str | None:
    if cache == "cold":
        return None
    if is_mega(cache):
        return "mega-cache" + (f" {_basename(mega_dir(cache))}" if mega_dir(cache) else "")
    return "warm cache" if cache == "warm" else f"cache {_basename(cache)}"


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The settings of a case. The order of the fields is the order of their words in a column header."""

    dtype: str = setting("float32", keyed_at_default=True, example="bfloat16",
                         words=lambda s: None if s.dtype == "float32" else
                         (f"autocast {s.dtype}" if s.autocast else s.dtype))
    quantize: str = setting("none", example="int8-weight-only",
                            words=lambda s: None if s.quantize == "none" else s.quantize)
    channels_last: bool = setting(False, only="vision", example=True,
                                  words=lambda s: "channels-last" if s.channels_last else None)
    # Allow TF32 matmuls and convolutions; None: leave torch's setting (recorded in the env).
    tf32: bool | None = setting(None, example=False,
                                words=lambda s: None if s.tf32 is None else ("TF32" if s.tf32 else "no TF32"))
    attn: str | None = setting(None, example="eager", words=lambda s: s.attn and f"attn {s.attn}")  # None: the model's
    # Timed in alternating blocks with the other variants of its model and batch.
    interleave: bool = setting(False, example=True, words=lambda s: "interleaved" if s.interleave else None)
    # Each call timed to completion (a request's latency), not pipelined (throughput).
    sync_each_call: bool = setting(False, example=True,
                                   words=lambda s: "latency (each call synced)" if s.sync_each_call else None)
    # cold, warm, a directory holding inductor's cache, or mega[:DIR] (torch's portable cache artifacts)
    compile_cache: str = setting("cold", example="warm", words=lambda s: _cache_words(s.compile_cache))
    weights: str = setting("random", keyed_at_default=True, example="pretrained",
                           words=lambda s: None if s.weights == "random" else f"{s.weights} weights")
    model_size: str = setting("full", keyed_at_default=True, example="tiny",
                              words=lambda s: None if s.model_size == "full" else f"{s.model_size} config")
    image: str | None = setting(None, keyed_at_default=True, only="vision", example="/photos/cat.png",
                                words=lambda s: s.image and f"image {_basename(s.image)}")  # None: the shipped photo
    task: str | None = setting(None, keyed_at_default=True, example="object-detection",  # --task, for a checkpoint
                               words=lambda s: s.task and f"task {s.task}")            # whose config does not say
    # A "module:function" making the inputs of a model your code builds (the Python API).
    inputs: str | None = setting(None, example="mymodels:inputs", words=lambda s: s.inputs and f"inputs {s.inputs}")
    # A run that names none: cuda when available, else cpu (the driver finds it without initializing CUDA).
    device: str = setting("cpu", keyed_at_default=True, example="cuda", shown="the hardware of its table", asked=None)
    # The model stays float32 and runs under torch.autocast(dtype): said with the dtype.
    autocast: bool = setting(False, example=True, shown="with its dtype")
    prompt_len: int | None = setting(None, only="generation", example=64, shown="the title of its table")
    # None for a vision case: only a case of a text-generation model makes tokens (Case.kind).
    new_tokens: int | None = setting(None, only="generation", example=16, shown="the title of its table",
                                     asked=DEFAULT_NEW_TOKENS)
    # None but for a case of a text-to-image pipeline: the denoiser steps that make each image (Case.kind)
    steps: int | None = setting(None, only="image", example=2, asked=None,
                                words=lambda s: s.steps and f"{s.steps} step{'s' if s.steps > 1 else ''}")

    def words(self) -> tuple[str, ...]:
        """What sets these settings apart from the guide's setup, as words for a column header."""
        return tuple(w for f in fields() if f.metadata["words"] and (w := f.metadata["words"](self)))

    def changes(self) -> dict[str, object]:
        """The settings that differ from the defaults, by name."""
        return {f.name: getattr(self, f.name) for f in fields() if getattr(self, f.name) != f.default}

    def for_kind(self, kind: str) -> dict[str, object]:
        """The settings as a model of this kind takes them: one that applies to the other kind stays at its default."""
        return {f.name: getattr(self, f.name) if f.metadata["only"] in (None, kind) else f.default for f in fields()}


def fields() -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(Settings)


def names() -> tuple[str, ...]:
    return tuple(f.name for f in fields())


def default(name: str):
    """What a run takes for this setting where the user gives nothing (the command line's default too)."""
    return next(f.metadata["asked"] for f in fields() if f.name == name)


def asked(name: str) -> dataclasses.Field:
    """The field of a run's spec for a setting whose run-level default differs from a case's: declared here."""
    return field(default=default(name))


def key_defaults() -> dict[str, object]:
    """Settings left out of a resume key at their defaults, so keys written before a setting existed still match."""
    return {f.name: f.default for f in fields() if not f.metadata["keyed_at_default"]}


def _choice(what: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise UnknownChoice(what, value, list(allowed))


def integer(option: str, value, low: int, high: int | None = None) -> None:
    ok = not isinstance(value, bool) and isinstance(value, int) and value >= low and (high is None or value <= high)
    if not ok:
        allowed = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"
        raise UserError(f"{option} must be {allowed}, got {value!r}")


def check(s: Settings) -> None:
    """Every check of the settings a user gave (device None and prompt_len None mean: found later, per model)."""
    _choice("dtype", s.dtype, DTYPES)
    _choice("weights", s.weights, WEIGHTS)
    _choice("quantization", s.quantize, QUANTIZATIONS)
    _choice("model size", s.model_size, MODEL_SIZES)
    if s.autocast and s.dtype == "float32":
        raise UserError("--autocast needs --dtype float16 or bfloat16 (the dtype autocast computes in)")
    if s.attn is not None:
        _choice("attention implementation", s.attn, ATTNS)
    kept = mega_dir(s.compile_cache)
    if kept == "":
        raise UserError("--compile-cache mega:DIR needs a folder after the colon (plain mega keeps the artifacts for "
                        "the run only)")
    if kept is not None and not os.path.isdir(kept) and not os.path.isdir(os.path.dirname(kept.rstrip("/")) or "."):
        raise UserError(f"--compile-cache mega:DIR: {kept!r} is not a folder and its parent does not exist")
    if kept is None and s.compile_cache not in COMPILE_CACHES and not os.path.isdir(s.compile_cache):
        raise UserError(f"--compile-cache must be cold, warm, mega, mega:DIR or an existing directory, got "
                        f"{s.compile_cache!r}")
    if s.device is not None and not (s.device in ("cpu", "cuda") or _is_cuda_index(s.device)):
        raise UserError(f"--device must be cpu, cuda or cuda:N, got {s.device!r}")
    if s.prompt_len is not None:
        integer("--prompt-len", s.prompt_len, 1)
    if s.new_tokens is not None:
        integer("--new-tokens", s.new_tokens, 1)
    if s.steps is not None:
        integer("--steps", s.steps, 1)


def _is_cuda_index(device: str) -> bool:
    prefix, _, index = device.partition(":")
    return prefix == "cuda" and index.isdigit()
