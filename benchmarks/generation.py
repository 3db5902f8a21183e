"""Can compilebench's generation numbers be trusted? Prints figures; asserts nothing.

1. A real (not tiny) causal LM, eager vs compiled, through `compilebench run`: time to first token, per-token
   latency, tokens/s, the first generate() calls one by one, compile seconds.
2. The same model and settings in a plain hand-written script: generate() in a loop timed by time.perf_counter,
   tokens/s = batch x new tokens / mean seconds per call. compilebench's end-to-end tokens/s over the script's:
   goal (issue 15) within 5%. Rounds alternate the two, in fresh processes, so drift hits both alike.
3. What the per-token clock costs: in one process, generate() calls with compilebench's token stamps and
   without any streamer, alternating; the ratio of their mean times.

Usage: python benchmarks/generation.py [--model smollm2-135m] [--new-tokens 32] [--rounds 2] [--iters 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

from _runs import TREE, cli, results

SCRIPT = """
import json, statistics, sys, time
import torch
from compilebench import zoo
from compilebench.measure.generation import generation_config

name, new_tokens, iters, compiled = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
entry = zoo.get(name)
torch.manual_seed(0)
with torch.inference_mode():
    model = entry.build("random", "full")
    ids = entry.prompt(1, entry.default_prompt_len, "random", "full")
    config = generation_config(model, new_tokens, "static" if compiled else None)
    if compiled:
        model.forward = torch.compile(model.forward)
    for _ in range(5):  # compile and warm up, as compilebench's first calls do
        model.generate(ids, generation_config=config)
    times = []
    for _ in range(iters):
        t0 = time.perf_counter()
        out = model.generate(ids, generation_config=config)
        times.append(time.perf_counter() - t0)
    assert out.shape[1] == ids.shape[1] + new_tokens
print(json.dumps({"tokens_per_s": new_tokens / statistics.mean(times)}))
"""

PERTURBATION = """
import sys, time, statistics
import torch
from compilebench import zoo
from compilebench.measure.generation import _Stamps, generation_config

entry = zoo.get(sys.argv[1])
new_tokens = int(sys.argv[2])
with torch.inference_mode():
    model = entry.build("random", "full")
    ids = entry.prompt(1, entry.default_prompt_len, "random", "full")
    config = generation_config(model, new_tokens, None)
    for _ in range(3):
        model.generate(ids, generation_config=config)
    stamped, plain = [], []
    for i in range(2 * int(sys.argv[3])):
        t0 = time.perf_counter()
        if i % 2:
            model.generate(ids, generation_config=config, streamer=_Stamps(lambda: time.perf_counter_ns()))
            stamped.append(time.perf_counter() - t0)
        else:
            model.generate(ids, generation_config=config)
            plain.append(time.perf_counter() - t0)
print(f"{statistics.mean(stamped) / statistics.mean(plain):.4f} {statistics.mean(plain) * 1e3:.1f}")
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()

    env = {"PYTHONPATH": f"{TREE}/src"}
    ratios = {"eager": [], "default": []}
    for r in range(args.rounds):
        with tempfile.TemporaryDirectory() as tmp:
            ours = {}
            order = ("compilebench", "script") if r % 2 == 0 else ("script", "compilebench")
            for who in order:
                if who == "compilebench":
                    wall, _ = cli("run", "--model", args.model, "--variant", "eager", "default", "--new-tokens",
                                  args.new_tokens, "--iters", args.iters, "--device", "cpu", "--db", f"{tmp}/g.db",
                                  "--quiet", "--format", "csv", cwd=tmp)
                    for res in results(f"{tmp}/g.db"):
                        ours[res["case"]["variant"]["mode"]] = res
                    if r == 0:
                        describe(ours, wall)
                else:
                    script = {}
                    for variant, flag in (("eager", "0"), ("default", "1")):
                        p = subprocess.run([sys.executable, "-c", SCRIPT, args.model, str(args.new_tokens), str(args.iters),
                                            flag], capture_output=True, text=True, env={**os.environ, **env})
                        if p.returncode:
                            raise SystemExit(p.stderr[-2000:])
                        script[variant] = json.loads(p.stdout.strip().splitlines()[-1])["tokens_per_s"]
            for variant in ("eager", "default"):
                from compilebench.report import data

                mine = data.e2e_tokens_per_s(ours[variant].result)
                ratios[variant].append(mine / script[variant])
                print(f"round {r + 1}, {variant}: compilebench {mine:.1f} tokens/s, hand-written loop "
                      f"{script[variant]:.1f} tokens/s: ratio {mine / script[variant]:.3f}")
    for variant, rs in ratios.items():
        print(f"2. {variant}: compilebench / hand-written tokens/s = {statistics.median(rs):.3f} median of {len(rs)} "
              f"round(s) (range {min(rs):.3f}-{max(rs):.3f}; goal within 5%)")
    p = subprocess.run([sys.executable, "-c", PERTURBATION, args.model, str(args.new_tokens), "20"],
                       capture_output=True, text=True, env={**os.environ, **env})
    ratio, plain_ms = p.stdout.split()
    print(f"3. per-token clock: generate() with token stamps / without a streamer = {ratio} "
          f"(20 alternating calls each, {plain_ms} ms per call without)")


def describe(ours: dict, wall: float) -> None:
    from compilebench.core import generation, speedups
    from compilebench.report import data

    print(f"1. compilebench run: {wall:.0f} s")
    for variant in ("eager", "default"):
        r = ours[variant]
        gen = r["generation"]
        first = " / ".join(f"{f['total_ms'] / 1e3:.2f}" for f in r["repeats"][0]["generation"]["first_calls"])
        print(f"   {variant}: {r['status']}; TTFT {gen['ttft']['mean']:.1f} ms "
              f"({gen['ttft']['ci95_low']:.1f}-{gen['ttft']['ci95_high']:.1f}), per token {gen['per_token']['mean']:.2f} ms "
              f"({gen['per_token']['ci95_low']:.2f}-{gen['per_token']['ci95_high']:.2f}), decode "
              f"{data.decode_tokens_per_s(r.result):.1f} tokens/s, "
              f"end-to-end {data.e2e_tokens_per_s(r.result):.1f} tokens/s; "
              f"first calls (s) {first}; cold compile {r.get('cold_compile_s') or 0:.1f} s, "
              f"warm {r.get('warm_compile_s') or 0:.1f} s")
    s = speedups.speedup(ours["eager"].result, ours["default"].result, metric=generation.PER_TOKEN)
    print(f"   per-token speed-up {s.value:.3f}x ({s.confidence:.1%} interval {s.low:.3f}-{s.high:.3f}): {s.verdict}")


if __name__ == "__main__":
    main()
