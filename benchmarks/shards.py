"""Are shards balanced, and is a report over them the whole run? (issue 58)

1. The plan: each shard's expected seconds for a suite split N ways (the estimate `--shard` balances by: a worker's
   start, the compile by the model's modules, the timed loop's budget), and the longest over the shortest (goal:
   within 25% on the seed suite's plan).
2. With --run: the suite measured as N shards, one command after another (never two measurements at once), each
   into its own file; each shard's wall time beside its estimate; then `compilebench report` over the folder (goal:
   "complete", every planned case once) and over the files less one (goal: the missing shard and its cases named).

    python benchmarks/shards.py --suite seed --shards 3 8
    python benchmarks/shards.py --suite quick --shards 3 --run -- --repeats 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from _runs import TREE, cli, results

sys.path.insert(0, os.path.join(TREE, "src"))


def plan(suite: str, count: int):
    from compilebench.core import shards, spec as specmod
    from compilebench.run import costs, plan as planmod

    spec = specmod.asked(suite=suite, device="cpu")
    models = planmod.resolve_models(spec)
    return costs.plan_of(shards.Shard(1, count), spec, spec.cases(models), models, None, f"run --suite {suite}", None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="seed")
    ap.add_argument("--shards", type=int, nargs="+", default=[3])
    ap.add_argument("--run", action="store_true", help="measure the suite as the first --shards count of shards")
    ap.add_argument("extra", nargs="*", help="more `compilebench run` options for --run (after --)")
    args = ap.parse_args()
    for count in args.shards:
        made = plan(args.suite, count)
        expected = made.expected()
        print(f"{args.suite} in {count} shards: expected seconds {[round(s) for s in expected]}; longest / shortest "
              f"{max(expected) / min(expected):.3f} (goal: under 1.25 on the seed suite)")
    if args.run:
        measure(args.suite, args.shards[0], args.extra, plan(args.suite, args.shards[0]).expected())


def measure(suite: str, count: int, extra: list[str], expected: list[float]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = os.path.join(tmp, "shards")
        os.makedirs(folder)
        walls = []
        for i in range(1, count + 1):
            wall, _ = cli("run", "--suite", suite, *extra, "--shard", f"{i}/{count}", "--quiet", "--format", "md",
                          "--db", os.path.join(folder, f"shard{i}.db"), "--out", os.path.join(tmp, f"r{i}"))
            walls.append(wall)
            cases = sorted({f"{r['case']['model']} {r['case']['variant']['mode']}" for r in
                            results(os.path.join(folder, f"shard{i}.db"))})
            print(f"shard {i}/{count}: {wall:.0f} s (expected {expected[i - 1]:.0f} s): {', '.join(cases)}")
        print(f"shard walls: longest / shortest {max(walls) / min(walls):.2f}")
        _, whole = cli("report", folder, "--out", os.path.join(tmp, "all"), "--format", "md")
        print(whole.stdout[-1500:])
        _, less = cli("report", *[os.path.join(folder, f"shard{i}.db") for i in range(2, count + 1)], "--out",
                      os.path.join(tmp, "less"), "--format", "md")
        print(less.stdout[-600:])


if __name__ == "__main__":
    main()
