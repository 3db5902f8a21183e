import json
import re

import pytest

from compilebench.errors import UserError
from compilebench.spec import Case, RunSpec, TimingPolicy, Variant


def test_grid_expands_model_major_and_keeps_variant_order():
    spec = RunSpec(models=("vit", "resnet-50"), batch_sizes=(1, 4), variants=("eager", "default"), device="cpu")
    got = [(c.model, c.batch_size, c.variant.mode) for c in spec.cases()]
    assert got == [
        ("vit", 1, "eager"), ("vit", 1, "default"), ("vit", 4, "eager"), ("vit", 4, "default"),
        ("resnet-50", 1, "eager"), ("resnet-50", 1, "default"), ("resnet-50", 4, "eager"), ("resnet-50", 4, "default"),
    ]


def test_repeated_variants_are_run_once():
    spec = RunSpec(models=("vit",), variants=("eager", "eager", "default"), device="cpu")
    assert len(spec.cases()) == 2


def test_eager_ignores_compile_settings_so_its_key_is_shared():
    a = Variant("eager", backend="inductor", fullgraph=True, dynamic=True)
    assert a == Variant("eager")
    assert Case("vit", 1, a).key() == Case("vit", 1, Variant("eager")).key()


def test_case_key_is_stable_and_distinguishes_what_is_measured():
    base = Case("vit", 1, Variant("default"), device="cuda:0")
    assert base.key() == Case("vit", 1, Variant("default"), device="cuda:1").key()  # same machine, other GPU
    assert base.key() != Case("vit", 4, Variant("default"), device="cuda:0").key()
    assert base.key() != Case("vit", 1, Variant("reduce-overhead"), device="cuda:0").key()
    assert base.key() != Case("vit", 1, Variant("default", fullgraph=True), device="cuda:0").key()
    assert base.key() != Case("vit", 1, Variant("default"), device="cpu").key()


def test_case_round_trips_through_a_dict():
    case = Case("vit", 4, Variant("max-autotune", fullgraph=True, dynamic=False), device="cuda:0")
    assert Case.from_dict(case.to_dict()) == case


def test_cudagraph_modes_get_a_minimum_warmup():
    policy = TimingPolicy(warmup=0)
    assert policy.warmup_for(Variant("reduce-overhead")) == 3
    assert policy.warmup_for(Variant("default")) == 0


def test_variant_labels_name_the_mode_when_it_is_not_default():
    assert Variant("eager").label == "no compile"
    assert Variant("default").label == "compile"
    assert Variant("reduce-overhead").label == "compile (reduce-overhead)"
    assert Variant("default", fullgraph=True).label == "compile (fullgraph)"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(models=()), "no model"),
        (dict(batch_sizes=(0,)), "--batch-size must be a positive integer, got 0"),
        (dict(batch_sizes=(-4,)), "--batch-size must be a positive integer, got -4"),
        (dict(variants=("fast",)), "unknown variant 'fast'"),
        (dict(variants=("reduce_overhead",)), "did you mean 'reduce-overhead'"),
        (dict(dtype="float8"), "unknown dtype 'float8'"),
        (dict(device="tpu"), "--device must be cpu, cuda or cuda:N"),
        (dict(timing=TimingPolicy(iters=0)), "--iters must be an integer >= 1"),
        (dict(timing=TimingPolicy(warmup=-1)), "--warmup must be an integer >= 0"),
        (dict(timing=TimingPolicy(max_time_s=0)), "--max-time must be a positive"),
        (dict(timeout_s=-1), "--timeout must be a positive"),
        (dict(isolation="thread"), "unknown isolation 'thread'"),
    ],
)
def test_bad_specs_say_what_is_wrong_and_what_is_allowed(kwargs, message):
    with pytest.raises(UserError, match=None) as err:
        RunSpec(**{"models": ("vit",), **kwargs})
    assert message in str(err.value)


def test_new_settings_enter_the_key_only_when_set():
    plain = Case("vit", 1, Variant("eager"))
    assert json.loads(plain.key()) == {"batch_size": 1, "device": "cpu", "dtype": "float32", "image": None,
                                       "model": "vit", "model_size": "full", "task": None, "weights": "random",
                                       "variant": {"backend": "none", "dynamic": None, "fullgraph": False, "mode": "eager"}}
    keys = {Case("vit", 1, Variant("eager"), **kw).key() for kw in (
        {}, {"channels_last": True}, {"autocast": True, "dtype": "float16"}, {"dtype": "float16"}, {"tf32": False},
        {"tf32": True}, {"attn": "eager"}, {"compile_cache": "warm"})}
    assert len(keys) == 8


@pytest.mark.parametrize("kw, message", [
    ({"autocast": True}, "--autocast needs --dtype float16 or bfloat16"),
    ({"attn": "flash"}, "unknown attention implementation 'flash'"),
    ({"compile_cache": "/no/such/dir"}, "--compile-cache must be cold, warm or an existing directory"),
    ({"dtype": "float8"}, "unknown dtype 'float8'"),
])
def test_bad_settings_are_refused(kw, message):
    with pytest.raises(UserError, match=re.escape(message)):
        RunSpec(models=("vit",), **kw)
