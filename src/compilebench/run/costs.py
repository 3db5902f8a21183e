"""How long each case of a plan is expected to take, to balance shards (core/shards.py) by: from a results file
that measured the same cases (its repeats' own seconds, phase by phase), or else estimated from the plan alone,
the same on any machine: a worker's start, the compile (growing with the model's modules, the graph dynamo
traces), the timed loop (its time budget, or its calls at a size-proportional cost) and warm-up, per repeat."""

from __future__ import annotations

from compilebench.core import shards, spec as specmod
from compilebench.core.case import Case
from compilebench.core.environment import is_cuda
from compilebench.storage.store import Store

START_S = 4.0  # a worker process's start and model build
COMPILE_S_PER_MODULE = 0.25  # on this project's 2-core VM: ResNet-50 (187 leaf modules) ~45 s, DETR (330) ~90 s
EXPORT_S_PER_MODULE = 0.05  # an engine's export and build
MODE_FACTOR = {"max-autotune": 4.0, "max-autotune-no-cudagraphs": 4.0}
CALL_S_PER_PARAMETER = 4e-9  # a forward call per parameter and batch item (ResNet-50 at batch 1: ~0.1 s)
GPU_CALL_SHARE = 0.04  # a GPU's call against this CPU's (ResNet-50 at batch 1: ~4 ms); compiles take about as long


def sizes(models: dict, model_size: str = "full") -> dict[str, tuple[int, int]]:
    """Each model's leaf modules and parameters, from its skeleton on the meta device (no memory, no weights; the
    driver imports the model's classes for it, seconds once a run); a model that cannot be built there counts as a
    middling one."""
    return {name: size(entry, model_size) for name, entry in models.items()}


def size(entry, model_size: str = "full") -> tuple[int, int]:
    """A model's (leaf modules, parameters), built once a process (a frozen entry's repr says all it builds)."""
    key = (repr(entry), model_size)
    if key not in _SIZES:
        _SIZES[key] = _built_size(entry, model_size)
    return _SIZES[key]


_SIZES: dict[tuple[str, str], tuple[int, int]] = {}


def _built_size(entry, model_size: str) -> tuple[int, int]:
    import torch

    try:
        with torch.device("meta"):
            model = entry.build("random", model_size)
    except Exception:  # noqa: BLE001 - a checkpoint that needs its weights to build: an average estimate
        return 200, 50_000_000
    return (sum(1 for m in model.modules() if not next(m.children(), None)),
            sum(p.numel() for p in model.parameters()))


def estimated(spec: specmod.RunSpec, cases: list[Case], models: dict) -> dict[str, float]:
    """Expected seconds of each case (by key), all its planned repeats, from the plan alone."""
    size = sizes(models, spec.model_size)
    out = {}
    for c in cases:
        modules, parameters = size[c.model]
        timing = spec.timing.resolve(c.timed_unit, None)
        # a generate() call runs the model once a token; a pipeline's image, its denoiser once a step
        call = CALL_S_PER_PARAMETER * parameters * c.batch_size * (c.new_tokens or c.steps or 1) * (
            GPU_CALL_SHARE if is_cuda(spec.device) else 1.0)
        timed = (timing.warmup + timing.iters) * call
        if timing.max_time_s is not None:
            timed = min(timed, timing.max_time_s + timing.warmup * call)
        prepare = 0.0
        if c.variant.engine:
            prepare = EXPORT_S_PER_MODULE * modules
        elif c.variant.compiled:
            prepare = COMPILE_S_PER_MODULE * modules * MODE_FACTOR.get(c.variant.mode, 1.0)
        out[c.key()] = (START_S + prepare + timed) * spec.repeats
    return out


def measured(path: str, cases: list[Case]) -> dict[str, float]:
    """Each case's seconds as a results file measured them (every repeat's phases, start to end); the cases it
    does not hold are left out."""
    wanted = {c.key() for c in cases}
    out: dict[str, float] = {}
    with Store.open(path, create=False, write=False) as store:
        for r in store.results():
            if r.case_key in wanted:
                seconds = sum(sum(v for v in rep.phases.values() if isinstance(v, (int, float))) for rep in r.repeats)
                out[r.case_key] = max(out.get(r.case_key, 0.0), seconds)
    return out


def expected(spec: specmod.RunSpec, cases: list[Case], models: dict, history: str | None) -> tuple[dict, str]:
    """Each case's expected seconds, and where they came from. With a results file: its measured seconds, a case
    it lacks estimated and scaled as the cases it holds were (measured over estimated)."""
    guess = estimated(spec, cases, models)
    if history is None:
        return guess, "estimate"
    seen = measured(history, cases)
    if not seen:
        return guess, "estimate"
    scale = sum(seen.values()) / sum(guess[k] for k in seen) if sum(guess[k] for k in seen) else 1.0
    return {k: seen.get(k, g * scale) for k, g in guess.items()}, history


def group_of(c: Case) -> str:
    """What must run in one shard: a model's eager twin and every variant and quantization read against it."""
    return c.eager_key(quantize="none")


def plan_of(shard: shards.Shard, spec: specmod.RunSpec, cases: list[Case], models: dict, history: str | None,
            command: str | None, version: str | None) -> shards.ShardPlan:
    seconds, source = expected(spec, cases, models, history)
    groups: dict[str, dict[str, float]] = {}
    for c in cases:
        groups.setdefault(group_of(c), {})[c.key()] = seconds[c.key()]
    return shards.ShardPlan.made(shard, groups, command, version, source, {c.key(): c.describe() for c in cases})
