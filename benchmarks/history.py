"""Steps found in a real series of runs on this machine (issue 41): `--runs` runs of the matmul model (a chain of
matrix products, benchmarks/compilebench_matmul.py) appended to one results file, each with its --tag; from run
`--step-at` on, COMPILEBENCH_MATMUL_EXTRA makes it `--effect` slower (a held-out cost: the run itself is told
nothing). Then the same number of runs with nothing changed. `compilebench history` reads each file; printed: the
steps it found beside the goal (one step, at --step-at, its interval holding the effect; none where nothing changed).

Usage: python benchmarks/history.py [--runs 6] [--step-at 4] [--effect 0.3] [--keep DIR]"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

from _runs import cli

HERE = os.path.dirname(os.path.abspath(__file__))


def series(folder: str, name: str, runs: int, step_at: int | None, effect: float) -> list[dict]:
    db = os.path.join(folder, f"{name}.db")
    for i in range(1, runs + 1):
        extra = effect if step_at is not None and i >= step_at else 0.0
        wall, _ = cli("run", "--model", "matmul", "--variant", "eager", "--device", "cpu", "--repeats", "3", "--rerun",
                      "--db", db, "--quiet", "--format", "csv", "--out", os.path.join(folder, f"{name}-report"),
                      "--tag", f"{name}-{i}", cwd=folder,
                      env={"COMPILEBENCH_PLUGINS": "compilebench_matmul", "PYTHONPATH": HERE,
                           "COMPILEBENCH_MATMUL_EXTRA": str(extra)})
        print(f"{name} run {i}: extra cost {extra:.0%}, {wall:.0f} s", flush=True)
    _, p = cli("history", db, "--out", os.path.join(folder, f"{name}-history"), cwd=folder)
    print(p.stdout, flush=True)
    with open(os.path.join(folder, f"{name}-history", "history.json")) as f:
        rows = json.load(f)
    return [r for r in rows if r["step_here"] and r["metric"] == "latency ms"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=6)
    ap.add_argument("--step-at", type=int, default=4)
    ap.add_argument("--effect", type=float, default=0.3)
    ap.add_argument("--keep", help="a folder that keeps the results files and history pages")
    args = ap.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="history-bench-")
    os.makedirs(folder, exist_ok=True)
    stepped = series(folder, "stepped", args.runs, args.step_at, args.effect)
    flat = series(folder, "unchanged", args.runs, None, args.effect)
    said = [f"at {r['tag']}: {r['step_here']:.3f}x [{r['step_ci95_low']:.3f}-{r['step_ci95_high']:.3f}]"
            for r in stepped]
    holds = len(stepped) == 1 and stepped[0]["tag"] == f"stepped-{args.step_at}" and \
        stepped[0]["step_ci95_low"] <= 1 + args.effect <= stepped[0]["step_ci95_high"]
    print(f"stepped series ({args.effect:.0%} slower from run {args.step_at} of {args.runs}): {len(stepped)} step(s) "
          f"{'; '.join(said)} (goal: one, at run {args.step_at}, its interval holding {1 + args.effect:.2f}x: "
          f"{'met' if holds else 'NOT met'})")
    print(f"unchanged series ({args.runs} runs): {len(flat)} step(s) (goal: none: {'met' if not flat else 'NOT met'})")
    print(f"files in {folder}")
    sys.exit(0)


if __name__ == "__main__":
    main()
