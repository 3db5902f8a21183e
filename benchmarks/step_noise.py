"""How often `history` names a step in a series of runs where nothing changed, and how often it finds one that is
real. Prints figures; asserts nothing (issue 62: no number shown surer than it is). Measures nothing: each series is
drawn, as `history` reads a machine's series (core/steps.py: the machine's drift estimated from its series, then
each series' steps).

A history is `--series` series (cases of one machine) of `--runs` runs; each run's point is its true value moved
by the machine's run-to-run drift (normal, `drift`) and its own noise (normal, `se`, its 95% interval ±1.96 se).
Printed per (se, drift): the series of `--histories` x `--series` with a step where nothing changed (goal: at
most 5%, the interval's own promise), and with a step of `--effect` from the middle run on, the series where it
was found at that run (as often as the noise allows).

Usage: python benchmarks/step_noise.py [--histories 200] [--runs 10] [--series 3] [--effect 1.15] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import random

from compilebench.core import stats, steps

# (each point's se, the machine's drift), in log; the last, a VM that moves between runs as this project's does
NOISES = ((0.02, 0.03), (0.01, 0.05), (0.03, 0.0), (0.05, 0.05), (0.02, 0.12))


def history(rnd: random.Random, runs: int, se: float, drift: float, effect: float,
            series: int = 3) -> list[list[steps.Point]]:
    """`series` series of one machine; from the middle run on, each moved by `effect`."""
    def point(mu: float) -> steps.Point:
        v = mu + rnd.gauss(0, drift) + rnd.gauss(0, se)
        return steps.Point(math.exp(v), math.exp(v - steps.Z95 * se), math.exp(v + steps.Z95 * se))
    return [[point(math.log(effect) if i >= runs // 2 else 0.0) for i in range(runs)] for _ in range(series)]


def found(rnd: random.Random, runs: int, se: float, drift: float, effect: float, n: int) -> tuple[int, int]:
    """Of one history's `n` series: those with a step anywhere, and those with one at the middle run."""
    series = history(rnd, runs, se, drift, effect, n)
    sd = steps.drift(series)  # the machine's, from its series, as `history` estimates it
    said = [steps.find(s, sd, stats.DEFAULT_MIN_EFFECT) for s in series]
    return sum(1 for s in said if s), sum(1 for s in said if any(st.at == runs // 2 for st in s))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--histories", type=int, default=200)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--series", type=int, default=3)
    ap.add_argument("--effect", type=float, default=1.15)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    total = args.series * args.histories
    for se, drift in NOISES:
        false = sum(found(rnd, args.runs, se, drift, 1.0, args.series)[0] for _ in range(args.histories))
        real = sum(found(rnd, args.runs, se, drift, args.effect, args.series)[1] for _ in range(args.histories))
        print(f"se {se:.0%}, drift {drift:.0%}, {args.series} x {args.runs} runs: nothing changed, a step in "
              f"{false} of {total} series ({false / total:.1%}; goal: at most 5%); a {args.effect}x step found at its "
              f"run in {real} of {total} ({real / total:.1%})", flush=True)


if __name__ == "__main__":
    main()
