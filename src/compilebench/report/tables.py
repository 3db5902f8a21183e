"""Markdown tables in the guide's format, from result dicts alone (no torch, no GPU).

One table per (hardware, batch size); rows `Task/Model` in the guide's order; a column per torch version and
variant (`torch 2.13 - no compile`, `torch 2.13 - compile`); mean ms to 3 decimals, `OOM` where memory ran out
and the status word for other failures; beside them the % improvement and the compile seconds."""

from __future__ import annotations

from collections import defaultdict

from compilebench import stats
from compilebench.envinfo import hardware_name
from compilebench.spec import VARIANTS, Variant
from compilebench.zoo import REGISTRY


def latest(results: list[dict]) -> list[dict]:
    """The newest result of each case on each machine (a --rerun supersedes, it does not average)."""
    newest: dict[tuple, dict] = {}
    for r in results:
        k = (r["case_key"], r["machine_id"])
        if k not in newest or r["created_at"] >= newest[k]["created_at"]:
            newest[k] = r
    return list(newest.values())


def torch_short(r: dict) -> str:
    return ".".join(str((r.get("env") or {}).get("torch", "?")).split("+")[0].split(".")[:2])


def hardware(r: dict) -> str:
    return hardware_name(r.get("env") or {"device": r["case"]["device"]})


def variant_of(r: dict) -> Variant:
    return Variant(**r["case"]["variant"])


def cell(r: dict | None) -> str:
    if r is None:
        return ""
    if r["status"] == "ok":
        return f"{r['stats']['mean']:.3f}"
    return "OOM" if r["status"] == "oom" else r["status"]


def _row_order(results: list[dict]) -> list[str]:
    order = {name: i for i, name in enumerate(REGISTRY)}
    models = list(dict.fromkeys(r["case"]["model"] for r in results))
    return sorted(models, key=lambda m: order.get(m, len(order)))


def _label(results: list[dict], model: str) -> str:
    return next((r["label"] for r in results if r["case"]["model"] == model and r.get("label")), model)


def guide_tables(results: list[dict]) -> str:
    results = latest(results)
    groups: dict[tuple[str, int], list[dict]] = defaultdict(list)
    for r in results:
        groups[(hardware(r), r["case"]["batch_size"])].append(r)
    return "\n".join(_guide_table(hw, batch, rs) for (hw, batch), rs in sorted(groups.items()))


def _guide_table(hw: str, batch: int, results: list[dict]) -> str:
    mode_rank = {m: i for i, m in enumerate(VARIANTS)}
    columns = sorted(
        {(torch_short(r), variant_of(r)) for r in results},
        key=lambda c: (c[0], mode_rank[c[1].mode], c[1].label),
    )
    by_cell = {(r["case"]["model"], torch_short(r), variant_of(r)): r for r in results}
    compiled = [c for c in columns if c[1].compiled]
    header = [f"torch {t} - {v.label}" for t, v in columns]
    for t, v in compiled:
        suffix = v.label.removeprefix("compile").strip()
        header += [f"% improvement {suffix}".strip(), f"compile s {suffix}".strip()]
    lines = [
        f"### {hw} (batch size: {batch})",
        "",
        "| Task/Model | " + " | ".join(header) + " |",
        "|:---:|" + ":---:|" * len(header),
    ]
    for model in _row_order(results):
        cells = [cell(by_cell.get((model, t, v))) for t, v in columns]
        for t, v in compiled:
            eager = by_cell.get((model, t, Variant("eager")))
            comp = by_cell.get((model, t, v))
            cells.append(_improvement(eager, comp))
            cells.append(f"{comp['compile_s']:.1f}" if comp and comp.get("compile_s") is not None else "")
        lines.append(f"| {_label(results, model)} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _improvement(eager: dict | None, compiled: dict | None) -> str:
    if not (eager and compiled and eager["status"] == "ok" and compiled["status"] == "ok"):
        return ""
    return f"{stats.improvement_pct(eager['stats']['mean'], compiled['stats']['mean']):.1f}%"


def details_table(results: list[dict]) -> str:
    """Every result with its noise: the numbers behind each guide cell, and why a cell is not a number."""
    results = sorted(latest(results), key=lambda r: (hardware(r), r["created_at"]))
    lines = [
        "| hardware | model | batch | variant | status | mean ms | 95% CI ms | median ms | CV | N | first call s | compile s | max rel err |",
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        s = r.get("stats") or {}
        ok = r["status"] in ("ok", "invalid") and s.get("n")
        lines.append(
            "| "
            + " | ".join(
                [
                    hardware(r),
                    r["case"]["model"],
                    str(r["case"]["batch_size"]),
                    variant_of(r).label,
                    r["status"] + (" (stopped by --max-time)" if r.get("stopped_early") else ""),
                    f"{s['mean']:.3f}" if ok else "",
                    f"{s['ci95_low']:.3f}-{s['ci95_high']:.3f}" if ok else "",
                    f"{s['median']:.3f}" if ok else "",
                    f"{s['cv'] * 100:.1f}%" + (" noisy" if s["cv"] > stats.NOISY_CV else "") if ok and s.get("cv") is not None else "",
                    str(s.get("n") or 0),
                    _num(r.get("first_call_s"), 2),
                    _num(r.get("compile_s"), 2),
                    _num(r.get("max_rel_err"), None),
                ]
            )
            + " |"
        )
    failures = [r for r in results if r["status"] != "ok"]
    if failures:
        lines += ["", "Not ok:"]
        lines += [f"- {r['case']['model']} b{r['case']['batch_size']} {variant_of(r).label}: {r['status']}: {r.get('message') or ''}" for r in failures]
    return "\n".join(lines) + "\n"


def _num(x, digits: int | None) -> str:
    if x is None:
        return ""
    return f"{x:.{digits}f}" if digits is not None else f"{x:.2e}"
