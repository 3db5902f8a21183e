"""Which way of loading an AOTInductor package crashes? Prints each path's outcome; asserts nothing (issue 63).

On an H200 (2026-11-25, and again 2026-11-27, torch 2.11.0+cu130) `--variant aot-inductor` died of SIGSEGV in its
first repeat while loading the package it had just built (torch/export/pt2_archive/_package.py, _load_aoti), in a
worker forked from a launcher. This script builds ResNet-50's package once (its config from the zoo, random
weights, batch 1) in a fresh interpreter, then loads and calls it in each of these, every one a process of its
own so that a crash is an exit status, not the end of the script:

  built-here   the process that built it, right after building (compile workers alive), as the product's first
               repeat does
  fresh        a new interpreter that imports torch and loads it, as a replica would start
  forked       a child forked from a process that imported what compilebench's launcher preloads (torch, dynamo,
               transformers, inductor) without initializing CUDA, as the product's later repeats are
  forked-built the same forked child building the package, then loading it: the product's first repeat exactly

Each prints: ok (load seconds, the output's largest difference from eager's), or the signal or error that ended it.

Usage: python benchmarks/aot_load.py [--device cuda] [--tiny] [--keep DIR] [--only built-here,fresh]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from _runs import TREE

PATHS = ("built-here", "fresh", "forked", "forked-built")

# The child's program: build (where asked) and load the package, call it once, compare with eager, print one line.
CHILD = r'''
import os, sys, time, json
sys.path.insert(0, os.path.join(sys.argv[1], "src"))
device, package, how, tiny = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5] == "1"

def model_and_input():
    import torch, transformers
    from compilebench.zoo import configs
    torch.manual_seed(0)
    config = configs.resnet_tiny() if tiny else configs.resnet_50()
    model = transformers.ResNetForImageClassification(config).eval().to(device)
    x = torch.randn(1, 3, 64 if tiny else 224, 64 if tiny else 224, generator=torch.Generator().manual_seed(0)).to(device)
    return model, x

def build():
    import torch
    model, x = model_and_input()
    with torch.no_grad():
        program = torch.export.export(model, args=(), kwargs={"pixel_values": x})
        torch._inductor.aoti_compile_and_package(program, package_path=package)

def load_and_call():
    import torch
    model, x = model_and_input()
    index = torch.device(device).index or 0 if device.startswith("cuda") else -1
    start = time.perf_counter()
    runner = torch._inductor.aoti_load_package(package, device_index=index)
    loaded = time.perf_counter() - start
    with torch.no_grad():
        out = runner(pixel_values=x)
        ref = model(pixel_values=x)
    got = out["logits"] if isinstance(out, dict) else (out[0] if isinstance(out, (list, tuple)) else out.logits)
    diff = float((got.float() - ref.logits.float()).abs().max())
    print(json.dumps({"ok": True, "load_s": loaded, "max_abs_diff": diff}), flush=True)

if how == "build":
    build()
elif how == "built-here":
    build()
    load_and_call()
elif how == "fresh":
    load_and_call()
elif how in ("forked", "forked-built"):
    os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"] = "1"
    import importlib
    for m in ("torch", "torch._dynamo", "transformers", "torch._inductor.compile_fx", "compilebench.measure.worker"):
        importlib.import_module(m)
    import torch
    assert not torch.cuda.is_initialized(), "the launcher-like parent initialized CUDA"
    del os.environ["PYTORCH_NVML_BASED_CUDA_CHECK"]
    pid = os.fork()
    if pid == 0:
        try:
            if how == "forked-built":
                build()
            load_and_call()
        finally:
            sys.stdout.flush()
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        print(json.dumps({"ok": False, "child_exit": code}), flush=True)
'''


def run(how: str, device: str, package: str, tiny: bool) -> tuple[str, float]:
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-X", "faulthandler", "-c", CHILD, TREE, device, package, how,
                        "1" if tiny else "0"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    said = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode < 0:
        return f"crashed: killed by signal {-p.returncode} ({_last(p.stderr)})", wall
    if said and '"ok": true' in said[-1]:
        return f"ok {said[-1]}", wall
    if said:
        return f"crashed: {said[-1]} ({_last(p.stderr)})", wall
    return f"error (exit {p.returncode}): {_last(p.stderr)}", wall


def _last(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[:400] if lines else "no output"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true", help="ResNet-50's architecture at a tiny size (seconds to build)")
    ap.add_argument("--keep", help="a folder to build the package in (kept)")
    ap.add_argument("--only", help="some of " + ",".join(PATHS))
    args = ap.parse_args()
    folder = args.keep or tempfile.mkdtemp(prefix="aot_load_")
    os.makedirs(folder, exist_ok=True)
    package = os.path.join(folder, "resnet.pt2")
    built, wall = run("build", args.device, package, args.tiny)
    print(f"build in a fresh interpreter: {built if not os.path.exists(package) else 'ok'} ({wall:.0f} s)", flush=True)
    for how in (args.only.split(",") if args.only else PATHS):
        if how in ("fresh", "forked") and not os.path.exists(package):
            print(f"{how:13s} skipped: no package was built")
            continue
        said, wall = run(how, args.device, package if how in ("fresh", "forked") else package + f".{how}.pt2",
                         args.tiny)
        print(f"{how:13s} {said} ({wall:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
