"""`compilebench shapes`: a model serving a sequence of shapes under each dynamic-shape setting, its compiles and
dynamo's reasons, a second pass that must compile nothing, padding to buckets, and the time to serve a mix."""

import math
import json
import os

import pytest
import torch
from conftest import run_cli, stored
from fakeresults import CPU, machine
from tiny_factories import make_inputs, make_model

import compilebench
from compilebench.core import stats, traffic
from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.errors import UserError
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.spec import RunSpec
from compilebench.core.variant import Variant
from compilebench.measure import serving
from compilebench.report import shape_starts, shapes as shapesmod
from compilebench.report.view import View

FAST = dict(iters=3, warmup=1, backend="eager", repeats=2)


def _setting(results, name: str) -> Result:
    (r,) = [r for r in results.results if shapesmod.setting_name(r.case.variant).startswith(name)]
    return r


def _compiles(r: Result) -> list[int]:
    return [p.compiles for p in r.shapes.per_shape.values()]


def test_dynamic_false_compiles_a_graph_per_batch_size_and_gives_dynamos_reason_for_each_recompile(tmp_path):
    served = compilebench.shapes(make_model(), inputs=make_inputs, batch_sizes=(1, 2, 3), dynamic=("false",),
                                 db=str(tmp_path / "r.db"), **FAST)
    r = _setting(served, "dynamic=False")
    assert r.status == "ok" and r.case.shapes == ("b1", "b2", "b3")
    assert _compiles(r) == [1, 1, 1] and r.shapes.compiles == 3 and r.shapes.recompiles == 2
    reasons = [p.recompile_reasons for p in r.shapes.per_shape.values()]
    assert reasons[0] == []
    assert "size mismatch at index 0. expected 1, actual 2" in reasons[1][0]
    assert "size mismatch at index 0. expected 2, actual 3" in reasons[2][0]
    assert r.shapes.second_compiles == 0 and r.shapes.limit_hits == 0
    rows = served.to_pandas()
    assert len(rows) == 6  # no compile and dynamic=False, three shapes each
    static = rows[rows.setting.str.startswith("dynamic=False")]
    assert list(static.graphs_compiled) == [1, 1, 1] and list(static.batch_size) == [1, 2, 3]
    assert static.steady_ms.notna().all() and static.serve_s.notna().all()
    assert "expected 1, actual 2" in static.recompile_reasons.iloc[1]


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_automatic_dynamic_settles_after_its_first_recompile_and_the_second_pass_compiles_nothing(tmp_path):
    served = compilebench.shapes(make_model(), inputs=make_inputs, batch_sizes=(1, 2, 3, 4), dynamic=("auto", "mark"),
                                 db=str(tmp_path / "r.db"), **FAST)
    for name in ("automatic dynamic", "mark_dynamic"):
        r = _setting(served, name)
        # batch 1 is specialized (torch treats sizes 0 and 1 apart); batch 2 compiles the dynamic graph, which serves 3, 4
        assert _compiles(r) == [1, 1, 0, 0], name
        assert r.shapes.second_compiles == 0 and [p.second_compiles for p in r.shapes.per_shape.values()] == [0] * 4
        assert all(p.max_rel_err is not None and not p.problems for p in r.shapes.per_shape.values())
    eager = _setting(served, "no compile")
    assert _compiles(eager) == [0] * 4 and eager.status == "ok"
    (m,) = shapesmod.models(served.view)
    assert [s.settles for s in m.settings] == [True, True, True]


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_padding_to_4_serves_batch_3_as_4_and_returns_3_rows(tmp_path):
    served = compilebench.shapes(make_model(), inputs=make_inputs, batch_sizes=(1, 3), dynamic=(), pad_to=(4,),
                                 db=str(tmp_path / "r.db"), **FAST)
    r = _setting(served, "pad to 4")
    per = r.shapes.per_shape
    assert per["b3"].served_as == "b4" and per["b1"].served_as == "b4"
    assert _compiles(r) == [1, 0]  # one static graph, for the bucket
    assert per["b3"].max_rel_err < 1e-5 and not per["b3"].problems  # 3 rows, compared with eager's 3
    assert r.case.variant.dynamic is False and r.case.variant.pad_to == (4,)

    inputs = make_inputs(3)
    padded = serving.pad_rows(inputs, 3, 4)
    assert padded["pixel_values"].shape[0] == 4 and torch.equal(padded["pixel_values"][3], inputs["pixel_values"][2])
    out = serving.slice_rows(make_model()(**padded), 3, 4)
    assert out["logits"].shape[0] == 3


def test_padding_keeps_several_rows_per_item_together_and_slices_nested_outputs():
    queries = torch.arange(6).reshape(6, 1)  # two text queries per photo, three photos (OWL-ViT's input_ids)
    padded = serving.pad_rows({"input_ids": queries, "scale": torch.tensor(2.0)}, 3, 4)
    assert padded["input_ids"].flatten().tolist() == [0, 1, 2, 3, 4, 5, 4, 5]
    assert padded["scale"].dim() == 0
    nested = serving.slice_rows({"a": (torch.zeros(8, 2), torch.zeros(4)), "b": torch.zeros(5)}, 3, 4)
    assert nested["a"][0].shape[0] == 6 and nested["a"][1].shape[0] == 3 and nested["b"].shape[0] == 5


def test_shape_tokens_buckets_and_names():
    s = traffic.Shape.parse("b2:p100")
    assert (s.batch, s.prompt, s.words, s.size) == (2, 100, "batch 2, prompt 100", 100)
    assert traffic.Shape.parse("b1:800x600").image == (800, 600) and traffic.Shape(4).token == "b4"
    assert traffic.Shape(3).padded((1, 4, 16)) == traffic.Shape(4)
    assert traffic.Shape(2, prompt=100).padded((64, 128)) == traffic.Shape(2, prompt=128)
    shapes = traffic.shapes_of((1, 4), prompts=(32, 100))
    assert [s.token for s in shapes] == ["b1:p32", "b1:p100", "b4:p32", "b4:p100"]
    assert list(traffic.names(shapes)) == ["1/32", "1/100", "4/32", "4/100"]
    assert list(traffic.names(traffic.shapes_of((1, 4, 16)))) == ["1", "4", "16"]
    assert list(traffic.names(traffic.shapes_of((1,), images=((800, 600), (640, 640))))) == ["800x600", "640x640"]


def test_a_mix_weights_the_shapes_and_the_sequence_follows_it():
    shapes = traffic.shapes_of((1, 4, 16))
    assert traffic.parse_mix(None, shapes) == pytest.approx({"b1": 1 / 3, "b4": 1 / 3, "b16": 1 / 3})
    mix = traffic.parse_mix("1:50,4:30,16:20", shapes)
    assert mix == pytest.approx({"b1": 0.5, "b4": 0.3, "b16": 0.2})
    seq = traffic.sequence(mix, 100)
    assert (seq.count("b1"), seq.count("b4"), seq.count("b16")) == (50, 30, 20)
    assert set(seq[:5]) == {"b1", "b4", "b16"}  # each shape met early: its compile is not put off
    assert "b16" not in traffic.sequence(traffic.parse_mix("1:1,4:1", shapes), 50)  # unnamed: never served
    for bad in ("2:50", "1:-1", "1:x", "1", "1:0,4:0"):
        with pytest.raises(UserError, match="--mix"):
            traffic.parse_mix(bad, shapes)


def test_serving_time_adds_each_shapes_first_call_and_the_break_even_is_where_the_setting_stays_ahead():
    uniform = {"b1": 0.5, "b2": 0.5}
    eager = traffic.Served({"b1": 0.010, "b2": 0.020}, {"b1": 10.0, "b2": 20.0})
    compiled = traffic.Served({"b1": 1.0, "b2": 2.0}, {"b1": 5.0, "b2": 10.0})
    assert compiled.cumulative(["b1", "b2", "b1"]) == pytest.approx([1.0, 3.0, 3.005])
    # 10 requests: 5 of each; compiled 3 s + 4 x 5 ms + 4 x 10 ms; eager 0.03 s + 4 x 10 ms + 4 x 20 ms
    assert compiled.total_s(uniform, 10) == pytest.approx(3.06)
    assert eager.total_s(uniform, 10) == pytest.approx(0.15)
    assert compiled.total_s(uniform, 10) == pytest.approx(compiled.cumulative(traffic.sequence(uniform, 10))[-1])
    # 7.5 ms saved per request; 2.97 s behind after both first calls: about 396 requests
    n = traffic.break_even(compiled, eager, uniform, 100)
    assert 390 <= n <= 400
    assert traffic.break_even(compiled, eager, uniform, 1000) == n  # found along the sequence, the same
    slower = traffic.Served({"b1": 1.0, "b2": 2.0}, {"b1": 11.0, "b2": 21.0})
    assert traffic.break_even(slower, eager, uniform, 1000) is None


def _served_result(variant: Variant, first_s: dict, steady: dict, *, second: int = 0, seed: int = 0) -> Result:
    """A shapes result of three processes, steady samples straddling each shape's mean by 1% (process p: x(1 + p/100))."""
    case = Case("resnet-50", 4, variant, device="cpu", shapes=tuple(first_s))
    reps = []
    for p in range(3):
        f = 1 + (p - 1) / 100
        per = {t: {"served_as": None, "first_call_s": first_s[t] * f, "compiles": 1 if variant.compiled and t == "b1" else 0,
                   "compile_s": first_s[t] if variant.compiled else 0.0, "recompile_reasons": [], "limit_hits": 0,
                   "samples_ms": [steady[t] * f * g for g in (0.99, 1.0, 1.01)], "second_compiles": second,
                   "max_rel_err": 0.0 if variant.compiled else None, "agreement": {}, "problems": []}
               for t in first_s}
        reps.append(Repeat(index=p + 1, shapes={"served": list(first_s), "per_shape": per},
                           environment=Environment.from_dict(CPU)))
    return Result(case, reps, machine_id=machine(CPU), label="Image Classification/ResNet")


def test_the_start_up_over_the_shapes_is_told_per_setting_and_per_state_its_processes_started_from():
    """A replica serving a mix waits for every shape's first call: cold (repeat 1) apart from the processes that
    started from the mega-cache's artifacts, regional beside the whole model's compile."""
    first = {"b1": 2.0, "b4": 1.0}
    eager = _served_result(Variant(), {"b1": 0.01, "b4": 0.02}, {"b1": 10.0, "b4": 40.0})
    whole = _served_result(Variant("default"), first, {"b1": 5.0, "b4": 20.0})
    regional = _served_result(Variant("default", scope="regions"), {"b1": 0.5, "b4": 0.25}, {"b1": 6.0, "b4": 22.0})
    for r in (whole, regional):
        for rep in r.repeats:
            rep.compile_cache = "cold" if rep.index == 1 else "mega"
        for p in (p for rep in r.repeats[1:] for p in rep.shapes.per_shape.values()):  # graphs from the artifacts
            p.first_call_s, p.compile_s, p.compiles = p.first_call_s / 10, p.compile_s / 10, 0
    (m,) = shapesmod.models(View([eager, whole, regional]))
    rows = shape_starts.shapes_table(m).records()
    assert [(r["setting"], r["start"], r["processes"]) for r in rows] == [
        ("no compile", "no compile", "3"), ("automatic dynamic", "cold start", "1"),
        ("automatic dynamic", "mega-cache", "2"), ("automatic dynamic, regions", "cold start", "1"),
        ("automatic dynamic, regions", "mega-cache", "2")]
    assert rows[1]["every shape answered once s"] == "2.97"  # repeat 1: 2 s and 1 s, x 0.99
    assert rows[2]["every shape answered once s"] == "0.30"  # the median of 0.300 and 0.303
    assert rows[1]["graphs compiled"] == "1" and rows[0]["compile s"] == ""
    eager_only = shapesmod.models(View([eager]))[0]
    assert shape_starts.shapes_table(eager_only) is None  # nothing compiled: no start to tell apart


def test_regional_adds_a_setting_with_each_repeated_block_compiled_where_nothing_marked_would_miss_it():
    from compilebench.core.spec import asked

    spec = asked(models=("vit",), shapes=True, batch_sizes=(1, 2), dynamic_settings=("mark", "false"), regional=True)
    settings = spec.shape_settings()
    assert [shapesmod.setting_name(v) for v in settings] == ["no compile", "mark_dynamic", "dynamic=False",
                                                             "dynamic=False, regions"]
    from compilebench.run import refusals

    with pytest.raises(UserError, match="--regional: gpt2 generates text"):
        refusals.check_variants(asked(models=("gpt2",), shapes=True, batch_sizes=(1, 2), regional=True),
                                {"gpt2": compilebench.zoo.get("gpt2")})


def test_the_best_setting_for_the_mix_is_named_with_its_verdict_and_one_that_never_settles_is_not():
    first = {"b1": 0.01, "b4": 0.01}
    eager = _served_result(Variant(), first, {"b1": 10.0, "b4": 40.0})
    auto = _served_result(Variant("default"), {"b1": 5.0, "b4": 0.01}, {"b1": 5.0, "b4": 20.0})
    restless = _served_result(Variant("default", dynamic=False), {"b1": 1.0, "b4": 1.0}, {"b1": 4.0, "b4": 16.0}, second=1)
    view = View([eager, auto, restless], requests=10_000)
    (m,) = shapesmod.models(view)
    pick, speedup, why = shapesmod.best(view, m)
    assert pick.name == "automatic dynamic" and speedup.verdict == "faster" and "faster" in why
    summary = shapesmod.summary_table(view, m).records()
    assert summary[2]["settles"] == "no: 2 compile(s) in the second pass"
    for rep in eager.repeats:
        rep.peak_mem_bytes = 3 * 2**30
    eager.derive()
    assert shapesmod.summary_table(view, m).records()[0]["peak memory MiB"] == "3,072"  # 3,221 under "MB"
    assert "Best for this mix: **automatic dynamic**" in shapesmod.summary_table(view, m).notes[0]
    # over 100 requests the 5 s compile has not paid off: no compile is best
    small = View([eager, auto, restless], requests=100)
    (m,) = shapesmod.models(small)
    assert shapesmod.best(small, m)[0].name == "no compile"
    # and when it does, with the interval between its processes' own (each compiled cold, each 1% apart here)
    assert shapesmod.summary_table(small, m).records()[1]["catches up after (requests)"] == "402 [401-403]"


def test_a_report_of_shapes_results_prints_their_summary(tmp_path, main_here):
    """`compilebench report` of a file that only served shapes printed nothing but where it wrote the files: the
    shapes results are in no latency table. It prints each model's summary, as `compilebench shapes` does."""
    from fakeresults import fill

    eager = _served_result(Variant(), {"b1": 0.01, "b4": 0.01}, {"b1": 10.0, "b4": 40.0})
    auto = _served_result(Variant("default"), {"b1": 5.0, "b4": 0.01}, {"b1": 5.0, "b4": 20.0})
    fill(str(tmp_path / "s.db"), [eager, auto])
    code, out, err = main_here("report", "s.db", "--format", "md")
    assert code == 0, err
    assert "### Shapes: Image Classification/ResNet" in out and "| automatic dynamic |" in out


def test_when_a_setting_catches_up_carries_the_spread_of_its_processes_own_compiles():
    """Each process of a shapes run compiles cold: one compiling 3 s, one 5 s, one 8 s catch up with no compile
    after about 300, 500 and 800 requests, and the median's 500 alone read surer than that."""
    eager = _served_result(Variant(), {"b1": 0.01, "b4": 0.01}, {"b1": 10.0, "b4": 40.0})
    auto = _served_result(Variant("default"), {"b1": 5.0, "b4": 0.01}, {"b1": 5.0, "b4": 20.0})
    for rep, first in zip(auto.repeats, (3.0, 5.0, 8.0)):
        rep.shapes.per_shape["b1"].first_call_s = first
    view = View([eager, auto], requests=100)
    (m,) = shapesmod.models(view)
    s = next(x for x in m.settings if x.name == "automatic dynamic")
    per = [traffic.break_even(p, e, m.mix, 100) for p, e in zip(s.processes, m.eager.processes)]
    _, low, high = stats.estimate(per)
    said = shapesmod.summary_table(view, m).records()[1]["catches up after (requests)"]
    assert said == f"{shapesmod.break_even(m, s, 100):,} [{math.floor(low):,}-{math.ceil(high):,}]"
    assert low < 300 and high > 800  # three processes: the interval is wider than their range
    from compilebench.report import flat

    (row, *_) = [r for r in flat.shape_rows(view) if r["setting"] == "automatic dynamic"]
    assert (row["catches_up_ci95_low"], row["catches_up_ci95_high"]) == (math.floor(low), math.ceil(high))


def test_a_shape_left_undecided_says_its_reach_beside_its_ratio():
    """No undecided note speaks for one shape's steady time against no compile's: its cell says what it could see."""
    eager = _served_result(Variant(), {"b1": 0.01, "b4": 0.01}, {"b1": 10.0, "b4": 40.0})
    auto = _served_result(Variant("default"), {"b1": 5.0, "b4": 0.01}, {"b1": 5.0, "b4": 39.0})
    for rep, f in zip(auto.repeats, (0.9, 1.0, 1.12)):  # its batch 4 wanders between processes: 1.03x, undecided
        rep.shapes.per_shape["b4"].samples_ms = [39.0 * f * g for g in (0.99, 1.0, 1.01)]
    auto.derive()
    view = View([eager, auto])
    (m,) = shapesmod.models(view)
    rows = shapesmod.setting_table(view, m, m.settings[1]).records()
    b4 = shapesmod.shape_versus(view, m, m.settings[1], "b4")
    assert b4.verdict == "inconclusive" and b4.reach > 0.05
    said = f"{b4.value:.2f}x (inconclusive, ±{b4.reach:.0%} reach)"
    assert [r["vs no compile"] for r in rows] == ["2.00x (faster)", said]


def test_bad_shapes_input_is_one_line_and_exit_2(main_here):
    base = ["shapes", "--model", "resnet-50", "--tiny", "--isolation", "inline"]
    for args, words in [
        (["--batch-size", "1", "2", "--dynamic", "sometimes"], "--dynamic setting"),
        (["--batch-size", "4"], "one shape"),
        (["--batch-size", "1", "8", "--pad-to", "4"], "larger than every bucket"),
        (["--batch-size", "1", "2", "--mix", "3:50"], "--mix"),
        (["--batch-size", "1", "2", "--image-size", "800"], "--image-size"),
        (["--batch-size", "1", "2", "--interleave"], "--interleave"),
        (["--batch-size", "1", "2", "--prompt-len", "8", "16"], "--prompt-len is for text-generation"),
        (["--batch-size", "1", "2", "--requests", "0"], "--requests"),
        (["--batch-size", "1", "2", "--mode", "aot-inductor"], "unknown --mode 'aot-inductor'"),
    ]:
        code, out, err = main_here(*base, *args, "--db", "r.db")
        assert code == 2 and words in err and len(err.strip().splitlines()) == 1, (args, err)
        assert not os.path.exists("r.db")


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_the_command_serves_stores_resumes_and_reports_shapes(main_here, tmp_path):
    args = ["shapes", "--model", "resnet-50", "--tiny", "--batch-size", "1", "--image-size", "320x240", "640x640",
            "--dynamic", "false", "--backend", "eager", "--repeats", "2", "--iters", "2", "--isolation", "inline",
            "--db", "r.db", "--quiet"]
    code, out, err = main_here(*args)
    assert code == 0, err
    assert "### Shapes: Image Classification/ResNet" in out and "dynamic=False, backend=eager" in out
    rows = json.load(open(tmp_path / "report" / "shapes.json"))
    assert [r["shape"] for r in rows] == ["b1:320x240", "b1:640x640"] * 2
    assert {r["image_size"] for r in rows} == {"320x240", "640x640"}
    report = open(tmp_path / "report" / "report.md").read()
    assert "## Shapes" in report and "Time to serve the mix" in report
    assert "Pass rate of the suite" not in report  # no guide table's summary (a busy machine's flags may be one)
    held = stored(tmp_path / "r.db")
    assert {rep["compile_cache"] for r in held for rep in r["repeats"]} == {"cold"}  # every repeat compiles cold
    code, out, err = main_here(*args)
    assert code == 0 and "0 repeat(s) measured" in err and "4 stored earlier were kept" in err
    code, out, err = main_here("report", "r.db", "--mix", "320x240:3,640x640:1", "--requests", "100")
    assert code == 0, err
    assert "batch 1, 320x240 75%" in open(tmp_path / "report" / "report.md").read()
    code, out, err = main_here("report", "r.db", "--mix", "2:1")
    assert code == 2 and "--mix" in err


@pytest.mark.slow
def test_a_causal_lm_serves_prompt_lengths_with_mark_dynamic_on_the_sequence_and_padding(main_here, tmp_path):
    code, out, err = main_here("shapes", "--model", "gpt2", "--tiny", "--prompt-len", "8", "12", "16", "--new-tokens",
                               "3", "--dynamic", "mark", "--pad-to", "16", "--backend", "eager", "--repeats", "1",
                               "--iters", "2", "--isolation", "inline", "--db", "r.db", "--quiet")
    assert code == 0, err
    rows = json.load(open(tmp_path / "report" / "shapes.json"))
    mark = [r for r in rows if r["setting"].startswith("mark_dynamic")]
    assert [r["prompt_len"] for r in mark] == [8, 12, 16]
    assert mark[1]["graphs_compiled"] == 0 and mark[2]["graphs_compiled"] == 0  # one prefill graph for every length
    padded = [r for r in rows if r["setting"].startswith("pad to 16")]
    assert [r["served_as"] for r in padded] == ["b1:p16", "b1:p16", None]
    assert all(r["correct"] for r in mark + padded) and all(r["settles"] for r in rows)


def test_shapes_compiles_every_setting_in_the_mode_asked_and_the_report_names_it(main_here):
    # reduce-overhead under shapes is how a GPU server records a CUDA graph per shape: the mode must reach every
    # compiled setting (padded included), key them apart from default's, and be said in each setting's name.
    spec = compilebench.core.spec.asked(models=("resnet-50",), batch_sizes=(1, 2), shapes=True,
                                        dynamic_settings=("auto", "mark"), pad_to=(2,),
                                        variants=compilebench.core.spec.shape_variants("reduce-overhead"))
    cases = spec.cases()
    assert [c.variant.mode for c in cases] == ["eager"] + ["reduce-overhead"] * 3
    assert [shapesmod.setting_name(c.variant) for c in cases] == [
        "no compile", "automatic dynamic, reduce-overhead", "mark_dynamic, reduce-overhead",
        "pad to 2 (dynamic=False), reduce-overhead"]
    default = RunSpec(models=("resnet-50",), batch_sizes=(1, 2), shapes=True, dynamic_settings=("auto", "mark"),
                      pad_to=(2,)).cases()
    assert not {c.key() for c in cases[1:]} & {c.key() for c in default}
    assert shapesmod.setting_name(default[1].variant) == "automatic dynamic"


def test_shapes_cases_are_keyed_apart_from_run_cases_and_old_keys_do_not_change():
    spec = RunSpec(models=("resnet-50",), batch_sizes=(1, 2), shapes=True, dynamic_settings=("auto", "mark"), pad_to=(2,))
    cases = spec.cases()
    assert [c.variant.label for c in cases] == ["no compile", "compile", "compile (mark dynamic)",
                                                "compile (static, pad to 2)"]
    assert len({c.key() for c in cases}) == 4 and all(c.shapes == ("b1", "b2") and c.batch_size == 2 for c in cases)
    plain = Case("resnet-50", 1, Variant("default"), device="cpu")
    assert "shapes" not in plain.key() and "mark_dynamic" not in plain.key() and "pad_to" not in plain.key()
    assert Variant("eager", mark_dynamic=True, pad_to=(4,)) == Variant()  # eager has no compile settings


@pytest.mark.slow
def test_worker_processes_compile_every_repeat_cold_and_pad_batch_3_to_4(tmp_path):
    """Dynamo's graphs per shape in fresh workers (aot_eager: what is counted is dynamo's, not inductor's code; an
    inductor compile in a worker is the end-to-end test's)."""
    p = run_cli("shapes", "--model", "resnet-50", "--tiny", "--batch-size", "1", "3", "--dynamic", "false", "--pad-to",
                "4", "--repeats", "2", "--iters", "3", "--backend", "aot_eager", "--db", "r.db", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    held = {r["case"]["variant"]["pad_to"] and "pad" or r["case"]["variant"]["mode"]: r for r in stored(tmp_path / "r.db")}
    static, padded = held["default"], held["pad"]
    for rep in static["repeats"]:  # a fresh process and an empty compiler state each: the same two cold compiles
        assert rep["compile_cache"] == "cold" and rep["compile_cache_hits"] == 0
        assert [s["compiles"] for s in rep["shapes"]["per_shape"].values()] == [1, 1]
        assert all(s["second_compiles"] == 0 for s in rep["shapes"]["per_shape"].values())
    per = padded["shapes"]["per_shape"]
    assert per["b3"]["served_as"] == "b4" and per["b3"]["compiles"] == 0 and per["b3"]["problems"] == []
    assert padded["status"] == "ok" and "pad to 4 (dynamic=False)" in p.stdout


def test_a_shapes_loop_timed_by_cuda_events_that_miss_the_wall_clock_is_flagged():
    """On a GPU each shape's pipelined loop is held against its wall time, as a case's is (the events on another
    stream than the model's would read near zero): a fake measurement, since no GPU is here."""
    from compilebench.measure import recording, timing, warmup

    m = timing.Measurement(0, warmup.WarmUp(0, 0, warmup.FIXED), 10, 1, [1_000] * 10, 20_000, False, 0)
    ratio = recording.clock_check(m, timing.CudaClock("cuda:0"), sync_each_call=False)
    record, flags = serving._shape_record(m, {"compiles": 0}, traffic.Shape(2), Variant("default"), ratio)
    assert record.samples_over_wall == 0.5 and "clock" in flags
    fine = timing.Measurement(0, warmup.WarmUp(0, 0, warmup.FIXED), 10, 1, [1_000] * 10, 10_100, False, 0)
    ratio = recording.clock_check(fine, timing.CudaClock("cuda:0"), sync_each_call=False)
    assert "clock" not in serving._shape_record(fine, {}, traffic.Shape(2), Variant("default"), ratio)[1]
    assert recording.clock_check(m, timing.HostClock(), sync_each_call=False) is None
