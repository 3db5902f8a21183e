"""What does inductor's compile pool, still starting, do to a timed loop beside it? Prints figures; asserts nothing
(issue 62).

compile_fx wakes inductor's compile pool (a sidecar interpreter that imports torch, then forks one compile worker
per core) at every compile of a graph on a GPU, a graph loaded from inductor's cache too. On an H200 (2026-11-30) the
quick suite's cached workers compiled ResNet-50 in 3 s where the cold one took 12, and their compiled loops read
1.18-1.26x their own warm-ups where the cold one's read 1.05x: a pool still starting beside them is one candidate.
Every timed process now waits for its pool to be ready before its warm-up (measure/compile_pool.settle, inside
measure/warmup.settled). This script measures what that wait changes, in processes that load ResNet-50's compiled
graph from inductor's cache (one process compiles it cold first, untimed), alternating:

  starting  the timed calls begin right after the first call, as before the wait: the pool still starting
  ready     compile_pool.settle() first, as a worker now does

Each process then times windows of 0.25 s of calls for --seconds (the first window begins as the warm-up would) and
prints each window's ms per call, its median, and the CPU seconds its descendant processes used meanwhile. On a CPU
no compile wakes the pool: the script wakes it as compile_fx does for a graph on a GPU (AsyncCompile.wakeup()), so
the mechanism is the same, not the machine's layout (here the pool shares the loop's cores; a GPU worker's pool is
moved to the housekeeping cores). Prints the median over processes of each mode and starting over ready.

Usage: python benchmarks/compile_pool.py [--device cuda] [--tiny] [--pairs 3] [--seconds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _runs import TREE

sys.path.insert(0, os.path.join(TREE, "src"))

MODES = ("starting", "ready")
WINDOW_S = 0.25


def one_process(mode: str, device: str, tiny: bool, seconds: float) -> dict:
    """In this interpreter: ResNet-50 compiled (from inductor's cache where a process before filled it), then the
    timed windows, beside the pool as `mode` leaves it."""
    import torch

    from blocks import model_and_inputs
    from compilebench.measure import compile_pool, cores

    with torch.inference_mode():
        model, inputs = model_and_inputs("resnet-50", device, tiny)
        compiled = torch.compile(model)
        t0 = time.perf_counter()
        compiled(**inputs)
        sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        sync()
        first_s = time.perf_counter() - t0
        from torch._inductor import async_compile

        woken = getattr(async_compile.AsyncCompile, "_ready_future", None) is not None  # by compile_fx, on a GPU
        if not woken:
            async_compile.AsyncCompile.wakeup()  # as compile_fx does for one
        wait = compile_pool.settle() if mode == "ready" else None
        before = cores.descendants_cpu_s()
        windows = []
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            start, calls = time.perf_counter(), 0
            while time.perf_counter() - start < WINDOW_S:
                compiled(**inputs)
                calls += 1
            sync()
            windows.append((time.perf_counter() - start) / calls * 1e3)
        after = cores.descendants_cpu_s()
    hits = torch._dynamo.utils.counters["inductor"].get("fxgraph_cache_hit", 0)
    async_compile.shutdown_compile_workers()
    return {"mode": mode, "first_s": round(first_s, 2), "graph_cache_hits": hits, "woken_by_compile": woken,
            "wait": [wait.state, wait.waited_s] if wait else None, "windows_ms": [round(w, 3) for w in windows],
            "median_ms": statistics.median(windows), "helpers": [before[0], after[0]],
            "helper_cpu_s": round(after[1] - before[1], 2), "threads": torch.get_num_threads()}


def in_new_interpreter(mode: str, args, folder: str) -> dict:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": os.path.join(folder, "inductor"),
           "TRITON_CACHE_DIR": os.path.join(folder, "triton")}
    cmd = [sys.executable, os.path.abspath(__file__), "--one", mode, "--device", args.device,
           "--seconds", str(args.seconds)] + (["--tiny"] if args.tiny else [])
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"mode": mode, "error": (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1][:300]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def said(got: dict) -> str:
    if "error" in got:
        return f"{got['mode']:9} failed: {got['error']}"
    wait = f"waited {got['wait'][1]:.2f} s ({got['wait'][0]})" if got["wait"] else "no wait"
    return (f"{got['mode']:9} first call {got['first_s']:.2f} s (graphs from the cache {got['graph_cache_hits']}), "
            f"pool woken by the compile: {'yes' if got['woken_by_compile'] else 'no, by hand'}; {wait}; median "
            f"{got['median_ms']:.3f} ms a call over {len(got['windows_ms'])} windows (first "
            f"{got['windows_ms'][0]:.3f}, last {got['windows_ms'][-1]:.3f}); descendants before and after "
            f"{got['helpers']}, their CPU "
            f"{got['helper_cpu_s']:.2f} s; torch threads {got['threads']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tiny", action="store_true", help="the tiny config (a rehearsal: the figure needs the real size)")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--one", choices=MODES, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one_process(args.one, args.device, args.tiny, args.seconds)))
        return
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="compilebench-pool-") as folder:
        print(f"cold compile (untimed, fills inductor's cache): {said(in_new_interpreter('ready', args, folder))}",
              flush=True)
        found = {m: [] for m in MODES}
        for _ in range(args.pairs):
            for mode in MODES:
                got = in_new_interpreter(mode, args, folder)
                print(said(got), flush=True)
                if "error" not in got:
                    found[mode].append(got["median_ms"])
    medians = {m: statistics.median(v) for m, v in found.items() if v}
    line = ", ".join(f"{m} {ms:.3f} ms ({len(found[m])} processes)" for m, ms in medians.items())
    ratio = (f"; starting over ready {medians['starting'] / medians['ready']:.2f}x" if len(medians) == 2 else "")
    print(f"median over processes: {line}{ratio} (issue 62: a timed loop starts from the state it is meant to "
          f"measure; near 1.00 where the pool starting beside it costs nothing); {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
