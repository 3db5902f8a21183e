"""Results made by hand, as a store would hold them: for report tests that need no model and no clock."""

from __future__ import annotations

import datetime
import itertools
import re
import uuid

from compilebench.core import stats
from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.core.variant import Variant
from compilebench.storage.store import Store
from compilebench.zoo import REGISTRY

_clock = itertools.count()

A100 = {"device": "cuda:0", "device_name": "NVIDIA A100-SXM4-40GB", "torch": "2.0.1+cu118", "hostname": "a100-box",
        "transformers": "4.30.0", "cuda": "11.8"}
T4 = {**A100, "device_name": "Tesla T4", "hostname": "t4-box"}
CPU = {"device": "cpu", "device_name": "AMD EPYC 7B13", "cpu": "AMD EPYC 7B13", "torch_threads": 2,
       "torch": "2.13.0+cpu", "hostname": "laptop", "transformers": "5.23.0"}


def generation(model: str, mode: str, calls_ms: list[float], per_token_ms: list[float], **fields) -> Result:
    """A text-generation result of 8 new tokens on a 16-token prompt: each process's whole generate() calls at its
    figure of `calls_ms`, its decoded tokens at its figure of `per_token_ms` (a process's two figures set apart: the
    prefill takes the rest)."""
    from compilebench.core.generation import GenerateCalls

    r = result(model, 1, mode, calls_ms[0], env=CPU, processes=calls_ms, prompt_len=16, new_tokens=8, **fields)
    for rep, per_token in zip(r.repeats, per_token_ms):
        rep.generation = GenerateCalls(new_tokens=8, batch_size=1, prompt_len=16, ttft_ms=[1.0] * 3,
                                       per_token_ms=[per_token * f for f in (0.99, 1.0, 1.01)])
    r.derive()
    return r


def machine(env: dict) -> str:
    return Environment.from_dict(env).machine_id


def result(model: str, batch: int, mode: str, mean_ms: float | None, *, env: dict = A100, status: str = "ok",
           compile_s: float | None = None, processes: list[float] | None = None, message: str | None = None,
           label: str | None = None, flags: tuple[str, ...] = (), process_ids: list[str] | None = None,
           run: str | Run | None = None, **case_fields) -> Result:
    """One result. An ok result has three repeats whose means are mean_ms / 1.01, mean_ms and mean_ms * 1.01
    (their geometric mean is mean_ms to the last digit), or the given per-process means; each repeat's three
    samples straddle its mean by 1%. A failed result has one repeat with that status. Every repeat ran in `env`.
    `run`: the run that measured every repeat, by id or whole (None: a result from before runs were recorded)."""
    case = Case(model, batch, Variant.named(mode), device=env["device"], **case_fields)
    runs = (run,) if isinstance(run, Run) else (Run(run_id=run),) if run else ()
    run = run.run_id if isinstance(run, Run) else run
    environment = Environment.from_dict(env)
    entry = REGISTRY.get(model)
    repeats = []
    if status in ("ok", "invalid", "mismatch") and mean_ms is not None:
        means = processes or [mean_ms / 1.01, mean_ms, mean_ms * 1.01]
        for i, m in enumerate(means):
            rep = Repeat(index=i + 1, status=status, message=message, compile_s=compile_s if mode != "eager" else None,
                         compile_cache="cold" if i == 0 else "warm", flags=list(flags),
                         process=(process_ids[i] if process_ids else uuid.uuid4().hex), run=run, environment=environment)
            rep.samples_ms = [m * f for f in (0.99, 1.0, 1.01)]
            rep.stats = stats.summarize(rep.samples_ms)
            repeats.append(rep)
    else:
        repeats.append(Repeat(index=1, status=status, message=message, run=run, environment=environment))
    r = Result(case, repeats, machine_id=machine(env), label=label or (entry.label if entry else model),
               task=entry.task if entry else "", runs=runs)
    # Distinct, increasing times: the order results arrived in.
    r.created_at = (datetime.datetime(2026, 1, 1) + datetime.timedelta(seconds=next(_clock))).isoformat()
    return r


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


def fill(path: str, results: list[Result]) -> str:
    with Store.open(path) as store:
        for r in results:
            store.add(r)
    return path


def damage(path) -> None:
    """Overwrite the header of the results table's root page, as a torn write or a bad disk block would: the file
    still opens, but its table is no longer a b-tree."""
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'results'").fetchone()[0]
    conn.close()
    with open(path, "r+b") as f:
        f.seek((root - 1) * page_size)
        f.write(b"\xff" * 12)


def job(cases: list[Case], policy, **given):
    """A worker's job, timed by `policy` (a TimingPolicy) resolved for its cases' kind of timed unit, as a plan
    resolves it."""
    from compilebench.core.job import Job

    return Job(list(cases), policy.resolve(cases[0].timed_unit, cases[0].device), **given)


def results_of(job_, repeats: list[Repeat]) -> list[Result]:
    """What an executor brought back (a repeat per case of the job), each as a result of one repeat."""
    return [Result(c, [rep]) for c, rep in zip(job_.cases, repeats)]


def same_rows(new: list[dict], old: list[dict], skip=frozenset()) -> bool:
    """Rows (CSV or JSON) with the same keys (but `skip`) and values, numbers equal to 12 significant digits: the
    mean of a process summed otherwise than it was then differs in its last bit."""
    def same(a, b) -> bool:
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(map(same, a, b))
        try:
            x, y = float(a), float(b)
        except (TypeError, ValueError):
            return a == b
        return x == y or _isclose(x, y)
    return len(new) == len(old) and all(same({k: v for k, v in n.items() if k not in skip}, o) for n, o in zip(new, old))


def _isclose(x: float, y: float) -> bool:
    import math as _math

    return _math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-15)
