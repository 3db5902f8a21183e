"""Why it is (not) faster (issue 26): --profile's pass and its summary, --compile-trace's log and tlparse's HTML,
the compile phases, and the report's section. The whole path in worker processes with a real inductor compile is
test_cli's end-to-end test, which runs with both options."""

import json
import os
import shutil
from types import SimpleNamespace

import pytest
from conftest import stored

from compilebench.diagnostics import profiling, traces
from compilebench.diagnostics.profiling import MATMUL_CONV, OTHER, OUTSIDE, Event
from compilebench.measure import compiler
from compilebench.report import why

QUICK = ["--iters", "5", "--warmup", "0", "--min-iters", "1", "--device", "cpu", "--quiet", "--format", "md,csv"]


@pytest.mark.parametrize("name, on_device, share", [
    ("aten::addmm", False, MATMUL_CONV), ("aten::mkldnn_convolution", False, MATMUL_CONV),
    ("aten::bmm", False, MATMUL_CONV), ("aten::relu", False, OTHER), ("aten::native_batch_norm", False, OTHER),
    ("aten::empty", False, OTHER), ("## Call CompiledFxGraph fabc ##", False, OTHER),
    ("Torch-Compiled Region: 0/0", False, OUTSIDE), ("TorchDynamo Cache Lookup", False, OUTSIDE),
    (profiling.CALL, False, OUTSIDE), ("cudaLaunchKernel", False, OUTSIDE),
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", True, MATMUL_CONV),
    ("triton_tem_fused_addmm_0", True, MATMUL_CONV), ("triton_poi_fused_relu_0", True, OTHER),
    ("void at::native::vectorized_elementwise_kernel<4>", True, OTHER), ("cudnn::winograd_nonfused::fprop", True, MATMUL_CONV),
])
def test_each_event_lands_in_one_share(name, on_device, share):
    assert profiling.kind(Event(name, 1.0, on_device)) == share


def test_cpu_summary_splits_the_wall_and_its_rows_add_up_to_the_profiled_time():
    calls = 2
    events = [Event(profiling.CALL, 300.0, total_us=1700.0), Event(profiling.CALL, 300.0, total_us=1700.0),
              Event("aten::addmm", 1000.0),
              Event("aten::addmm", 1000.0), Event("aten::relu", 200.0), Event("aten::relu", 200.0),
              Event("TorchDynamo Cache Lookup", 100.0)]
    events += [Event(f"aten::op{i}", 10.0) for i in range(profiling.TOP + 3)]  # more than the top shows
    wall_ns = 2_000_000 * calls  # the host's clock around the calls: the profiler's bookkeeping between them too
    p = profiling.summarize(events, calls, wall_ns, on_device=False)
    assert p["shares_ms"][MATMUL_CONV] == pytest.approx(1.0)
    assert p["shares_ms"][OTHER] == pytest.approx(0.2 + (profiling.TOP + 3) * 0.01 / calls)
    assert sum(p["shares_ms"].values()) == pytest.approx(p["wall_ms"]) == pytest.approx(1.7)
    assert p["top"][0] == {"name": "aten::addmm", "self_ms": pytest.approx(1.0), "calls": 1.0, "share": MATMUL_CONV}
    assert p["top"][-1]["name"].endswith("others") and len(p["top"]) == profiling.TOP + 1
    assert sum(t["self_ms"] for t in p["top"]) == pytest.approx(p["profiled_ms"])
    assert p["op_calls"] == (4 + profiling.TOP + 3) / calls
    assert p["coverage"] == pytest.approx(p["profiled_ms"] / 1.7) and "problem" not in p
    assert p["host_wall_ms"] == pytest.approx(2.0)
    missing = profiling.summarize(events[2:], calls, wall_ns, on_device=False)  # no call spans: the host's wall
    assert missing["wall_ms"] == pytest.approx(2.0) and "add up to" in missing["problem"]
    slow = profiling.summarize(events, calls, wall_ns // 2, on_device=False)  # spans longer than the wall around them
    assert "not of these calls" in slow["problem"]


def test_gpu_summary_reads_kernels_and_counts_launches():
    events = [Event("aten::addmm", 50.0), Event("cudaLaunchKernel", 5.0), Event("aten::relu", 20.0),
              Event("sm80_xmma_gemm", 400.0, True), Event("triton_poi_fused_relu_0", 100.0, True),
              Event("sm80_xmma_gemm", 400.0, True), Event("triton_poi_fused_relu_0", 100.0, True)]
    p = profiling.summarize(events, 2, 2_000_000, on_device=True)  # 1 ms per call
    assert p["kernels"] == 2 and p["op_calls"] == 1
    assert p["shares_ms"] == {MATMUL_CONV: pytest.approx(0.4), OTHER: pytest.approx(0.1), OUTSIDE: pytest.approx(0.5)}
    assert p["basis"] == "device kernels" and "problem" not in p
    impossible = profiling.summarize(events, 2, 200_000, on_device=True)  # kernels longer than the wall around them
    assert "not of these calls" in impossible["problem"]


def test_a_gpu_profiles_shares_are_of_the_timed_loops_call_not_the_profiled_pass():
    """Seen on an H200: the profiler slowed the host's launches (4.7 ms a call profiled, 2.7 in the timed loop), and
    the slowdown read as 'outside kernels' (framework overhead) at 47% where the device was busy 93% of the loop."""
    events = [Event("sm90_xmma_gemm", 400.0, True), Event("triton_poi_fused_relu_0", 100.0, True)] * 2
    p = profiling.summarize(events, 2, 2 * 1_800_000, on_device=True, steady_ms=0.55)  # 1.8 ms a call profiled
    assert p["wall_ms"] == 0.55 and p["host_wall_ms"] == pytest.approx(1.8) and p["wall_from"] == "timed loop"
    assert p["shares_ms"][OUTSIDE] == pytest.approx(0.05) and "problem" not in p
    slower = profiling.summarize(events, 2, 2 * 1_800_000, on_device=True, steady_ms=0.4)  # kernels outlast the loop's
    assert "more than the timed loop's 0.400 ms" in slower["problem"] and slower["kernels_over_wall"]
    cpu = profiling.summarize([Event("aten::addmm", 300.0)], 1, 1_000_000, on_device=False, steady_ms=0.1)
    assert cpu["wall_ms"] == 1.0 and cpu["wall_from"] == "profiled pass"  # a CPU's shares: one pass, one clock


def test_compile_phases_split_dynamos_metrics():
    records = [SimpleNamespace(entire_frame_compile_time_s=3.0, backend_compile_time_s=2.5, inductor_compile_time_s=2.0,
                               code_gen_time_s=1.5),
               SimpleNamespace(entire_frame_compile_time_s=1.0, backend_compile_time_s=0.5, inductor_compile_time_s=None,
                               code_gen_time_s=None)]
    assert compiler.phases(records) == {"dynamo_s": pytest.approx(1.0), "aot_s": pytest.approx(1.0),
                                        "inductor_s": pytest.approx(2.0), "codegen_s": pytest.approx(1.5)}
    assert compiler.phases([]) == {}


def _run(main_here, tmp_path, *extra, repeats=2, db="r.db"):
    code, out, err = main_here("run", "--model", "resnet-50", "--tiny", "--variant", "eager", "default", "--backend",
                               "eager", *QUICK, "--repeats", str(repeats), "--isolation", "inline", "--db", db, *extra)
    assert code == 0, err
    return stored(tmp_path / db)


def test_profile_is_a_pass_after_the_timed_loop_once_per_case(main_here, tmp_path):
    results = _run(main_here, tmp_path, "--profile")
    folder = tmp_path / "r.traces"
    for r in results:
        first, second = r["repeats"]
        assert not second["profile"]  # once per case: the first repeat measured
        p = first["profile"]
        assert p["trace"].startswith(str(folder)) and os.path.exists(p["trace"])
        with open(p["trace"]) as f:
            assert json.load(f)["traceEvents"]  # Chrome trace JSON
        assert sum(t["self_ms"] for t in p["top"]) == pytest.approx(p["profiled_ms"], rel=1e-9)
        # the stated margin: the events' own times add up to the calls' spans within 10%, inside the host's wall
        assert profiling.COVERAGE <= p["coverage"] <= 2 - profiling.COVERAGE and "problem" not in p, p
        assert p["wall_ms"] <= p["host_wall_ms"]
        assert p["calls"] == profiling.FORWARD_CALLS and p["op_calls"] > 0
        assert len(first["samples_ms"]) == len(second["samples_ms"]) == 5  # the timed loop is the same
    report = (tmp_path / "compilebench-results" / "report" / "report.md")
    report = report if report.exists() else next(tmp_path.rglob("report.md"))
    text = report.read_text()
    assert "### Where the time goes: Image Classification/ResNet" in text
    assert "time-split-" in text  # its stacked-bar chart
    eager = next(r for r in results if r["case"]["variant"]["mode"] == "eager")
    compiled = next(r for r in results if r["case"]["variant"]["mode"] == "default")
    assert eager["bytes_moved"] > 0  # its operators' inputs and outputs, counted with its FLOPs
    assert compiled["bytes_moved"] is None  # backend=eager: no inductor kernels to count
    unprofiled = _run(main_here, tmp_path, db="plain.db", repeats=1)
    assert not any(rep["profile"] for r in unprofiled for rep in r["repeats"])
    assert [len(rep["samples_ms"]) for r in unprofiled for rep in r["repeats"]] == [5, 5]  # as with the profile


def test_inductors_checks_of_the_cpu_are_timed_from_the_first_watch_until_a_reset(monkeypatch):
    """Each check (a library built per instruction set and loaded in a new process: here a fake clock's 0.75 s) adds
    to what the checks spent; a new case starts from none; a process that never watched records none."""
    from torch._inductor import cpu_vec_isa

    from compilebench.measure import cpu_checks

    clock = [0.0]

    def check(self, code):
        clock[0] += 0.75
        return True

    monkeypatch.setattr(cpu_vec_isa.VecISA, "check_build", check)
    monkeypatch.setattr(cpu_checks, "_spent", {"s": 0.0, "watched": False})
    monkeypatch.setattr(cpu_checks.time, "perf_counter", lambda: clock[0])
    assert cpu_checks.spent() is None
    cpu_checks.watch()
    cpu_checks.watch()  # once a process: not timed twice
    isa = cpu_vec_isa.VecAVX2()
    assert isa.check_build("code") and isa.check_build("code")
    assert cpu_checks.spent() == pytest.approx(1.5)
    cpu_checks.reset()
    assert cpu_checks.spent() == 0.0


def test_the_compiler_table_says_what_of_a_compile_was_the_cpus_checks_where_any_were_timed():
    import fakeresults as fr

    from compilebench.core.why import CompilePhases
    from compilebench.report.view import View

    def compiled(checks):
        r = fr.result("resnet-50", 1, "default", 5.0, env=fr.CPU, compile_s=17.3)
        for rep in r.repeats:
            rep.compile_phases = CompilePhases(dynamo_s=1.0, aot_s=1.0, inductor_s=15.3, codegen_s=2.0,
                                               cpu_checks_s=checks)
        r.derive()
        return r

    results = [fr.result("resnet-50", 1, "eager", 10.0, env=fr.CPU), compiled(9.2)]
    table = why.compiler_table(View(results))
    (row,) = table.records()
    assert row["of it CPU checks s"] == "9.20" and why.CPU_CHECKS in table.notes
    table = why.compiler_table(View([results[0], compiled(None)]))  # a GPU's compile, or a torch without them
    assert "of it CPU checks s" not in table.header and why.CPU_CHECKS not in table.notes
    # the terminal, where the break-even is read first, says it beside the compile s it is part of
    from compilebench.report import terminal

    said = " ".join(terminal.summary(View(results)).split())
    assert "On this CPU 9.2 s of each compile s were inductor's checks of the CPU's vector instructions" in said
    assert "checks of the CPU" not in terminal.summary(View([results[0], compiled(None)]))


def test_compile_trace_keeps_the_log_and_the_compile_phases(main_here, tmp_path, monkeypatch):
    monkeypatch.setattr(traces.shutil, "which", lambda *a, **k: None)  # as where tlparse is not installed
    results = _run(main_here, tmp_path, "--compile-trace", repeats=1)
    compiled = next(r for r in results if r["case"]["variant"]["mode"] == "default")
    eager = next(r for r in results if r["case"]["variant"]["mode"] == "eager")
    kept = compiled["repeats"][0]["compile_trace"]
    assert kept["dir"].startswith(str(tmp_path / "r.traces")) and any(n.endswith(".log") for n in os.listdir(kept["dir"]))
    assert kept.get("html") is None and "pip install tlparse" in kept["why_not"]
    assert not eager["repeats"][0]["compile_trace"]  # nothing compiled: nothing traced
    phases = compiled["repeats"][0]["compile_phases"]
    assert set(phases) == {"dynamo_s", "aot_s", "inductor_s", "codegen_s", "cpu_checks_s"} and phases["dynamo_s"] > 0
    assert 0 <= phases["cpu_checks_s"] <= phases["inductor_s"]  # none where this process had checked its CPU before


def test_a_trace_an_interrupted_run_kept_is_rendered_by_the_next(main_here, tmp_path, monkeypatch):
    """An interrupt after the compile but before the run's end leaves a trace without HTML: the resume, with
    nothing left to measure, makes it."""
    import sqlite3

    _run(main_here, tmp_path, "--compile-trace", repeats=1)
    db = sqlite3.connect(tmp_path / "r.db")
    for rid, data in db.execute("SELECT result_id, data FROM results").fetchall():
        d = json.loads(data)
        for rep in d["repeats"]:
            if rep["compile_trace"]:
                rep["compile_trace"] = {"dir": rep["compile_trace"]["dir"]}  # as an interrupted run stored it
        db.execute("UPDATE results SET data = ? WHERE result_id = ?", (json.dumps(d), rid))
    db.commit()
    db.close()
    monkeypatch.setattr(traces.shutil, "which", lambda *a, **k: None)
    (compiled,) = [r for r in _run(main_here, tmp_path, "--compile-trace", repeats=1)
                   if r["case"]["variant"]["mode"] == "default"]
    assert "pip install tlparse" in compiled["repeats"][0]["compile_trace"]["why_not"]


@pytest.mark.skipif(shutil.which("tlparse") is None and not os.path.exists(
    os.path.join(os.path.dirname(os.sys.executable), "tlparse")), reason="tlparse is not installed")
def test_tlparse_makes_html_of_a_compile_trace(tmp_path):
    import torch

    where = str(tmp_path / "trace")
    with traces.compile_trace(where):
        torch.compile(lambda x: (x + 1).relu(), backend="eager")(torch.randn(4))
    assert os.environ.get("TORCH_TRACE") is None  # put back: the next case is not traced
    done = traces.render(where)
    assert done["why_not"] is None and os.path.exists(done["html"])
    assert traces.render(str(tmp_path))["why_not"].startswith("the compile wrote no trace")


def test_profile_and_compile_trace_are_refused_with_ray(main_here):
    code, _, err = main_here("run", "--model", "resnet-50", "--tiny", "--profile", "--executor", "ray")
    assert code == 2 and "--profile keeps its files on this host" in err and len(err.strip().splitlines()) == 1


def test_profiler_events_become_records_with_cpu_self_times_and_kernel_durations():
    """As strict as torch's FunctionEvent: a CPU op has self and total CPU time, a kernel a device time range."""
    from torch.autograd import DeviceType

    span = lambda us: SimpleNamespace(elapsed_us=lambda: us)  # noqa: E731
    prof = SimpleNamespace(events=lambda: [
        SimpleNamespace(name=profiling.CALL, device_type=DeviceType.CPU, self_cpu_time_total=5.0,
                        cpu_time_total=100.0, time_range=span(100.0), is_user_annotation=True),
        SimpleNamespace(name="aten::mm", device_type=DeviceType.CPU, self_cpu_time_total=95.0, cpu_time_total=95.0,
                        time_range=span(95.0), is_user_annotation=False),
        SimpleNamespace(name="sm90_gemm", device_type=DeviceType.CUDA, self_cpu_time_total=0.0, cpu_time_total=0.0,
                        time_range=span(40.0), is_user_annotation=False),
        SimpleNamespace(name="memcpy", device_type=DeviceType.MTIA, self_cpu_time_total=0.0, cpu_time_total=0.0,
                        time_range=span(1.0), is_user_annotation=False),  # another device: not this profile's
    ])
    assert profiling.events_of(prof) == [Event(profiling.CALL, 5.0, total_us=100.0), Event("aten::mm", 95.0, total_us=95.0),
                                         Event("sm90_gemm", 40.0, on_device=True)]


def _kineto_trace(calls: int):
    """What kineto gives for `calls` profiled calls of a compiled model on a GPU, as strict as torch's FunctionEvent:
    our record around each call and inductor's around its compiled graph are user-scope records, on the CPU
    (is_user_annotation) and mirrored onto the GPU timeline (device type CUDA, is_user_annotation, spanning the
    kernels they wrap); the two kernels of each call are device events of their own."""
    from torch.autograd import DeviceType

    span = lambda us: SimpleNamespace(elapsed_us=lambda: us)  # noqa: E731

    def event(name, device, us, annotation, self_cpu=0.0, total_cpu=0.0):
        return SimpleNamespace(name=name, device_type=device, self_cpu_time_total=self_cpu, cpu_time_total=total_cpu,
                               time_range=span(us), is_user_annotation=annotation)

    graph = profiling.COMPILED_GRAPH + " fxgraph0"
    out = []
    for _ in range(calls):
        out += [event(profiling.CALL, DeviceType.CPU, 120.0, True, self_cpu=20.0, total_cpu=120.0),
                event(graph, DeviceType.CPU, 100.0, True, self_cpu=100.0, total_cpu=100.0),
                event(profiling.CALL, DeviceType.CUDA, 75.0, True),  # the mirrors: no kernels
                event(graph, DeviceType.CUDA, 72.0, True),
                event("sm90_xmma_gemm_f32", DeviceType.CUDA, 40.0, False),
                event("triton_poi_fused_relu_0", DeviceType.CUDA, 30.0, False)]
    return SimpleNamespace(events=lambda: out)


def test_a_gpu_profile_counts_kernels_not_the_annotations_kineto_mirrors_onto_the_gpu():
    """Issue 42, 1: each call's record and inductor's compiled-graph record, mirrored onto the GPU timeline, were
    counted as kernels: the GPU time about twice, 'other kernels' inflated by the graph's span, and the kernels'
    sum over the wall raising a false 'not of these calls'."""
    calls = 5
    events = profiling.events_of(_kineto_trace(calls))
    assert [e.name for e in events if e.on_device][:2] == ["sm90_xmma_gemm_f32", "triton_poi_fused_relu_0"]
    summary = profiling.summarize(events, calls, wall_ns=calls * 120_000, on_device=True)
    assert summary["kernels"] == 2
    assert summary["shares_ms"][profiling.MATMUL_CONV] == pytest.approx(0.040)
    assert summary["shares_ms"][profiling.OTHER] == pytest.approx(0.030)
    assert summary["shares_ms"][profiling.OUTSIDE] == pytest.approx(0.050)
    assert "problem" not in summary
