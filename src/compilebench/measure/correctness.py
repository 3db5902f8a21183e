"""Does the compiled model still compute what eager computes? Errors against eager's outputs on the same
input, and a check in the task's own terms: top-1 classes, per-pixel classes, detected classes and boxes.

Tolerances depend on the math the model ran in: a float16 model cannot agree with itself to float32 precision, and
neither can a float32 model whose convolutions or matmuls ran on TF32 tensor cores (10 mantissa bits, as float16:
cuDNN allows TF32 for convolutions by default on Ampere and later, so a compiled CNN that fuses differently
disagrees with eager by more than float32's tolerance while computing the same thing).

A difference a compiler or another engine cannot avoid (another summation order, fused kernels) is not called a
mismatch blindly: it is judged against the model's own sensitivity, how far eager's output moves when its input
moves by one rounding step of its dtype (each floating input to its next representable value; for a language
model, the embeddings it looks up). A model whose activations are quantized on the fly (int8-dynamic) moves by a
whole quantization step there: what compiling it may change without computing anything else."""

from __future__ import annotations

from dataclasses import dataclass, field

from compilebench import kinds
from compilebench.kinds.exported import named_tensors

# Max error relative to eager's largest magnitude, per math the model computes in. int8 and float8: activations
# quantized on the fly (--quantize int8-dynamic, float8-dynamic), whose compiled kernels may round an activation to
# the next step where eager's did not, and the step carries through every later layer: int8 per row, a step is
# 1/127 of the row's largest value, twice bfloat16's relative step, so at least bfloat16's tolerance (full-size ViT
# compiled on a CPU: 2.6e-2, every top-1 class kept); float8 e4m3 keeps 3 mantissa bits (a step of 1/16), not yet
# measured on a GPU.
REL_TOLERANCE = {"float32": 1e-3, "tf32": 1e-2, "float16": 2e-2, "bfloat16": 5e-2, "int8": 5e-2, "float8": 2e-1}


def math_of(dtype: str, tf32: bool, quantize: str = "none") -> str:
    """The math whose tolerance applies: the quantized activations' (a weight-only quantization computes in the
    dtype: its weights are the same tensors eager and compiled), else the dtype, or tf32 for float32 that ran on
    TF32 tensor cores."""
    if quantize != "none" and kinds.quantization(quantize).activations:
        return kinds.quantization(quantize).activations
    return "tf32" if dtype == "float32" and tf32 else dtype
# Fraction of top-1 classes, pixels, queries or boxes that must agree.
MIN_AGREEMENT = 0.99
BOX_TOLERANCE = 1e-2  # boxes are in [0, 1] image coordinates: 1% of the image side


def snapshot(out) -> dict:
    """Detached copies by name: CUDA-graph outputs are overwritten by the next replay."""
    return {name: t.detach().clone() for name, t in named_tensors(out)}


def output_error(expected: dict, actual: dict) -> tuple[float, float]:
    """Max absolute error, and that error over eager's largest magnitude (random weights can make
    outputs tiny, e.g. DeepLabV3 logits ~1e-22, where an absolute error says nothing)."""
    if list(expected) != list(actual):
        raise RuntimeError(f"compiled model returned outputs {list(actual)}, eager returned {list(expected)}")
    max_abs, max_ref = 0.0, 0.0
    for name, r in expected.items():
        a = actual[name]
        if not (r.is_floating_point() or r.is_complex()):
            max_abs = max(max_abs, float((r != a).any()))  # integer outputs must match exactly
            continue
        r, a = r.double(), a.double()
        max_abs = max(max_abs, float((r - a).abs().max()) if r.numel() else 0.0)
        max_ref = max(max_ref, float(r.abs().max()) if r.numel() else 0.0)
    return max_abs, (max_abs / max_ref if max_ref > 0 else max_abs)


def _argmax_agreement(r, a, dim: int, rel_tolerance: float) -> tuple[float, float]:
    """The fraction of argmax decisions that agree, over all positions and over the decisive ones: where the
    eager's best beats its second best by more than the tolerance lets an output move (rel_tolerance times
    the tensor's largest magnitude). Random weights make many near-ties (a
    MaskFormer query per pixel), which float rounding may flip without the model computing anything else."""
    same = r.argmax(dim) == a.argmax(dim)
    if r.shape[dim] < 2:
        return 1.0, 1.0
    top2 = r.double().topk(2, dim=dim).values
    decisive = (top2.select(dim, 0) - top2.select(dim, 1)) > rel_tolerance * float(r.abs().max())
    n = int(decisive.sum())
    return float(same.double().mean()), (float((same & decisive).sum()) / n if n else 1.0)


def task_agreement(expected: dict, actual: dict, rel_tolerance: float = 0.0) -> dict[str, tuple[float, float]]:
    """(all, decisive) agreement per check the outputs allow: `top1` (classification logits [B, C]),
    `pixel_class` (segmentation logits [B, C, H, W]), `class` (detection logits [B, Q, C], or a universal
    segmenter's class_queries_logits), `pixel_query` (masks_queries_logits [B, Q, H, W]), `box` (pred_boxes
    within BOX_TOLERANCE on every coordinate; every box counts as decisive)."""
    out: dict[str, tuple[float, float]] = {}
    logits = expected.get("logits")
    if logits is not None and logits.is_floating_point():
        kind = {2: ("top1", -1), 3: ("class", -1), 4: ("pixel_class", 1)}.get(logits.dim())
        if kind:
            out[kind[0]] = _argmax_agreement(logits, actual["logits"], kind[1], rel_tolerance)
    if "class_queries_logits" in expected:
        out["class"] = _argmax_agreement(expected["class_queries_logits"], actual["class_queries_logits"], -1, rel_tolerance)
    if "masks_queries_logits" in expected:
        out["pixel_query"] = _argmax_agreement(expected["masks_queries_logits"], actual["masks_queries_logits"], 1, rel_tolerance)
    if "pred_boxes" in expected:
        diff = (expected["pred_boxes"].double() - actual["pred_boxes"].double()).abs().amax(-1)
        box = float((diff <= BOX_TOLERANCE).double().mean())
        out["box"] = (box, box)
    return out


def quality(reference: dict, actual: dict) -> dict[str, float]:
    """How a quantized model's predictions agree with the float model's on the same input, in the task's terms (a
    quantized model is not expected to match float within a float tolerance): every position of each check
    task_agreement makes (top-1, each pixel's class, each query's class, boxes) and, for a classifier, top-5 (the
    float model's class among the quantized model's five best)."""
    agreement = {name: everything for name, (everything, _) in task_agreement(reference, actual).items()}
    logits = reference.get("logits")
    if logits is not None and logits.is_floating_point() and logits.dim() == 2 and logits.shape[-1] >= 5:
        best5 = actual["logits"].topk(5, dim=-1).indices
        agreement["top5"] = float((best5 == logits.argmax(-1, keepdim=True)).any(-1).double().mean())
    return agreement


def generation_quality(reference_tokens, tokens) -> dict[str, float]:
    """A quantized model's greedy tokens against the float model's: the fraction equal, and the first new token
    where any sequence differs (1-based; absent where none does)."""
    same = tokens == reference_tokens
    differs = (~same).any(0).nonzero()
    return {"tokens": float(same.double().mean()), **({"first_divergence": int(differs[0]) + 1} if differs.numel() else {})}


@dataclass
class Verdict:
    max_abs_err: float
    max_rel_err: float
    agreement: dict[str, float] = field(default_factory=dict)  # over every prediction, for the record
    problems: list[str] = field(default_factory=list)  # empty: within tolerance
    tolerance: float = 0.0  # the relative error allowed: the math's, or eager's own difference where larger
    eager_self_rel_err: float | None = None  # how far eager's two calls on the same input differ (None: not asked)
    sensitivity_rel_err: float | None = None  # how far eager moves for one rounding step of its input (None: not asked)

    @property
    def ok(self) -> bool:
        return not self.problems


def tolerance_of(compute_dtype: str, eager_self_rel_err: float | None, sensitivity_rel_err: float | None = None) -> float:
    """The relative error a compiled output may have: the math's; or where eager differs from itself by more, that
    difference (a nondeterministic model is not a compile mismatch for doing what eager does); or where eager moves
    by more when its input moves by one rounding step, that move (the model's own sensitivity)."""
    return max(REL_TOLERANCE[compute_dtype], eager_self_rel_err or 0.0, sensitivity_rel_err or 0.0)


def _allowed(tolerance: float, compute_dtype: str, eager_self_rel_err: float | None = None) -> str:
    if tolerance > REL_TOLERANCE[compute_dtype]:
        if eager_self_rel_err is not None and tolerance == eager_self_rel_err:
            return f"{tolerance:.1e} allowed (eager's own two calls differ by that much)"
        return f"{tolerance:.1e} allowed (eager moves that much when its input moves by one rounding step)"
    return f"{tolerance:.0e} allowed for {compute_dtype}"


def perturbed(inputs: dict) -> dict:
    """Each floating input moved by one rounding step of its dtype (to its next representable value upward)."""
    import torch

    return {k: torch.nextafter(v, torch.full_like(v, float("inf"))) if isinstance(v, torch.Tensor)
            and v.is_floating_point() else v for k, v in inputs.items()}


def sensitivity(expected: dict, moved: dict) -> float:
    """How far eager's output moved for an input moved by one rounding step: the max error over its largest
    magnitude, as a compiled output's is measured."""
    return output_error(expected, moved)[1]


def check(expected: dict, actual: dict, compute_dtype: str, eager_self_rel_err: float | None = None,
          sensitivity_rel_err: float | None = None) -> Verdict:
    """Compare a compiled output with the eager one, within the tolerance of the math the model computes in (a
    dtype, or tf32: math_of), or eager's own difference between two calls where larger (`eager_self_rel_err`), or
    eager's move for one rounding step of its input where larger still (`sensitivity_rel_err`)."""
    max_abs, max_rel = output_error(expected, actual)
    tolerance = tolerance_of(compute_dtype, eager_self_rel_err, sensitivity_rel_err)
    agreement = task_agreement(expected, actual, tolerance)
    problems = []
    if max_rel > tolerance:
        problems.append(f"max relative error {max_rel:.2e} > {_allowed(tolerance, compute_dtype, eager_self_rel_err)}")
    problems += [f"{name} agreement {decisive:.1%} < {MIN_AGREEMENT:.0%} of decisive predictions"
                 for name, (_, decisive) in agreement.items() if decisive < MIN_AGREEMENT]
    return Verdict(max_abs, max_rel, {name: everything for name, (everything, _) in agreement.items()}, problems,
                   tolerance, eager_self_rel_err, sensitivity_rel_err)


def self_difference(first: dict, second: dict) -> float:
    """How far two eager calls on the same input differ: the max error over the first's largest magnitude."""
    return output_error(first, second)[1]


def generation_self_difference(tokens, logits: list, tokens_again, logits_again: list) -> float:
    """How far two eager generate() calls on the same prompt differ: the max relative error of the logits of every
    step up to and including the first whose token differs (later steps see other tokens, so they differ by more
    than the model's own noise)."""
    differs = (tokens != tokens_again).any(0).nonzero()
    last = int(differs[0]) if differs.numel() else len(logits) - 1
    worst = 0.0
    for step in range(last + 1):
        a, b = logits[step].double(), logits_again[step].double()
        worst = max(worst, float((a - b).abs().max()) / (float(a.abs().max()) or 1.0))
    return worst


@dataclass
class GenerationVerdict(Verdict):
    first_divergence: int | None = None  # the first new-token position where any sequence differs from eager's


def check_generation(eager_tokens, eager_logits: list, tokens, logits: list, compute_dtype: str,
                     eager_self_rel_err: float | None = None,
                     sensitivity_rel_err: float | None = None) -> GenerationVerdict:
    """Greedy tokens of a variant against eager's, with the logits of each step. Random weights make many
    near-ties between the best two tokens, and float rounding may flip one without the model computing anything
    else; after a flip the sequences differ for good. So: a divergence counts against the variant only where
    eager's best token beat its second by more than the dtype's tolerance (or eager's own difference, where
    larger) lets a logit move (a decisive step); the first step's logits must agree within that tolerance; the
    fraction of identical tokens is recorded."""
    tolerance = tolerance_of(compute_dtype, eager_self_rel_err, sensitivity_rel_err)
    same = tokens == eager_tokens  # [batch, new tokens]
    agreement = float(same.double().mean())
    differs = (~same).any(0).nonzero()
    first = int(differs[0]) if differs.numel() else None
    eager0, got0 = eager_logits[0].double(), logits[0].double()
    max_abs = float((eager0 - got0).abs().max())
    scale = float(eager0.abs().max()) or 1.0
    max_rel = max_abs / scale
    problems = []
    if max_rel > tolerance:
        problems.append(f"first step's logits: max relative error {max_rel:.2e} > "
                        f"{_allowed(tolerance, compute_dtype, eager_self_rel_err)}")
    if first is not None:
        step = eager_logits[first].double()[~same[:, first]]  # the sequences that flipped there
        top2 = step.topk(2, dim=-1).values
        margin = float((top2[:, 0] - top2[:, 1]).min())
        if margin > tolerance * float(step.abs().max()):
            problems.append(f"greedy tokens diverge from eager's at new token {first + 1} where eager's choice was "
                            f"decisive (margin {margin:.3g}); {agreement:.1%} of tokens agree")
    return GenerationVerdict(max_abs, max_rel, {"tokens": agreement}, problems, tolerance, eager_self_rel_err,
                             sensitivity_rel_err, first)
