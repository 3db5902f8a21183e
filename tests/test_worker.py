"""run_case and the executors, producing every status for real (fault models from plugins/compilebench_faults.py).
Compiled cases use dynamo's `eager` backend: the same capture, recompile and break machinery as inductor,
without tens of seconds of C++ compilation per test."""

import platform
import re

import fakeresults as fr
import pytest

from compilebench.core.case import Case
from compilebench.core.job import Job, TimingPolicy
from compilebench.core.variant import Variant
from compilebench.measure.worker import run_case
from compilebench.run.executors import InlineExecutor, ProcessExecutor

FAST = TimingPolicy(iters=5, warmup=2, min_iters=1, warmup_cap_s=0)  # the warm-up asked for, no more


def case(model, mode="eager", backend="eager", **kw):
    return Case(model, kw.pop("batch_size", 1), Variant(mode, backend=backend, **kw), device="cpu", model_size="tiny")


_EXECUTORS: dict[float, ProcessExecutor] = {}


def executor(timeout_s: float = 300) -> ProcessExecutor:
    """One per timeout for the whole module: its launcher's start (2-3 s of imports) is paid once, and a worker
    that crashes or hangs takes its own process down, never the launcher."""
    if timeout_s not in _EXECUTORS:
        _EXECUTORS[timeout_s] = ProcessExecutor(timeout_s=timeout_s)
    return _EXECUTORS[timeout_s]


def run_in_process(c, policy=FAST, timeout_s=300, phases=None, env=None):
    on_phase = phases.append if phases is not None else (lambda p: None)
    job = fr.job([c], policy)
    (r,) = fr.results_of(job, executor(timeout_s).run(job, env or {}, on_phase))
    return r


def test_a_tiny_vit_compiles_and_matches_eager_inline():
    r = run_case(case("vit", "default"), FAST, isolation="inline")
    assert r.status == "ok", r.repeats[0].traceback
    (rep,) = r.repeats
    assert len(rep.samples_ms) == 5 and r.stats.n == 5 and r.stats.mean > 0 and r.stats.repeats == 1
    assert r.first_call_s > 0 and r.compile_s > 0
    assert r.graphs == 1 and r.graph_breaks == 0 and r.recompiles_in_timed_loop == 0
    assert r.max_abs_err == 0.0  # the eager backend runs the captured graph op for op
    assert r.env.torch and r.env.machine_id and r.repeats[0].clock == "perf_counter"
    assert r.peak_mem_kind == "host_max_rss" and r.peak_mem_bytes > 0


def test_eager_case_times_the_first_call_apart():
    r = run_case(case("resnet-50", batch_size=2), FAST, isolation="inline")
    assert r.status == "ok", r.message
    assert r.first_call_s is not None and len(r.repeats[0].samples_ms) == 5
    assert r.compile_s is None and r.graphs is None
    assert r.repeats[0].warmup_iters == 2 and r.repeats[0].warmup_s > 0


def test_cuda_out_of_memory_is_an_oom_result():
    r = run_case(case("fault-oom"), FAST, isolation="inline")
    assert r.status == "oom"
    assert "OutOfMemoryError" in r.message and r.repeats[0].phase == "first call"


def test_host_out_of_memory_is_an_oom_result():
    assert run_case(case("fault-host-oom"), FAST, isolation="inline").status == "oom"


def test_a_raising_compile_is_an_error_with_its_traceback():
    r = run_case(case("fault-ok", "default", backend="test_raise"), FAST, isolation="inline")
    assert r.status == "error"
    rep = r.repeats[0]
    assert "injected compile failure" in r.message and "\n" not in r.message
    assert "injected compile failure" in rep.traceback and "Traceback" in rep.traceback
    assert rep.phase == "first call"


def test_a_recompile_inside_the_timed_loop_voids_the_result():
    r = run_case(case("fault-recompile", "default"), FAST, isolation="inline")
    assert r.status == "invalid", r.repeats[0].traceback
    assert r.recompiles_in_timed_loop == 1
    assert "recompile" in r.message


def test_a_compiled_model_that_differs_from_eager_is_kept_and_marked_mismatch():
    r = run_case(case("fault-ok", "default", backend="test_perturb"), FAST, isolation="inline")
    assert r.status == "mismatch", r.repeats[0].traceback
    assert r.max_abs_err == pytest.approx(1.0) and r.stats.n == FAST.iters  # measured and kept
    assert r.message.startswith("compiled output differs from eager: max relative error")
    assert "allowed for float32" in r.message


def test_eager_that_differs_from_itself_is_flagged_and_floors_the_compiled_tolerance():
    # fault-jitter's calls alternate between 1.02 x and x: the reference is the first (1.02 x), eager again the
    # second, eager on its input moved by one rounding step the third; with 7 timed calls the checked call is the
    # 14th (x), as far from the reference as eager's own second. The warm-up is fixed (cap 0): an adaptive one adds
    # calls until steady, as many as a loaded machine's timings ask for, and could move the checked call to a 1.02 x
    policy = TimingPolicy(iters=7, warmup=2, min_iters=1, warmup_cap_s=0.0)
    r = run_case(case("fault-jitter", "default"), policy, isolation="inline")
    assert r.status == "ok", r.message  # it was a mismatch at float32's 1e-3
    assert r.eager_self_rel_err == pytest.approx(0.02 / 1.02, rel=1e-4) and r.rel_tolerance == r.eager_self_rel_err
    assert r.max_rel_err == r.eager_self_rel_err  # the compiled output checked differed by that much
    assert "eager-nondeterministic" in r.flags
    steady = run_case(case("fault-ok", "default"), FAST, isolation="inline")
    assert steady.status == "ok" and steady.eager_self_rel_err == 0.0 and steady.rel_tolerance == 1e-3
    assert "eager-nondeterministic" not in steady.flags


def test_a_graph_break_is_counted_with_its_reason_and_fullgraph_makes_it_an_error():
    r = run_case(case("fault-break", "default"), FAST, isolation="inline")
    assert r.status == "ok", r.repeats[0].traceback
    assert r.graph_breaks == 1 and r.graphs >= 1
    assert len(r.break_reasons) == 1 and "Tensor.item()" in r.break_reasons[0]
    r = run_case(case("fault-break", "default", fullgraph=True), FAST, isolation="inline")
    assert r.status == "error" and r.repeats[0].phase == "first call"
    assert r.message.startswith("fullgraph=True could not capture the model in one graph: "), r.message
    assert "data-dependent" in r.message


def test_an_unknown_model_inside_a_worker_is_an_error_result_not_a_crash():
    r = run_case(case("no-such-model"), FAST, isolation="inline")
    assert r.status == "error" and "unknown model" in r.message


def test_inline_executor_relays_phases():
    phases = []
    (r,) = InlineExecutor().run(fr.job([case("fault-ok")], FAST), {}, phases.append)
    assert r.status == "ok"
    assert phases == ["build", "first call", "warm-up", "timing", "counting FLOPs", "check"]  # it compiled nothing


def test_flops_are_not_counted_again_when_a_case_already_has_them():
    phases = []
    (r,) = InlineExecutor().run(fr.job([case("fault-ok")], FAST, count_flops=False), {}, phases.append)
    assert "counting FLOPs" not in phases and r.flops is None


def test_process_executor_returns_the_workers_result():
    phases = []
    r = run_in_process(case("fault-ok", "default"), phases=phases)
    assert r.status == "ok", r.message
    assert len(r.repeats[0].samples_ms) == 5 and r.repeats[0].phases["start"] > 0  # a worker process of its own
    assert phases == ["build", "eager reference", "first call", "warm-up", "timing", "check"]
    # before its first phase (its fork, or its interpreter and imports) and after its last (its result, its exit)
    spent = r.repeats[0].phases
    assert list(spent)[0] == "start" and list(spent)[-1] == "end" and set(phases) <= set(spent)
    assert all(v >= 0 for v in spent.values())
    # its allocator set to keep freed memory before the model was built (measure/allocator.py), and said
    libc, version = platform.libc_ver()
    assert libc != "glibc" or r.repeats[0].environment.malloc == (
        f"glibc {version}: freed memory kept (mmap above 32 MiB, no trim)")


def test_a_worker_that_kills_itself_is_a_crashed_result_naming_the_signal():
    r = run_in_process(case("fault-crash"))
    assert r.status == "crashed"
    assert "SIGKILL" in r.message and r.repeats[0].phase == "first call"


def test_a_crash_keeps_the_crashing_threads_stack_first_whatever_the_extension_modules_loaded():
    """A crash in native code (AOTInductor's packaging died of SIGSEGV on an H200 and an H100) keeps the Python
    stack where it happened. Issue 50: on the GPU image 190 extension modules are loaded, and faulthandler lists them
    after the stacks: the stored tail of the worker's log held that list alone. The dump goes to a file of its own, the thread that crashed
    first, the list as its count."""
    r = run_in_process(case("fault-segfault"))
    assert r.status == "crashed" and r.message == "worker killed by SIGSEGV during first call"
    stack = r.repeats[0].traceback
    fatal, crashed, *others = stack.split("\n\n")
    assert fatal == "Fatal Python error: Segmentation fault"
    assert crashed.startswith("Current thread") and "in _crash_in_a_thread" in crashed
    assert any("in forward" in t for t in others)  # the thread that waited for it, after
    loaded = int(re.search(r"\((\d+) extension modules were loaded\)", stack).group(1))
    assert loaded > 100 and "Extension modules:" not in stack


def test_an_eager_process_that_compiled_a_graph_is_invalid_in_every_timed_unit(main_here):
    """Issue 51: the check existed in the generation and shapes units only; a forward pass of a model that compiles
    part of itself was stored as eager, `ok`. One skeleton (measure/unit.py) holds it for all three."""
    r = run_case(case("fault-compiles"), FAST, isolation="inline")
    assert r.status == "invalid" and r.message == "1 graph(s) compiled while measuring no compile: it was not eager"
    code, _, err = main_here("shapes", "--model", "fault-compiles", "--batch-size", "1", "2", "--dynamic", "false",
                             "--backend", "eager", "--iters", "2", "--repeats", "1", "--device", "cpu", "--isolation",
                             "inline", "--quiet", "--db", "s.db")
    import compilebench

    eager = [x for x in compilebench.load("s.db").view.results if not x.case.variant.compiled]
    assert eager and eager[0].status == "invalid" and "it was not eager" in eager[0].message


@pytest.mark.parametrize("model, settings", [("fault-ok", {}), ("smollm2-135m", {"new_tokens": 2, "prompt_len": 4}),
                                             ("fault-ok", {"shapes": ("b1", "b2")})], ids=["forward", "generation", "shapes"])
def test_a_warm_compile_cache_is_warmed_by_every_repeat_whether_or_not_it_checks(model, settings):
    """--compile-cache warm gives each repeat a fresh folder that the worker warms itself: forward warmed it only
    beside its eager reference, which later repeats (already checked, FLOPs counted) skip, so they compiled cold
    (13.3 s against 0.05 s for the first, no cache hit) and were stored as warm; generation and shapes never did."""
    c = Case(model, 1, Variant("default", backend="eager"), device="cpu", model_size="tiny", compile_cache="warm",
             **settings)
    phases = []
    (r,) = InlineExecutor().run(fr.job([c], FAST, repeat=2, compile_cache="warm", count_flops=False, check=False), {},
                                phases.append)
    assert r.status == "ok", (r.message, r.traceback)
    assert "warming the compile cache" in phases and phases.index("warming the compile cache") < phases.index("first call")


def test_a_hung_case_is_killed_at_the_timeout():
    r = run_in_process(case("fault-hang"), timeout_s=3)
    assert r.status == "timeout"
    assert r.repeats[0].phase == "first call" and "3 s" in r.message


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
    assert r.status == "ok", (r.message, r.repeats[0].traceback)
    assert r.agreement == {"top1": 1.0} and r.max_rel_err <= 5e-2
    assert r.repeats[0].compile_cache == "cold" and r.case == c


def test_the_model_and_inputs_take_the_case_dtype_and_memory_format():
    import torch

    from compilebench import zoo
    from compilebench.measure.forward import prepare as _prepare

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
    assert r.status == "ok" and r.env.float32_matmul_precision == "high"
    assert torch.get_float32_matmul_precision() == before


def test_attention_implementation_is_chosen_where_the_model_has_one():
    for attn in ("eager", "sdpa"):
        r = run_case(Case("vit", 1, Variant("eager"), device="cpu", model_size="tiny", attn=attn), FAST, isolation="inline")
        assert r.status == "ok", r.message
    r = run_case(Case("fault-ok", 1, Variant("eager"), device="cpu", model_size="tiny", attn="sdpa"), FAST, isolation="inline")
    assert r.status == "error" and "fault-ok has no attention implementation to choose" in r.message


@pytest.mark.slow
def test_a_warm_compile_cache_is_read_from_disk(tmp_path):
    # --compile-cache warm: compiled once first, then timed from the on-disk cache. A cold case's first repeat
    # (no hits) and its later ones (hits, from what the first left) are the end-to-end test's (test_cli), which
    # compiles cold anyway: a cold compile here as well cost the slow step 14 s (34 s, now 20).
    from compilebench.measure import compiler_state

    warm = run_in_process(Case("fault-ok", 1, Variant("default"), device="cpu", model_size="tiny", compile_cache="warm"),
                          env=compiler_state.env_for(str(tmp_path / "other")))
    assert warm.status == "ok", warm.message
    assert warm.compile_cache_hits >= 1


def test_a_compile_cache_folder_that_holds_nothing_starts_cold_and_then_is_a_cache_folder(tmp_path):
    """--compile-cache DIR on an empty folder: its first repeat compiles from nothing (a tiny ResNet-50 here: 19.8
    s, its second 2.2 s from what the first left). Both were recorded as the folder's, and the case's compile s was
    their median, 11.0 s, neither a cold compile nor a warm one. The first is now cold."""
    from compilebench.measure import compiler_state

    states, folder = compiler_state.StateFolders(str(tmp_path)), tmp_path / "mine"
    folder.mkdir()
    env, cache, artifacts = compiler_state.for_job(str(folder), states, "case")
    assert (cache, artifacts) == ("cold", None) and env["TORCHINDUCTOR_CACHE_DIR"] == str(folder / "inductor")
    (folder / "inductor" / "entry").write_text("what the first repeat left")
    assert compiler_state.for_job(str(folder), states, "case")[1] == "dir"
    states.close()


@pytest.mark.parametrize("hits, state", [(0, "cold"), (1, "dir")])
def test_a_case_that_found_none_of_its_graphs_in_a_shared_compile_cache_folder_compiled_cold(hits, state):
    """One folder for a run of several models: the second model's first repeat finds the first's files there, none
    of its own graphs (inductor's cache hits: none), and compiles from nothing: cold, as an empty folder's first."""
    from compilebench.core.repeat import Repeat
    from compilebench.measure import compiler, invariants, recording

    rep = Repeat(compile_cache="dir")
    stats = compiler.CompileStats(compile_s=19.8 if state == "cold" else 2.2, graphs=1, cache_hits=hits, graph_breaks=0)
    recording.record_compile(rep, stats, 0, invariants.CudaGraphs(), Case("resnet-50", 1, Variant("default")))
    assert rep.compile_cache == state


def test_inductor_options_go_to_torch_compile_with_only_their_own_modes_table():
    from compilebench.measure.compiler import compile_kwargs

    frozen = compile_kwargs(Variant("default", options=(("freezing", True),)))
    assert frozen == {"backend": "inductor", "fullgraph": False, "dynamic": None, "options": {"freezing": True}}
    tuned = compile_kwargs(Variant("max-autotune-no-cudagraphs", options=(("freezing", True),)))["options"]
    assert tuned["freezing"] is True and tuned["max_autotune"] is True and "triton.cudagraphs" not in tuned
    assert compile_kwargs(Variant("reduce-overhead"))["mode"] == "reduce-overhead"


def test_interleave_measures_the_variants_of_a_model_together_in_one_worker():
    cases = [Case("fault-ok", 1, Variant(m, backend="eager"), device="cpu", model_size="tiny", interleave=True)
             for m in ("eager", "default")]
    job = fr.job(cases, FAST)
    results = fr.results_of(job, executor().run(job, {}, lambda phase: None))
    assert [r.status for r in results] == ["ok", "ok"], [r.message for r in results]
    assert [r.case for r in results] == cases and [r.stats.n for r in results] == [FAST.iters] * 2
    assert results[1].graphs == 1 and results[1].max_abs_err == 0.0 and results[0].compile_s is None
    assert results[0].repeats[0].process == results[1].repeats[0].process  # one process: their repeats pair up
    crashed = executor().run(
        fr.job([Case("fault-crash", 1, Variant(m, backend="eager"), device="cpu", interleave=True)
                for m in ("eager", "default")], FAST), {}, lambda phase: None)
    assert [r.status for r in crashed] == ["crashed", "crashed"]


def test_flops_of_one_forward_are_counted_for_eager_and_compiled():
    # Conv2d(3, 4, 3) on 1x3x8x8: 4x6x6 outputs, each 3x3x3 multiply-adds: 2 * 144 * 27 FLOPs
    for mode in ("eager", "default"):
        r = run_case(case("fault-ok", mode), FAST, isolation="inline")
        assert r.status == "ok" and r.flops == 2 * 144 * 27, (mode, r.flops, r.message)


def test_the_timed_loop_records_its_conditions_and_its_place_in_time():
    r = run_case(case("fault-slow"), TimingPolicy(iters=3, warmup=0, min_iters=1), isolation="inline")
    rep = r.repeats[0]
    assert r.status == "ok" and rep.loop_started_at < rep.loop_ended_at
    assert rep.loop_ended_at - rep.loop_started_at == pytest.approx(rep.loop_wall_s, abs=0.05)
    c = rep.conditions
    assert 0 <= c.other_cpu_share <= 1 and c.loadavg_1m is not None and c.window_s >= 0.6
    assert rep.cpus >= 1


def gen_case(mode, **kw):
    return Case("smollm2-135m", 1, Variant.named(mode, Variant("default", backend=kw.pop("backend", "eager"))), device="cpu",
                model_size="tiny", prompt_len=8, new_tokens=5, **kw)


GEN = TimingPolicy(iters=3, min_iters=1, first_calls=2)


def test_a_generation_case_splits_each_call_into_prefill_and_decoded_tokens():
    r = run_case(gen_case("eager"), GEN, isolation="inline")
    assert r.status == "ok", (r.message, r.repeats[0].traceback)
    rep = r.repeats[0]
    gen = rep.generation
    assert len(rep.samples_ms) == 3 and len(gen.ttft_ms) == 3 and len(gen.token_ms) == 3
    assert all(len(tokens) == 4 for tokens in gen.token_ms)  # 5 new tokens: the first, then 4 decoded
    for total, ttft, tokens in zip(rep.samples_ms, gen.ttft_ms, gen.token_ms):
        assert 0 < ttft < total and ttft + sum(tokens) <= total
    assert [f.graphs for f in gen.first_calls] == [0, 0]
    assert r.generation.ttft.repeats == 1 and r.generation.per_token.mean > 0


def test_a_compiled_generation_compiles_and_matches_eager_greedy_tokens():
    r = run_case(gen_case("default"), GEN, isolation="inline")
    assert r.status == "ok", (r.message, r.repeats[0].traceback)
    assert r.graphs >= 1 and r.compile_s > 0 and r.recompiles_in_timed_loop == 0
    assert r.agreement == {"tokens": 1.0} and r.max_rel_err < 1e-3
    firsts = r.repeats[0].generation.first_calls
    assert firsts[0].graphs >= 1 and firsts[0].compile_s > 0


def test_eager_with_a_static_cache_compiles_nothing_even_where_transformers_would(monkeypatch):
    """transformers' generate() compiles the forward by itself when the cache can be compiled (on GPUs, or on any
    device with compile_config._compile_all_devices). The control: plain generate() under that setting compiles;
    compilebench's eager static-cache variant does not."""
    import torch
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import CompileConfig

    from compilebench import zoo
    from compilebench.measure import compiler

    entry = zoo.get("smollm2-135m")
    model = entry.build("random", "tiny")
    compile_everywhere = CompileConfig(backend="eager")
    compile_everywhere._compile_all_devices = True
    model.generation_config.compile_config = compile_everywhere
    monkeypatch.setattr(type(entry), "build", lambda self, weights, size: model)
    ids = entry.prompt(1, 8, "random", "tiny")
    compiler.reset_dynamo()
    with torch.inference_mode():
        model.generate(ids, generation_config=GenerationConfig(max_new_tokens=3, cache_implementation="static",
                                                               compile_config=compile_everywhere, do_sample=False))
    assert compiler.graph_count() >= 1  # the trap is real: transformers compiled an "eager" static-cache run

    r = run_case(gen_case("eager-static-cache"), GEN, isolation="inline")
    assert r.status == "ok", (r.message, r.repeats[0].traceback)
    assert r.graphs == 0
    assert r.agreement == {"tokens": 1.0}


def test_greedy_tokens_that_diverge_where_eager_was_decisive_are_a_mismatch():
    import torch

    from compilebench.measure import correctness

    ref_tokens = torch.tensor([[5, 6, 7, 8]])
    logits = [torch.full((1, 10), -1.0) for _ in range(4)]
    for step, tok in enumerate([5, 6, 7, 8]):
        logits[step][0, tok] = 5.0  # eager's choice beats the rest by 6
    near_tie = [l.clone() for l in logits]
    near_tie[2][0, 3] = 5.0 - 1e-6  # token 3 a hair behind 7 at the third step
    flipped = torch.tensor([[5, 6, 3, 1]])
    v = correctness.check_generation(ref_tokens, near_tie, flipped, near_tie, "float32")
    assert v.ok and v.first_divergence == 2 and v.agreement == {"tokens": 0.5}
    v = correctness.check_generation(ref_tokens, logits, flipped, logits, "float32")
    assert not v.ok and "diverge from eager's at new token 3" in v.problems[0]


def test_a_job_travels_to_its_worker_whole():
    """Every field of a Job, each away from its default, comes back from the file the driver writes: the job is
    written from its fields (it was 14 positional fields written by hand), and a field the worker does not know is
    left, not an error."""
    import dataclasses

    given = dict(repeat=3, compile_cache="warm", count_flops=False, check=False, claim={"result": "r1"},
                 environment={"name": "nightly"}, traces="/t", profile=True, compile_trace=True, measure_machine=True,
                 mega_path="/m", packages="/p", weights="/w")
    assert set(given) == {f.name for f in dataclasses.fields(Job)} - {"cases", "timing"}
    job = fr.job([case("fault-ok"), case("fault-ok", "default")], TimingPolicy(iters=7, warmup=1, min_iters=2), **given)
    assert Job.from_dict({**job.to_dict(), "from_a_newer_driver": 1}) == job
