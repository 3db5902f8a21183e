import json
import re

import pytest

from compilebench.core.case import Case
from compilebench.core.errors import UserError
from compilebench.core.job import TimingPolicy
from compilebench.core.spec import ModelKind, RunSpec
from compilebench.core.variant import Variant


def test_grid_expands_model_major_and_keeps_variant_order():
    spec = RunSpec(models=("vit", "resnet-50"), batch_sizes=(1, 4), variants=("eager", "default"), device="cpu")
    got = [(c.model, c.batch_size, c.variant.mode) for c in spec.cases()]
    assert got == [
        ("vit", 1, "eager"), ("vit", 1, "default"), ("vit", 4, "eager"), ("vit", 4, "default"),
        ("resnet-50", 1, "eager"), ("resnet-50", 1, "default"), ("resnet-50", 4, "eager"), ("resnet-50", 4, "default"),
    ]


def test_a_value_given_twice_is_one_case():
    # issue 16: `--batch-size 1 1` measured and stored the same case twice
    spec = RunSpec(models=("vit", "vit"), batch_sizes=(1, 1, 4), variants=("eager", "eager", "default"), device="cpu")
    assert spec.batch_sizes == (1, 4) and spec.models == ("vit",)
    assert len(spec.cases()) == 4 and len({c.key() for c in spec.cases()}) == 4


def test_generation_cases_get_their_prompt_and_new_tokens_and_vision_cases_do_not():
    spec = RunSpec(models=("gpt2", "vit"), variants=("eager", "eager-static-cache", "default"), new_tokens=8,
                   device="cpu")
    cases = spec.cases({"gpt2": ModelKind("generation", 128)})
    gpt2 = [c for c in cases if c.model == "gpt2"]
    assert [(c.prompt_len, c.new_tokens) for c in gpt2] == [(128, 8)] * 3
    assert [c.variant.name for c in gpt2] == ["eager", "eager-static-cache", "default"]
    assert all(c.prompt_len is None and c.new_tokens is None for c in cases if c.model == "vit")
    assert RunSpec(models=("gpt2",), prompt_len=16).cases({"gpt2": ModelKind("generation", 128)})[0].prompt_len == 16


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
    case = Case("vit", 4, Variant("max-autotune", fullgraph=True, dynamic=False, options=(("freezing", True),)),
                device="cuda:0")
    assert Case.from_dict(case.to_dict()) == case
    assert Case.from_dict(json.loads(json.dumps(case.to_dict()))) == case  # options survive JSON's lists


def test_fields_a_newer_version_wrote_are_ignored_by_the_case():
    d = Case("vit", 1, Variant("default")).to_dict()
    d["future_setting"] = "x"
    d["variant"]["future_flag"] = True
    assert Case.from_dict(d) == Case("vit", 1, Variant("default"))


def test_cudagraph_modes_get_a_minimum_warmup():
    policy = TimingPolicy(warmup=0).resolve("forward", "cuda:0")
    assert policy.warmup_for(Variant("reduce-overhead")) == 3
    assert policy.warmup_for(Variant("default")) == 0


def test_variant_labels_name_the_mode_when_it_is_not_default():
    assert Variant("eager").label == "no compile"
    assert Variant("default").label == "compile"
    assert Variant("reduce-overhead").label == "compile (reduce-overhead)"
    assert Variant("default", fullgraph=True).label == "compile (fullgraph)"
    assert Variant("default", options=(("freezing", True),)).label == "compile (freezing=True)"
    assert Variant.named("eager-static-cache").label == "no compile, static cache"


def test_inductor_options_are_part_of_the_identity_and_mean_nothing_for_eager():
    frozen = Case("resnet-50", 1, Variant("default", options=(("freezing", True),)))
    assert frozen.key() != Case("resnet-50", 1, Variant("default")).key()
    assert Variant("default", options=(("b", 1), ("a", 2))) == Variant("default", options=(("a", 2), ("b", 1)))
    assert Variant("eager", options=(("freezing", True),)) == Variant("eager")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(models=()), "no model"),
        (dict(batch_sizes=(0,)), "--batch-size must be an integer >= 1, got 0"),
        (dict(batch_sizes=(-4,)), "--batch-size must be an integer >= 1, got -4"),
        (dict(dtype="float8"), "unknown dtype 'float8'"),
        (dict(device="tpu"), "--device must be cpu, cuda or cuda:N"),
        (dict(timing=TimingPolicy(iters=0)), "--iters must be an integer >= 1"),
        (dict(timing=TimingPolicy(warmup=-1)), "--warmup must be an integer >= 0, got -1"),
        (dict(timing=TimingPolicy(max_time_s=0)), "--max-time must be a positive"),
        (dict(timing=TimingPolicy(max_time_s=float("inf"))), "--max-time must be a positive, finite number"),
        (dict(timing=TimingPolicy(min_iters=0)), "--min-iters must be an integer >= 1"),
        (dict(timing=TimingPolicy(iters=5, min_iters=10)), "--min-iters 10 is more than --iters 5"),
        (dict(timing=TimingPolicy(first_calls=0)), "--first-calls must be an integer >= 1"),
        (dict(timeout_s=-1), "--timeout must be a positive"),
        (dict(repeats=0), "--repeats must be an integer from 1 to 100, got 0"),
        (dict(repeats=1000), "--repeats must be an integer from 1 to 100"),
        (dict(min_effect=1.5), "--min-effect must be from 0% to below 100%"),
        (dict(min_effect=-0.01), "--min-effect must be from 0%"),
        (dict(prompt_len=0), "--prompt-len must be an integer >= 1"),
        (dict(new_tokens=0), "--new-tokens must be an integer >= 1"),
        (dict(isolation="thread"), "unknown isolation 'thread'"),
    ],
)
def test_bad_specs_say_what_is_wrong_and_what_is_allowed(kwargs, message):
    with pytest.raises(UserError, match=None) as err:
        RunSpec(**{"models": ("vit",), **kwargs})
    assert message in str(err.value)


def test_new_settings_enter_the_key_only_when_set():
    plain = Case("vit", 1, Variant("eager"))
    # the key of a results file written before these settings existed: resume still matches it
    assert json.loads(plain.key()) == {"batch_size": 1, "device": "cpu", "dtype": "float32", "image": None,
                                       "model": "vit", "model_size": "full", "task": None, "weights": "random",
                                       "variant": {"backend": "none", "dynamic": None, "fullgraph": False, "mode": "eager"}}
    keys = {Case("vit", 1, Variant("eager"), **kw).key() for kw in (
        {}, {"channels_last": True}, {"autocast": True, "dtype": "float16"}, {"dtype": "float16"}, {"tf32": False},
        {"tf32": True}, {"attn": "eager"}, {"compile_cache": "warm"}, {"prompt_len": 16, "new_tokens": 8},
        {"prompt_len": 32, "new_tokens": 8})}
    assert len(keys) == 10


@pytest.mark.parametrize("kw, message", [
    ({"autocast": True}, "--autocast needs --dtype float16 or bfloat16"),
    ({"attn": "flash"}, "unknown attention implementation 'flash'"),
    ({"compile_cache": "/no/such/dir"}, "--compile-cache must be cold, warm, mega, mega:DIR or an existing directory"),
    ({"dtype": "float8"}, "unknown dtype 'float8'"),
])
def test_bad_settings_are_refused(kw, message):
    with pytest.raises(UserError, match=re.escape(message)):
        RunSpec(models=("vit",), **kw)
