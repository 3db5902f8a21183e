"""Results written by earlier schemas, as this one stores them: read so by a report (a file opened read-only is
never changed), and so written when a run migrates its file (schema.py).

- Schema 1 (0.1: one process per result, its samples at the top): one repeat of a schema-2 result (upgrade_v1).
- Schema 2 (0.2.0 to dca6dfc: the run's facts stamped on every repeat, the environment and the timing on the
  result, every derived figure stored beside the repeats): each repeat gets the result's environment (the first
  repeat the host peaks it held), the clock and FLOPs; the runs its repeats name become rows of their own (tag,
  design, pairing, timing resolved per kind of timed unit, isolation, what each left undecided); a result whose
  repeats name no run gets a run of its own that says so (`recorded` False), holding its timing and isolation;
  what was derived is dropped (it is derived again when read)."""

from __future__ import annotations

import dataclasses
import json

from compilebench.core.case import Case
from compilebench.core.job import TimingPolicy
from compilebench.core.repeat import METRICS, Repeat
from compilebench.core.result import DERIVED, Result
from compilebench.core.run import Run

# What a schema-2 result held beside its identity and repeats: derived, or moved to its repeats and runs.
_V2_RESULT = {f.name for f in METRICS} | set(DERIVED) | {
    "env", "timing_policy", "clock", "flops", "inline_model", "isolation", "tag", "looks", "design", "pair_from",
    "undecided_by"}
_V2_REPEAT_RUN = ("tag", "looks", "design", "pair_from", "undecided_by")  # the run's facts, stamped on each repeat
_HOST_PEAKS = "host_"  # the env's keys of a CPU's measured peaks: host_stream_gbs, host_matmul_gflops_<dtype>


def upgrade_v1(d: dict) -> dict:
    """A result written by schema 1 (one process, its samples at the top) as one repeat of a schema-2 result."""
    repeat_fields = {f.name for f in dataclasses.fields(Repeat)}
    rep = {k: d[k] for k in repeat_fields if k in d and k not in ("index", "process", "flags", "extra", "stats")}
    rep["compile_cache"] = "cold" if d.get("compile_cache", "cold") == "cold" else (
        "warm" if d.get("compile_cache") == "warm" else "dir")
    repeat = Repeat(index=1, process=d["result_id"], **rep)
    repeat.set_samples([round(s * 1e6) for s in d.get("samples_ms") or []])
    top = {k: v for k, v in d.items() if k not in repeat_fields or k in ("created_at",)}
    return {**top, "repeats": [repeat.to_dict()]}


def upgrade_v2(d: dict, runs: dict[str, Run]) -> dict:
    """A schema-2 result as stored now; the runs its repeats name are added to `runs` (by id, merged with what
    other results of the file said of them)."""
    env = dict(d.get("env") or {})
    peaks = {k: env.pop(k) for k in list(env) if k.startswith(_HOST_PEAKS)}
    case = Case.from_dict(d["case"])
    timing = {case.timed_unit: _timing(d.get("timing_policy") or {}, case, env.get("device"))}
    repeats = []
    for i, rep in enumerate(sorted(d.get("repeats") or [], key=lambda r: r.get("index", 1))):
        said = {k: rep.get(k) for k in _V2_REPEAT_RUN}
        rep = {k: v for k, v in rep.items() if k not in _V2_REPEAT_RUN}
        rep["run"] = _run(rep.get("run"), d, said, timing, env, runs).run_id
        rep.setdefault("environment", env)
        rep.setdefault("clock", d.get("clock"))
        if d.get("flops") is not None:
            rep.setdefault("flops", d["flops"])
        if d.get("inline_model"):
            rep.setdefault("inline_model", True)
        if i == 0 and peaks:
            rep.setdefault("host_peaks", _peaks(peaks))
        repeats.append(rep)
    kept = {k: v for k, v in d.items() if k not in _V2_RESULT and k != "repeats"}
    return {**kept, "repeats": repeats}


def upgrade(d: dict, schema: int, runs: dict[str, Run]) -> dict:
    """A result stored under `schema`, as stored now (its runs into `runs`)."""
    if schema == 1:
        d = upgrade_v1(d)
    return upgrade_v2(d, runs) if schema <= 2 else d


def results(rows: list[str], schema: int, runs: dict[str, Run]) -> list[Result]:
    """Results stored under an older schema, read as this one reads them (their runs added to `runs`)."""
    upgraded = [upgrade(json.loads(data), schema, runs) for data in rows]
    return [Result.from_dict(d, runs) for d in upgraded]


def _run(run_id: str | None, d: dict, said: dict, timing: dict, env: dict, runs: dict[str, Run]) -> Run:
    """The run a schema-2 repeat names, made from what its repeats said of it (or, naming none, one of the result's
    own that says its run was not recorded)."""
    rid = run_id or f"unrecorded-{d['result_id']}"
    run = runs.get(rid)
    if run is None:
        run = runs[rid] = Run(run_id=rid, tag=said["tag"], design=list(said["design"] or []), looks=said["looks"],
                              pair_from=said["pair_from"], isolation=d.get("isolation") or "process",
                              compilebench=env.get("compilebench"), host=env.get("hostname"), started=d["created_at"],
                              recorded=run_id is not None)
    run.timing = {**timing, **run.timing}
    run.tag = run.tag or said["tag"]
    run.started = min(run.started, d["created_at"])
    if said["undecided_by"]:
        run.undecided[d["result_id"]] = said["undecided_by"]
    return run


def _timing(policy: dict, case: Case, device: str | None):
    known = {f.name for f in dataclasses.fields(TimingPolicy)}
    return TimingPolicy(**{k: v for k, v in policy.items() if k in known}).resolve(case.timed_unit,
                                                                                   device or case.device)


def _peaks(env: dict) -> dict:
    """The env's host_* keys as a HostPeaks record's dict."""
    matmul = {k: v for k, v in env.items() if k.startswith("host_matmul_gflops_")}
    dtype, gflops = next(iter(matmul.items()), (None, None))
    return {"dtype": dtype and dtype.removeprefix("host_matmul_gflops_"), "stream_gbs": env.get("host_stream_gbs"),
            "matmul_gflops": gflops, "error": env.get("host_peaks_error")}

