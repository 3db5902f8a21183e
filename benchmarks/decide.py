"""Does a verdict decide, and does it survive a rerun? Prints figures; asserts nothing (issue 40).

Two parts, each run against one compilebench checkout (`--tree`, default this one), so the design before a change
and after it are measured the same way on the same machine:

- `known`: a model whose cost is set by an environment variable (benchmarks/compilebench_matmul.py: matrix
  products, `COMPILEBENCH_MATMUL_EXTRA` adds a share of them), measured as two environments of one run (`--env
  A=... --env B=...` with `--env-set B COMPILEBENCH_MATMUL_EXTRA=...`, repeats alternating). An effect of 0 is an A/A pair.
  Prints, per effect: how often B was called slower / faster / same / inconclusive, the median repeats used and
  the wall time of a run. Goals: A/A never faster or slower in 20 pairs; 10% decided slower in 8 of 10 runs; 20%
  in 10 of 10.
- `quick`: the README's main command (`compilebench run`, the quick suite) N times, each into its own results
  file; prints each model's speed-up and verdict per run, whether any model was called faster in one run and
  slower in another, the fraction of run pairs whose intervals overlap (goal >= 90%), and each run's wall time
  (goal: at most 1.5x the same measure before the change).

Its successor for recorded data, benchmarks/replay.py, reads any results file under each estimator and design
without measuring (issue 62).

Usage: python benchmarks/decide.py quick [--runs 5] [--tree PATH] [--against PATH] [--keep DIR] [--before-s S]
                                         [--extra "..."]
       python benchmarks/decide.py known [--effects 0,0.05,0.1,0.2] [--runs 4] [--tree PATH] [--against PATH]
                                         [--extra "..."] [--keep DIR]
       python benchmarks/decide.py quick --read DIR [--against PATH]  (reads the runs a --keep DIR left)
"""

from __future__ import annotations

import argparse
import glob
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict

from _runs import TREE, cli

HERE = os.path.dirname(os.path.abspath(__file__))


def _read_run(folder: str) -> dict[str, dict]:
    """Each compiled case of a run's report: model and batch -> its speed-up row (results.json)."""
    with open(os.path.join(folder, "results.json")) as f:
        rows = json.load(f)
    out = {}
    for row in rows:
        if row.get("variant") != "eager" and row.get("speedup") is not None:
            out[f"{row['model']} b{row['batch_size']} {row['variant']}"] = row
    return out


def _overlap(a: dict, b: dict) -> bool:
    lows, highs = (a["speedup_ci95_low"], b["speedup_ci95_low"]), (a["speedup_ci95_high"], b["speedup_ci95_high"])
    if None in lows or None in highs:
        return a["speedup"] == b["speedup"]
    return max(lows) <= min(highs)


def quick(args) -> None:
    """The quick suite N times (with --against, the two checkouts alternating run by run, each into a folder of its
    own), then per checkout what its runs decided."""
    folder = args.read or args.keep or tempfile.mkdtemp()
    trees = _designs(args)
    where = {name: os.path.join(folder, sub) if args.against else folder for name, _, sub in trees}
    if not args.read:
        for i in range(args.runs):
            for name, tree, _ in trees:
                os.makedirs(where[name], exist_ok=True)
                db, out = f"{where[name]}/run{i + 1}.db", f"{where[name]}/run{i + 1}"
                wall, p = cli("run", "--db", db, "--out", out, "--quiet", *shlex.split(args.extra), tree=tree,
                              cwd=where[name])
                with open(f"{out}/wall_s", "w") as f:
                    f.write(f"{wall:.1f}\n")
                with open(f"{out}/printed.txt", "w") as f:  # what the run printed: its summary
                    f.write(p.stdout)
                print(f"run {i + 1}, {name}: {wall:.0f} s", flush=True)
    other = _walls(where["the other design"]) if args.against else []
    before_s = args.before_s or (statistics.median(other) if other else None)  # the other design's, measured alike
    for name, tree, _ in trees:
        if args.against or args.read:
            print(f"\n{name} ({tree}), runs in {where[name]}:")
        _summarize_quick(where[name], before_s if name == "this design" else None)


def _designs(args) -> list[tuple[str, str, str]]:
    """The checkouts measured, as (name, path, the folder of its runs under --keep): --tree, and with --against the
    other one, alternating with it run by run."""
    other = [("the other design", args.against, "other")] if args.against else []
    return [("this design", args.tree, "this"), *other]


def _runs(folder: str) -> list[str]:
    return sorted(glob.glob(f"{folder}/run*/"), key=lambda p: int(p.rstrip("/").rsplit("run", 1)[1]))


def _walls(folder: str) -> list[float]:
    return [float(open(f"{out}wall_s").read()) for out in _runs(folder) if os.path.exists(f"{out}wall_s")]


def _summarize_quick(folder: str, before_s: float | None) -> None:
    runs, walls = [_read_run(out) for out in _runs(folder)], _walls(folder)
    cases = sorted({k for r in runs for k in r})
    pairs = hits = 0
    for case in cases:
        rows = [r.get(case) for r in runs]
        cells = []
        for row in rows:
            if row is None:
                cells.append("-")
                continue
            low, high = row["speedup_ci95_low"], row["speedup_ci95_high"]
            span = f"[{low:.2f}-{high:.2f}]" if low is not None else "[-]"
            cells.append(f"{row['speedup']:.2f}x {span} {row['verdict']} (R={row.get('repeats')})")
        verdicts = Counter(row["verdict"] for row in rows if row)
        decided = verdicts["faster"] + verdicts["slower"] + verdicts["same"]
        both = verdicts["faster"] and verdicts["slower"]
        ok = [_overlap(a, b) for a, b in itertools.combinations([r for r in rows if r], 2)]
        pairs, hits = pairs + len(ok), hits + sum(ok)
        print(f"{case}: decided in {decided}/{len(rows)}; faster in one run and slower in another: "
              f"{'YES' if both else 'no'}; intervals overlap in {sum(ok)}/{len(ok)} pairs")
        for i, c in enumerate(cells):
            print(f"  run {i + 1}: {c}")
    if pairs:
        print(f"intervals overlap in {hits}/{pairs} = {hits / pairs:.0%} of run pairs (goal >= 90%)")
    if walls:
        goal = f"goal <= 1.5x the {before_s:.0f} s before: <= {1.5 * before_s:.0f} s" if before_s else \
            "goal: at most 1.5x the same measure before the change (--before-s, or --against)"
        print(f"wall time per run: {', '.join(f'{w:.0f}' for w in walls)} s; median {statistics.median(walls):.0f} s "
              f"({goal})")


def known(args) -> None:
    trees = {name: tree for name, tree, _ in _designs(args)}
    got: dict[tuple[str, float], list] = defaultdict(list)
    plugin = {"COMPILEBENCH_PLUGINS": "compilebench_matmul", "PYTHONPATH": HERE}
    numbers = itertools.count()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or scratch
        os.makedirs(tmp, exist_ok=True)
        for i in range(args.runs):
            for effect in (float(e) for e in args.effects.split(",")):
                for name, tree in trees.items():  # the designs alternate run by run: the machine's moves hit both alike
                    db = f"{tmp}/run{next(numbers)}.db"  # a file of its own: never a resume of another
                    wall, _ = cli("run", "--model", "matmul", "--variant", "eager", "--device", "cpu", "--db", db,
                                  "--quiet", "--format", "csv", "--env", f"A={sys.executable}", "--env",
                                  f"B={sys.executable}", "--env-set", "B", f"COMPILEBENCH_MATMUL_EXTRA={effect}",
                                  *shlex.split(args.extra), tree=tree, cwd=tmp, env=plugin)
                    verdict, said, n = _env_verdict(db, tree)
                    got[(name, effect)].append((verdict, n, wall))
                    print(f"run {i + 1}, effect {effect:.0%}, {name}: B/A {said} -> {verdict}, {n} repeats each, "
                          f"{wall:.0f} s", flush=True)
    for (name, effect), runs in sorted(got.items()):
        v = Counter(x[0] for x in runs)
        goal = "A/A: goal 0 faster/slower" if effect == 0 else "goal: decided slower"
        print(f"{name} ({trees[name]}), effect {effect:.0%}: " + ", ".join(f"{n} {k}" for k, n in sorted(v.items()))
              + f" of {len(runs)} ({goal}); median repeats {statistics.median(x[1] for x in runs):g}; "
              f"median wall {statistics.median(x[2] for x in runs):.0f} s")


# B's verdict against A in one run, as `compare DB --env-a A --env-b B` says it, by the measured checkout's own rules
# (its default minimum effect, its pairing, its confidence): run in a process of that checkout.
VERDICT = """
import json, sys
from compilebench.core import speedups
from compilebench.storage.store import Store
with Store.open(sys.argv[1], create=False, write=False) as store:
    rs = {r.case.environment: r for r in store.results()}
s = speedups.speedup(rs["A"], rs["B"])  # A over B: its verdict reads as B against A
low, high = (f"{1 / s.high:.3f}", f"{1 / s.low:.3f}") if s.low else ("-", "-")
print(json.dumps([str(s.verdict), f"{1 / s.value:.3f} [{low}-{high}]", len(rs["A"].repeats)]))
"""


def _env_verdict(db: str, tree: str):
    env = {**os.environ, "PYTHONPATH": os.path.join(tree, "src")}
    p = subprocess.run([sys.executable, "-c", VERDICT, db], env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="part", required=True)
    q = sub.add_parser("quick")
    q.add_argument("--runs", type=int, default=5)
    q.add_argument("--keep", help="a folder that keeps every run's results file and report")
    q.add_argument("--read", help="read the runs a --keep folder holds; measure nothing")
    q.add_argument("--before-s", type=float, help="the median wall time per run before the change, for the goal")
    q.add_argument("--against", help="another checkout whose runs alternate with --tree's (e.g. the code before)")
    k = sub.add_parser("known")
    k.add_argument("--effects", default="0,0.05,0.1,0.2")
    k.add_argument("--runs", type=int, default=4)
    k.add_argument("--against", help="another checkout, measured alternately with --tree (e.g. the code before)")
    k.add_argument("--keep", help="a folder that keeps every run's results file (run0.db, run1.db, ...)")
    for p in (q, k):
        p.add_argument("--tree", default=TREE, help="the compilebench checkout to measure")
        p.add_argument("--extra", default="", help="more options for every run")
    args = ap.parse_args()
    (quick if args.part == "quick" else known)(args)


if __name__ == "__main__":
    main()
