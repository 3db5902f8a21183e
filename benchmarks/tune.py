"""Does `compilebench tune` find the fastest configuration without measuring them all? Prints figures; asserts
nothing.

1. The grid: every configuration of tune's space for the model on this device, each measured as deeply as tune's
   final rung measures its finalists (three repeats, the final timing), beside eager. The best is the truth.
2. `compilebench tune` with a quarter of the grid's wall time as its budget, into another results file.
3. Where tune's pick stands in the grid: its grid speed-up over the grid's best. Goal (issue 17): within 5%.

Usage: python benchmarks/tune.py [--model resnet-50] [--batch-size 1] [--tiny] [--grid-db PATH]

--grid-db keeps the grid's results file there, and where it already holds the grid, measures only the tune.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

from _runs import cli


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet-50")
    ap.add_argument("--batch-size", type=int, default=1)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--grid-db", default=None, help="keep the grid here; reuse it where it is already there")
    args = ap.parse_args()

    from compilebench import tune
    from compilebench.core import spec as specmod, speedups
    from compilebench.measure import compiler_state
    from compilebench.run import plan
    from compilebench.storage import store as storemod

    prepared = plan.prepare(specmod.asked(models=(args.model,), batch_sizes=(args.batch_size,), device="cpu",
                                          model_size="tiny" if args.tiny else "full"))
    spec, (target,) = prepared.spec, prepared.targets
    base = prepared.cases[0]
    configs = tune.space("cpu", vision=prepared.models[args.model].kind == "vision")
    _, repeats, _, policy = tune.RUNGS[-1]
    grid = {}
    with tempfile.TemporaryDirectory() as tmp:
        states = compiler_state.StateFolders()
        t0 = time.monotonic()
        with storemod.Store.open(args.grid_db or f"{tmp}/grid.db") as store:
            for config in configs:
                cases = [base, config.case(base)]
                prepared.run(store, cases=cases, spec=dataclasses.replace(spec, repeats=repeats, timing=policy),
                             states=states, quiet=True)  # what the file holds already is kept
                eager = store.latest(base.key(), target.resume_id)
                r = store.latest(cases[1].key(), target.resume_id)
                s = speedups.speedup(eager, r)
                grid[config] = (r, s)
                print(f"grid: {config.describe():60s} {r.status:8s} "
                      + (f"{s.value:.3f}x ({s.low:.3f}-{s.high:.3f}) {s.verdict}" if s else r.message or ""))
        grid_s = time.monotonic() - t0
        if args.grid_db:  # the time the grid took when it was measured, kept beside it
            seconds = Path(args.grid_db + ".seconds")
            if not seconds.exists():
                seconds.write_text(f"{grid_s:.1f}\n")
            grid_s = float(seconds.read_text())
        states.close()
        ok = {c: s for c, (r, s) in grid.items() if s is not None}
        best = max(ok, key=lambda c: ok[c].value)
        print(f"1. grid: {len(configs)} configurations in {grid_s:.0f} s; best {best.describe()} at {ok[best].value:.3f}x")

        budget = grid_s / 4
        wall, p = cli("tune", "--model", args.model, "--batch-size", args.batch_size, "--device", "cpu",
                      "--budget", f"{budget:.0f}s", "--db", f"{tmp}/tune.db", "--quiet",
                      *(["--tiny"] if args.tiny else []), cwd=tmp)
        print(p.stdout)
        pick_line = next(line for line in p.stdout.splitlines() if line.startswith(("Fastest", "Nothing")))
        print(f"2. tune with a budget of {budget:.0f} s took {wall:.0f} s: {pick_line}")
        picked = next(c for c in configs if f": {c.describe()}:" in pick_line or f"was {c.describe()}:" in pick_line)
        ratio = ok[picked].value / ok[best].value if picked in ok else 0.0
        print(f"3. tune's pick {picked.describe()} is at {ok.get(picked).value if picked in ok else 0:.3f}x in the grid: "
              f"{ratio:.3f} of the grid's best (goal >= 0.95)")


if __name__ == "__main__":
    main()
