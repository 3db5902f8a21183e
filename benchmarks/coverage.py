"""Do compilebench's 95% intervals hold the number a rerun gives? Prints figures; asserts nothing.

M independent invocations of `compilebench run` measure the same case, one after the other, each into its own
results file. For each run: does its reported 95% interval of the mean contain the mean of the other runs'
estimates? Goal (issue 13): at least 80% of runs (the nominal is 95%; the other runs' mean has noise of its own).

Usage: python benchmarks/coverage.py [--runs 10] [--model resnet-50] [--variant eager] [--iters 100]
                                     [--tiny] [--extra "--repeats 3"] [--tree PATH]
`--tree` measures another checkout (e.g. the code before repeats existed); `--extra` passes options through.
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import tempfile

from _runs import TREE, cli, results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--model", default="resnet-50")
    ap.add_argument("--variant", default="eager")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--extra", default="", help="more options for every run, e.g. '--repeats 3'")
    ap.add_argument("--tree", default=TREE, help="the compilebench checkout to measure")
    args = ap.parse_args()

    estimates = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            db = f"{tmp}/run{i}.db"
            wall, _ = cli("run", "--model", args.model, "--variant", args.variant, "--iters", args.iters,
                          "--device", "cpu", "--db", db, "--quiet", "--format", "csv", *(["--tiny"] if args.tiny else []),
                          *shlex.split(args.extra), tree=args.tree, cwd=tmp)
            (r,) = results(db)
            s = r["stats"]
            estimates.append((s["mean"], s["ci95_low"], s["ci95_high"]))
            print(f"run {i + 1}: mean {s['mean']:.3f} ms, 95% CI {s['ci95_low']:.3f}-{s['ci95_high']:.3f} "
                  f"(+-{(s['ci95_high'] - s['ci95_low']) / 2 / s['mean'] * 100:.1f}%), {wall:.0f} s")
    hits = 0
    for i, (_, low, high) in enumerate(estimates):
        others = statistics.mean(m for j, (m, _, _) in enumerate(estimates) if j != i)
        hits += low <= others <= high
    means = [m for m, _, _ in estimates]
    print(f"coverage: {hits}/{len(estimates)} = {hits / len(estimates):.0%} of runs' 95% intervals hold the other runs' "
          f"mean (goal >= 80%); run-to-run CV of the mean {statistics.stdev(means) / statistics.mean(means) * 100:.1f}%; "
          f"median interval half-width {statistics.median((h - l) / 2 / m for m, l, h in estimates) * 100:.1f}%")


if __name__ == "__main__":
    main()
