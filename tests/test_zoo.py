"""The guide's twelve models: exact architectures (meta-device builds), real preprocessing, tiny configs that
compile, suites, and checkpoints given by path."""

import pytest
import torch

from compilebench import zoo
from compilebench.cli import options
from compilebench.cli.run import run_spec
from compilebench.core import suites
from compilebench.core.case import Case
from compilebench.core.errors import UserError
from compilebench.core.job import TimingPolicy
from compilebench.core.variant import Variant
from compilebench.measure.worker import run_case
from compilebench.zoo.entry import default_image_path, load_image

# Parameter counts of the checkpoints, in millions as published (MODELS.md, measured from the checkpoints).
PUBLISHED_PARAMS_M = {
    "vit": 86.57, "beit": 102.56, "convnext": 197.77, "resnet-50": 25.56, "segformer": 3.75, "mask2former": 47.44,
    "maskformer": 101.83, "deeplabv3-mobilenet": 2.53, "owlvit": 153.23, "detr": 41.52, "detr-resnet-101": 60.46,
    "conditional-detr": 43.42,
}

# What each checkpoint's processor gives for a 640x480 photo at batch 1.
EXPECTED_INPUTS = {
    "vit": {"pixel_values": (1, 3, 224, 224)},
    "beit": {"pixel_values": (1, 3, 224, 224)},
    "convnext": {"pixel_values": (1, 3, 224, 224)},
    "resnet-50": {"pixel_values": (1, 3, 224, 224)},
    "segformer": {"pixel_values": (1, 3, 512, 512)},
    "mask2former": {"pixel_values": (1, 3, 384, 384), "pixel_mask": (1, 384, 384)},
    "maskformer": {"pixel_values": (1, 3, 640, 864), "pixel_mask": (1, 640, 864)},
    "deeplabv3-mobilenet": {"pixel_values": (1, 3, 513, 513)},
    "owlvit": {"pixel_values": (1, 3, 768, 768), "input_ids": (2, 16), "attention_mask": (2, 16)},
    "detr": {"pixel_values": (1, 3, 800, 1066), "pixel_mask": (1, 800, 1066)},
    "detr-resnet-101": {"pixel_values": (1, 3, 800, 1066), "pixel_mask": (1, 800, 1066)},
    "conditional-detr": {"pixel_values": (1, 3, 800, 1066), "pixel_mask": (1, 800, 1066)},
}


@pytest.fixture(scope="module")
def photo():
    return load_image(default_image_path())


def test_the_zoo_is_the_guides_twelve_in_the_guides_order_then_the_causal_lms_then_the_pipelines():
    names = tuple(n for n in zoo.REGISTRY if not n.startswith("fault-"))
    pipelines = ("sd-1.5", "sdxl-turbo", "flux-schnell")
    assert names == suites.GUIDE_MODELS + suites.TEXT_MODELS + pipelines + tuple(f"{p}-step" for p in pipelines)
    assert zoo.get("detr-resnet-101").label == "Object Detection/Resnet-101"
    assert zoo.get("detr").label == "Object Detection/DETR"
    assert zoo.get("deeplabv3-mobilenet").label == "Image Segmentation/MobileNet"


@pytest.mark.parametrize("name", list(PUBLISHED_PARAMS_M))
def test_full_size_architecture_has_the_checkpoints_parameter_count(name):
    with torch.device("meta"):
        model = zoo.get(name).build("random", "full")
    params_m = sum(p.numel() for p in model.parameters()) / 1e6
    assert round(params_m, 2) == PUBLISHED_PARAMS_M[name]
    assert abs(params_m - PUBLISHED_PARAMS_M[name]) / PUBLISHED_PARAMS_M[name] < 0.001 + 0.005 / PUBLISHED_PARAMS_M[name]


@pytest.mark.parametrize("name", list(EXPECTED_INPUTS))
def test_processor_gives_the_checkpoints_input_shapes_for_the_shipped_photo(name, photo):
    assert photo.size == (640, 480)
    inputs = zoo.get(name).inputs(photo, 1, "random", "full")
    assert {k: tuple(v.shape) for k, v in inputs.items()} == EXPECTED_INPUTS[name]


def test_batch_repeats_the_image_and_owlvit_gets_both_queries_per_image(photo):
    inputs = zoo.get("owlvit").inputs(photo, 4, "random", "tiny")
    assert inputs["pixel_values"].shape[0] == 4
    assert torch.equal(inputs["pixel_values"][0], inputs["pixel_values"][3])
    assert inputs["input_ids"].shape == (8, 16)
    assert inputs["input_ids"][1, :7].tolist() == [49406, 320, 1125, 539, 320, 1929, 49407]  # "a photo of a dog"
    assert inputs["attention_mask"][0].sum() == 7 and inputs["input_ids"][0, 7:].eq(0).all()


@pytest.mark.parametrize("name", list(EXPECTED_INPUTS))
def test_a_batch_tiled_from_one_copy_is_the_processors_own_batch_of_copies(name, photo):
    """Inputs of batch B are one copy's processor output tiled B times (fast at any B); for every zoo model that
    must be exactly what the processor gives for B copies of the photo (DETR's pixel mask, OWL-ViT's queries
    image by image included)."""
    entry = zoo.get(name)
    tiled = entry.inputs(photo, 3, "random", "tiny")
    processor = entry.processor("random", "tiny")
    own = dict(processor(images=[photo] * 3, return_tensors="pt"))
    assert set(own) <= set(tiled)
    for key, value in own.items():
        assert tiled[key].shape == value.shape and torch.equal(tiled[key], value), key


def test_an_output_the_processor_does_not_give_as_tensors_alone_is_its_own_batch():
    calls = []

    def processor(images, return_tensors):
        calls.append(len(images))
        return {"pixel_values": torch.ones(len(images), 3), "sizes": [(2, 2)] * len(images)}

    out = zoo.entry.batch_of_copies(processor, 4, images=["photo"])
    assert calls == [1, 4] and out["sizes"] == [(2, 2)] * 4 and out["pixel_values"].shape == (4, 3)
    assert zoo.entry.batch_of_copies(lambda images, return_tensors: {"x": torch.ones(1, 2)}, 5, images=["p"])["x"].shape == (5, 2)


# ResNet-50's plain compile in a worker is the end-to-end test's (test_cli): here it compiles frozen (inductor's
# freezing=True folds the weights into the graph), one compile for what took two (21 s of the slow step on 2026-12-01)
COMPILED = {"resnet-50": Variant("default", options=(("freezing", True),))}


@pytest.mark.slow
@pytest.mark.parametrize("name", suites.GUIDE_MODELS)
def test_tiny_config_compiles_with_inductor_and_matches_eager(name):
    """The worker's own path: build, preprocess the photo, eager reference, torch.compile, time, compare."""
    case = Case(name, 2, COMPILED.get(name, Variant("default")), device="cpu", model_size="tiny")
    r = run_case(case, TimingPolicy(iters=2, warmup=1, min_iters=1), isolation="inline")
    assert r.status == "ok", (r.message, r.repeats[0].traceback)
    assert r.graphs >= 1 and r.recompiles_in_timed_loop == 0
    assert r.max_rel_err < 1e-3, r.max_rel_err


def test_suites_are_the_guides_matrices():
    seed = suites.get("seed")
    assert len(seed.models) * len(seed.batch_sizes) * len(seed.variants) == 72
    generation = suites.get("seed-generation")  # the torch.compile page's example
    assert generation.models == ("gemma-2b",) and generation.fullgraph
    assert generation.variants == ("eager", "default", "reduce-overhead")
    assert parse_run("--suite", "seed-generation").compile.fullgraph
    assert suites.get("generation").models == suites.TEXT_MODELS
    ro = suites.get("seed-reduce-overhead")
    assert set(ro.models) == {"convnext", "resnet-50", "conditional-detr", "deeplabv3-mobilenet"}
    assert ro.batch_sizes == (1, 4) and ro.variants == ("eager", "reduce-overhead")
    with pytest.raises(UserError, match="unknown suite 'sead'; did you mean 'seed'"):
        suites.get("sead")


def parse_run(*argv):
    from compilebench import cli

    return run_spec(options.parser(cli._commands()).parse_args(["run", *argv]))


def test_no_model_and_no_suite_runs_the_quick_suite_with_its_recorded_budget():
    spec = parse_run()
    quick = suites.get("quick")
    assert spec.models == quick.models and spec.batch_sizes == (1,) and spec.variants == ("eager", "default")
    assert spec.timing.max_time_s == quick.max_time_s and spec.timing.warmup == quick.warmup
    assert {zoo.get(m).task for m in spec.models} == {"image-classification", "semantic-segmentation", "object-detection"}


def test_the_quick_suite_interleaves_its_own_variants_unless_told_not_to():
    """The README's first command times each model's eager and default in one process (issue 62: on a GPU's noisy
    CPU side, processes apart differ more than compile's effect); --no-interleave gives a process each; variants a
    user names (an engine among them, which refuses to share a process) interleave only when asked."""
    assert parse_run().interleave and parse_run("--suite", "quick").interleave
    assert not parse_run("--no-interleave").interleave
    assert not parse_run("--variant", "eager", "onnxruntime").interleave
    assert parse_run("--variant", "eager", "reduce-overhead", "--interleave").interleave
    assert not parse_run("--suite", "seed").interleave and not parse_run("--model", "vit").interleave


def test_explicit_options_override_the_suite():
    spec = parse_run("--suite", "seed", "--batch-size", "1", "--variant", "eager", "--warmup", "7")
    assert spec.models == suites.GUIDE_MODELS and spec.batch_sizes == (1,) and spec.variants == ("eager",)
    assert spec.timing.warmup == 7 and spec.timing.max_time_s is None
    assert parse_run("--model", "vit").models == ("vit",)


def test_the_task_of_a_zoo_model_cannot_be_contradicted():
    with pytest.raises(UserError, match="vit is a image-classification model"):
        zoo.get("vit", "object-detection")
