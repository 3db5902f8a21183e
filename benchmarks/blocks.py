"""Does timing a model's variants interleaved change what each reads? Prints figures; asserts nothing (issue 62).

On an H200 (2026-11-28 02:50) the quick suite interleaved read ResNet-50's speed-up at 1.02x, where a process each
had read 1.12x on the lease before, and each process's compiled loop ran 1.10-1.25x slower than that variant's own
warm-up windows (its calls back to back, alone) moments before, its eager loop not. This script asks it directly,
in one process, so that no difference between processes or hosts enters: ResNet-50 at batch 1 (or --model: its
config from the zoo, random weights), eager and torch.compile's default, timed by compilebench's own loops
(compilebench.measure.timing) in three designs:

  alone        each variant's loop on its own, its calls back to back (as a process each times it)
  blocks of 10 the two interleaved, 10 calls of one then 10 of the other, each block opened by untimed calls
               after the switch (measure/warmup.after_switch: the quick suite's design since 2026-11-28)
  all-timed blocks of 10
               the same, every call timed (the quick suite's design before: on this project's 2-core VM a tiny
               ResNet-50's compiled speed-up read 0.91-0.98 of alone so, 0.99-1.00 with 2 untimed calls a block)
  blocks of 50 the same in blocks of 50, opened by untimed calls
  windows of 10 each variant on its own, its calls in windows of 10 synchronized at both ends and timed by the
               host's clock, no CUDA event per call (as a warm-up times its windows, at the blocks' cadence)
  host-timed blocks of 10
               the two interleaved as in blocks of 10, each block timed whole by the host's clock instead of by
               CUDA events per call: with windows of 10, it tells what interleaving does from what the events do

Each round runs the designs in an order drawn for it (seeded), so the machine's drift falls on all alike. Prints
each round's medians per call and speed-ups, then each design's speed-up as the median over rounds, the
interleaved designs' over the alone one (near 1.00 where interleaving changes nothing), and the windows' over the
alone one (near 1.00 where timing each call by CUDA events and synchronizing every 10 calls change nothing: on the
02:50 lease compiled ResNet-50's warm-up windows read 1.2x faster than its interleaved loop, eager's did not), the
host-timed blocks' over the windows' (near 1.00 where interleaving changes nothing, events aside), and in the two
host-timed designs the calling thread's CPU time per call up to each block's closing synchronize (the launches:
near the ms per call where the host, not the device, sets the pace; on that lease, 6 of 7 processes read compiled
and eager within 2.5% of each other from a block's third call on, though alone they were 1.05-1.44x apart).

Usage: python benchmarks/blocks.py [--device cuda] [--model resnet-50] [--tiny] [--rounds 5] [--iters 300]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time

from _runs import TREE

sys.path.insert(0, os.path.join(TREE, "src"))

DESIGNS = ("alone", "blocks of 10", "all-timed blocks of 10", "blocks of 50", "windows of 10",
           "host-timed blocks of 10")
HOST_TIMED = ("windows of 10", "host-timed blocks of 10")
INTERLEAVED = ("blocks of 10", "all-timed blocks of 10", "blocks of 50")


def model_and_inputs(name: str, device: str, tiny: bool):
    """A zoo model (its config from the zoo, random weights) and its batch-1 inputs on the device."""
    import torch

    from compilebench.zoo import REGISTRY, entry

    torch.manual_seed(0)
    size = "tiny" if tiny else "full"
    model_entry = REGISTRY[name]
    model = model_entry.build("random", size).to(device)
    inputs = model_entry.inputs(entry.load_image(entry.default_image_path()), 1, "random", size)
    return model, {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}


def one_round(fns: dict, order: list[str], clock, iters: int) -> tuple[dict, dict]:
    """Each design's median ms per call of each variant, in the order given, and the host-timed designs' launch
    CPU ms per call."""
    from compilebench.measure import timing

    got, launch = {}, {}
    for design in order:
        if design in HOST_TIMED:
            timed = host_timed(fns, clock, iters, 10, interleaved=design.startswith("host"))
            got[design] = {name: ms for name, (ms, _) in timed.items()}
            launch[design] = {name: cpu for name, (_, cpu) in timed.items()}
        elif design == "alone":
            got[design] = {name: statistics.median(timing.measure(fn, iters=iters, warmup=2, clock=clock,
                                                                  warmup_cap_s=10.0).samples_ns) / 1e6
                           for name, fn in fns.items()}
        else:
            block = int(design.split()[-1])
            measured = timing.measure_interleaved(fns, iters=iters, warmup=dict.fromkeys(fns, 2), clock=clock,
                                                  block=block, warmup_cap_s=10.0,
                                                  after_switch=0 if design.startswith("all-timed") else None)
            got[design] = {name: statistics.median(m.samples_ns) / 1e6 for name, m in measured.items()}
    return got, launch


def host_timed(fns: dict, clock, iters: int, size: int, interleaved: bool) -> dict[str, tuple[float, float]]:
    """Per variant, the median ms per call of `iters` calls in windows of `size`, each synchronized at both ends and
    timed by the host's clock, after the same warm-up as a loop's, and the median CPU ms per call the calling thread
    spent up to each window's closing synchronize: each variant's windows on their own, one variant after the
    other, or `interleaved`, alternating, each opened by the untimed calls a block of the quick suite opens with
    (measure/warmup.after_switch)."""
    from compilebench.measure import warmup

    warmed = {name: warmup.warm_up(fn, 2, clock, cap_s=10.0) for name, fn in fns.items()} if interleaved else {}
    per_call: dict[str, list[float]] = {name: [] for name in fns}
    cpu: dict[str, list[float]] = {name: [] for name in fns}

    def window(name: str, fn) -> None:
        for _ in range(warmup.after_switch(warmed[name]) if interleaved else 0):
            fn()
        clock.sync()
        t0, c0 = clock.now_ns(), time.thread_time_ns()
        for _ in range(size):
            fn()
        c1 = time.thread_time_ns()
        clock.sync()
        per_call[name].append((clock.now_ns() - t0) / size)
        cpu[name].append((c1 - c0) / size)

    if interleaved:
        for _ in range(max(1, iters // size)):
            for name, fn in fns.items():
                window(name, fn)
    else:
        for name, fn in fns.items():
            warmup.warm_up(fn, 2, clock, cap_s=10.0)
            for _ in range(max(1, iters // size)):
                window(name, fn)
    return {name: (statistics.median(per_call[name]) / 1e6, statistics.median(cpu[name]) / 1e6) for name in fns}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--model", default="resnet-50", help="a vision model of the zoo (default: resnet-50)")
    parser.add_argument("--tiny", action="store_true", help="the model's tiny config (a rehearsal: the figure needs "
                        "the real size)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=300)
    args = parser.parse_args()

    import torch

    from compilebench.core import stats
    from compilebench.measure import timing

    clock = timing.CudaClock(args.device) if args.device.startswith("cuda") else timing.HostClock()
    model, inputs = model_and_inputs(args.model, args.device, args.tiny)
    compiled = torch.compile(model)
    with torch.no_grad():
        fns = {"eager": lambda: model(**inputs), "default": lambda: compiled(**inputs)}
        fns["default"]()  # compiled here, not inside a design's first call
        rng = random.Random(62)
        speedups: dict[str, list[float]] = {d: [] for d in DESIGNS}
        times: dict[str, dict[str, list[float]]] = {d: {"eager": [], "default": []} for d in DESIGNS}
        launches: dict[str, dict[str, list[float]]] = {d: {"eager": [], "default": []} for d in HOST_TIMED}
        for i in range(1, args.rounds + 1):
            order = rng.sample(DESIGNS, len(DESIGNS))
            got, launch = one_round(fns, order, clock, args.iters)
            for design in DESIGNS:
                speedups[design].append(got[design]["eager"] / got[design]["default"])
                for name in ("eager", "default"):
                    times[design][name].append(got[design][name])
                    if design in HOST_TIMED:
                        launches[design][name].append(launch[design][name])
            print(f"round {i}: " + " | ".join(f"{d}: eager {got[d]['eager']:.3f} ms, default {got[d]['default']:.3f} ms "
                                              f"({speedups[d][-1]:.2f}x)" for d in order), flush=True)
    alone = statistics.median(speedups["alone"])
    print(f"speed-up, the median over {args.rounds} rounds: " + ", ".join(
        f"{d} {statistics.median(v):.3f}x" for d, v in speedups.items()))
    print("interleaved over alone (near 1.00 where interleaving changes nothing): " + ", ".join(
        f"{d} {statistics.median(speedups[d]) / alone:.3f}" for d in INTERLEAVED))
    # what each design would decide as a run's design, its rounds paired (a design to adopt must also be narrow)
    print("speed-up, paired over rounds, 95%: " + ", ".join(
        "{} {:.3f}x [{:.3f}-{:.3f}]".format(d, *stats.ratio_df(times[d]["default"], times[d]["eager"], pair=True)[:3])
        for d in DESIGNS))
    windowed = statistics.median(speedups["windows of 10"])
    print("host-timed windows over alone (near 1.00 where per-call events and the cadence change nothing): "
          f"windows of 10 {windowed / alone:.3f}, host-timed blocks of 10 over windows of 10 (interleaving with "
          f"no events) {statistics.median(speedups['host-timed blocks of 10']) / windowed:.3f}")
    print("launch CPU ms per call, the median over rounds (against ms per call: near it, the host sets the pace): "
          + ", ".join(f"{d}: " + ", ".join(f"{name} {statistics.median(launches[d][name]):.3f} of "
                                           f"{statistics.median(times[d][name]):.3f}" for name in ("eager", "default"))
                      for d in HOST_TIMED))
    from compilebench.measure.launches import triton_launchers

    # against the count compilebench's workers record (measure/launches.py): a plain process's, for the same model
    print(f"Triton kernels by launcher in this process: {triton_launchers() or 'none (no Triton kernel)'}")


if __name__ == "__main__":
    main()
