"""Compile and quantize a causal LM on the machine at hand, as torchao's own table does. Prints figures; asserts nothing.

One `compilebench run` of a causal LM (default SmolLM2-135M, random weights): eager, torch.compile, and both under
torchao's int8 weight-only quantization (on a GPU int4 weight-only and float8 dynamic too), its repeats in rounds
across the run. For each: decode tokens/s with its 95% interval, the GB/s a decode step reached from the weights as
stored (quantized weights are fewer bytes to read), the weights' size and the quality kept against the float
model (greedy tokens equal). Then the ratios torchao publishes, with their intervals, beside torchao's figures:
compiled over eager, and each compiled quantization over compiled float.

torchao's published figures (its README, Llama-2-7B, A100, batch 1, tokens/s): eager 23, compiled 107, compiled
int8 weight-only 171, compiled int4 weight-only 201. A 135M-parameter model on a CPU is not a 7B model on an A100:
the ratios say whether the same effects show here, not that they must match.

Usage: python benchmarks/quantized.py [--model smollm2-135m] [--new-tokens 32] [--repeats 3] [--iters 10] [--tiny]
       [--device cpu|cuda] [--quantize int8-weight-only ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

from _runs import TREE, cli, results

sys.path.insert(0, os.path.join(TREE, "src"))

PUBLISHED = {"eager": 23.0, "compiled": 107.0, "int8-weight-only": 171.0, "int4-weight-only": 201.0}  # tokens/s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--device", default=None)
    ap.add_argument("--tiny", action="store_true", help="a tiny config: a rehearsal of the script, not a figure")
    ap.add_argument("--quantize", nargs="+", default=None,
                    help="default: int8-weight-only; on a GPU also int4-weight-only and float8-dynamic")
    ap.add_argument("--report", metavar="DB", default=None, help="print the figures of a results file it wrote")
    args = ap.parse_args()
    if args.report:
        report(args.report, None)
        return
    device = args.device or ("cuda" if _has_cuda() else "cpu")
    quantize = args.quantize or (["int8-weight-only", "int4-weight-only", "float8-dynamic"] if device.startswith("cuda")
                                 else ["int8-weight-only"])
    db = os.path.join(tempfile.mkdtemp(prefix="compilebench-quantized-"), "results.db")
    wall, _ = cli("run", "--model", args.model, "--variant", "eager", "default", "--quantize", "none", *quantize,
                  "--new-tokens", args.new_tokens, "--iters", args.iters, "--repeats", args.repeats, "--device", device,
                  *(["--tiny"] if args.tiny else []), "--db", db, "--quiet", "--format", "md")
    report(db, wall)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def report(db: str, wall: float) -> None:
    from compilebench.report import data
    from compilebench.report.quantization import quality_words
    from compilebench.report.view import View

    found = [r.result for r in results(db)]
    view = View(found)
    first = found[0]
    print(f"{first.label or first.case.model} on {data.hardware(first)}, torch {data.torch_version(first)}, batch "
          f"{first.case.batch_size}, {first.case.new_tokens} new tokens"
          + (f"; {wall:.0f} s" if wall is not None else "") + f"; results in {db}\n")
    by = {(r.case.quantize, r.case.variant.compiled): r for r in view.latest}
    print(f"{'quantization':18} {'variant':10} {'tokens/s':>9} {'95% interval':>17} {'GB/s':>7} {'weights MiB':>12}  "
          "quality")
    for (q, compiled), r in sorted(by.items(), key=lambda kv: (kv[0][0] != "none", kv[0])):
        rate = _tokens(r)
        gbs = data.decode_gbs(r)
        print(f"{q:18} {'compiled' if compiled else 'eager':10} {_num(rate[0]):>9} "
              f"{_num(rate[2]) + '-' + _num(rate[1]):>17} {_num(gbs and gbs[0]):>7} "
              f"{_num(r.weight_bytes and r.weight_bytes / 2**20):>12}  {quality_words(r) or r.status}")
    print(f"\n{'ratio (per-token time, 95% interval)':44} {'here':40} torchao, Llama-2-7B on A100")
    eager, compiled = by.get(("none", False)), by.get(("none", True))
    _ratio(view, "compiled / eager", eager, compiled, PUBLISHED["compiled"] / PUBLISHED["eager"])
    for q in sorted({q for q, _ in by if q != "none"}):
        published = PUBLISHED.get(q)
        _ratio(view, f"compiled {q} / compiled", compiled, by.get((q, True)),
               published / PUBLISHED["compiled"] if published else None)


def _tokens(r) -> tuple[float | None, float | None, float | None]:
    """Decode tokens/s and its interval (the slow end of the time's interval is the low end of the rate's)."""
    est = r.generation.per_token
    rate = lambda ms: r.case.batch_size * 1e3 / ms if ms else None  # noqa: E731
    return rate(est.mean), rate(est.ci95_low), rate(est.ci95_high)


def _ratio(view, name: str, base, other, published: float | None) -> None:
    from compilebench.core import generation

    s = view.speedup(base, other, generation.PER_TOKEN) if base is not None and other is not None else None
    here = "not measured ok" if s is None else (f"{s.value:.2f}x [{_num(s.low)}-{_num(s.high)}] {s.verdict}")
    print(f"{name:44} {here:40} {f'{published:.2f}x' if published else 'not published'}")


def _num(x) -> str:
    return "" if x is None else f"{x:.3g}" if x < 100 else f"{x:.0f}"


if __name__ == "__main__":
    main()
