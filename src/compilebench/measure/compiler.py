"""Applying a Variant to a model, and reading what the compiler did (graphs, breaks, compile time, cache hits).

What dynamo did is read from its compilation metrics (`torch._dynamo.utils.get_compilation_metrics`, one record
per compiled frame) where the installed torch has them; graph-break reasons exist only in dynamo's counters.
Both are read here and nowhere else."""

from __future__ import annotations

import collections
import contextlib
import difflib
import inspect
import os
import re
import tempfile
from dataclasses import dataclass, field

from compilebench import kinds
from compilebench.core.errors import UserError
from compilebench.core.variant import Variant
from compilebench.measure import cpu_checks


def compile_kwargs(variant: Variant) -> dict:
    """torch.compile's arguments for a variant. torch.compile takes a mode or inductor options, never both: with
    options, the mode's own options (`torch._inductor.list_mode_options`) are merged under the user's."""
    kinds.register_backend(variant.backend)  # an engine's own backend (openvino) registers as it is imported
    kwargs = {"backend": variant.backend, "fullgraph": variant.fullgraph, "dynamic": variant.dynamic}
    mode = variant.compile_mode
    if variant.options:
        from torch._inductor import list_mode_options

        own = list_mode_options(mode) if mode else {}  # list_mode_options(None) lists every mode's table
        kwargs["options"] = {**own, **dict(variant.options)}
    else:
        kwargs["mode"] = mode
    return kwargs


DYNAMO_RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit's default


def apply(model, variant: Variant, *, shared: bool = False):
    """The callable to time: the model itself, torch.compile of it with the variant's settings, or (scope
    "regions") the model with each repeated block compiled. `shared`: other variants call the same model object
    (--interleave), so compiled blocks are in place only during this variant's calls."""
    if not variant.compiled:
        return model
    import torch

    if getattr(model, "optimized_part", None) is not None:
        return Part(model, variant)
    if variant.scope == "regions":
        return Regions(model, variant, shared)
    return torch.compile(model, **compile_kwargs(variant))


class Part:
    """A model of which torch.compile compiles one part (a pipeline's denoiser: `optimized_part`), the rest running
    as it is (its loop, its scheduler, its decoder unless the variant compiles it too). The compiled part is
    swapped in for each call alone (`part_replaced`; regions: their blocks installed), so other variants may share
    the model."""

    def __init__(self, model, variant: Variant):
        import torch

        self.model = model
        self.compiled = apply(model.optimized_part, variant, shared=True)
        self.regional = isinstance(self.compiled, Regions)
        if variant.mark_dynamic and self.regional:  # the blocks' inputs are made inside the denoiser
            raise ValueError("mark_dynamic marks the denoiser's inputs: its regions' inputs are made inside it")
        # --dynamic mark: the dimensions that follow the image's size, marked on each call's inputs
        self.called = model.marking(self.compiled) if variant.mark_dynamic else self.compiled
        self.decoder = torch.compile(model.decoder, **compile_kwargs(variant)) if variant.decoder else None
        if self.decoder is not None and variant.mark_dynamic:
            self.decoder = model.decoder_marking(self.decoder)

    def classes(self) -> dict[str, int]:
        return regions_of(self.compiled)

    def __call__(self, *args, **kwargs):
        denoiser = self.model.optimized_part if self.regional else self.called
        call = self.compiled.around(self.model) if self.regional else self.model
        with self.model.part_replaced(denoiser, self.decoder):
            return call(*args, **kwargs)


class Regions:
    """Regional compilation: torch.compile of each block of the classes named (--region) or of the model's own
    list of repeated blocks (diffusers' `_repeated_blocks`, else transformers' `_no_split_modules`), as
    nn.Module.compile does it. Blocks of one
    class run one code object, so identical blocks share its compiled graphs; its recompile limit is raised to
    the number of blocks (where torch.compile takes one), since blocks of several shapes each need a graph of
    their own, and a limit hit anyway is recorded (compile_stats) rather than silently run eagerly."""

    def __init__(self, model, variant: Variant, shared: bool):
        import torch

        self.model, self.shared = model, shared
        names = variant.regions or tuple(sorted(getattr(model, "_repeated_blocks", None)
                                                or getattr(model, "_no_split_modules", None) or ()))
        self.blocks = _outermost(model, set(names))
        found = {type(m).__name__ for m in self.blocks}
        if not self.blocks or (variant.regions and found != set(names)):
            missing = ", ".join(n for n in names if n not in found) or "none named"
            raise ValueError(f"--compile-scope regions: {type(model).__name__} has no block of class {missing}; "
                             f"classes it repeats: {repeated_classes(model)} (name one with --region CLASS)")
        kwargs = compile_kwargs(variant)
        if "recompile_limit" in inspect.signature(torch.compile).parameters:
            kwargs["recompile_limit"] = DYNAMO_RECOMPILE_LIMIT * len(self.blocks)  # each block: a whole model's
        self.compiled = [torch.compile(m._call_impl, **kwargs) for m in self.blocks]
        if not shared:
            self._install(True)

    def classes(self) -> dict[str, int]:
        """The blocks compiled, by class: {"LlamaDecoderLayer": 30}."""
        return dict(collections.Counter(type(m).__name__ for m in self.blocks))

    def _install(self, on: bool) -> None:
        # The instance's own dict: nn.Module.__setattr__ would cost microseconds per block and call
        for block, fn in zip(self.blocks, self.compiled):
            block.__dict__["_compiled_call_impl"] = fn if on else None

    def around(self, fn):
        """fn, run with the blocks compiled (in place only for the call when the model is shared)."""
        if not self.shared:
            return fn

        def call(*args, **kwargs):
            self._install(True)
            try:
                return fn(*args, **kwargs)
            finally:
                self._install(False)

        return call

    def __call__(self, *args, **kwargs):
        return self.around(self.model)(*args, **kwargs)


def _outermost(model, names: set[str]) -> list:
    """The submodules of these classes that no other of them contains: a block inside a compiled block is traced
    into its graph (ConvNext's layers inside its stages)."""
    out, inside = [], []
    for path, module in model.named_modules():
        if not path or type(module).__name__ not in names or any(path.startswith(p + ".") for p in inside):
            continue
        out.append(module)
        inside.append(path)
    return out


def regions_of(fn) -> dict[str, int]:
    """The blocks a timed callable compiled, by class ({} for a whole-model compile or eager)."""
    return fn.classes() if isinstance(fn, (Regions, Part)) else {}


def repeated_classes(model) -> str:
    """The classes of the submodules that occur more than once, most frequent first: '13 ResNetConvLayer, ...'."""
    counts = collections.Counter(type(m).__name__ for m in model.modules()
                                 if not type(m).__module__.startswith("torch."))  # Conv2d, Linear: not blocks
    return ", ".join(f"{n} {name}" for name, n in counts.most_common(6) if n > 1) or "none"


def reset_dynamo() -> None:
    """Forget every compiled graph and counter, so this case compiles from nothing (inline isolation needs it)."""
    import torch._dynamo
    from torch._dynamo.utils import compilation_time_metrics, counters

    torch._dynamo.reset()
    cpu_checks.watch()  # imported with dynamo: costs nothing here
    cpu_checks.reset()
    counters.clear()
    compilation_time_metrics.clear()
    metrics = _metrics_api()
    if metrics:
        metrics.clear_compilation_metrics()
        metrics.set_compilation_metrics_limit(1 << 16)  # the default keeps the last 64 frames only


def forget_compiled() -> None:
    """Drop every compiled artefact held in memory (dynamo's caches, inductor's loaded modules), keeping the
    on-disk caches: the next compile starts as a new process with a warm cache directory would."""
    from torch._inductor.utils import clear_caches

    reset_dynamo()
    clear_caches()


def _metrics_api():
    """dynamo's compilation-metrics functions, or None on a torch that has none."""
    try:
        from torch._dynamo import utils
    except ImportError:
        return None
    needed = ("get_compilation_metrics", "clear_compilation_metrics", "set_compilation_metrics_limit")
    return utils if all(hasattr(utils, n) for n in needed) else None


def graph_count() -> int:
    """Graphs compiled so far in this process."""
    metrics = _metrics_api()
    if metrics:
        return sum(1 for m in metrics.get_compilation_metrics() if m.graph_op_count)
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


def compile_records() -> list:
    """dynamo's compilation metrics so far, one record per frame compiled (empty on a torch without them)."""
    metrics = _metrics_api()
    return list(metrics.get_compilation_metrics()) if metrics else []


def compiled_since(records: list, graphs_before: int) -> dict:
    """What the compiler did since `records` were the metrics and `graphs_before` the graph count: graphs compiled,
    seconds, dynamo's reason for each recompile, frames given up at the recompile limit."""
    new = compile_records()[len(records):]
    return {"compiles": graph_count() - graphs_before,
            "compile_s": sum(m.entire_frame_compile_time_s or 0.0 for m in new),
            "recompile_reasons": [_first_line(why) for m in new if (why := getattr(m, "recompile_reason", None))],
            "limit_hits": sum(1 for m in new if _hit_limit(getattr(m, "fail_reason", None)))}


@dataclass
class CompileStats:
    compile_s: float  # dynamo's own timer around each frame compilation (tracing + backend), summed
    graphs: int
    cache_hits: int  # graphs inductor loaded from its on-disk FX-graph cache instead of compiling
    graph_breaks: int
    break_reasons: list[str] = field(default_factory=list)
    recompile_reasons: list[str] = field(default_factory=list)  # dynamo's, one per recompile (a guard that failed)
    phases: dict = field(default_factory=dict)  # compile_s split: dynamo (tracing), aot (autograd), inductor
    limit_hits: int = 0  # frames dynamo gave up on at its recompile limit: they run uncompiled from then on


def phases(records) -> dict:
    """dynamo's compilation metrics split into its phases, summed over the frames compiled: dynamo's tracing (the
    frame's time outside the backend), AOT autograd (the backend's outside inductor), inductor (and, within it,
    code generation). Empty where torch records no backend time."""
    frame = sum(r.entire_frame_compile_time_s or 0.0 for r in records)
    backend = sum(r.backend_compile_time_s or 0.0 for r in records)
    if not records or not backend:
        return {}
    inductor = sum(r.inductor_compile_time_s or 0.0 for r in records)
    return {"dynamo_s": max(0.0, frame - backend), "aot_s": max(0.0, backend - inductor), "inductor_s": inductor,
            "codegen_s": sum(r.code_gen_time_s or 0.0 for r in records)}


def _first_line(reason: str) -> str:
    """A guard failure's first line, without the source comment dynamo pads it with: '0/0: len(kwargs) == 6'."""
    line = str(reason).strip().splitlines()[0] if str(reason).strip() else ""
    return " ".join(re.split(r"\s{2,}#", line)[0].split())


def compile_stats() -> CompileStats:
    from torch._dynamo.utils import compilation_time_metrics, counters

    metrics = _metrics_api()
    records = metrics.get_compilation_metrics() if metrics else []
    if metrics:
        compile_s = sum(m.entire_frame_compile_time_s or 0.0 for m in records)
        hits = sum(m.inductor_fx_local_cache_hit_count or 0 for m in records)
    else:
        compile_s = sum(compilation_time_metrics.get("_compile.compile_inner", []))
        hits = counters["inductor"]["fxgraph_cache_hit"]
    reasons = counters["graph_break"]  # the only record of why a graph broke
    recompiles = [_first_line(why) for m in records if (why := getattr(m, "recompile_reason", None))]
    split = phases(records)
    if split and (checks := cpu_checks.spent()) is not None:
        split["cpu_checks_s"] = checks  # within inductor's phase: the machine's part of it
    return CompileStats(float(compile_s), graph_count(), int(hits), sum(reasons.values()),
                        sorted(r.strip().splitlines()[0] for r in reasons), recompiles, split,
                        sum(1 for m in records if _hit_limit(getattr(m, "fail_reason", None))))


def _hit_limit(fail_reason) -> bool:
    """Whether a frame's compile failed at dynamo's recompile limit ('Dynamo recompile limit exceeded'; older
    torch: 'cache_size_limit reached')."""
    text = str(fail_reason or "").lower()
    return "recompile limit" in text or "recompile_limit" in text or "cache_size_limit" in text


def backends() -> list[str]:
    import torch._dynamo

    return sorted(torch._dynamo.list_backends(exclude_tags=()))


def check_options(options: tuple[tuple[str, object], ...]) -> None:
    """Each option must name a setting of the installed torch's inductor config, with a value of its type."""
    if not options:
        return
    with _leaving_no_cache_dir():
        from torch._inductor import config

        known = config.get_config_copy()
    for key, value in options:
        if key not in known:
            near = difflib.get_close_matches(key, list(known), n=3, cutoff=0.6)
            hint = f"; closest: {', '.join(near)}" if near else ""
            raise UserError(f"--inductor-option {key}: torch {_torch_version()} has no inductor option {key!r}{hint} "
                            "(`python -c \"import torch._inductor.config as c; print(sorted(c.get_config_copy()))\"` "
                            "lists them)")
        default = known[key]
        ok = (isinstance(default, bool) and isinstance(value, bool)) or (
            not isinstance(default, bool) and isinstance(default, (int, float)) and isinstance(value, (int, float))
            and not isinstance(value, bool)) or (isinstance(default, str) and isinstance(value, str)) or default is None
        if not ok:
            raise UserError(f"--inductor-option {key}={value!r}: inductor's {key} takes a {type(default).__name__} "
                            f"(default {default!r})")


@contextlib.contextmanager
def _leaving_no_cache_dir():
    """Importing inductor's config makes its cache folder ($TMPDIR/torchinductor_<user>) and sets
    TORCHINDUCTOR_CACHE_DIR in this process: checking options must change nothing, so both are undone (the folder
    only where this made it and it is still empty)."""
    before = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    existed = set(os.listdir(tempfile.gettempdir())) if before is None else None
    try:
        yield
    finally:
        made = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
        if before is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
            if made and os.path.dirname(made) == os.path.abspath(tempfile.gettempdir()) \
                    and os.path.basename(made) not in existed:
                with contextlib.suppress(OSError):
                    os.rmdir(made)  # only an empty folder goes


def _torch_version() -> str:
    import torch

    return torch.__version__.split("+")[0]
