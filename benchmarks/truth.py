"""Whether compilebench's compile cost and speed-up can be trusted. Prints figures; asserts nothing.

1. compile: compilebench's reported compile seconds (dynamo's own timer) and first-call seconds, each over an
   independent stopwatch (time.perf_counter) around the same cold first call: the case runs in a fresh
   process through worker.run_cases with the compiled function wrapped by the stopwatch. Target: within 5%.
   Beside it, the same over a hand-written script in another fresh process with a fresh inductor cache (build,
   one eager call as the worker's reference, time the cold first call of torch.compile(model)): this one
   also holds how much a cold compile varies from process to process.
2. speedup: the reported eager/compiled speed-up of the same case over --runs runs, with the default method
   (eager and compiled each in its own fresh process, one after the other) and with --interleave (both in
   one process, in alternating blocks). Prints each run's speed-up and 95% CI and the spread across runs.

Usage: python benchmarks/truth.py [--model resnet-50] [--device cpu] [--rounds 3] [--runs 5] [--iters 100]
                                  [--parts compile,speedup]
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

from compilebench.core.case import Case
from compilebench.core.job import Job, TimingPolicy
from compilebench.core.variant import Variant
from compilebench.measure import compiler_state
from compilebench.run.executors import ProcessExecutor

# The independent stopwatch: nothing of compilebench's timing, only its model and input preparation.
STOPWATCH = """
import json, sys, time
import torch
from compilebench import zoo
from compilebench.core.case import Case
from compilebench.measure.forward import prepare as _prepare

case = Case.from_dict(json.loads(sys.argv[1]))
sync = torch.cuda.synchronize if case.device.startswith("cuda") else (lambda: None)
with torch.inference_mode():
    model, inputs = _prepare(zoo.get(case.model), case)
    model(**inputs)  # the worker's eager reference call comes before the compiled first call too
    sync()
    compiled = torch.compile(model)
    t0 = time.perf_counter()
    compiled(**inputs)
    sync()
    print(time.perf_counter() - t0)
"""


# The same first call, watched from outside compilebench's timing code.
WATCHED = """
import json, sys, time
import torch
from compilebench.measure import compiler, worker
from compilebench.core.case import Case
from compilebench.core.job import Job, TimingPolicy

case = Case.from_dict(json.loads(sys.argv[1]))
sync = torch.cuda.synchronize if case.device.startswith("cuda") else (lambda: None)
apply, watch = compiler.apply, []

def watched_apply(model, variant):
    fn = apply(model, variant)

    def call(*args, **kwargs):
        if watch:
            return fn(*args, **kwargs)
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        sync()
        watch.append(time.perf_counter() - t0)
        return out
    return call

compiler.apply = watched_apply
(r,) = worker.run_cases(Job([case], TimingPolicy(iters=5, warmup=2, min_iters=1).resolve("forward", case.device)),
                        isolation="inline")
assert r.status == "ok", (r.status, r.message)
print(json.dumps({"compile_s": r.compile_s, "first_call_s": r.first_call_s, "stopwatch_s": watch[0]}))
"""


def _python(script: str, case: Case, env: dict | None = None) -> str:
    out = subprocess.run([sys.executable, "-c", script, json.dumps(case.to_dict())], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr)
    return out.stdout.strip().splitlines()[-1]


def stopwatch_first_call_s(case: Case) -> float:
    with tempfile.TemporaryDirectory(prefix="truth-cache-") as cache:
        return float(_python(STOPWATCH, case, {**os.environ, "TORCHINDUCTOR_CACHE_DIR": cache}))


def compilebench_result(cases: list[Case], policy: TimingPolicy):
    """One repeat (one fresh worker process) of the cases, each with its own cold compiler state."""
    with tempfile.TemporaryDirectory(prefix="truth-state-") as state:
        repeats = ProcessExecutor(timeout_s=3600).run(Job(cases, policy.resolve("forward", cases[0].device)),
                                                      compiler_state.env_for(state), lambda p: None)
    for c, r in zip(cases, repeats):
        if r.status != "ok":
            sys.exit(f"{c.describe()}: {r.status}: {r.message}")
    return repeats


def compile_truth(model: str, device: str, rounds: int) -> None:
    case = Case(model, 1, Variant("default"), device=device)
    same, other = {"compile": [], "first call": []}, {"compile": [], "first call": []}
    for i in range(rounds):
        order = ("compilebench", "script") if i % 2 == 0 else ("script", "compilebench")
        for who in order:
            if who == "script":
                script_s = stopwatch_first_call_s(case)
            else:
                got = json.loads(_python(WATCHED, case))
        for what, key in (("compile", "compile_s"), ("first call", "first_call_s")):
            same[what].append(got[key] / got["stopwatch_s"])
            other[what].append(got[key] / script_s)
        print(f"  round {i + 1} ({order[0]} first): compilebench compile {got['compile_s']:.2f} s, first call "
              f"{got['first_call_s']:.2f} s; stopwatch on the same call {got['stopwatch_s']:.2f} s; "
              f"hand-written script's first call {script_s:.2f} s", flush=True)
    for title, ratios_by in (("the same cold first call", same), ("a hand-written script's cold first call", other)):
        for what, ratios in ratios_by.items():
            ratios = sorted(ratios)
            print(f"1. {model} {device}: reported {what} s / stopwatch on {title} = {statistics.median(ratios):.3f} "
                  f"median of {rounds} (range {ratios[0]:.3f}-{ratios[-1]:.3f}) (target 0.95-1.05)")


def speedup_truth(model: str, device: str, runs: int, iters: int) -> None:
    policy = TimingPolicy(iters=iters)
    for method in ("default", "interleave"):
        interleave = method == "interleave"
        cases = [Case(model, 1, Variant(mode), device=device, interleave=interleave) for mode in ("eager", "default")]
        speedups = []
        for i in range(runs):
            t0 = time.monotonic()
            if interleave:
                eager, compiled = compilebench_result(cases, policy)
            else:
                (eager,), (compiled,) = (compilebench_result([c], policy) for c in cases)
            s = eager.stats.mean / compiled.stats.mean  # one process each: a speed-up, and no interval
            speedups.append(s)
            print(f"  {method} run {i + 1}: eager {eager.stats.mean:.2f} ms (CV within {eager.stats.cv * 100:.1f}%), "
                  f"compiled {compiled.stats.mean:.2f} ms (CV within {compiled.stats.cv * 100:.1f}%): "
                  f"speed-up {s:.3f} [{time.monotonic() - t0:.0f} s]", flush=True)
        spread = statistics.stdev(speedups) / statistics.mean(speedups) if len(speedups) > 1 else float("nan")
        print(f"2. {model} {device} {method}: speed-up over {runs} runs: mean {statistics.mean(speedups):.3f}, "
              f"range {min(speedups):.3f}-{max(speedups):.3f}, run-to-run CV {spread * 100:.1f}%", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet-50")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=3, help="compile rounds (each: one watched case, one script)")
    ap.add_argument("--runs", type=int, default=5, help="speed-up runs per method")
    ap.add_argument("--iters", type=int, default=100, help="timed iterations per variant in the speed-up runs")
    ap.add_argument("--parts", default="compile,speedup", help="which of compile, speedup to run")
    args = ap.parse_args()
    parts = set(args.parts.split(","))
    if "compile" in parts:
        compile_truth(args.model, args.device, args.rounds)
    if "speedup" in parts:
        speedup_truth(args.model, args.device, args.runs, args.iters)


if __name__ == "__main__":
    main()
