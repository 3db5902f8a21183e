"""Which trait of compilebench's worker makes compiled ResNet-50 read slower there than in a plain process? Prints
figures; asserts nothing (issue 62).

On one H200 (2026-11-30, torch 2.11) benchmarks/blocks.py, in a plain process, read ResNet-50 at batch 1 at 1.65x
(eager 3.6-3.9 ms a call, default 2.1-2.4 ms, every design within 2%, the launches' CPU time all of each call),
where the quick suite's workers minutes before read default at 3.0-3.4 ms in their warm-ups and 3.1-4.0 in their
loops (0.95x interleaved; 1.10x from the warm-ups); every H200 recording since 2026-11-27 read it at 3.0 ms or
more. Each step below is a fresh interpreter that adds one of the worker's traits to the one before, then times
eager and default each alone in host-timed windows of 10 calls (blocks.py's `windows of 10`), 300 calls each:

  plain         the model drawn in this process, called under torch.no_grad (blocks.py's way), inductor's folders
                where it puts them by default (under an empty temporary folder: a cold compile)
  inference     the same under torch.inference_mode, as a worker compiles and calls
  loaded        the weights a worker loads: drawn once and saved, then loaded into a meta-device skeleton
                (measure/weights.py), the model and inputs built by the worker's own code (measure/forward.prepare)
  folders       the compiler's state in a private, empty folder (measure/compiler_state.env_for): a cold compile
  folders-warm  the same folder again, in a new interpreter: inductor's caches hold the graph, as repeats 2 on find
  pool-down     a control, not a trait (the steps after it keep the pool, as a worker does): folders-warm with
                inductor's compile pool shut down once the graph is loaded (async_compile.shutdown_compile_workers).
                compile_fx wakes the pool at every compile of a graph on a GPU, a cached one too; where folders-warm
                reads slower than folders and this does not, the pool still starting beside the calls slowed them
  malloc        glibc's malloc set to keep what a call frees (measure/allocator.keep_freed_memory), as a worker does
                before it builds its model
  confined      kept to the cores a run gives its timed worker (run/devices.set_aside: all but the driver's, where the
                host has 4 cores or more) with torch's threads counted on them (measure/worker.confine)
  settled       the timed calls inside measure/warmup.settled: inductor's compile pool waited for until it is done
                starting (measure/compile_pool.settle: the remedy for what pool-down finds), its processes moved off
                those cores, and
                what the process built kept out of the garbage collector's passes (gc.freeze)
  worker        `compilebench run` itself, eager and default interleaved, 2 repeats (cold, then warm): each
                process's warm-up windows (alone) and loop, read from its results
  worker-exec   the same with its workers started as new interpreters (COMPILEBENCH_LAUNCH=exec), not forked
                from a launcher that imported torch and inductor before the fork

Each step in an interpreter of its own then times the two interleaved, in host-timed blocks of 10 opened by the
untimed calls a quick suite's block opens with (blocks.py's `host-timed blocks of 10`): in the quick suite's
recording of that hour (benchmarks/data/h200-quick-interleaved-1130.db) each worker's compiled loop, interleaved,
read 1.05x its own warm-ups (alone) where the worker compiled cold and 1.18-1.26x where it loaded the graph from
inductor's cache, eager's 0.98-1.09x. It also reads the CPU probe (pure Python on its core, as a worker reads it
before each loop: 516-679 µs in those workers): a step whose host runs Python slower shows there, apart from a
slower compiled path.

Each line gives each variant's ms per call and the calling thread's CPU ms per call (its launches: near the ms per
call where the host sets the pace), the speed-up, the same interleaved and default's interleaved over alone, the
probe, the process's threads, its descendant processes beside the timed calls and their CPU seconds (with triton
installed, the compile pool inductor starts at every compile, a cached one too: on other cores from `settled` on,
where a worker's CPU share, read on its own cores, does not see them), the Triton kernels by launcher
(measure/launches.py), and, for the steps in interpreters of their own, where default's host time goes (cProfile
over 50 calls: the function calls a call makes, and the functions that take the most time of their own): the step at
which default's ms moves is the trait to look at, and the function that grows with it where it moved. Every step
also profiles 5 calls of each variant after its timed calls (diagnostics/profiling, as `--profile` does; the workers
run with `--profile`, which profiles a case's first repeat: the cold-compiled process): on a GPU the kernels' ms per
call, how many, and the three that take the most (on a CPU, the operators' own CPU time). Where default's kernels
take more where its call does, the device ran other or slower kernels, and their names say which; where they stay
and the call grows, the host set the pace.

Usage: python benchmarks/worker_gap.py [--device cuda] [--tiny] [--steps plain,inference,...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

from _runs import TREE, cli, results

sys.path.insert(0, os.path.join(TREE, "src"))

STEPS = ("plain", "inference", "loaded", "folders", "folders-warm", "pool-down", "malloc", "confined", "settled",
         "worker", "worker-exec")
COMPILER_FOLDERS = ("folders", "folders-warm", "pool-down", "malloc", "confined", "settled")  # in a private folder
MODEL = "resnet-50"


def one_step(step: str, device: str, tiny: bool, folder: str) -> dict:
    """In this interpreter: build, compile and time the model with the step's traits; returns the figures."""
    import contextlib

    import torch

    from blocks import host_timed, model_and_inputs
    from compilebench.core.case import Case
    from compilebench.core.variant import Variant
    from compilebench.measure import allocator, conditions, forward, launches, timing, warmup, weights, worker
    from compilebench.zoo import get

    after = STEPS.index(step)  # the traits of every step up to this one
    if after >= STEPS.index("malloc"):
        allocator.keep_freed_memory()
    if after >= STEPS.index("confined"):
        worker.confine()  # the cores run_step named, as a run names them to its worker
    clock = timing.CudaClock(device) if device.startswith("cuda") else timing.HostClock()
    mode = torch.no_grad() if step == "plain" else torch.inference_mode()
    with mode:
        if step in ("plain", "inference"):
            model, inputs = model_and_inputs(MODEL, device, tiny)
        else:
            case = Case(MODEL, 1, Variant("default"), device=device, model_size="tiny" if tiny else "full")
            entry = weights.reusing(get(MODEL, None, None), case, folder, lambda phase: None)
            model, inputs = forward.prepare(entry, case)
        compiled = torch.compile(model)
        fns = {"eager": lambda: model(**inputs), "default": lambda: compiled(**inputs)}
        with contextlib.redirect_stdout(sys.stderr):
            fns["default"]()  # the compile, outside the windows
        if step == "pool-down":  # this step alone: its pool's processes gone before the timed calls
            from torch._inductor import async_compile

            async_compile.shutdown_compile_workers()
        with warmup.settled() if after >= STEPS.index("settled") else contextlib.nullcontext() as pool:
            probe = conditions.cpu_probe_us()  # the host's Python speed on this core, as a worker reads it
            threads = _threads()  # what else could take the interpreter's lock between the timed calls
            before = helpers()
            timed = host_timed(fns, clock, 300, 10, interleaved=False)
            mixed = host_timed(fns, clock, 300, 10, interleaved=True)  # the quick suite's blocks, no events
            alongside = beside(before, helpers())
            hot = hot_path(fns["default"], clock)
            device_side = {k: profiled(fn, device, os.path.join(folder, f"{step}-{k}.trace.json"), clock)
                           for k, fn in fns.items()}
    hits = torch._dynamo.utils.counters["inductor"].get("fxgraph_cache_hit", 0)  # folders-warm: the graph loaded
    return {"ms": {k: v[0] for k, v in timed.items()}, "cpu_ms": {k: v[1] for k, v in timed.items()},
            "interleaved_ms": {k: v[0] for k, v in mixed.items()}, "probe_us": round(probe, 1), "threads": threads,
            "helpers": alongside, "pool": [pool.state, pool.waited_s] if pool else None,
            "launchers": launches.triton_launchers(), "graph_cache_hits": hits, "hot": hot,
            "kernels": device_side}


def profiled(fn, device: str, trace: str, clock) -> dict:
    """kernels() of a profiled pass of fn, as `--profile` runs it; a pass that fails says why, and the step's timings
    stand."""
    from compilebench.diagnostics import profiling

    try:
        return kernels(profiling.profile(fn, profiling.FORWARD_CALLS, device, trace, clock.sync))
    except Exception as exc:  # noqa: BLE001 - a profiler problem must not lose the step's timings
        return kernels({"problem": f"the profiled pass failed: {type(exc).__name__}: {exc}"[:300]})


def kernels(summary: dict, top: int = 3) -> dict:
    """What a profiled pass (diagnostics/profiling, as `--profile` runs it) says of the device's side of a call:
    its kernels' ms per call (on a CPU: the operators' own CPU ms), how many kernels, and the `top` by time. Where
    the kernels' ms moves between steps with the call's, the device ran slower kernels (another algorithm, a lower
    clock), and the names say which; where it stays and the call's ms moves, the host set the pace."""
    rows = [r for r in summary.get("top") or [] if r.get("share") is not None][:top]
    return {"ms": summary.get("profiled_ms"), "n": summary.get("kernels"), "basis": summary.get("basis"),
            "top": [[r["name"][:60], round(r["self_ms"], 3)] for r in rows], "problem": summary.get("problem")}


def helpers() -> dict:
    """This process's descendants (with triton installed, inductor starts its compile pool at every compile, a
    graph loaded from its cache included: a sidecar interpreter that imports torch, then forks its workers) and the
    CPU seconds each has used so far, from /proc. They run on other cores than the timed calls (from `settled` on,
    moved there), out of the CPU share a worker reads on its own cores, and still share the host's caches, memory
    and, on a VM, maybe a core's other hyper-thread: between two readings, what ran beside the timed calls."""
    from compilebench.measure import cores

    out = {}
    for pid in cores.descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [os.path.basename(a.decode(errors="replace")) for a in f.read().split(b"\0") if a][:2]
        except OSError:
            continue  # ended meanwhile
        if (used := cores.cpu_s(pid)) is not None:
            out[pid] = (" ".join(argv) or "?", used)
    return out


def beside(before: dict, after: dict) -> dict:
    """What the descendants did between two helpers() readings: how many there were at the end, how many started
    and ended between, what they were, and the CPU seconds those alive at the end used meanwhile."""
    return {"processes": len(after), "started": len(set(after) - set(before)), "ended": len(set(before) - set(after)),
            "names": sorted({name for name, _ in after.values()}),
            "cpu_s": round(sum(s - before.get(pid, ("", 0.0))[1] for pid, (_, s) in after.items()), 2)}


def _threads() -> str:
    """The process's threads as the timed calls begin: its Python threads by name (a compile pool's reader, tqdm's
    monitor), then how many threads the kernel counts (torch's, the CUDA driver's) where /proc says."""
    import threading

    python = sorted(t.name for t in threading.enumerate())
    try:
        native = len(os.listdir("/proc/self/task"))
    except OSError:
        native = None
    return f"Python {', '.join(python)}; {native if native is not None else '?'} in all"


def hot_path(fn, clock, calls: int = 50, top: int = 6) -> dict:
    """Where a compiled call's host time goes, by cProfile over `calls` calls: the Python functions and C functions
    called per call, and the `top` that took the most time of their own (µs per call). The profiler slows every
    call alike; between steps, a function that appears, or takes more, names where the step's ms went (Triton's
    own launcher in place of inductor's static one, say)."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    clock.sync()
    profile.enable()
    for _ in range(calls):
        fn()
    profile.disable()
    clock.sync()
    rows = [(own / calls * 1e6, n / calls, _where(func))
            for func, (_, n, own, _, _) in pstats.Stats(profile).stats.items()]
    rows.sort(reverse=True)
    return {"functions_per_call": round(sum(n for _, n, _ in rows), 1),
            "top": [[name, round(us, 1), round(n, 1)] for us, n, name in rows[:top]]}


def _where(func: tuple) -> str:
    """A profiled function as `file:name` (a C function: its name alone)."""
    path, _, name = func
    return name if path == "~" else f"{os.path.basename(path)}:{name}"


def run_step(step: str, args, folder: str) -> dict:
    """A step in a fresh interpreter: its environment holds the compiler's folders from `folders` on, and from
    `confined` on the cores a run's worker keeps to (none on a host of under 4: every process shares them all)."""
    from compilebench.measure import compiler_state
    from compilebench.run import devices

    env = dict(os.environ)
    if step in COMPILER_FOLDERS:
        env.update(compiler_state.env_for(os.path.join(folder, "compiler")))
        if STEPS.index(step) >= STEPS.index("confined"):
            house, timed = devices.set_aside(set(os.sched_getaffinity(0)))
            env.update(devices.cpus_env(timed, house))
    else:  # inductor's default folders, empty: cold, as a plain process on a fresh machine compiles
        env["TMPDIR"] = os.path.join(folder, f"{step}-tmp")
        os.makedirs(env["TMPDIR"], exist_ok=True)
    out = os.path.join(folder, f"{step}.json")
    p = subprocess.run([sys.executable, __file__, "--one", step, "--device", args.device, "--folder", folder, "--out",
                        out, *(("--tiny",) if args.tiny else ())], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}"}
    with open(out) as f:
        return json.load(f)


def worker_step(step: str, args, folder: str) -> list[dict]:
    """`compilebench run` itself: per process, each variant's warm-up (the median of its last three windows, alone)
    and loop (the median of its calls, interleaved), its launches' CPU ms per call, the CPU probe before its loop,
    the Triton kernels by launcher and (`--profile`, after the loop) its kernels."""
    db = os.path.join(folder, f"{step}.db")
    cli("run", "--model", MODEL, "--batch-size", "1", "--variant", "eager", "default", "--repeats", "2",
        "--max-repeats", "2", "--device", args.device, "--db", db, "--quiet", "--profile",
        *(("--tiny",) if args.tiny else ()), cwd=folder, check=False,
        env={"COMPILEBENCH_LAUNCH": "exec"} if step == "worker-exec" else None)
    rows = []
    for r in results(db) if os.path.exists(db) else []:
        for rep in r["repeats"]:
            windows = (rep.get("warmed") or {}).get("windows_ms") or []
            rows.append({"variant": r["case"]["variant"].get("mode") or "eager", "repeat": rep["index"],
                         "warm_ms": statistics.median(windows[-3:]) if windows else None,
                         "loop_ms": statistics.median(rep["samples_ms"]) if rep.get("samples_ms") else None,
                         "cpu_ms": rep.get("launch_cpu_ms"), "launchers": rep.get("triton_launchers") or {},
                         "probe_us": ((rep.get("conditions") or {}).get("cpu_probe_us") or [None])[0],
                         "helpers": [(rep.get("conditions") or {}).get(k) for k in
                                     ("helper_processes", "helper_cpu_s", "compile_pool", "compile_pool_wait_s")],
                         "kernels": kernels(rep.get("profile") or {})})
    return rows


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f} ms"


def said(step: str, got: dict) -> str:
    if "error" in got:
        return f"{step:13} failed: {got['error']}"
    ms, cpu, mixed = got["ms"], got["cpu_ms"], got["interleaved_ms"]
    return (f"{step:13} eager {ms['eager']:.3f} ms (launch CPU {cpu['eager']:.3f}), default {ms['default']:.3f} ms "
            f"(launch CPU {cpu['default']:.3f}), {ms['eager'] / ms['default']:.2f}x; interleaved in blocks of 10 "
            f"eager {mixed['eager']:.3f} ms, default {mixed['default']:.3f} ms, "
            f"{mixed['eager'] / mixed['default']:.2f}x (default interleaved over alone "
            f"{mixed['default'] / ms['default']:.2f}); CPU probe {got['probe_us']} µs; threads {got['threads']}; "
            f"{_helpers_said(got['helpers'])}{'; ' + _pool_said(got['pool']) if got.get('pool') else ''}; "
            f"Triton kernels by launcher "
            f"{got['launchers'] or 'none'}; graphs loaded from inductor's cache {got['graph_cache_hits']}; default's "
            f"host time, profiled: {got['hot']['functions_per_call']} function calls a call, the most of their own "
            + ", ".join(f"{name} {us} µs ({n} a call)" for name, us, n in got["hot"]["top"])
            + "; after the timed calls, " + ", ".join(f"{k} {_kernels_said(v)}" for k, v in got["kernels"].items()))


def _helpers_said(h: dict) -> str:
    names = f" ({', '.join(h['names'])})" if h["names"] else ""
    return (f"beside the timed calls {h['processes']} descendant process(es){names}, {h['started']} started and "
            f"{h['ended']} ended meanwhile, their CPU {h['cpu_s']:.2f} s")


def _pool_said(pool: list | None) -> str:
    """How inductor's compile pool stood as the warm-up began, and the wait for it (measure/compile_pool)."""
    return f"the compile pool {pool[0]} after a wait of {pool[1]:.2f} s" if pool and pool[0] else ""


def _kernels_said(k: dict) -> str:
    if k.get("ms") is None:
        return f"profile: {k['problem']}" if k.get("problem") else "not profiled (a run profiles a case's first repeat)"
    n = f", {k['n']:.0f} kernels" if k.get("n") is not None else ""
    problem = f"; its problem: {k['problem']}" if k.get("problem") else ""
    return (f"profiled: {k.get('basis') or 'kernels'} {k['ms']:.3f} ms a call{n} (the most: "
            + ", ".join(f"{name} {ms:.3f}" for name, ms in k["top"]) + f"){problem}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="the tiny config (a rehearsal: the figure needs the real size)")
    ap.add_argument("--steps", default=",".join(STEPS))
    ap.add_argument("--keep", default=None, help="keep the steps' folder (results, saved weights) here")
    ap.add_argument("--one", default=None, help=argparse.SUPPRESS)  # a step, in the interpreter run_step started
    ap.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        got = one_step(args.one, args.device, args.tiny, args.folder)
        with open(args.out, "w") as f:
            json.dump(got, f)
        return
    steps = args.steps.split(",")
    unknown = [s for s in steps if s not in STEPS]
    if unknown:
        print(f"worker_gap.py: unknown step {', '.join(unknown)}; the steps: {', '.join(STEPS)}", file=sys.stderr)
        sys.exit(2)
    folder = args.keep or tempfile.mkdtemp(prefix="worker-gap-")
    os.makedirs(folder, exist_ok=True)
    found: dict = {}  # each step's figures, written to the folder as summary.json (gpu_acceptance reads it)
    try:
        for step in steps:
            if step.startswith("worker"):
                found[step] = worker_step(step, args, folder)
                for row in found[step] or [{"failed": "no result stored"}]:
                    print(f"{step:13} " + (row["failed"] if "failed" in row else
                          f"repeat {row['repeat']} {row['variant']:8} warm-up {_ms(row['warm_ms'])}, loop "
                          f"{_ms(row['loop_ms'])}, launch CPU {_ms(row['cpu_ms'])}, CPU probe before its loop "
                          f"{row['probe_us']} µs; its descendants before and after its loop {row['helpers'][0]}, "
                          f"their CPU over it {row['helpers'][1]} s, "
                          f"{_pool_said(row['helpers'][2:]) or 'no compile pool woken'}; Triton kernels by "
                          f"launcher {row['launchers'] or 'none'}; after its loop {_kernels_said(row['kernels'])}"),
                          flush=True)
            else:
                found[step] = run_step(step, args, folder)
                print(said(step, found[step]), flush=True)
        with open(os.path.join(folder, "summary.json"), "w") as f:
            json.dump(found, f)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
