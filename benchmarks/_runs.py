"""Helpers the benchmarks share: run compilebench as a user does (a separate process, from a source tree) and
read back what it stored (with this tree's compilebench, which reads every schema). Results written before repeats
existed hold one process each."""

from __future__ import annotations

import os
import subprocess
import sys
import time

TREE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cli(*args, tree: str = TREE, cwd: str | None = None, check: bool = True, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    """`python -m compilebench ARGS` from `tree`'s sources; returns (wall seconds, the finished process). Its
    PYTHONPATH: the tree's src, then `env`'s, then the caller's (a package installed with `pip install --target DIR`
    onto a machine without network is found there)."""
    env = dict(env or {})
    path = os.pathsep.join(filter(None, [os.path.join(tree, "src"), env.pop("PYTHONPATH", None),
                                         os.environ.get("PYTHONPATH")]))
    environ = {**os.environ, **env, "PYTHONPATH": path}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "compilebench", *map(str, args)], cwd=cwd, env=environ,
                       capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if check and p.returncode != 0:
        raise SystemExit(f"compilebench {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr[-3000:]}")
    return wall, p


def results(db: str) -> list[Exported]:
    """Every result of a results file (of any schema), as Result.export gives it: as stored, with what it derives;
    the stored Result itself as `.result`."""
    from compilebench.storage.store import Store

    with Store.open(db, create=False, write=False) as store:
        return [Exported(r) for r in store.results()]


class Exported(dict):
    """A result as Result.export gives it, with the stored Result beside it (`.result`): a speed-up is read from
    that one, which knows its runs' design and so the look its verdict was read at, as the product reads it (a
    Result rebuilt from the dict alone knows no runs, and would read every interval at 95%)."""

    def __init__(self, result):
        super().__init__(result.export())
        self.result = result


def processes(result: dict) -> list[dict]:
    """What each worker process measured for a result: its repeats, or the result itself (one process)."""
    return result.get("repeats") or [result]


def round_waits(found: list[dict]) -> dict[str, float]:
    """Seconds from each round's last process ending to the next round's first starting ("3-4": after round 3):
    about nothing between planned rounds; at a look, what the run did before measuring more (its launchers'
    imports, where they had not started with the first ones). Each process's start and end from its result's
    created_at (when its first phase ended) and its phases."""
    import datetime

    spans: dict[int, list[tuple[float, float]]] = {}
    for result in found:
        for rep in processes(result):
            phases = rep.get("phases") or {}
            if not rep.get("created_at") or not phases:
                continue
            at = datetime.datetime.fromisoformat(rep["created_at"]).timestamp()
            spans.setdefault(rep.get("index") or 1, []).append(
                (at - phases.get("start", 0.0), at + sum(v for k, v in phases.items() if k != "start")))
    rounds = sorted(spans)
    return {f"{a}-{b}": round(min(s for s, _ in spans[b]) - max(e for _, e in spans[a]), 1)
            for a, b in zip(rounds, rounds[1:])}
