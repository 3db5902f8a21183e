"""The aot-inductor variant: exported with the case's inputs, packaged by AOTInductor by the first repeat, loaded
and timed by every repeat; a model that does not export is an error with export's own reason."""

import json
from types import SimpleNamespace

import pytest
from tiny_factories import make_branchy, make_inputs

import compilebench
from compilebench import kinds
from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.errors import UserError
from compilebench.core.repeat import Repeat
from compilebench.core.spec import asked
from compilebench.core.variant import Variant
from compilebench.kinds import aot_inductor, exported
from compilebench.measure import invariants, recording
from compilebench.run import dispatch, refusals


def test_the_variant_is_not_torch_compile_and_keeps_only_inductors_options():
    v = Variant.named("aot-inductor", Variant("default", backend="eager", fullgraph=True, dynamic=True, scope="regions",
                                              options=(("freezing", True),)))
    assert v.compiled and v.ahead_of_time and not v.uses_cudagraphs
    assert (v.backend, v.fullgraph, v.dynamic, v.scope, v.options) == ("inductor", False, None, "model",
                                                                      (("freezing", True),))
    assert v.label == "AOTInductor (freezing=True)" and Variant.named("aot-inductor").label == "AOTInductor"
    assert Case("m", 1, v).key() != Case("m", 1, Variant("default")).key()


def test_dynamos_counters_never_overwrite_the_packages_compile_cost():
    # the worker records the package first, then what dynamo counted (nothing): the package's cost stands
    rep, case = Repeat(index=1), Case("m", 1, Variant("aot-inductor"))
    recording.record_aot(rep, {"export_s": 2.0, "package_s": 3.0, "package_bytes": 10, "built": True, "load_s": 0.5})
    nothing = SimpleNamespace(compile_s=0.0, graphs=0, cache_hits=0, graph_breaks=0, break_reasons=[],
                              recompile_reasons=[], phases={}, limit_hits=0)
    recording.record_compile(rep, nothing, 0, invariants.CudaGraphs(), case)
    assert (rep.compile_s, rep.graphs, rep.recompiles_in_timed_loop) == (5.0, None, 0)


def test_a_model_that_does_not_export_is_an_error_with_exports_reason_in_one_line(tmp_path):
    results = compilebench.benchmark(make_branchy(), inputs=make_inputs, variants=("eager", "aot-inductor"),
                                     repeats=1, iters=3, warmup=0, db=str(tmp_path / "r.db"))
    by = {r.case.variant.name: r for r in results.view.results}
    assert by["eager"].status == "ok"
    aot = by["aot-inductor"]
    assert aot.status == "error" and aot.message.startswith("ExportFailed: torch.export could not export the model: ")
    assert "\n" not in aot.message and aot.repeats[0].phase == "exporting"
    assert "| error |" in results.table()


def test_text_generation_says_what_is_not_supported(main_here):
    main_here("run", "--model", "smollm2-135m", "--tiny", "--variant", "eager", "aot-inductor", "--repeats", "1",
              "--iters", "2", "--new-tokens", "2", "--isolation", "inline", "--quiet", "--db", "r.db")
    (aot,) = [r for r in compilebench.load("r.db").view.results if r.case.variant.ahead_of_time]
    assert aot.status == "error" and "aot-inductor does not time text generation yet" in aot.message


def test_a_package_built_from_other_weights_is_refused_not_compared(tmp_path):
    case = Case("m", 1, Variant("aot-inductor"))
    model = make_branchy()
    path = aot_inductor.package_path(str(tmp_path), case)
    open(path, "wb").close()  # another repeat's package...
    with open(path + ".weights.json", "w") as f:
        json.dump([w + 1.0 for w in exported.weights_fingerprint(model)], f)  # ...of other weights
    with pytest.raises(ValueError, match="built from other weights than this process's model"):
        aot_inductor.built_and_loaded(model, make_inputs(1), str(tmp_path), case)


@pytest.mark.slow
def test_the_first_repeat_builds_the_package_and_a_fresh_process_loads_it_and_agrees_with_eager(tmp_path):
    """A zoo model with random weights: every process builds the same ones, so the package one repeat built
    agrees with another process's eager output."""
    results = compilebench.benchmark("resnet-50", model_size="tiny", variants=("eager", "aot-inductor"), repeats=2,
                                     iters=5, warmup=1, db=str(tmp_path / "r.db"))
    (r,) = [r for r in results.view.results if r.case.variant.ahead_of_time]
    built, loaded = (rep.aot_inductor for rep in r.repeats)
    assert r.status == "ok" and r.max_abs_err is not None  # checked against eager, within tolerance
    assert built.built and built.export_s > 0 and built.package_s > 0 and built.package_bytes > 0
    assert not loaded.built and loaded.load_s > 0 and loaded.package_bytes == built.package_bytes
    assert r.repeats[0].process != r.repeats[1].process  # a fresh process loaded it
    assert r.compile_s == pytest.approx(built.export_s + built.package_s) and r.repeats[1].compile_s is None
    assert r.aot_inductor.start_from == "fresh processes that loaded it"
    making = ("exporting", "compiling ahead of time", "packaging", "loading the package")
    assert [p for p in r.repeats[0].phases if p in making] == list(making)  # a crash is named by its step
    assert [p for p in r.repeats[1].phases if p in making] == ["loading the package"]
    assert r.aot_inductor.start_s == pytest.approx(loaded.load_s + r.repeats[1].first_call_s)
    row = results.to_pandas().set_index("variant").loc["aot-inductor"]
    assert row.aot_package_bytes == built.package_bytes and row.aot_start_s == pytest.approx(r.aot_inductor.start_s)


def test_making_a_package_enters_a_phase_for_each_step(tmp_path, monkeypatch):
    """Issue 50: "exporting and packaging" covered export, compile, package and load, so a crash in any of them read
    the same; aoti_compile_and_package packages through torch._inductor.package.package_aoti, where the phase turns."""
    import torch
    import torch._inductor.package as package

    def compile_and_package(program, package_path, inductor_configs):
        phases.append("(compiling)")
        package.package_aoti(package_path, [])

    def package_aoti(path, files):
        open(path, "wb").close()

    phases = []
    monkeypatch.setattr(torch.export, "export", lambda model, args, kwargs: "program")
    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", compile_and_package)
    monkeypatch.setattr(package, "package_aoti", package_aoti)
    built = aot_inductor.build(make_branchy(), make_inputs(1), str(tmp_path / "m.pt2"), {}, phases.append)
    assert phases == ["exporting", "compiling ahead of time", "(compiling)", "packaging"]
    assert package.package_aoti is package_aoti and built["package_bytes"] == 0  # put back once packaged


def test_aot_inductor_is_refused_with_ray(main_here):
    code, _, err = main_here("run", "--model", "resnet-50", "--variant", "aot-inductor", "--executor", "ray")
    assert code == 2 and "--variant aot-inductor keeps its files on this host" in err


@pytest.mark.parametrize("device, index", [("cpu", -1), ("cuda", -1), ("cuda:1", 1)])
def test_a_package_is_loaded_onto_the_cases_device(tmp_path, monkeypatch, device, index):
    import torch._inductor

    seen = {}
    monkeypatch.setattr(torch._inductor, "aoti_load_package",
                        lambda path, device_index=-1: seen.update(path=path, device_index=device_index) or "runner")
    path = tmp_path / "m.pt2"
    path.write_bytes(b"package")
    runner, loaded = aot_inductor.load(str(path), device)
    assert runner == "runner" and seen == {"path": str(path), "device_index": index}
    assert loaded["package_bytes"] == 7 and loaded["load_s"] >= 0


def test_a_native_crash_in_a_package_phase_says_what_to_do_in_one_line():
    """Issue 50: AOTInductor died of SIGSEGV in export/package on two GPUs (torch 2.11, CUDA 13), cause not found yet:
    the crashed result names the torch it died under and the ways around it; a crash elsewhere says nothing of it."""
    from importlib import metadata

    from compilebench.core.job import Job, TimingPolicy
    from compilebench.run import executors

    aot = Job([Case("resnet-50", 1, Variant("aot-inductor"), device="cuda", model_size="tiny")], TimingPolicy())
    said = executors._why_crashed(-11, "packaging", aot)
    assert said.startswith("worker killed by SIGSEGV during packaging: AOTInductor died in native code under torch "
                           + metadata.version("torch")) and "--variant default" in said and "\n" not in said
    assert executors._why_crashed(-11, "timing", aot) == "worker killed by SIGSEGV during timing"
    eager = Job([Case("resnet-50", 1, Variant(), device="cuda", model_size="tiny")], TimingPolicy())
    assert executors._why_crashed(-11, "packaging", eager) == "worker killed by SIGSEGV during packaging"


@pytest.mark.parametrize("device, torch_version, refused", [
    ("cuda:0", "2.11.0+cu130", True), ("cuda", "2.11.0", True), ("cpu", "2.11.0+cpu", False),
    ("cuda:0", "2.13.0+cu130", False), ("cuda:0", "2.11.1", False), ("cuda:0", None, False)])
def test_aot_inductor_is_refused_on_cuda_under_the_torch_whose_package_load_crashes(device, torch_version, refused):
    """Issue 63: on an H200 (torch 2.11.0+cu130) benchmarks/aot_load.py saw the package's load die of SIGSEGV where it
    was built, in a fresh interpreter and forked alike: no path works, so the plan refuses it there, in one line,
    with what to do instead; elsewhere it is measured."""
    why = kinds.get("aot-inductor").refusal(kinds.Asked(device=device, torch=torch_version))
    assert (why is not None) == refused
    if refused:
        assert "SIGSEGV in every process" in why and "--device cpu" in why and "\n" not in why
        target = dispatch.Target("gpu", "m", Environment(device=device, torch=torch_version))
        spec = asked(models=("resnet-50",), variants=("eager", "aot-inductor"), device="cuda")
        with pytest.raises(UserError, match="loading its package dies of SIGSEGV"):
            refusals.check_devices([], spec, [target])
