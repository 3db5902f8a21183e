"""The report's words for results: load and merge stores, the newest of each case, and the names a table groups
and sorts by (hardware, torch version, column, model order).

Results are the typed Results the store returns. A report groups them by hardware and batch size (view.py), and
shows each combination of torch version, variant and non-default settings as one column. No torch, no GPU."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from compilebench.core import stats, suites
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.core.variant import Variant
from compilebench.diagnostics import peaks
from compilebench.storage import published
from compilebench.storage.store import Store


def files(paths: list[str]) -> list[str]:
    """The results given: files, and published folders (storage/published.py); a folder that is neither stands for
    every results file (*.db) and published folder under it (a sweep's shard files, a history's nightly files).
    One clear error where none is found."""
    found = []
    for path in paths:
        if os.path.isdir(path) and not published.is_published(path):
            inside = []
            for folder, subfolders, names in os.walk(path):
                if published.is_published(folder):
                    inside.append(folder)
                    subfolders.clear()
                else:
                    inside += [os.path.join(folder, n) for n in names if n.endswith(".db")]
            if not inside:
                raise UserError(f"{path!r} holds no results file (*.db) and no published folder")
            found += sorted(inside)
        elif not os.path.exists(path):
            raise UserError(f"results file {path!r} does not exist")
        else:
            found.append(path)
    return found


def read(paths: list[str]) -> tuple[list[Result], list[tuple[str, Run]]]:
    """Every result of every file (a folder: the files under it; a published folder), opened read-only once, and
    every run with the file holding it (a shard that measured nothing is known by its run alone). The same result
    in two files (one file copied into another, or merged twice) counts once: results are identified by their
    result_id, and the copy holding more repeats (one taken later in a sweep) wins."""
    seen: dict[str, Result] = {}
    runs: dict[str, tuple[str, Run]] = {}
    for path in files(paths):
        results, held = _read(path)
        for r in results:
            known = seen.get(r.result_id)
            if known is None or len(r.repeats) > len(known.repeats):
                seen[r.result_id] = r
        for run in held:
            runs.setdefault(run.run_id, (path, run))
    return list(seen.values()), list(runs.values())


def load(paths: list[str]) -> list[Result]:
    """read()'s results alone."""
    return read(paths)[0]


def _read(path: str) -> tuple[list[Result], list[Run]]:
    """A results file's results and runs, or a published folder's (its runs: those its results name)."""
    if os.path.isdir(path):
        results = published.results(path)
        return results, list({run.run_id: run for r in results for run in r.runs}.values())
    with Store.open(path, create=False, write=False) as store:
        return store.results(), list(store.runs().values())


def latest(results: list[Result], key=lambda r: (r.case_key, r.machine_id)) -> list[Result]:
    """The newest result of each case on each machine (a --rerun supersedes, it does not average); `key`: of each
    what else (a setting of one shapes table), in the order each was first met."""
    newest: dict = {}
    for r in results:
        k = key(r)
        if k not in newest or r.created_at >= newest[k].created_at:
            newest[k] = r
    return list(newest.values())


def alike(results: list[Result], order=lambda r: r.created_at, **eager_changes) -> list[list[Result]]:
    """Results that differ only by their variant (and by the settings named in `eager_changes`), on one hardware
    and torch version, in `order`: a table each of the start-up and shapes views, as the View's groups are the
    guide's."""
    split: dict[tuple, list[Result]] = {}
    for r in sorted(results, key=order):
        split.setdefault((hardware(r), torch_version(r), r.case.eager_key(**eager_changes)), []).append(r)
    return list(split.values())


def hardware(r: Result) -> str:
    return r.env.hardware


def torch_version(r: Result) -> str:
    """The public version, without the local build tag: '2.13.0', '2.1.0.dev20230601'."""
    return r.env.torch_version


def _version_key(version: str) -> tuple:
    """PEP 440 order (2.1.0.dev20230601 < 2.1.0rc1 < 2.1.0 < 2.10.0); a version packaging cannot read sorts last."""
    try:
        return (0, Version(version))
    except InvalidVersion:
        return (1, version)


def torch_labels(results: list[Result]) -> dict[str, str]:
    """Version -> the guide's short label ('2.0'); the full version where two versions share major.minor."""
    versions = {torch_version(r) for r in results}
    short = {v: ".".join(v.split(".")[:2]) for v in versions}
    clash = {s for s in short.values() if list(short.values()).count(s) > 1}
    return {v: (v if short[v] in clash else short[v]) for v in versions}


def settings(r: Result) -> tuple[str, ...]:
    """What else makes this case differ from the guide's setup, as words for a header."""
    return r.case.words() + (("inline nn.Module",) if r.inline_model else ())


def settings_said(r: Result) -> str:
    """' (int8-dynamic, channels-last)': the settings that set a case apart from its neighbours, to follow its name."""
    words = settings(r)
    return f" ({', '.join(words)})" if words else ""


def with_settings(label: str, settings_: tuple[str, ...]) -> str:
    """'compile' + ('bfloat16', 'channels-last') -> 'compile, bfloat16, channels-last'."""
    return ", ".join([label, *settings_])


@dataclass(frozen=True, order=True)
class Column:
    """One column of a guide table: a torch version, a variant and the settings that set it apart."""

    sort_key: tuple
    torch: str  # the label: '2.13', or '2.13 [nightly]' under --env
    variant: Variant
    settings: tuple[str, ...]

    @property
    def header(self) -> str:
        return with_settings(f"torch {self.torch} - {self.variant.label}", self.settings)


def _sort_key(version_key: tuple, v: Variant, settings_: tuple[str, ...]) -> tuple:
    return (version_key, settings_, v.order, v.label)


def in_environment(label: str, r: Result) -> str:
    """A label with the --env environment the result ran under, where it ran under one: '2.13 [nightly]'."""
    return f"{label} [{r.case.environment}]" if r.case.environment else label


def stack(r: Result, labels: dict[str, str]) -> str:
    """The software a result ran on, as a column names it: its torch label ('2.13'), and the environment's name where
    it ran under --env ('2.13 [nightly]')."""
    return in_environment(labels[torch_version(r)], r)


def column(r: Result, labels: dict[str, str]) -> Column:
    v = r.case.variant
    s = settings(r)
    return Column(_sort_key((_version_key(torch_version(r)), r.case.environment or ""), v, s), stack(r, labels), v, s)


def model_order(results: list[Result]) -> list[str]:
    """The guide's row order, then any other model in the order it first appears."""
    order = {name: i for i, name in enumerate(suites.GUIDE_MODELS)}
    models = list(dict.fromkeys(r.case.model for r in results))
    return sorted(models, key=lambda m: order.get(m, len(order)))


def model_label(results: list[Result], model: str) -> str:
    """The guide's 'Task/Model' row label where the result has one, else the model's name."""
    return next((r.label for r in results if r.case.model == model and r.label), model)


def achieved_tflops(r: Result) -> float | None:
    ms = r.measured_mean
    return r.flops / (ms / 1e3) / 1e12 if r.flops and ms else None


def peak(r: Result) -> peaks.Peak | None:
    """The datasheet peak of the math this result's dtype and TF32 setting allow on its GPU (None on CPU)."""
    env = r.env
    if not env.is_cuda:
        return None
    return peaks.peak(str(env.device_name or ""), r.case.dtype, env.uses_tf32(r.case.dtype))


def peak_fraction(r: Result) -> float | None:
    achieved, p = achieved_tflops(r), peak(r)
    return achieved / p.tflops if achieved is not None and p else None


@dataclass
class HostPeaks:
    """What a machine's workers measured of it (bandwidth.host_peaks): its streaming copy, its matmul rate per
    dtype."""

    stream_gbs: float | None = None
    matmul_gflops: dict = field(default_factory=dict)  # dtype -> GFLOP/s


def host_peaks(results: list[Result]) -> dict[str, HostPeaks]:
    """Per machine (Environment.machine): the peaks its workers measured, from every repeat that measured them (the
    first worker of a run on the machine, per dtype); the newest wins."""
    out: dict[str, HostPeaks] = {}
    for r in results:
        for rep in r.repeats:
            p = rep.host_peaks
            if p.stream_gbs is None and p.matmul_gflops is None:
                continue
            found = out.setdefault(rep.environment.machine if rep.environment else r.env.machine, HostPeaks())
            found.stream_gbs = p.stream_gbs if p.stream_gbs is not None else found.stream_gbs
            if p.matmul_gflops is not None:
                found.matmul_gflops[p.dtype] = p.matmul_gflops
    return out


def peak_bandwidth(r: Result, host: HostPeaks | None) -> tuple[float, str] | None:
    """Bytes per second the result's device can move, and what the figure is: a GPU's datasheet bandwidth, a CPU's
    measured streaming copy."""
    if r.env.is_cuda:
        found = peaks.bandwidth_gbs(str(r.env.device_name or ""))
        return (found[1] * 1e9, f"{found[0]} datasheet {found[1]:g} GB/s") if found else None
    gbs = host.stream_gbs if host else None
    return (gbs * 1e9, f"streaming copy measured here {gbs:g} GB/s") if gbs else None


def peak_flops(r: Result, host: HostPeaks | None) -> tuple[float, str] | None:
    """FLOP/s the result's device can compute in its math: a GPU's datasheet peak, a CPU's measured matmul rate."""
    p = peak(r)
    if p:
        return p.tflops * 1e12, f"{p.device} {p.math} {p.tflops:g} TFLOP/s"
    gflops = host.matmul_gflops.get(r.case.dtype) if host else None
    return (gflops * 1e9, f"{r.case.dtype} matmul measured here {gflops:g} GFLOP/s") if gflops else None


def achieved_gbs(r: Result) -> float | None:
    """The bytes a forward call moves over its mean time."""
    ms = r.measured_mean
    return r.bytes_moved / (ms / 1e3) / 1e9 if r.bytes_moved and ms else None


def decode_gbs(r: Result) -> tuple[float, float | None, float | None] | None:
    """Text generation: the bytes a decode step must read over the time per token, GB/s with its 95% interval (the
    slow end of the time's interval is the low end of the bandwidth's)."""
    moved, est = r.generation.decode_bytes.per_step, r.generation.per_token
    if not moved or not est.mean or r.status not in ("ok", "mismatch"):
        return None
    rate = lambda ms: moved / (ms / 1e3) / 1e9 if ms else None  # noqa: E731
    return rate(est.mean), rate(est.ci95_high), rate(est.ci95_low)


def flag_counts(results: list[Result]) -> dict[str, int]:
    """How many results carry each flag."""
    from compilebench.core.vocab import FLAGS

    latest_ = latest(results)
    return {f: sum(1 for r in latest_ if f in r.flags) for f in FLAGS}


def shared_process(a: Result | None, b: Result | None) -> bool:
    """Whether two results were measured in the same worker processes (--interleave): a process's peak memory is
    then both's, so the two peaks read alike whatever compiling did to memory."""
    mine = {rep.process for rep in (a.repeats if a else []) if rep.process}
    return any(rep.process in mine for rep in (b.repeats if b else []) if rep.process)


def process_peaks(r: Result) -> list[float]:
    """Each process's peak memory (bytes), of the repeats measured ok."""
    return [rep.peak_mem_bytes for rep in r.repeats if rep.status == "ok" and rep.peak_mem_bytes]


def memory_ratio(before: Result | None, after: Result) -> tuple[float, float | None, float | None] | None:
    """`after`'s peak memory over `before`'s with its 95% interval, from each process's peak (log space, as a
    latency's: stats.ratio), the one figure the tables, the suite's compression and `check` read: a CPU's peak RSS
    moves from one process to another (the quick suite's DETR: 1,086 to 1,278 MiB over three processes of one run),
    a GPU allocator's does not. None where a side measured none, the two were measured differently (the allocator's,
    the process's RSS) or in the same processes (--interleave: one peak, both's)."""
    if before is None or before.peak_mem_kind != after.peak_mem_kind or shared_process(before, after):
        return None
    b, a = process_peaks(before), process_peaks(after)
    return stats.ratio(b, a) if b and a else None


def decode_tokens_per_s(r: Result) -> float | None:
    """Tokens decoded per second after the first, every sequence of the batch counted."""
    per_token = r.generation.per_token.mean
    return r.case.batch_size * 1e3 / per_token if r.mean is not None and per_token else None


def e2e_tokens_per_s(r: Result) -> float | None:
    """New tokens per second of whole generate() calls, prefill included, every sequence counted."""
    m = r.mean
    return r.case.batch_size * r.case.new_tokens * 1e3 / m if m and r.case.generation else None


def require(results: list[Result], paths: list[str]) -> None:
    """An empty store is bad input for a report: one clear line rather than an empty page."""
    if not results:
        raise UserError(f"no results in {', '.join(paths)}: nothing to report (`compilebench run --db {paths[0]}` fills it)")
