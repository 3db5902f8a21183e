"""Every check a real GPU must pass, each printed as pass / fail / skipped with its figure. Asserts nothing; exits 0.

CI never has a GPU, so each CUDA path of compilebench is tested with fakes; this is what those fakes cannot
prove. Each check runs `compilebench run` as a user does (a separate process) into its own results file, then
reads what it stored. Under 10 minutes on one H100 (most of it compiling ResNet-50 and SmolLM2-135M).

  clock            ResNet-50 eager, 100 calls: the sum of the per-call CUDA event times over the loop's wall
                   time lies in [0.80, 1.05] and no result carries the `clock` flag
  cuda:1           the same on --device cuda:1 of a two-GPU box: the worker saw physical GPU 1 (by UUID) and the
                   events timed it (skipped on one GPU)
  reduce-overhead  ResNet-50 batch 1, default vs reduce-overhead interleaved, 3 repeats: zero skipped CUDA graphs,
                   graphs recorded, and reduce-overhead `faster` than default
  generation       SmolLM2-135M (random weights) eager vs reduce-overhead, 16 new tokens: zero skipped CUDA
                   graphs and greedy tokens equal to eager's
  launcher         a launcher preloading ResNet-50's class and inductor says ready (its imports left CUDA alone)
  tf32             float32 ResNet-50 compiled under torch's default TF32 (cuDNN convolutions): `ok`, not `mismatch`,
                   checked against the TF32 tolerance
  oom              ResNet-50 at a batch larger than the GPU holds: stored as `oom`; the next case (batch 1) `ok`
  nvml             the timed loop's conditions hold SM clocks, power, temperature and energy (needs
                   `pip install compilebench[nvidia]`)
  shapes           `compilebench shapes` ResNet-50 over batch 1, 2, 4 under automatic dynamic and dynamic=False, 2
                   repeats: every shape's loop has its event times within [0.80, 1.05] of its wall time, no `clock`
                   flag, dynamic=False compiled 3 graphs, automatic dynamic 2, and neither compiled in the second pass

Usage: python benchmarks/gpu_acceptance.py [--only clock,oom] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time

from _runs import TREE, cli, results

CHECKS = ("clock", "cuda:1", "reduce-overhead", "generation", "launcher", "tf32", "oom", "nvml", "shapes")


def gpus() -> list[dict]:
    """This machine's GPUs, asked of a child process (this one keeps no CUDA context)."""
    import json
    import subprocess
    import sys

    code = ("import json, torch\n"
            "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
            "print(json.dumps([{'name': torch.cuda.get_device_name(i), 'memory': torch.cuda.get_device_properties(i)"
            ".total_memory, 'uuid': 'GPU-' + str(torch.cuda.get_device_properties(i).uuid)} for i in range(n)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else []


class Checks:
    def __init__(self, tmp: str, devices: list[dict]):
        self.tmp, self.devices, self.lines = tmp, devices, []

    def run(self, name: str, *args, command: str = "run") -> list[dict]:
        db = os.path.join(self.tmp, name.replace(":", "-") + ".db")
        cli(command, *args, "--db", db, "--quiet", "--format", "md", cwd=self.tmp, check=False)
        return results(db) if os.path.exists(db) else []

    def say(self, name: str, passed: bool | None, figure: str) -> None:
        word = {True: "pass", False: "FAIL", None: "skipped"}[passed]
        self.lines.append(f"{word:8} {name:16} {figure}")
        print(self.lines[-1], flush=True)

    def clock(self) -> dict | None:
        (r,) = self.run("clock", "--model", "resnet-50", "--variant", "eager", "--iters", 100, "--repeats", 1) or [None]
        if r is None:
            self.say("clock", False, "no result stored")
            return None
        ratios = [rep.get("samples_over_wall") for rep in r["repeats"]]
        ok = r["status"] == "ok" and all(x is not None and 0.8 <= x <= 1.05 for x in ratios) and "clock" not in r["flags"]
        self.say("clock", ok, f"sum of samples / loop wall = {', '.join(f'{x:.3f}' for x in ratios if x)}; "
                              f"mean {r['stats'].get('mean', math.nan):.3f} ms; status {r['status']}, flags {r['flags']}")
        return r

    def cuda1(self) -> None:
        if len(self.devices) < 2:
            self.say("cuda:1", None, f"skipped: {len(self.devices)} GPU")
            return
        (r,) = self.run("cuda1", "--model", "resnet-50", "--variant", "eager", "--iters", 100, "--repeats", 1,
                        "--device", "cuda:1") or [None]
        if r is None:
            self.say("cuda:1", False, "no result stored")
            return
        seen, wanted = (r.get("env") or {}).get("gpu_uuid"), self.devices[1]["uuid"]
        ratio = r["repeats"][0].get("samples_over_wall")
        ok = r["status"] == "ok" and seen == wanted and "clock" not in r["flags"]
        self.say("cuda:1", ok, f"worker saw {seen} (GPU 1 is {wanted}); samples / wall {ratio}; status {r['status']}")

    def reduce_overhead(self) -> None:
        from compilebench.core import speedups
        from compilebench.core.result import Result

        found = {r["case"]["variant"]["mode"]: r for r in self.run(
            "reduce-overhead", "--model", "resnet-50", "--variant", "default", "reduce-overhead", "--interleave",
            "--iters", 200, "--repeats", 3)}
        ro, default = found.get("reduce-overhead"), found.get("default")
        if not ro or not default:
            self.say("reduce-overhead", False, f"results: {sorted(found)}")
            return
        skips = [rep.get("cudagraph_skips") for rep in ro["repeats"]]
        recorded = [rep.get("cudagraphs_recorded") for rep in ro["repeats"]]
        s = speedups.speedup(Result.from_dict(default), Result.from_dict(ro))
        ok = (ro["status"] == "ok" and all(k == 0 for k in skips) and all((n or 0) > 0 for n in recorded)
              and s is not None and s.verdict == "faster")
        figure = (f"skipped {skips}, recorded {recorded}; default {default['stats'].get('mean', math.nan):.3f} ms, "
                  f"reduce-overhead {ro['stats'].get('mean', math.nan):.3f} ms")
        if s is not None:
            figure += f", {s.value:.2f}x ({s.low:.2f}-{s.high:.2f}) {s.verdict}"
        self.say("reduce-overhead", ok, figure + (f"; {ro.get('message')}" if ro.get("message") else ""))

    def generation(self) -> None:
        found = {r["case"]["variant"]["mode"]: r for r in self.run(
            "generation", "--model", "smollm2-135m", "--variant", "eager", "reduce-overhead", "--new-tokens", 16,
            "--iters", 5, "--repeats", 1)}
        ro = found.get("reduce-overhead")
        if not ro:
            self.say("generation", False, f"results: {sorted(found)}")
            return
        rep = ro["repeats"][0]
        tokens = (ro.get("agreement") or {}).get("tokens")
        ok = ro["status"] == "ok" and rep.get("cudagraph_skips") == 0 and (rep.get("cudagraphs_recorded") or 0) > 0 \
            and tokens == 1.0
        self.say("generation", ok, f"skipped {rep.get('cudagraph_skips')}, recorded {rep.get('cudagraphs_recorded')}, "
                                   f"tokens equal to eager {tokens}; status {ro['status']} {ro.get('message') or ''}")

    def launcher(self) -> None:
        import sys

        sys.path.insert(0, os.path.join(TREE, "src"))
        from compilebench.run import launcher

        t0 = time.perf_counter()
        started = launcher.Launcher({}, models=("resnet-50",), inductor=True)
        try:
            started.wait_ready()
            self.say("launcher", True, f"ready in {time.perf_counter() - t0:.1f} s")
        except launcher.LauncherUnfit as exc:
            self.say("launcher", False, f"unfit: {exc}")
        finally:
            started.close()

    def tf32(self) -> None:
        found = [r for r in self.run("tf32", "--model", "resnet-50", "--variant", "eager", "default", "--iters", 50,
                                     "--repeats", 1) if r["case"]["variant"]["mode"] == "default"]
        if not found:
            self.say("tf32", False, "no compiled result stored")
            return
        r = found[0]
        env = r.get("env") or {}
        ok = r["status"] == "ok" and r.get("math") == "tf32"
        self.say("tf32", ok, f"status {r['status']}, max rel err {r.get('max_rel_err')}, tolerance {r.get('math')} "
                             f"{r.get('rel_tolerance')} (cuDNN TF32 {env.get('tf32_cudnn')}, matmul TF32 "
                             f"{env.get('tf32_matmul')}, compute capability {env.get('compute_capability')})")

    def oom(self) -> None:
        # The first convolution's output alone (64 x 112 x 112 float32 a sample) is about twice the GPU's memory.
        batch = int(self.devices[0]["memory"] * 2 / (64 * 112 * 112 * 4))
        got = {r["case"]["batch_size"]: r for r in self.run(
            "oom", "--model", "resnet-50", "--variant", "eager", "--batch-size", batch, 1, "--iters", 20,
            "--repeats", 1, "--timeout", 300)}
        big, small = got.get(batch), got.get(1)
        ok = bool(big and small and big["status"] == "oom" and small["status"] == "ok")
        self.say("oom", ok, f"batch {batch}: {big and big['status']}; then batch 1: {small and small['status']}")

    def nvml(self, r: dict | None) -> None:
        if r is None:
            self.say("nvml", False, "no result of the clock check to read")
            return
        c = r["repeats"][0].get("conditions") or {}
        filled = {k: c.get(k) for k in ("gpu_sm_clock_mhz", "gpu_power_w", "gpu_temperature_c", "gpu_energy_j")}
        ok = all(v is not None and v != [None, None] for v in filled.values())
        self.say("nvml", ok, f"{filled}; energy per call {r['repeats'][0].get('energy_per_call_j')} J"
                             + ("" if ok else " (pip install compilebench[nvidia])"))


    def shapes(self) -> None:
        found = {r["case"]["variant"]["dynamic"]: r for r in self.run(
            "shapes", "--model", "resnet-50", "--batch-size", 1, 2, 4, "--dynamic", "auto", "false", "--iters", 50,
            "--repeats", 2, command="shapes")}
        auto, static = found.get(None), found.get(False)
        if not auto or not static:
            self.say("shapes", False, f"results: {sorted(map(str, found))}")
            return
        ratios = [p.get("samples_over_wall") for r in (auto, static) for rep in r["repeats"]
                  for p in (rep.get("shapes") or {}).get("per_shape", {}).values()]
        graphs = {name: [sum(p["compiles"] for p in rep["shapes"]["per_shape"].values()) for rep in r["repeats"]]
                  for name, r in (("auto", auto), ("false", static))}
        second = [rep["shapes"]["per_shape"][t]["second_compiles"] for r in (auto, static) for rep in r["repeats"]
                  for t in rep["shapes"]["per_shape"]]
        ok = (all(r["status"] == "ok" and "clock" not in r["flags"] for r in (auto, static)) and len(ratios) == 12
              and all(x is not None and 0.8 <= x <= 1.05 for x in ratios) and graphs == {"auto": [2, 2], "false": [3, 3]}
              and not any(second))
        self.say("shapes", ok, f"samples / wall {', '.join(f'{x:.3f}' for x in ratios if x is not None)}; graphs {graphs}; "
                               f"second-pass compiles {sum(second)}; status {auto['status']}, {static['status']}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--only", default=",".join(CHECKS), help=f"checks to run, comma-separated (default: {','.join(CHECKS)})")
    ap.add_argument("--keep", default=None, metavar="DIR", help="keep the results files here")
    args = ap.parse_args()
    only = [c.strip() for c in args.only.split(",") if c.strip()]
    unknown = [c for c in only if c not in CHECKS]
    if unknown:
        raise SystemExit(f"--only: unknown check {unknown[0]} (allowed: {', '.join(CHECKS)})")

    devices = gpus()
    if not devices:
        print("No CUDA device here: none of the checks can run on this machine.")
        for name in only:
            print(f"{'skipped':8} {name:16} needs a GPU")
        return
    print(f"{len(devices)} GPU(s): {', '.join(d['name'] for d in devices)}", flush=True)
    tmp = args.keep or tempfile.mkdtemp(prefix="compilebench-gpu-")
    os.makedirs(tmp, exist_ok=True)
    checks, t0 = Checks(tmp, devices), time.perf_counter()
    clock_result = checks.clock() if "clock" in only or "nvml" in only else None
    steps = {"cuda:1": checks.cuda1, "reduce-overhead": checks.reduce_overhead, "generation": checks.generation,
             "launcher": checks.launcher, "tf32": checks.tf32, "oom": checks.oom,
             "nvml": lambda: checks.nvml(clock_result), "shapes": checks.shapes}
    for name in only:
        if name in steps:
            steps[name]()
    failed = sum(line.startswith("FAIL") for line in checks.lines)
    print(f"\n{len(checks.lines) - failed} of {len(checks.lines)} checks did not fail, in {time.perf_counter() - t0:.0f} s; "
          f"results files in {tmp}")


if __name__ == "__main__":
    main()
