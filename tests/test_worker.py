"""run_case and the executors, producing every status for real (fault models from plugins/compilebench_faults.py).
Compiled cases use dynamo's `eager` backend: the same capture, recompile and break machinery as inductor,
without tens of seconds of C++ compilation per test."""

import pytest

from compilebench.executors import InlineExecutor, ProcessExecutor
from compilebench.spec import Case, TimingPolicy, Variant
from compilebench.worker import run_case

FAST = TimingPolicy(iters=5, warmup=2)


def case(model, mode="eager", backend="eager", **kw):
    return Case(model, kw.pop("batch_size", 1), Variant(mode, backend=backend, **kw), device="cpu", model_size="tiny")


def test_a_tiny_vit_compiles_and_matches_eager_inline():
    r = run_case(case("vit", "default"), FAST, isolation="inline")
    assert r.status == "ok", r.traceback
    assert r.label == "Image Classification/ViT"
    assert len(r.samples_ms) == 5 and r.stats["n"] == 5 and r.stats["mean"] > 0
    assert r.first_call_s > 0 and r.compile_s > 0
    assert r.graphs == 1 and r.graph_breaks == 0 and r.recompiles_in_timed_loop == 0
    assert r.max_abs_err == 0.0  # the eager backend runs the captured graph op for op
    assert r.env["torch"] and r.machine_id and r.clock == "perf_counter"
    assert r.peak_mem_kind == "host_max_rss" and r.peak_mem_bytes > 0


def test_eager_case_times_the_first_call_apart():
    r = run_case(case("resnet-50", batch_size=2), FAST, isolation="inline")
    assert r.status == "ok", r.traceback
    assert r.first_call_s is not None and len(r.samples_ms) == 5
    assert r.compile_s is None and r.graphs is None


def test_cuda_out_of_memory_is_an_oom_result():
    r = run_case(case("fault-oom"), FAST, isolation="inline")
    assert r.status == "oom"
    assert "OutOfMemoryError" in r.message and r.phase == "first call"


def test_host_out_of_memory_is_an_oom_result():
    assert run_case(case("fault-host-oom"), FAST, isolation="inline").status == "oom"


def test_a_raising_compile_is_an_error_with_its_traceback():
    r = run_case(case("fault-ok", "default", backend="test_raise"), FAST, isolation="inline")
    assert r.status == "error"
    assert "injected compile failure" in r.message and "\n" not in r.message
    assert "injected compile failure" in r.traceback and "Traceback" in r.traceback
    assert r.phase == "first call"


def test_a_recompile_inside_the_timed_loop_voids_the_result():
    r = run_case(case("fault-recompile", "default"), FAST, isolation="inline")
    assert r.status == "invalid", r.traceback
    assert r.recompiles_in_timed_loop == 1
    assert "recompile" in r.message


def test_a_compiled_model_that_differs_from_eager_is_kept_and_marked_mismatch():
    r = run_case(case("fault-ok", "default", backend="test_perturb"), FAST, isolation="inline")
    assert r.status == "mismatch", r.traceback
    assert r.max_abs_err == pytest.approx(1.0) and r.stats["n"] == FAST.iters  # measured and kept
    assert r.message.startswith("compiled output differs from eager: max relative error")
    assert "allowed for float32" in r.message


def test_a_graph_break_is_counted_with_its_reason_and_fullgraph_makes_it_an_error():
    r = run_case(case("fault-break", "default"), FAST, isolation="inline")
    assert r.status == "ok", r.traceback
    assert r.graph_breaks == 1 and r.graphs >= 1
    assert len(r.break_reasons) == 1 and "Tensor.item()" in r.break_reasons[0]
    r = run_case(case("fault-break", "default", fullgraph=True), FAST, isolation="inline")
    assert r.status == "error" and r.phase == "first call"
    assert r.message.startswith("fullgraph=True could not capture the model in one graph: "), r.message
    assert "data-dependent" in r.message


def test_an_unknown_model_inside_a_worker_is_an_error_result_not_a_crash():
    r = run_case(case("no-such-model"), FAST, isolation="inline")
    assert r.status == "error" and "unknown model" in r.message


def test_inline_executor_relays_phases():
    phases = []
    r = InlineExecutor().run(case("fault-ok"), FAST, phases.append)
    assert r.status == "ok" and r.isolation == "inline"
    assert phases == ["build", "first call", "warm-up", "timing", "counting FLOPs"]


def test_process_executor_returns_the_workers_result():
    phases = []
    r = ProcessExecutor(timeout_s=300).run(case("fault-ok", "default"), FAST, phases.append)
    assert r.status == "ok", r.traceback
    assert r.isolation == "process" and len(r.samples_ms) == 5
    assert phases == ["build", "eager reference", "first call", "warm-up", "timing", "check"]


def test_a_worker_that_kills_itself_is_a_crashed_result_naming_the_signal():
    r = ProcessExecutor(timeout_s=300).run(case("fault-crash"), FAST, lambda p: None)
    assert r.status == "crashed"
    assert "SIGKILL" in r.message and r.phase == "first call"


def test_a_hung_case_is_killed_at_the_timeout():
    r = ProcessExecutor(timeout_s=15).run(case("fault-hang"), FAST, lambda p: None)
    assert r.status == "timeout"
    assert r.phase == "first call" and "15 s" in r.message


@pytest.mark.parametrize("settings", [
    {"dtype": "bfloat16"},
    {"dtype": "float16"},
    {"dtype": "bfloat16", "autocast": True},
    {"channels_last": True},
    {"dtype": "bfloat16", "channels_last": True, "tf32": True},
], ids=str)
def test_dtype_and_memory_format_variants_run_and_check_within_their_tolerance(settings):
    c = Case("vit", 1, Variant("default", backend="eager"), device="cpu", model_size="tiny", **settings)
    r = run_case(c, FAST, isolation="inline")
    assert r.status == "ok", (r.message, r.traceback)
    assert r.agreement == {"top1": 1.0} and r.max_rel_err <= 5e-2
    assert r.compile_cache == "cold" and r.case == c


def test_the_model_and_inputs_take_the_case_dtype_and_memory_format():
    import torch

    from compilebench import zoo
    from compilebench.worker import _prepare

    c = Case("segformer", 1, Variant("eager"), device="cpu", model_size="tiny", dtype="bfloat16", channels_last=True)
    model, inputs = _prepare(zoo.get("segformer"), c)
    assert next(model.parameters()).dtype == torch.bfloat16 and inputs["pixel_values"].dtype == torch.bfloat16
    assert inputs["pixel_values"].is_contiguous(memory_format=torch.channels_last)
    c = Case("segformer", 1, Variant("eager"), device="cpu", model_size="tiny", dtype="bfloat16", autocast=True)
    model, inputs = _prepare(zoo.get("segformer"), c)
    assert next(model.parameters()).dtype == torch.float32  # autocast leaves the model alone


def test_tf32_is_set_for_the_case_recorded_and_put_back():
    import torch

    before = torch.get_float32_matmul_precision()
    r = run_case(Case("fault-ok", 1, Variant("eager"), device="cpu", model_size="tiny", tf32=True), FAST, isolation="inline")
    assert r.status == "ok" and r.env["float32_matmul_precision"] == "high"
    assert torch.get_float32_matmul_precision() == before


def test_attention_implementation_is_chosen_where_the_model_has_one():
    for attn in ("eager", "sdpa"):
        r = run_case(Case("vit", 1, Variant("eager"), device="cpu", model_size="tiny", attn=attn), FAST, isolation="inline")
        assert r.status == "ok", r.message
    r = run_case(Case("fault-ok", 1, Variant("eager"), device="cpu", model_size="tiny", attn="sdpa"), FAST, isolation="inline")
    assert r.status == "error" and "fault-ok has no attention implementation to choose" in r.message


@pytest.mark.slow
def test_a_warm_compile_cache_is_read_from_disk_and_a_cold_one_is_not():
    cold = run_case(case("fault-ok", "default", backend="inductor"), FAST, isolation="inline")
    warm = run_case(Case("fault-ok", 1, Variant("default"), device="cpu", model_size="tiny", compile_cache="warm"), FAST,
                    isolation="inline")
    assert cold.status == warm.status == "ok", (cold.message, warm.message)
    assert (cold.compile_cache, cold.compile_cache_hits) == ("cold", 0)
    assert warm.compile_cache == "warm" and warm.compile_cache_hits >= 1


def test_interleave_measures_the_variants_of_a_model_together_in_one_worker():
    cases = [Case("fault-ok", 1, Variant(m, backend="eager"), device="cpu", model_size="tiny", interleave=True)
             for m in ("eager", "default")]
    results = ProcessExecutor(timeout_s=120).run_group(cases, FAST, lambda phase: None)
    assert [r.status for r in results] == ["ok", "ok"], [r.message for r in results]
    assert [r.case for r in results] == cases and [r.stats["n"] for r in results] == [FAST.iters] * 2
    assert results[1].graphs == 1 and results[1].max_abs_err == 0.0 and results[0].compile_s is None
    crashed = ProcessExecutor(timeout_s=120).run_group(
        [Case("fault-crash", 1, Variant(m, backend="eager"), device="cpu", interleave=True) for m in ("eager", "default")],
        FAST, lambda phase: None)
    assert [r.status for r in crashed] == ["crashed", "crashed"]


def test_flops_of_one_forward_are_counted_for_eager_and_compiled():
    # Conv2d(3, 4, 3) on 1x3x8x8: 4x6x6 outputs, each 3x3x3 multiply-adds: 2 * 144 * 27 FLOPs
    for mode in ("eager", "default"):
        r = run_case(case("fault-ok", mode), FAST, isolation="inline")
        assert r.status == "ok" and r.flops == 2 * 144 * 27, (mode, r.flops, r.message)
