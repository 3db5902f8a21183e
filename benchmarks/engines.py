"""Does compilebench's figure for another engine hold against the engine's own tools? (issue 57)

The same model (a zoo model's architecture with random weights), the same input shapes and the same threads,
timed four ways, alternating each round:
  1. compilebench: `compilebench run --variant eager onnxruntime openvino executorch` (fresh worker processes, its
     timed loop);
  2. OpenVINO's own benchmark_app on the model converted by compilebench's own code (kinds/openvino.py: exported,
     converted, saved as IR), one stream and one synchronous request (what the latency hint compilebench sets
     amounts to), the case's input shapes, the same threads and the inference precision pinned to f32;
  3. ONNX Runtime in a plain loop: an InferenceSession on the ONNX file compilebench's code exported (every graph
     optimization, the same threads), warm-up, then the mean of the timed calls;
  4. ExecuTorch in a plain loop: its runtime's `forward` method of the .pte program compilebench's code lowered to
     XNNPACK, its threadpool set to the same threads, warm-up, then the mean of the timed calls.
Prints each round's figures and, per engine, compilebench's mean over the peer's (goal: within the machine's
run-to-run drift, 10-25% on this project's 2-core VM; closer on a quiet one).

    python benchmarks/engines.py --model resnet-50 --rounds 3 --iters 50
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from _runs import cli, results


def compilebench_ms(model: str, tiny: bool, iters: int) -> dict[str, float]:
    """compilebench's mean per variant, one worker process each."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "r.db")
        cli("run", "--model", model, *(["--tiny"] if tiny else []), "--variant", "eager", "onnxruntime", "openvino",
            "executorch", "--device", "cpu", "--repeats", "1", "--iters", iters, "--quiet", "--format", "csv",
            "--db", db)
        return {r["case"]["variant"]["mode"]: r["stats"]["mean"] for r in results(db) if r["status"] == "ok"}


def exported(model: str, tiny: bool, folder: str) -> tuple[str, str, str, str, dict]:
    """The model exported to ONNX, converted to OpenVINO's IR and lowered to an ExecuTorch program by compilebench's
    own code, into `folder`; the shapes of the case's inputs as benchmark_app takes them (the IR's inputs are
    dynamic), and the inputs themselves."""
    import torch

    from compilebench import kinds, zoo
    from compilebench.core.case import Case
    from compilebench.core.variant import Variant
    from compilebench.measure import forward

    for engine in ("onnxruntime", "openvino", "executorch"):
        case = Case(model, 1, Variant(engine), device="cpu", model_size="tiny" if tiny else "full")
        net, inputs = forward.prepare(zoo.get(model), case)
        with torch.inference_mode():
            kinds.get(engine).prepare(net, inputs, folder, case)
    onnx = [p for p in glob.glob(f"{folder}/*.onnx") if not p.endswith(".optimized.onnx")]
    shapes = ",".join(f"{k}[{','.join(map(str, v.shape))}]" for k, v in inputs.items() if hasattr(v, "shape"))
    return glob.glob(f"{folder}/*.xml")[0], onnx[0], shapes, glob.glob(f"{folder}/*.pte")[0], inputs


def benchmark_app_ms(xml: str, shapes: str, threads: int, seconds: int) -> float:
    """benchmark_app's average latency of the IR: one stream, one synchronous request, the threads and f32 pinned."""
    app = os.path.join(os.path.dirname(sys.executable), "benchmark_app")
    # benchmark_app takes -nthreads with -hint none alone: one stream and one request, synchronous calls, is what
    # the latency hint compilebench sets amounts to
    out = subprocess.run([app, "-m", xml, "-d", "CPU", "-hint", "none", "-nstreams", "1", "-nireq", "1", "-api",
                          "sync", "-nthreads", str(threads), "-data_shape", shapes,
                          "-infer_precision", "f32", "-t", str(seconds)], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"benchmark_app failed ({out.returncode}):\n{(out.stdout + out.stderr)[-2000:]}")
    found = re.search(r"Average:\s+([\d.]+) (ms|us)", out.stdout)  # a fast model's in microseconds
    if not found:
        sys.exit(f"benchmark_app said no average latency:\n{out.stdout[-2000:]}")
    return float(found.group(1)) / (1000 if found.group(2) == "us" else 1)


def ort_loop_ms(onnx: str, threads: int, iters: int) -> float:
    """A plain ONNX Runtime loop: the session as compilebench builds it, inputs of the file's own shapes."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])
    feed = {i.name: np.random.default_rng(0).standard_normal(i.shape).astype(np.float32) for i in session.get_inputs()}
    for _ in range(10):
        session.run(None, feed)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.mean(times)


def et_loop_ms(pte: str, inputs: dict, threads: int, iters: int) -> float:
    """A plain ExecuTorch loop: the program's forward method, XNNPACK's threadpool at the same threads."""
    from executorch.extension.pybindings import portable_lib
    from executorch.runtime import Runtime

    portable_lib._unsafe_reset_threadpool(threads)
    method = Runtime.get().load_program(pte).load_method("forward")
    given = [v.contiguous() for v in inputs.values()]
    for _ in range(10):
        method.execute(given)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        method.execute(given)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.mean(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet-50")
    ap.add_argument("--tiny", action="store_true", help="the model's tiny config (a check of the script, seconds)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None, help="default: torch's (as a run gives its engines)")
    args = ap.parse_args()
    import torch

    threads = args.threads or torch.get_num_threads()
    got: dict[str, list[float]] = {"eager": [], "onnxruntime": [], "openvino": [], "executorch": [], "benchmark_app": [],
                                   "ort loop": [], "et loop": []}
    with tempfile.TemporaryDirectory() as folder:
        xml, onnx, shapes, pte, inputs = exported(args.model, args.tiny, folder)
        for r in range(args.rounds):
            order = ["compilebench", "peers"] if r % 2 == 0 else ["peers", "compilebench"]
            for who in order:
                if who == "compilebench":
                    for k, v in compilebench_ms(args.model, args.tiny, args.iters).items():
                        got[k].append(v)
                else:
                    got["benchmark_app"].append(benchmark_app_ms(xml, shapes, threads, max(3, args.iters // 10)))
                    got["ort loop"].append(ort_loop_ms(onnx, threads, args.iters))
                    got["et loop"].append(et_loop_ms(pte, inputs, threads, args.iters))
            print(f"round {r + 1} ({order[0]} first): " + ", ".join(f"{k} {v[-1]:.2f} ms" for k, v in got.items() if v),
                  flush=True)
    mean = {k: statistics.mean(v) for k, v in got.items() if v}
    print(f"\n{args.model}{' (tiny)' if args.tiny else ''}, CPU, {threads} threads, {args.rounds} rounds, mean ms:")
    for k, v in mean.items():
        print(f"  {k:14} {v:8.3f}")
    print(f"compilebench openvino / benchmark_app:  {mean['openvino'] / mean['benchmark_app']:.3f}")
    print(f"compilebench onnxruntime / ORT loop:    {mean['onnxruntime'] / mean['ort loop']:.3f}")
    print(f"compilebench executorch / ET loop:      {mean['executorch'] / mean['et loop']:.3f}")
    print("goal: each within the machine's run-to-run drift (10-25% on a 2-core VM)")


if __name__ == "__main__":
    main()
