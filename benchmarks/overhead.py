"""How much compilebench's own machinery adds to what it measures. Prints figures; asserts nothing.

1. Per-iteration overhead of the timed loop (timing.measure on the host clock) over a bare Python loop
   calling the same no-op. Target: <= 1 microsecond.
2. ResNet-50 eager (full size, random weights, batch 1, CPU), in one process: compilebench's reported mean
   (worker.run_case, inline) over torch.utils.benchmark.Timer's mean, alternated to share drift.
   Target: within 2%.
3. The same case in a fresh worker process (the default isolation) over the in-process mean: isolation
   must not perturb the number (the driver blocks in waitpid). Target: within a few %.

Usage: python benchmarks/overhead.py [--iters 50] [--rounds 3] [--skip-model]
"""

from __future__ import annotations

import argparse
import statistics
import time

from compilebench import timing


def loop_overhead_ns(n: int = 1_000_000, repeats: int = 5) -> tuple[float, float]:
    def noop():
        return None

    bare, timed = [], []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(n):
            noop()
        bare.append((time.perf_counter_ns() - t0) / n)
        m = timing.measure(noop, iters=n, warmup=0, clock=timing.HostClock())
        timed.append(m.loop_wall_ns / n)
    return min(bare), min(timed)


def resnet_ratios(iters: int, rounds: int) -> None:
    import torch
    from torch.utils.benchmark import Timer

    from compilebench import zoo
    from compilebench.executors import ProcessExecutor
    from compilebench.spec import Case, TimingPolicy, Variant
    from compilebench.worker import default_image_path, load_image, run_case

    case = Case("resnet-50", 1, Variant("eager"), device="cpu")
    policy = TimingPolicy(iters=iters, warmup=5)
    entry = zoo.get("resnet-50")
    model = entry.build("random", "full")
    inputs = entry.inputs(load_image(default_image_path()), 1, "random", "full")
    timer = Timer(stmt="model(**inputs)", globals={"model": model, "inputs": inputs})

    ours, theirs = [], []
    with torch.inference_mode():
        for _ in range(5):
            model(**inputs)
        for r in range(rounds):
            ours.append(run_case(case, policy, isolation="inline").stats["mean"])
            theirs.append(timer.timeit(iters).mean * 1e3)
            print(f"  round {r + 1}: compilebench {ours[-1]:.2f} ms, torch.utils.benchmark.Timer {theirs[-1]:.2f} ms")
    ratio = statistics.mean(ours) / statistics.mean(theirs)
    print(f"2. ResNet-50 eager, in-process: compilebench / Timer = {ratio:.3f} (target 0.98-1.02)")

    isolated = [ProcessExecutor(timeout_s=1800).run(case, policy, lambda p: None).stats["mean"] for _ in range(rounds)]
    print(f"  fresh-process means: {', '.join(f'{m:.2f}' for m in isolated)} ms")
    print(f"3. ResNet-50 eager, process isolation / in-process = {statistics.mean(isolated) / statistics.mean(ours):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--skip-model", action="store_true")
    args = ap.parse_args()
    bare, timed = loop_overhead_ns()
    print(f"1. timed loop {timed:.0f} ns/iter, bare loop {bare:.0f} ns/iter: overhead {(timed - bare) / 1e3:.3f} us/iter (target <= 1)")
    if not args.skip_model:
        resnet_ratios(args.iters, args.rounds)


if __name__ == "__main__":
    main()
