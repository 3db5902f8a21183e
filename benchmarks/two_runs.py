"""Two `compilebench run` commands at once, sharing a model, on one results file (issue 14): is every case and
repeat stored once, and did any two timed loops overlap? Prints figures; asserts nothing.

Each repeat records the wall clock at both ends of its timed loop (loop_started_at, loop_ended_at): any two
loops of the file whose spans intersect ran beside each other on the device.

Usage: python benchmarks/two_runs.py [--iters 50] [--repeats 2]
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time

from _runs import TREE, results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    common = ["--variant", "eager", "--device", "cpu", "--iters", str(args.iters), "--repeats", str(args.repeats),
              "--format", "csv"]
    first = ["--model", "resnet-50", "--batch-size", "1", "4", *common]
    second = ["--model", "resnet-50", "deeplabv3-mobilenet", "--batch-size", "1", *common]
    env = {**os.environ, "PYTHONPATH": os.path.join(TREE, "src")}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        runs = [subprocess.Popen([sys.executable, "-m", "compilebench", "run", *a, "--db", "r.db"], cwd=tmp, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for a in (first, second)]
        outs = [run.communicate() for run in runs]
        wall = time.perf_counter() - t0
        for i, (run, (_, err)) in enumerate(zip(runs, outs), 1):
            waits = [line for line in err.splitlines() if line.startswith("waiting for")]
            summary = [line for line in err.splitlines() if "measured" in line]
            print(f"run {i}: exit {run.returncode}; {len(waits)} wait message(s) {waits[:2]}; {summary[-1:]}")
        stored = results(f"{tmp}/r.db")

    keys = [r["case_key"] for r in stored]
    loops = [(r["case"]["model"], r["case"]["batch_size"], rep["index"], rep["loop_started_at"], rep["loop_ended_at"])
             for r in stored for rep in r["repeats"] if rep.get("loop_started_at")]
    per_result = [sorted(rep["index"] for rep in r["repeats"]) for r in stored]
    overlaps = [(a, b) for a, b in itertools.combinations(loops, 2) if a[3] < b[4] and b[3] < a[4]]
    distinct_cases = 3  # resnet-50 b1, b4; deeplabv3-mobilenet b1 (resnet-50 b1 is asked for by both runs)
    print(f"1. {len(stored)} results for {distinct_cases} distinct cases asked for ({len(set(keys))} distinct keys); "
          f"repeat indices per result {per_result} (goal: each case once, repeats 1..{args.repeats} once each)")
    print(f"2. {len(loops)} timed loops, {len(overlaps)} overlapping pairs (goal: 0); both runs took {wall:.0f} s")
    for model, batch, index, start, end in sorted(loops, key=lambda x: x[3]):
        print(f"   {model} b{batch} repeat {index}: {start:.3f} - {end:.3f}")


if __name__ == "__main__":
    main()
