"""The command that measures a result's case again: `compilebench run ...` (or `compilebench shapes ...` for a
result that served several shapes) with the case's model, batch, variant, compile flags, settings, environment,
device kind and timing, and the number of processes the result has; no results file, so it measures into the
user's own. `compilebench run --from-row ID` runs it into the file the row came from. Pure data: the options are
spelled as cli/groups.py declares them, which tests/test_reproduce.py checks by parsing every command back."""

from __future__ import annotations

import shlex

from compilebench.core import settings as settingsmod, traffic
from compilebench.core.job import TimingPolicy
from compilebench.core.result import Result
from compilebench.core.variant import Variant

PROGRAM = "compilebench"
# Settings a command line spells otherwise than --NAME VALUE (a bool alone), or cannot say.
_SPELLED = {"model_size": lambda v: ["--tiny"] if v == "tiny" else None,
            "tf32": lambda v: ["--tf32" if v else "--no-tf32"]}
# Timing's options by Timing field: --NAME VALUE
_TIMING = {"iters": "--iters", "warmup": "--warmup", "max_time_s": "--max-time", "min_iters": "--min-iters",
           "first_calls": "--first-calls", "warmup_s": "--warmup-time", "warmup_cap_s": "--warmup-cap"}


def why_not(r: Result) -> str | None:
    """Why no command measures this result again; None where one does."""
    if r.inline_model:
        return "an nn.Module object measured in your Python process: measure it again from your code"
    if r.case.inputs:
        return "a model your code builds (its inputs made by your function): measure it again with compilebench.benchmark"
    if r.case.model_size not in ("full", "tiny"):
        return f"model size {r.case.model_size!r} has no option"
    return None


def argv(r: Result) -> list[str] | None:
    """The command's words (PROGRAM first), or None where none measures it again (why_not says why)."""
    if why_not(r):
        return None
    c = r.case
    words = [PROGRAM, "shapes" if c.shapes else "run", "--model", c.model]
    words += _served(r) if c.shapes else _grid(r)
    words += _compile_flags(c.variant, shapes=bool(c.shapes))
    words += _settings(r)
    words += _timing(r)
    words += ["--repeats", str(max(1, len(r.repeats)))]
    if r.isolation != "process":
        words += ["--isolation", r.isolation]
    words += _environment(r)
    return words


def command(r: Result) -> str | None:
    """argv as one line a shell runs as written."""
    words = argv(r)
    return shlex.join(words) if words else None


def _grid(r: Result) -> list[str]:
    """`run`'s batch and variant: an interleaved case is timed beside another variant of its model and batch, so
    its command names eager beside it (or, for eager, the default mode: any compiled partner keeps its key)."""
    c = r.case
    variants = [c.variant.name]
    if c.interleave:
        variants = ["eager", c.variant.name] if c.variant.compiled else [c.variant.name, "default"]
    return ["--batch-size", str(c.batch_size), "--variant", *variants]


def _served(r: Result) -> list[str]:
    """`shapes`' shapes (the batch sizes at each photo size or prompt length, in the order served) and the one
    setting compared beside eager (eager's own command compares torch's automatic dynamic shapes)."""
    c, v = r.case, r.case.variant
    shapes = [traffic.Shape.parse(t) for t in c.shapes]
    words = ["--batch-size", *dict.fromkeys(str(s.batch) for s in shapes)]
    images = list(dict.fromkeys(f"{s.image[0]}x{s.image[1]}" for s in shapes if s.image))
    prompts = list(dict.fromkeys(str(s.prompt) for s in shapes if s.prompt))
    words += ["--image-size", *images] if images else []
    words += ["--prompt-len", *prompts] if prompts else []
    loras = list(dict.fromkeys(str(s.lora) for s in shapes if s.lora))
    words += ["--lora", *loras] if loras else []
    setting = ("mark" if v.mark_dynamic else "false" if v.dynamic is False else "true" if v.dynamic else "auto")
    words += ["--dynamic", setting]
    if v.pad_to:
        words += ["--pad-to", *map(str, v.pad_to)]
    if v.lora_hotswap:
        words += ["--lora-hotswap"]
    if v.scope == "regions":
        words += ["--regional"]
    if v.compiled and v.compile_mode:
        words += ["--mode", v.mode]
    return words


def _compile_flags(v: Variant, shapes: bool) -> list[str]:
    if not v.compiled:
        return []
    words = [] if v.backend == "inductor" else ["--backend", v.backend]
    words += ["--fullgraph"] if v.fullgraph else []
    words += ["--compile-decoder"] if v.decoder else []
    if v.dynamic is not None and not shapes:  # shapes says it with its --dynamic setting
        words += ["--dynamic" if v.dynamic else "--no-dynamic"]
    for key, value in v.options:
        words += ["--inductor-option", f"{key}={value}"]
    if v.scope != "model" and not shapes:  # shapes says it with --regional
        words += ["--compile-scope", v.scope]
    if v.regions:
        words += ["--region", *v.regions]
    return words


def _settings(r: Result) -> list[str]:
    """Every setting away from what a run takes by default; the device always (its kind: a CPU result stays on
    the CPU of a machine with a GPU, and a GPU result takes the machine's own GPU)."""
    c, words = r.case, []
    for f in settingsmod.fields():
        value = getattr(c, f.name)
        if f.name == "device":
            words += ["--device", value.split(":")[0]]
        elif f.name == "prompt_len":
            words += ["--prompt-len", str(value)] if value is not None and not c.shapes else []
        elif value != settingsmod.default(f.name) and value is not None:
            if f.name in _SPELLED:
                words += _SPELLED[f.name](value) or []
            elif isinstance(value, bool):
                words += [_flag(f.name)] if value else []
            else:
                words += [_flag(f.name), str(value)]
    return words


def _timing(r: Result) -> list[str]:
    """The timing the result was measured with (its run's, resolved for its kind of timed unit), where it differs
    from what the same command without timing options would resolve to."""
    timing = r.timing
    if timing is None:
        return []
    unit, device = r.case.timed_unit, r.case.device
    plain = TimingPolicy().resolve(unit, device)
    asked = TimingPolicy(**{name: getattr(timing, name) for name in _TIMING if name != "min_iters"
                            and getattr(timing, name) != getattr(plain, name)})
    floor = asked.resolve(unit, device)  # --min-iters' default follows --iters
    words = []
    for name, option in _TIMING.items():
        value = getattr(timing, name)
        if value is not None and value != getattr(floor if name == "min_iters" else plain, name):
            words += [option, f"{value:g}" if isinstance(value, float) else str(value)]
    return words


def _environment(r: Result) -> list[str]:
    """--env NAME=PATH (the interpreter it ran under, as recorded) and its --env-set variables."""
    name, python = r.case.environment, r.env.environment_python
    if not name:
        return []
    words = ["--env", f"{name}={python}"]
    for assignment in (r.env.environment_set or "").split():
        words += ["--env-set", name, assignment]
    return words


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
