"""How much compilebench's own machinery adds to what it measures. Prints figures; asserts nothing.

1. Per-iteration overhead of the timed loop (timing.measure on the host clock) over a bare Python loop
   calling the same no-op. Target: <= 1 microsecond.
2. ResNet-50 eager (full size, random weights, batch 1, CPU), in one process: compilebench's reported mean
   (worker.run_case, inline) over torch.utils.benchmark.Timer's mean, alternated to share drift.
   Target: within 2%.
3. The same case in a fresh worker process forked by the launcher (the default), in a new interpreter
   (COMPILEBENCH_LAUNCH=exec) and in this process, in turns: isolation, and how the worker starts, must not
   perturb the number (the driver blocks while the worker runs). Target: within a few %.
4. A whole sweep (default: the quick suite, `compilebench run`) as a user runs it: per worker process, the wall
   time spent outside compile, warm-up and the timed loop, and the sweep's efficiency, (compile + warm-up +
   timed loop) / wall. Goals (issue 17): <= 3 s per process and >= 90%. And the waits between its rounds
   (_runs.round_waits): at a look, what starting the look's workers cost.
5. A worker's start (issue 50): ResNet-50 (full size, random weights, batch 1, CPU) eager and default, in workers
   forked from launchers and in new interpreters, alternated: each phase's median ("start": before the worker's
   first phase), its start (start + setup + build) and its overhead (its wall time as the driver saw it, less
   the first call, warm-up and timed loop). Goals: a forked worker starts in <= 0.3 s; a new interpreter in no
   more than its imports (`import torch, transformers` and the model's classes, timed in a bare interpreter).

Usage: python benchmarks/overhead.py [--iters 30] [--rounds 10] [--parts loop,timer,isolation,sweep,start]
                                     [--sweep-args "..."] [--tree PATH] [--keep PATH]
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

from compilebench.measure import timing


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


def resnet_ratios(iters: int, rounds: int, parts: set[str]) -> None:
    import torch
    from torch.utils.benchmark import Timer

    from compilebench import zoo
    from compilebench.core.case import Case
    from compilebench.core.job import Job, TimingPolicy
    from compilebench.core.variant import Variant
    from compilebench.measure.worker import run_case
    from compilebench.run.executors import ProcessExecutor
    from compilebench.zoo.entry import default_image_path, load_image

    case = Case("resnet-50", 1, Variant("eager"), device="cpu")
    policy = TimingPolicy(iters=iters, warmup=5, min_iters=1)
    entry = zoo.get("resnet-50")
    with torch.inference_mode():  # built as the worker builds it
        model = entry.build("random", "full")
    inputs = entry.inputs(load_image(default_image_path()), 1, "random", "full")
    # Timer runs on one thread unless told otherwise; compilebench leaves torch's default thread count.
    timer = Timer(stmt="model(**inputs)", globals={"model": model, "inputs": inputs}, num_threads=torch.get_num_threads())

    ours, theirs = [], []
    rounds_timer = rounds if "timer" in parts else 0
    with torch.inference_mode():
        for _ in range(5):
            model(**inputs)
        for r in range(rounds_timer):  # paired rounds, order alternated, so drift hits both sides alike
            if r % 2:
                theirs.append(timer.timeit(iters).mean * 1e3)
                ours.append(run_case(case, policy, isolation="inline").stats.mean)
            else:
                ours.append(run_case(case, policy, isolation="inline").stats.mean)
                theirs.append(timer.timeit(iters).mean * 1e3)
            print(f"  round {r + 1}: compilebench {ours[-1]:.2f} ms, torch.utils.benchmark.Timer {theirs[-1]:.2f} ms")
    if rounds_timer:
        _report("2. ResNet-50 eager, in-process: compilebench / Timer", ours, theirs, "(target 0.98-1.02)")
    if "isolation" not in parts:
        return

    # A forked worker (the default), a new interpreter (COMPILEBENCH_LAUNCH=exec) and this process, in turns.
    # A new launcher each round: every child of one launcher shares its memory layout, and with it an offset of
    # its own (one launcher read 9% slower than new interpreters in every round), so one launcher is one draw.
    execd = ProcessExecutor(timeout_s=1800, fork=False)
    got = {"forked": [], "exec": [], "inline": []}
    for r in range(rounds):
        forked = ProcessExecutor(timeout_s=1800, models=("resnet-50",), inductor=True)  # preloading as a run does
        order = ["forked", "exec", "inline"][r % 3:] + ["forked", "exec", "inline"][:r % 3]
        for how in order:
            if how == "inline":
                result = run_case(case, policy, isolation="inline")
            else:
                (result,) = (forked if how == "forked" else execd).run(
                    Job([case], policy.resolve(case.timed_unit, case.device)), {}, lambda p: None)
            if result.status != "ok":
                print(f"  round {r + 1}: {how} {result.status}: {result.message}")
            got[how].append(result.stats.mean)
        print(f"  round {r + 1}: forked worker {got['forked'][-1]:.2f} ms, new interpreter {got['exec'][-1]:.2f} ms, "
              f"in-process {got['inline'][-1]:.2f} ms ({order[0]} first)")
    _report("3. ResNet-50 eager, forked worker / in-process", got["forked"], got["inline"], "(target within a few %)")
    _report("   ResNet-50 eager, forked worker / new interpreter", got["forked"], got["exec"], "(target within a few %)")


def sweep(args: list[str], tree: str, keep: str | None) -> None:
    import shutil

    from _runs import cli, processes, results, round_waits

    with tempfile.TemporaryDirectory() as tmp:
        db = f"{tmp}/sweep.db"
        wall, p = cli("run", *args, "--db", db, "--quiet", tree=tree, cwd=tmp)
        done = results(db)
        if keep:
            shutil.copyfile(db, keep)
    measured, workers = 0.0, set()
    for r in done:
        for rep in processes(r):
            if not rep.get("loop_wall_s"):
                continue
            workers.add(rep.get("process") or (r["case_key"], rep.get("index")))  # an interleaved one holds two
            warmup = rep.get("warmup_s")
            if warmup is None:  # not recorded before issue 17: warm-up calls x the mean call
                warmup = (rep.get("warmup_iters") or 0) * rep["stats"]["mean"] / 1e3
            measured += (rep.get("first_call_s") or 0) + warmup + rep["loop_wall_s"]
    n = len(workers)
    print(f"4. sweep `compilebench run {' '.join(args)}`: {len(done)} results from {n} worker processes in {wall:.0f} s; "
          f"compile + warm-up + timed loop {measured:.0f} s")
    print(f"   overhead per process {(wall - measured) / max(n, 1):.1f} s (goal <= 3 s); "
          f"efficiency {measured / wall:.0%} (goal >= 90%); waits between rounds (s) {round_waits(done)}")


MEASURED = ("first call", "warm-up", "timing")  # a worker's measurement; everything else is its start and end


def starts(rounds: int, iters: int) -> None:
    """Part 5: ResNet-50 eager and default, each in `rounds` processes per way of starting, the two ways and the two
    variants alternated round by round; one process of each first, unreported, as a run's first process of a model
    (which may prepare what later ones reuse)."""
    import dataclasses

    from compilebench.core.case import Case
    from compilebench.core.job import Job, TimingPolicy
    from compilebench.core.variant import Variant
    from compilebench.measure import compiler_state
    from compilebench.run.executors import ProcessExecutor

    policy = TimingPolicy(iters=iters, warmup=3, min_iters=1)
    cases = {v: Case("resnet-50", 1, Variant(v), device="cpu") for v in ("eager", "default")}
    states = compiler_state.StateFolders()
    shared = {"weights": states.folder("weights")} if "weights" in {f.name for f in dataclasses.fields(Job)} else {}
    executors = {"forked": ProcessExecutor(timeout_s=1800, models=("resnet-50",), inductor=True),
                 "new interpreter": ProcessExecutor(timeout_s=1800, fork=False)}
    executors["forked"].start_launchers(range(1, rounds + 2))
    got: dict[tuple[str, str], list[dict]] = {}
    for r in range(rounds + 1):
        order = [(how, v) for how in executors for v in cases]
        order = order if r % 2 else order[::-1]
        for how, variant in order:
            env = compiler_state.env_for(states.folder(f"{how.replace(' ', '-')}-{variant}-{r}"))  # a space breaks C++ compiles
            job = Job([cases[variant]], policy.resolve("forward", cases[variant].device), repeat=r + 1,
                      compile_cache="cold", count_flops=False, **shared)
            seen: list[tuple[str, float]] = []
            t0 = time.perf_counter()
            (result,) = executors[how].run(job, env, lambda p: seen.append((p, time.perf_counter())))
            wall = time.perf_counter() - t0
            if result.status != "ok":
                print(f"  {how} {variant}: {result.status}: {result.message}\n{result.traceback or ''}"[:3000])
                continue
            phases = dict(result.phases)  # the executor's answer is the worker's repeat
            if "start" not in phases:  # recorded by the worker since issue 50; before, read off the phases relayed
                first = next((t for p, t in seen if p not in ("setup", "start")), None)
                phases["start"] = (first - t0 - phases.get("setup", 0.0)) if first else float("nan")
            phases["wall"] = wall
            if r:  # the first round prepares what a run's first process of a model would
                got.setdefault((how, variant), []).append(phases)
    imports = _imports_s(rounds)
    print(f"5. worker start, ResNet-50 full size, batch 1, CPU: median of {rounds} processes each "
          f"(`import torch, transformers` and ResNet-50's classes in a bare interpreter: {imports:.2f} s)")
    for (how, variant), runs in got.items():
        median = {k: statistics.median(p.get(k, 0.0) for p in runs) for k in {k for p in runs for k in p}}
        start = median["start"] + median.get("setup", 0.0) + median.get("build", 0.0)
        overhead = statistics.median(p["wall"] - sum(p.get(k, 0.0) for k in MEASURED) for p in runs)
        goal = "goal <= 0.30 s" if how == "forked" else f"goal <= the imports, {imports:.2f} s"
        shown = ", ".join(f"{k} {v:.3f}" for k, v in median.items() if k != "wall")
        print(f"   {how:15} {variant:7}: start {start:.2f} s ({goal}); overhead {overhead:.2f} s; phases: {shown}")


def _imports_s(rounds: int) -> float:
    """Seconds from asking for a bare interpreter until it has imported what a ResNet-50 worker must: torch,
    transformers, the model's and its processor's classes (median of `rounds`; its exit left out)."""
    code = ("import time, torch, transformers; transformers.ResNetForImageClassification; "
            "transformers.ConvNextImageProcessorPil; print(time.monotonic())")
    times = []
    for _ in range(rounds):
        t0 = time.monotonic()
        out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                             env={**os.environ, "PYTHONWARNINGS": "ignore"}).stdout
        times.append(float(out.split()[-1]) - t0)
    return statistics.median(times)


def _report(what: str, a: list[float], b: list[float], target: str) -> None:
    ratios = sorted(x / y for x, y in zip(a, b))
    print(f"{what} = {statistics.median(ratios):.3f} median of {len(ratios)} paired rounds "
          f"(range {ratios[0]:.3f}-{ratios[-1]:.3f}; ratio of means {statistics.mean(a) / statistics.mean(b):.3f}) {target}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--parts", default="loop,timer,isolation,sweep,start",
                    help="which of loop, timer, isolation, sweep, start to run")
    ap.add_argument("--sweep-args", default="", help="options of the swept `compilebench run` (default: the quick suite)")
    ap.add_argument("--tree", default=None, help="the compilebench checkout whose sweep to time (default: this one)")
    ap.add_argument("--keep", default=None, help="copy the sweep's results file here (for a report)")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if "loop" in parts:
        bare, timed = loop_overhead_ns()
        print(f"1. timed loop {timed:.0f} ns/iter, bare loop {bare:.0f} ns/iter: overhead {(timed - bare) / 1e3:.3f} us/iter (target <= 1)")
    if parts & {"timer", "isolation"}:
        resnet_ratios(args.iters, args.rounds, parts)
    if "sweep" in parts:
        from _runs import TREE

        sweep(shlex.split(args.sweep_args), args.tree or TREE, args.keep)
    if "start" in parts:
        starts(min(args.rounds, 5), args.iters)


if __name__ == "__main__":
    main()
