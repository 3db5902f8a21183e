"""Correctness of a compiled output against eager: errors, task-aware agreement, dtype tolerances."""

import pytest
import torch

from compilebench.measure import correctness


def test_a_near_tie_may_flip_but_a_decisive_prediction_may_not():
    tie = {"logits": torch.tensor([[1.0, 1.0001, 0.0]])}  # margin 1e-4: within float32's tolerance of 1e-3
    flipped = {"logits": torch.tensor([[1.0001, 1.0, 0.0]])}
    v = correctness.check(tie, flipped, "float32")
    assert v.agreement == {"top1": 0.0} and v.ok  # recorded, not a mismatch
    decisive = {"logits": torch.tensor([[1.0, 0.9, 0.0]])}
    v = correctness.check(decisive, {"logits": torch.tensor([[0.9, 1.0, 0.0]])}, "bfloat16")
    assert v.problems == ["max relative error 1.00e-01 > 5e-02 allowed for bfloat16",
                          "top1 agreement 0.0% < 99% of decisive predictions"]


def test_segmentation_counts_pixels_whose_class_changed():
    ref = torch.zeros(1, 3, 10, 10)
    ref[:, 1] = 1.0
    out = ref.clone()
    out[0, 2, 0, 0] = 2.0  # one pixel of 100 changes class
    assert correctness.task_agreement({"logits": ref}, {"logits": out}) == {"pixel_class": (0.99, 0.99)}
    universal = {"class_queries_logits": torch.eye(4).unsqueeze(0), "masks_queries_logits": ref}
    assert correctness.task_agreement(universal, universal) == {"class": (1.0, 1.0), "pixel_query": (1.0, 1.0)}


def test_detection_checks_classes_and_boxes():
    ref = {"logits": torch.eye(4).unsqueeze(0), "pred_boxes": torch.full((1, 4, 4), 0.5)}
    out = {"logits": ref["logits"].clone(), "pred_boxes": ref["pred_boxes"].clone()}
    out["pred_boxes"][0, 0, 2] += 0.02  # one box of four moved by 2% of the image
    v = correctness.check(ref, out, "float16")
    assert v.agreement == {"class": 1.0, "box": 0.75}
    assert v.problems == ["box agreement 75.0% < 99% of decisive predictions"]


def test_tolerance_depends_on_the_dtype():
    ref = {"logits": torch.tensor([[10.0, 0.0]])}
    out = {"logits": torch.tensor([[10.05, 0.0]])}  # 5e-3 relative: fine in half precision, not in float32
    assert correctness.check(ref, out, "float16").ok and correctness.check(ref, out, "bfloat16").ok
    assert correctness.check(ref, out, "float32").problems == ["max relative error 5.00e-03 > 1e-03 allowed for float32"]


def test_snapshots_name_every_tensor_and_are_compared_by_name():
    out = {"logits": torch.ones(1, 2), "hidden_states": (torch.ones(2), torch.zeros(2))}
    ref = correctness.snapshot(out)
    assert list(ref) == ["logits", "hidden_states.0", "hidden_states.1"]
    out["logits"] += 1  # a snapshot is a copy: a CUDA-graph replay overwriting the output cannot change it
    assert correctness.check(ref, correctness.snapshot({**out, "logits": torch.ones(1, 2)}), "float32").max_abs_err == 0.0


def test_eager_s_own_difference_floors_the_tolerance_and_says_so():
    eager = {"logits": torch.tensor([[1.0, 0.5, 0.0]])}
    compiled = {"logits": torch.tensor([[1.0, 0.503, 0.0]])}  # 3e-3 relative: beyond float32's 1e-3
    assert correctness.check(eager, compiled, "float32").problems == [
        "max relative error 3.00e-03 > 1e-03 allowed for float32"]
    v = correctness.check(eager, compiled, "float32", eager_self_rel_err=4e-3)
    assert v.ok and v.tolerance == 4e-3
    v = correctness.check(eager, {"logits": torch.tensor([[1.0, 0.51, 0.0]])}, "float32", eager_self_rel_err=4e-3)
    assert v.problems == ["max relative error 1.00e-02 > 4.0e-03 allowed (eager's own two calls differ by that much)"]
    assert correctness.check(eager, compiled, "float32", eager_self_rel_err=1e-6).tolerance == 1e-3


def test_two_generate_calls_are_compared_up_to_the_first_token_they_disagree_on():
    tokens = torch.tensor([[5, 6, 7]])
    logits = [torch.tensor([[0.0, 1.0]]), torch.tensor([[0.0, 2.0]]), torch.tensor([[0.0, 4.0]])]
    same = correctness.generation_self_difference(tokens, logits, tokens.clone(), [x.clone() for x in logits])
    assert same == 0.0
    # step 2 (index 1) differs by 1%, its token too; step 3 sees another token, so it is left out
    again = [logits[0].clone(), torch.tensor([[0.0, 2.02]]), torch.tensor([[0.0, 40.0]])]
    assert correctness.generation_self_difference(tokens, logits, torch.tensor([[5, 9, 7]]), again) == \
        pytest.approx(0.01)
