"""Results made by hand, as a store would hold them: for report tests that need no model and no clock."""

from __future__ import annotations

import datetime
import itertools
import re

from compilebench.result import Result
from compilebench.spec import Case, Variant
from compilebench.store import Store
from compilebench.zoo import REGISTRY

_clock = itertools.count()

A100 = {"device": "cuda:0", "device_name": "NVIDIA A100-SXM4-40GB", "torch": "2.0.1+cu118", "hostname": "a100-box",
        "transformers": "4.30.0", "cuda": "11.8"}
T4 = {**A100, "device_name": "Tesla T4", "hostname": "t4-box"}
CPU = {"device": "cpu", "device_name": "AMD EPYC 7B13", "cpu": "AMD EPYC 7B13", "torch_threads": 2,
       "torch": "2.13.0+cpu", "hostname": "laptop", "transformers": "5.23.0"}


def machine(env: dict) -> str:
    return f"{env['hostname']}|{env['device_name']}|torch {env['torch']}|transformers {env['transformers']}"


def result(model: str, batch: int, mode: str, mean_ms: float | None, *, env: dict = A100, status: str = "ok",
           compile_s: float | None = None, samples: list[float] | None = None, message: str | None = None,
           label: str | None = None, **case_fields) -> dict:
    """One result dict. An ok result's samples straddle mean_ms so its mean is exact to the last digit."""
    case = Case(model, batch, Variant(mode), device=env["device"], **case_fields)
    entry = REGISTRY.get(model)
    r = Result(case, status, machine_id=machine(env), env=dict(env), message=message,
               label=label or (entry.label if entry else model), task=entry.task if entry else "",
               compile_s=compile_s if mode != "eager" else None)
    if status == "ok":
        r.samples_ms = samples or [mean_ms * 0.99, mean_ms, mean_ms * 1.01]
        from compilebench import stats

        r.stats = stats.summarize(r.samples_ms)
    # Distinct, increasing times: the order results arrived in.
    r.created_at = (datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=next(_clock))).isoformat()
    return r.to_dict()


def guide_table(path: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The title and rows (label, no compile, compile) of a table copied from the guide."""
    text = open(path).read()
    title = re.search(r"^### (.+)$", text, re.M).group(1)
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and "/" in cells[0] and not cells[0].startswith("**"):
            rows.append(tuple(cells))
    return title, rows


def label_to_model() -> dict[str, str]:
    return {e.label: name for name, e in REGISTRY.items()}


def fill(path: str, results: list[dict]) -> str:
    with Store.open(path) as store:
        for r in results:
            store.add(r)
    return path
