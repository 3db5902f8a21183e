"""--quantize (issue 52): torchao's quantizations crossed with the variants beside one eager float baseline, refused
before anything runs where the device or the model cannot take them, measured with the quality they kept against
the float model and the weights as stored, and reported in a table per model."""

from __future__ import annotations

import importlib.util

import fakeresults as fr
import pytest

import compilebench
from compilebench import kinds
from compilebench.core.environment import Environment
from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.spec import ModelKind, asked
from compilebench.measure import correctness, quantization
from compilebench.report import quantization as quantreport, tables
from compilebench.report.view import View
from compilebench.run import dispatch, refusals


def test_each_quantization_crosses_every_variant_beside_one_eager_float_baseline():
    spec = asked(models=("vit",), variants=("eager", "default"), quantizations=("int8-weight-only", "int8-dynamic"),
                 device="cpu")
    assert [(c.variant.name, c.quantize) for c in spec.cases()] == [
        ("eager", "none"), ("eager", "int8-weight-only"), ("default", "int8-weight-only"),
        ("eager", "int8-dynamic"), ("default", "int8-dynamic")]
    with_none = asked(models=("vit",), quantizations=("none", "int8-dynamic"), device="cpu")
    assert [(c.variant.name, c.quantize) for c in with_none.cases()] == [
        ("eager", "none"), ("default", "none"), ("eager", "int8-dynamic"), ("default", "int8-dynamic")]
    plain = asked(models=("vit",), device="cpu")
    assert plain.cases()[0].key() == with_none.cases()[0].key()  # a run without --quantize resumes as before
    suite = asked(suite="quantized", device="cpu")  # a suite may name its quantizations; --quantize overrides them
    assert suite.quantizations == ("none", "int8-weight-only", "int8-dynamic") and "smollm2-135m" in suite.models
    assert asked(suite="quantized", quantizations="int8-dynamic", device="cpu").quantizations == ("int8-dynamic",)
    text = asked(models=("gpt2",), variants=("eager",), quantize="int8-dynamic", device="cpu")
    assert [c.quantize for c in text.cases({"gpt2": ModelKind("generation", 8)})] == ["none", "int8-dynamic"]


@pytest.mark.parametrize("given, said", [
    ({"quantizations": ("int3",)}, "unknown quantization 'int3'"),
    ({"quantizations": ("int8-dynamic",), "shapes": True, "batch_sizes": (1, 2)}, "--quantize is measured by"),
])
def test_a_bad_quantization_is_refused_in_words(given, said):
    with pytest.raises((UserError, UnknownChoice), match=said):
        asked(models=("vit",), device="cpu", **given)


@pytest.mark.parametrize("q, device, capability, said", [
    ("int4-weight-only", "cpu", None, "needs a CUDA device"),
    ("float8-dynamic", "cpu", None, "needs a CUDA device of compute capability 8.9"),
    ("float8-dynamic", "cuda:0", "8.0", "this GPU has 8.0"),
    ("float8-dynamic", "cuda:0", "9.0", None),
    ("float8-dynamic", "cuda", None, None),  # not known yet: the worker finds out
    ("int8-dynamic", "cpu", None, None),
])
def test_a_quantization_the_device_cannot_run_is_refused(q, device, capability, said):
    why = kinds.quantization(q).refusal(kinds.Asked(device=device, capability=capability))
    assert (why is None) if said is None else said in why
    target = dispatch.Target("cuda:0", "m", Environment(device=device, compute_capability=capability))
    spec = asked(models=("vit",), quantizations=(q,), device=device.split(":")[0])
    if said:
        with pytest.raises(UserError, match=said):
            refusals.check_devices([q], spec, [target])


def test_the_command_line_refuses_before_anything_runs(tmp_path, main_here, monkeypatch):
    code, _, err = main_here("run", "--model", "resnet-50", "--quantize", "int4-weight-only", "--device", "cpu")
    assert code == 2 and err.count("\n") == 1 and "int4-weight-only needs a CUDA device" in err
    code, _, err = main_here("run", "--model", "fault-ok", "--quantize", "int8-dynamic", "--device", "cpu")
    assert code == 2 and "fault-ok has no linear layer to quantize" in err
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torchao" else real(name, *a))
    code, _, err = main_here("run", "--model", "resnet-50", "--quantize", "int8-dynamic", "--device", "cpu")
    assert code == 2 and "pip install compilebench[quant]" in err
    assert not (tmp_path / "compilebench-results").exists()  # nothing written


def test_activations_quantized_on_the_fly_are_checked_at_their_own_tolerance():
    assert correctness.math_of("float32", False, "int8-dynamic") == "int8"
    assert correctness.math_of("float32", True, "int8-weight-only") == "tf32"  # weights alike in both: the dtype's
    assert correctness.REL_TOLERANCE["int8"] > correctness.REL_TOLERANCE["float32"]


def test_quality_is_read_in_the_tasks_terms():
    import torch

    float_out = {"logits": torch.tensor([[5.0, 4.0, 3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]])}
    quantized = {"logits": torch.tensor([[4.0, 5.0, 3.0, 2.0, 1.0, 0.0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]])}
    assert correctness.quality(float_out, quantized) == {"top1": 0.5, "top5": 1.0}
    r = fr.result("vit", 1, "eager", 1.0, env=fr.CPU, quantize="int8-dynamic")
    for rep in r.repeats:
        rep.quality = {"top1": 0.9996, "top5": 1.0}
    r.derive()
    assert quantreport.quality_words(r) == "top1 99.9%, top5 100%"  # never rounded up to every prediction
    tokens = torch.tensor([[1, 2, 3, 4]])
    assert correctness.generation_quality(tokens, torch.tensor([[1, 2, 9, 9]])) == {"tokens": 0.5, "first_divergence": 3}
    assert correctness.generation_quality(tokens, tokens.clone()) == {"tokens": 1.0}


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_a_quantized_model_is_measured_with_its_quality_and_its_weights_as_stored(tmp_path):
    results = compilebench.benchmark("vit", model_size="tiny", variants=("eager", "default"), backend="eager",
                                     quantizations=("int8-weight-only",), repeats=1, iters=3, warmup=0, device="cpu",
                                     db=str(tmp_path / "r.db"))
    by = {(r.case.variant.name, r.case.quantize): r for r in results.view.results}
    assert set(by) == {("eager", "none"), ("eager", "int8-weight-only"), ("default", "int8-weight-only")}
    assert all(r.status == "ok" for r in by.values()), [r.message for r in by.values()]
    float_, eager, compiled = by["eager", "none"], by["eager", "int8-weight-only"], by["default", "int8-weight-only"]
    assert set(eager.quality) == {"top1", "top5"} and set(compiled.quality) == {"top1", "top5"}
    assert not float_.quality  # nothing to read it against
    assert eager.weight_bytes < 0.8 * float_.weight_bytes  # int8 linear weights: a quarter of float32's
    assert compiled.max_rel_err is not None  # still checked against eager of the same quantization
    (table,) = quantreport.tables(results.view)
    rows = {r["quantization"]: r for r in table.records()}
    assert rows["int8-weight-only"]["eager quality"] == "top1 100%, top5 100%"
    again = compilebench.benchmark("vit", model_size="tiny", variants=("eager", "default"), backend="eager",
                                   quantizations=("int8-weight-only",), repeats=1, iters=3, warmup=0, device="cpu",
                                   db=str(tmp_path / "r.db"))  # the same run again resumes: nothing measured
    processes = lambda rs: sorted(rep.process for r in rs.view.results for rep in r.repeats)  # noqa: E731
    assert processes(again) == processes(results)


def test_the_report_sets_each_quantization_beside_the_float_baseline():
    def res(mode, ms, q="none", quality=None):
        r = fr.result("vit", 1, mode, ms, env=fr.CPU, quantize=q)
        for rep in r.repeats:
            rep.quality, rep.weight_bytes = dict(quality or {}), 4 * 2**20 if q == "none" else 2**20
        r.derive()
        return r

    results = [res("eager", 10.0), res("default", 8.0), res("eager", 6.0, "int8-dynamic", {"top1": 0.98, "top5": 1.0}),
               res("default", 4.0, "int8-dynamic", {"top1": 0.97, "top5": 1.0})]
    view = View(results)
    (table,) = quantreport.tables(view)
    rows = {r["quantization"]: r for r in table.records()}
    assert list(rows) == ["none", "int8-dynamic"]
    q = rows["int8-dynamic"]
    assert q["eager ms"] == "6.000" and q["eager vs float"].startswith("1.667x") and q["weights MiB"] == "1"
    assert q["compile ms"] == "4.000" and q["compile vs eager float"].startswith("2.500x")
    assert q["compile vs eager, same quantization"].startswith("1.500x")
    assert (q["eager quality"], q["compile quality"]) == ("top1 98%, top5 100%", "top1 97%, top5 100%")
    assert rows["none"]["compile vs eager, same quantization"] == ""
    # the recommendation reads a quantized pick against eager float, and says what it kept
    (pick,) = tables.recommendation_table(view).records()
    assert pick["recommended"] == "compile, int8-dynamic" and pick["why"] == "quantized int8-dynamic: top1 97%, top5 100%"
    assert quantreport.tables(View(results[:2])) == []


def test_check_and_compare_hold_each_quantized_case_against_its_own(tmp_path):
    """A quantized case is matched with the same quantization in the other file, never with float; its quality
    falling beyond --max-quality-drop fails the gate by value."""
    from compilebench.report import check, compare

    def side(int8_ms, top1):
        out = []
        for mode, ms, q in (("eager", 10.0, "none"), ("eager", 8.0, "int8-dynamic"), ("default", int8_ms, "int8-dynamic")):
            r = fr.result("vit", 1, mode, ms, env=fr.CPU, quantize=q, processes=[ms / 1.001, ms, ms * 1.001])
            if q != "none":
                for rep in r.repeats:
                    rep.quality = {"top1": top1, "top5": 1.0}
            r.derive()
            out.append(r)
        return out

    lines, _ = check.check(side(4.0, 0.99), side(6.0, 0.95), drift=check.Drift(0.02, "given"))
    bad = {(l.label, l.metric) for l in lines if l.regression}
    assert bad == {("Image Classification/ViT b1 compile, int8-dynamic", "latency ms"),
                   ("Image Classification/ViT b1 compile, int8-dynamic", "speed-up over eager"),
                   ("Image Classification/ViT b1 compile, int8-dynamic", "quality top1"),
                   ("Image Classification/ViT b1 no compile, int8-dynamic", "quality top1")}, bad
    assert not any(l.regression for l in check.check(side(4.0, 0.99), side(4.0, 0.985))[0])  # within one point
    rows = compare.compare(side(4.0, 0.99), side(4.0, 0.99), "a", "b").records()
    assert sorted(r["variant"] for r in rows) == ["compile, int8-dynamic", "no compile", "no compile, int8-dynamic"]
    assert all(r["A ms"] == r["B ms"] != "" for r in rows)  # each matched with its own quantization


def test_torchaos_import_noise_on_a_cpu_build_is_dropped_and_every_other_line_kept():
    import logging

    import torch  # imported by then: torchao imports it first

    from compilebench.core import quiet

    assert torch.version.cuda is None  # this project's CPU build

    def kept(name, msg):
        return quiet._keep(logging.LogRecord(name, logging.WARNING, __file__, 1, msg, (), None))

    assert not kept("torchao", "Failed to load /x/torchao/_C_mxfp8.so: Could not load this library")  # torch+cpu
    assert not kept("torch.utils._pytree", "<enum 'K'> is an Enum subclass and is now natively supported by torch")
    assert kept("torchao", "Skipping import of cpp extensions due to incompatible torch version")
    assert quiet._keep in logging.getLogger("torchao").filters  # installed by the package's import


@pytest.mark.slow
def test_inductor_compiles_a_quantized_model_that_agrees_with_eager_of_the_same_quantization(tmp_path):
    """One real compile of torchao's int8 dynamic quantization (its activations quantized inside the graph)."""
    results = compilebench.benchmark("vit", model_size="tiny", variants=("eager", "default"),
                                     quantizations=("int8-dynamic",), repeats=1, iters=3, warmup=1, device="cpu",
                                     db=str(tmp_path / "r.db"))
    compiled = next(r for r in results.view.results if r.case.variant.compiled)
    assert compiled.status == "ok", compiled.message
    assert compiled.math == "int8" and compiled.max_rel_err <= correctness.REL_TOLERANCE["int8"]
    assert set(compiled.quality) == {"top1", "top5"} and compiled.graphs >= 1


def test_a_decode_step_reads_the_quantized_weights_as_stored():
    """The GB/s of a quantized model's decode step (the roofline view) counts its int8 weights, not float ones."""
    from compilebench import zoo
    from compilebench.diagnostics import bandwidth

    model = zoo.get("smollm2-135m").build("random", "tiny")
    before = bandwidth.decode_bytes(model, 1, 8, 4)
    quantization.apply(model, "int8-weight-only")
    after = bandwidth.decode_bytes(model, 1, 8, 4)
    # the output layer tied to the embedding becomes its own int8 copy: a step reads it whole, the float
    # embedding's looked-up row only
    table = model.get_input_embeddings().weight
    read = sum(bandwidth.stored_bytes(p) for p in {id(p): p for p in model.parameters()}.values() if p is not table)
    assert after["weights"] == read + table.shape[1] * table.element_size()
    assert after["weights"] < 0.4 * before["weights"]


def test_a_shape_the_gpus_int8_matmul_cannot_take_is_unsupported_with_its_reason_not_an_error():
    """On an H200 (torch 2.11, torchao 0.18), int8-dynamic compiled ViT at batch 1 raised from inductor's call of
    torch._int_mm (cuBLAS needs more than 16 rows), wrapped by dynamo: stored as `unsupported`, in words."""
    from compilebench.core.case import Case
    from compilebench.core.repeat import Repeat
    from compilebench.core.variant import Variant
    from compilebench.measure import worker

    case = Case(model="vit", batch_size=1, variant=Variant("default"), device="cuda:0", quantize="int8-dynamic")
    try:
        try:
            raise RuntimeError("self.size(0) needs to be greater than 16, but got 1")
        except RuntimeError as inner:
            raise Exception("BackendCompilerFailed: backend='inductor' raised: RuntimeError") from inner
    except Exception as exc:
        rep = Repeat()
        worker.failed(rep, exc, "first call", case)
    assert rep.status == "unsupported"
    assert "int8-dynamic compiled at batch 1" in rep.message and "torch._int_mm" in rep.message
    assert "pytorch/ao#2376" in rep.message and "gets 1 row(s)" in rep.message
    assert rep.traceback  # the stack is kept
    # the same words from an unquantized case, or another failure of a quantized one, stay an error
    for other, error in ((Case(model="vit", batch_size=1, variant=Variant("default"), device="cuda:0"),
                          RuntimeError("self.size(0) needs to be greater than 16, but got 1")),
                         (case, RuntimeError("CUDA error: an illegal memory access was encountered"))):
        rep = Repeat()
        worker.failed(rep, error, "timing", other)
        assert rep.status == "error"
