"""Are cold compiles cold? Prints figures; asserts nothing.

The same case compiled from a cold cache 3 times in a row, each in its own `compilebench run --rerun`: the
compile seconds must agree within 10% (issue 14: once 26.8 / 18.7 / 27.1 s, because part of the compiler's
on-disk state survived from one case to the next). Then every file written during the runs outside the results
folder and the runs' own private directories: a cold compile must leave nothing behind.

Usage: python benchmarks/cold.py [--model resnet-50] [--tiny] [--runs 3] [--extra "--repeats 1"] [--tree PATH]
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import tempfile
import time

from _runs import TREE, cli, processes, results

WATCHED = ("/tmp", "/var/tmp", os.path.expanduser("~"), "/dev/shm")


def _own_output() -> list[str]:
    """Where this benchmark's own stdout and stderr go, when they go to files: not a compile's doing."""
    paths = []
    for fd in (1, 2):
        try:
            paths.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return paths


def written_since(marker: str, skip: list[str]) -> list[str]:
    """Files under the watched folders newer than `marker`, outside `skip`."""
    out = subprocess.run(["find", *[d for d in WATCHED if os.path.isdir(d)], "-xdev", "-newer", marker, "-type", "f"],
                         capture_output=True, text=True).stdout.splitlines()
    return sorted(p for p in out if not any(p.startswith(s) for s in skip) and "/bash_jobs" not in p
                  and "/.cache/pip/" not in p)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet-50")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--extra", default="", help="more options for every run, e.g. '--repeats 1'")
    ap.add_argument("--tree", default=TREE)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="cold-bench-") as tmp:
        marker = os.path.join(tmp, "marker")
        open(marker, "w").close()
        time.sleep(1.1)  # find -newer compares whole seconds on some filesystems
        db = os.path.join(tmp, "cold.db")
        compiles = []
        for i in range(args.runs):
            wall, _ = cli("run", "--model", args.model, "--variant", "default", "--iters", 5, "--warmup", 1, "--device",
                          "cpu", "--db", db, "--rerun", "--quiet", "--format", "csv", *(["--tiny"] if args.tiny else []),
                          *shlex.split(args.extra), tree=args.tree, cwd=tmp)
            newest = results(db)[-1]
            first = processes(newest)[0]
            compiles.append(first["compile_s"])
            print(f"run {i + 1}: compile {first['compile_s']:.1f} s, first call {first['first_call_s']:.1f} s "
                  f"(cache hits {first.get('compile_cache_hits')}), wall {wall:.0f} s")
        leaked = written_since(marker, [tmp, *_own_output()])
    spread = (max(compiles) - min(compiles)) / min(compiles) * 100
    print(f"cold compile seconds: {' / '.join(f'{c:.1f}' for c in compiles)}: spread {spread:.0f}% (goal: within 10%)")
    print(f"written outside the run's own folders during the runs: {len(leaked)} file(s)")
    for p in leaked[:40]:
        print(f"  {p}")


if __name__ == "__main__":
    main()
