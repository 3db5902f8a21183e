"""What Ray costs: wall time of the same 8-case sweep of tiny models with --executor local and --executor ray on
this machine. Prints figures; asserts nothing.

Each sweep is `compilebench run` in a fresh process with its own results file, timed from outside with
time.perf_counter, so the figure holds everything a user waits for: imports, the environment probe, for Ray
starting a local cluster, and the report. Printed beside it: the sum of the cases' first calls (which hold the
compiles) and timed loops as the results file records them, and, alone, how long `ray.init()` takes to start
a local cluster in a fresh process. With --ray-cpus-per-case, the Ray sweep also runs with tasks that reserve
fewer CPUs, so several cases run at once (then the cases' seconds overlap and their sum may pass the wall time).

Usage: python benchmarks/executors.py [--rounds 2] [--device cpu] [--ray-cpus-per-case 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import _runs

# 4 tiny models of the guide's architectures x eager/default = 8 cases, short timed loops.
SWEEP = ["--model", "resnet-50", "--model", "vit", "--model", "convnext", "--model", "segformer",
         "--variant", "eager", "default", "--tiny", "--iters", "20", "--warmup", "2", "--repeats", "1", "--quiet",
         "--format", "md"]


def sweep(extra: list[str], device: str) -> tuple[float, float, int]:
    """(wall seconds of the whole command, sum of the cases' first calls and timed loops, results stored)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "results.db")
        cmd = [sys.executable, "-m", "compilebench", "run", *SWEEP, "--device", device, "--db", db, *extra]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        stored = _runs.results(db)
        bad = [r["status"] for r in stored if r["status"] != "ok"]
        if bad:
            raise SystemExit(f"{' '.join(cmd)}: results not ok: {bad}")
        measured = sum((rep.get("first_call_s") or 0.0) + (rep.get("loop_wall_s") or 0.0)
                       for r in stored for rep in r["repeats"])
        return wall, measured, len(stored)


def ray_start_s() -> float:
    """Seconds `ray.init()` takes to start a local cluster, in a fresh process (imports not counted)."""
    script = ("import time, ray\nt0 = time.perf_counter()\nray.init(include_dashboard=False)\n"
              "print(time.perf_counter() - t0)\nray.shutdown()")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2, help="sweeps per executor, alternating")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ray-cpus-per-case", type=int, default=None,
                    help="also run the Ray sweep with tasks reserving this many CPUs (several cases at once)")
    args = ap.parse_args()
    ways = {"local": ["--executor", "local"], "ray": ["--executor", "ray"]}
    if args.ray_cpus_per_case:
        ways[f"ray, {args.ray_cpus_per_case} CPU/case"] = ["--executor", "ray", "--cpus-per-case",
                                                           str(args.ray_cpus_per_case)]
    print(f"8-case tiny sweep on {args.device}, {os.cpu_count()} CPUs, {args.rounds} round(s), executors alternating")
    walls: dict[str, list[float]] = {w: [] for w in ways}
    for r in range(args.rounds):
        for name, extra in ways.items():
            wall, cases_s, n = sweep(extra, args.device)
            walls[name].append(wall)
            print(f"  round {r + 1} {name:<18} wall {wall:6.1f} s   first calls + loops {cases_s:6.1f} s   "
                  f"rest {wall - cases_s:5.1f} s   ({n} results)", flush=True)
    base = statistics.mean(walls["local"])
    print(f"ray.init() alone, local cluster: {statistics.mean(ray_start_s() for _ in range(args.rounds)):.1f} s")
    print("mean wall:")
    for name, w in walls.items():
        mean = statistics.mean(w)
        print(f"  {name:<18} {mean:6.1f} s  (range {min(w):.1f}-{max(w):.1f})  "
              f"{mean - base:+6.1f} s vs local")


if __name__ == "__main__":
    main()
