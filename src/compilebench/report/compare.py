"""`compilebench compare A.db B.db`: the same cases side by side (two GPUs, two torch versions, cold vs warm
compile cache), with the ratio of B's mean time to A's, its 95% CI and a verdict.

Cases match on everything but the device, so a GPU can be compared with another GPU or with a CPU."""

from __future__ import annotations

import dataclasses

from compilebench import stats
from compilebench.errors import UserError
from compilebench.report import data
from compilebench.report.tables import Table, cell, num
from compilebench.spec import Case


def match_key(r: dict) -> str:
    return dataclasses.replace(Case.from_dict(r["case"]), device="").key()


def select(results: list[dict], machine: str | None) -> list[dict]:
    """Results of the machines whose id or hardware name contains `machine` (all when None)."""
    if machine is None:
        return results
    return [r for r in results if machine in r["machine_id"] or machine in data.hardware(r)]


def _one_per_case(results: list[dict], name: str, option: str) -> dict[str, dict]:
    out: dict[str, dict] = {}
    machines: dict[str, set[str]] = {}
    for r in sorted(data.latest(results), key=lambda r: r["created_at"]):
        out[match_key(r)] = r
        machines.setdefault(match_key(r), set()).add(r["machine_id"])
    several = sorted({m for ms in machines.values() if len(ms) > 1 for m in ms})
    if several:
        raise UserError(f"{name} holds the same cases from {len(several)} machines ({'; '.join(several)}): "
                        f"pick one with {option} TEXT (a part of its machine id or hardware name)")
    return out


def _describe(results: list[dict]) -> str:
    parts = dict.fromkeys(f"{data.hardware(r)}, torch {data.torch_version(r)}" for r in results)
    return "; ".join(parts)


def compare(a: list[dict], b: list[dict], a_name: str, b_name: str) -> Table:
    a_cases = _one_per_case(a, a_name, "--machine-a")
    b_cases = _one_per_case(b, b_name, "--machine-b")
    keys = list(dict.fromkeys([*a_cases, *b_cases]))
    if not set(a_cases) & set(b_cases):
        raise UserError(f"{a_name} and {b_name} have no case in common (same model, batch size, variant and settings)")
    everything = [*a_cases.values(), *b_cases.values()]
    order = {m: i for i, m in enumerate(data.model_order(everything))}
    modes = {m: i for i, m in enumerate(("eager", "default", "reduce-overhead", "max-autotune"))}

    def sort_key(k):
        r = a_cases.get(k) or b_cases[k]
        c = r["case"]
        return (order[c["model"]], c["batch_size"], data.settings(r), modes.get(c["variant"]["mode"], 9), k)

    rows = []
    for k in sorted(keys, key=sort_key):
        ra, rb = a_cases.get(k), b_cases.get(k)
        r = ra or rb
        ratio = low = high = None
        if data.mean(ra) and data.mean(rb):
            ratio, low, high = stats.ratio_ci(ra["stats"], rb["stats"])
        rows.append([
            data.model_label(everything, r["case"]["model"]),
            str(r["case"]["batch_size"]),
            data.with_settings(data.variant_of(r).label, data.settings(r)),
            cell(ra) if ra else "not measured",
            cell(rb) if rb else "not measured",
            num(ratio, 3),
            f"{low:.3f}-{high:.3f}" if low is not None else "",
            stats.verdict(low, high) if ratio is not None else "",
            num(ra and ra.get("compile_s"), 1),
            num(rb and rb.get("compile_s"), 1),
        ])
    return Table(
        f"{a_name} vs {b_name}",
        ["Task/Model", "Batch Size", "variant", "A ms", "B ms", "B/A", "95% CI of B/A", "B vs A", "A compile s",
         "B compile s"],
        rows,
        notes=[f"A: {a_name} ({_describe(list(a_cases.values()))})",
               f"B: {b_name} ({_describe(list(b_cases.values()))})",
               "B/A below 1: B takes less time. The verdict needs the whole 95% CI on one side of 1."],
    )
