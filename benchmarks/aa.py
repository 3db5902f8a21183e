"""Does a verdict survive an A/A test? Prints figures; asserts nothing.

The same case is measured as A and as B in K independent invocations each (`compilebench run`, alternating A,
B, A, B, ... so drift hits both alike), each into its own results file. Each pair (A_i, B_i) is compared as
`compilebench compare` does: B's time over A's from both sides' per-process means, its 95% interval and the
verdict at --min-effect. A and B are the same thing, so the goal (issue 13) is 0 `faster` and 0 `slower`.

With --env (issue 23), each pair is one invocation instead: `compilebench run --env A=PYTHON --env B=PYTHON`, the
same interpreter as two environments, whose repeats alternate; A and B are compared as `compare --env-a A --env-b
B` does. Same goal.

Usage: python benchmarks/aa.py [--k 5] [--model resnet-50] [--variant eager] [--iters 100] [--extra "--repeats 3"]
       [--env]
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from collections import Counter

from _runs import TREE, cli, results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--model", default="resnet-50")
    ap.add_argument("--variant", default="eager")
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--min-effect", type=float, default=None, help="the margin (default: the product's, 5%%)")
    ap.add_argument("--extra", default="", help="more options for every run")
    ap.add_argument("--tree", default=TREE)
    ap.add_argument("--env", action="store_true", help="each pair: one run with A and B as two --env environments")
    args = ap.parse_args()

    from compilebench.core import speedups, stats

    min_effect = stats.DEFAULT_MIN_EFFECT if args.min_effect is None else args.min_effect

    got = {"A": [], "B": []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.k):
            for side in ("A", "B") if not args.env else ("AB",):
                db = f"{tmp}/{side}{i}.db"
                both = ["--env", f"A={sys.executable}", "--env", f"B={sys.executable}"] if args.env else []
                cli("run", "--model", args.model, "--variant", args.variant, "--iters", args.iters, "--device", "cpu",
                    "--db", db, "--quiet", "--format", "csv", *both, *shlex.split(args.extra), tree=args.tree, cwd=tmp)
                for r in results(db):
                    got[r["case"].get("environment") or side].append(r)
    verdicts = Counter()
    for i, (a, b) in enumerate(zip(got["A"], got["B"])):
        s = speedups.speedup(a.result, b.result, min_effect)  # A's time over B's: how B reads against A
        verdicts[s.verdict] += 1
        low = f"{1 / s.high:.3f}" if s.high else "-"
        high = f"{1 / s.low:.3f}" if s.low else "-"
        print(f"pair {i + 1}: A {a['stats']['mean']:.2f} ms, B {b['stats']['mean']:.2f} ms, {len(a['repeats'])} and "
              f"{len(b['repeats'])} processes; B/A {1 / s.value:.3f} ({s.confidence:.1%} interval {low} to {high}"
              f"{', paired by ' + s.paired_by if s.paired_by else ''}): {s.verdict}", flush=True)
    wrong = verdicts["faster"] + verdicts["slower"]
    how = "within one run each (--env)" if args.env else "across two invocations each"
    print(f"A/A, {how}, margin {min_effect:.0%}: {wrong} faster/slower verdict(s) in {args.k} pairs (goal 0); "
          + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items())))


if __name__ == "__main__":
    main()
