"""torch.compile against the other engines (issue 57): ONNX Runtime and OpenVINO as variants of a case, measured as
a compiled variant is (fresh processes, the same rounds, checked against eager, prepared cold then warm), their
failures stored as results, their refusals one line each, and the Engines table. One real export per engine, on
the fault plugin's one-convolution model (seconds); ONNX Runtime's IO binding on a GPU and TensorRT on fakes of
their APIs (a GPU runs them for real: gpu_acceptance's `engines`)."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import os
import subprocess
import sys
import types

import fakeresults as fr
import pytest
import torch
from conftest import stored

from compilebench.core.engines import EnginePrepared
from compilebench.core.spec import asked
from compilebench.core.variant import Variant
from compilebench.measure import correctness
from compilebench.report import engines as enginesreport, terminal
from compilebench.report.view import View

RUN = ["run", "--model", "fault-ok", "--iters", "3", "--warmup", "0", "--min-iters", "1", "--device", "cpu",
       "--format", "md", "--isolation", "inline"]


def _a_users_home(tmp_path):
    """A home of its own and none of the variables that turn the engines' telemetry off (CI=true among them)."""
    home = tmp_path / "home"
    home.mkdir()
    return home, {k: v for k, v in os.environ.items()
                  if k not in ("CI", "TF_BUILD", "JENKINS_URL", "ORT_DISABLE_TELEMETRY")} | {"HOME": str(home)}


def test_onnxruntime_and_openvino_are_measured_checked_and_prepared_cold_then_warm(main_here, tmp_path):
    """In a process of its own, as a user runs it, in a home of its own: OpenVINO's converter sends each conversion
    to Google Analytics from a process it forks, with a client id it writes under ~/intel, unless a consent file or
    CI=true says no; ONNX Runtime 1.32 writes a device id under ~/.cache/Microsoft as it loads. A run keeps
    OpenVINO's telemetry module from importing (its converter then takes its no-op stub) and sets
    ORT_DISABLE_TELEMETRY before ONNX Runtime loads (kinds/base.Kind.no_telemetry)."""
    from conftest import run_cli

    home, env = _a_users_home(tmp_path)
    done = run_cli(*RUN, "--variant", "eager", "default", "onnxruntime", "openvino", "--backend", "eager",
                   "--repeats", "2", "--db", "r.db", cwd=tmp_path, env=env)
    out = done.stdout
    assert done.returncode == 0, done.stderr
    assert not (home / "intel").exists() and not (home / ".cache" / "Microsoft").exists()
    found = {r["case"]["variant"]["mode"]: r for r in stored(tmp_path / "r.db")}
    for name in ("onnxruntime", "openvino"):
        r = found[name]
        assert r["status"] == "ok", r["message"]
        cold, warm = r["repeats"]
        assert cold["engine"]["built"] and cold["engine"]["cache"] == "cold" and cold["engine"]["export_s"] > 0
        assert warm["engine"]["cache"] == "warm" and "export_s" not in warm["engine"]  # the file the first left
        assert [rep["compile_cache"] for rep in r["repeats"]] == ["cold", "warm"]
        assert r["engine"]["cold_s"] == pytest.approx(cold["engine"]["export_s"] + cold["engine"]["build_s"])
        assert r["engine"]["precision"] == "float32" and r["engine"]["version"]  # read back, not assumed
        assert r["max_rel_err"] < 1e-4 and r["sensitivity_rel_err"] is not None  # checked against eager
        assert r["graphs"] is None  # dynamo's counters say nothing of an engine
    assert found["onnxruntime"]["engine"]["device"] == "CPUExecutionProvider"
    assert "Engines: " in out and "onnxruntime" in out.split("Engines: ")[1] and "openvino" in out  # the terminal's
    text = next(tmp_path.rglob("report.md")).read_text()
    assert "## Engines" in text and "vs best torch.compile" in text
    code, _, err = main_here(*RUN, "--variant", "eager", "default", "onnxruntime", "openvino", "--backend", "eager",
                             "--repeats", "2", "--db", "r.db")
    assert code == 0 and "0 repeat(s) measured" in err  # resumed


def test_an_export_that_fails_is_a_result_with_the_exporters_reason_and_the_sweep_goes_on(main_here, tmp_path):
    code, _, err = main_here("run", "--model", "fault-break", "fault-ok", "--variant", "eager", "onnxruntime",
                             "--iters", "3", "--warmup", "0", "--min-iters", "1", "--device", "cpu", "--format", "md",
                             "--isolation", "inline", "--repeats", "1", "--db", "r.db")
    assert code == 0, err
    found = {(r["case"]["model"], r["case"]["variant"]["mode"]): r for r in stored(tmp_path / "r.db")}
    broken = found[("fault-break", "onnxruntime")]
    assert broken["status"] == "unsupported" and broken["message"].startswith("torch.onnx.export could not export")
    assert broken["repeats"][0]["phase"] == "exporting"
    assert found[("fault-ok", "onnxruntime")]["status"] == "ok" and found[("fault-break", "eager")]["status"] == "ok"


@pytest.mark.parametrize("args, said", [
    (["--model", "fault-ok", "--variant", "tensorrt"], "--variant tensorrt needs a CUDA device (this run's is cpu)"),
    (["--model", "fault-ok", "--variant", "onnxruntime", "--dtype", "bfloat16"],
     "--variant onnxruntime computes in float32, float16; --dtype bfloat16 is not one of them"),
    (["--model", "smollm2-135m", "--tiny", "--variant", "eager", "openvino"],
     "--variant openvino runs the model's forward pass; smollm2-135m generates text"),
    (["--model", "fault-ok", "--variant", "eager", "onnxruntime", "--interleave"], "leave out --interleave"),
    (["--model", "fault-ok", "--variant", "onnxruntime", "--executor", "ray"],
     "--variant onnxruntime keeps its files on this host"),
])
def test_an_engine_that_cannot_run_here_is_refused_in_one_line_before_anything_is_written(main_here, tmp_path, args, said):
    code, _, err = main_here("run", *args, "--device", "cpu", "--db", "r.db")
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.db").exists()


def test_a_missing_engine_names_the_extra_that_installs_it(main_here, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "openvino" else real(name, *a))
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "openvino", "--device", "cpu", "--db", "r.db")
    assert code == 2 and "pip install compilebench[openvino]" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists()


def test_several_backends_cross_the_compiled_modes_and_inductors_options_stay_inductors():
    spec = asked(models=("resnet-50",), variants=("eager", "default", "max-autotune", "onnxruntime"),
                 backend=("inductor", "openvino"), inductor_options={"freezing": True})
    variants = [c.variant for c in spec.cases()]
    assert [(v.mode, v.backend, v.options) for v in variants] == [
        ("eager", "none", ()), ("default", "inductor", (("freezing", True),)), ("default", "openvino", ()),
        ("max-autotune", "inductor", (("freezing", True),)), ("max-autotune", "openvino", ()),
        ("onnxruntime", "none", ())]
    assert len({v.label for v in variants}) == 6  # each its own column: backend=openvino said in its header
    assert asked(models=("vit",), backend="eager").backends == ()  # one backend: the spec as before


def test_a_difference_within_the_models_own_sensitivity_is_no_mismatch():
    expected = {"logits": torch.tensor([[4.0, 1.0, 0.0]])}
    moved = {"logits": torch.tensor([[4.02, 1.0, 0.0]])}  # 5e-3 of the largest magnitude: beyond float32's 1e-3
    assert correctness.check(expected, moved, "float32").problems
    verdict = correctness.check(expected, moved, "float32", sensitivity_rel_err=6e-3)
    assert verdict.ok and verdict.tolerance == 6e-3
    worse = correctness.check(expected, {"logits": torch.tensor([[4.1, 1.0, 0.0]])}, "float32", sensitivity_rel_err=6e-3)
    assert "eager moves that much when its input moves by one rounding step" in worse.problems[0]
    x = torch.tensor([1.0, -2.0, 3.5])
    (up,) = correctness.perturbed({"x": x}).values()
    assert torch.all(up > x) and torch.all(torch.nextafter(x, up) == up)  # exactly one step each


def _engine_result(mode: str, ms: float, precision: str = "float32", **kw):
    r = fr.result("resnet-50", 1, mode, ms, env=fr.CPU, **kw)
    for i, rep in enumerate(r.repeats):
        rep.engine = EnginePrepared(engine=mode, version="1.0", export_s=2.0 if i == 0 else None, build_s=0.5 / (i + 1),
                                    cache="cold" if i == 0 else "warm", built=i == 0, precision=precision, device="CPU")
        rep.compile_s, rep.compile_cache = rep.engine.seconds, rep.engine.cache
        rep.max_rel_err, rep.rel_tolerance, rep.agreement = 3e-7, 1e-3, {"top1": 1.0}
    r.derive()
    return r


def test_the_engines_table_sets_each_engine_beside_eager_and_the_best_torch_compile_setting():
    results = [fr.result("resnet-50", 1, "eager", 40.0, env=fr.CPU),
               fr.result("resnet-50", 1, "default", 36.0, env=fr.CPU, compile_s=30.0),
               fr.result("resnet-50", 1, "max-autotune", 30.0, env=fr.CPU, compile_s=90.0),
               _engine_result("onnxruntime", 20.0), _engine_result("openvino", 10.0, precision="bfloat16")]
    view = View(results)
    (table,) = enginesreport.tables(view)
    rows = {r["variant"]: r for r in table.records()}
    assert list(rows) == ["no compile (eager)", "compile", "compile (max-autotune)", "onnxruntime", "openvino"]
    ort = rows["onnxruntime"]
    assert ort["vs eager"].startswith("2.000x") and ort["vs eager"].endswith("faster)")
    assert ort["vs best torch.compile"].startswith("1.500x")  # against max-autotune's 30 ms: the best faster one
    warm = (0.5 / 2 + 0.5 / 3) / 2  # the median of the warm builds; each 25% shorter or longer in brackets, as below
    assert (ort["prepare cold s"], ort["prepare warm s"]) == (
        "2.50 [2.00-3.12]", f"{warm:.2f} [{warm / 1.25:.2f}-{warm * 1.25:.2f}]")
    s = view.speedup(results[0], results[3])
    # at the interval's ends, the preparation 25% shorter or longer (one run: how far one compile moves by default)
    fewest, most = (math.ceil(c / ((40.0 - 40.0 / x) / 1e3)) for c, x in ((2.5 / 1.25, s.high), (2.5 * 1.25, s.low)))
    assert ort["break-even calls"] == f"{2.5 / 0.020:,.0f} [{fewest:,}-{most:,}]"
    assert ort["against eager"] == "max rel err 3.0e-07 (allowed 1e-03), top1 100.0%"
    assert rows["openvino"]["precision"] == "bfloat16" and rows["openvino"]["version"] == "OpenVINO 1.0"
    assert rows["compile"]["vs best torch.compile"] == ""
    lines = terminal.engines_summary(view)
    (ort_line,) = [line for line in lines if "onnxruntime" in line]
    assert f"2.00x faster  [{s.low:.2f}-{s.high:.2f}]" in ort_line and "float32" in ort_line  # interval, precision
    assert max(map(len, lines)) <= terminal.WIDTH
    # the terminal's cold/warm s are bare: its legend says how far one preparation moves from another
    assert "one preparation may take 0.80x to 1.25x another's here" in " ".join(terminal.summary(view).split())
    no_engine = View(results[:3])
    assert enginesreport.tables(no_engine) == [] and terminal.engines_summary(no_engine) == []
    # torch.compile's own answer on the terminal never picks an engine
    (row,) = terminal.rows(view, view.groups[0])
    assert row.column.variant == Variant("max-autotune")


def test_an_engine_whose_output_differs_from_eagers_shows_the_status_not_a_time_on_the_terminal():
    results = [fr.result("resnet-50", 1, "eager", 40.0, env=fr.CPU),
               fr.result("resnet-50", 1, "onnxruntime", 10.0, env=fr.CPU, status="mismatch")]
    (line,) = [x for x in terminal.engines_summary(View(results)) if "onnxruntime" in x]
    assert line.split()[2] == "mismatch" and "x" not in line.split("mismatch")[1]  # no speed-up read from it


def test_an_unsupported_engine_reads_as_such_in_its_table():
    failed = fr.result("resnet-50", 1, "onnxruntime", None, env=fr.CPU, status="unsupported",
                       message="torch.onnx.export could not export the model: GuardOnDataDependentSymNode: x")
    results = [fr.result("resnet-50", 1, "eager", 40.0, env=fr.CPU), failed]
    (table,) = enginesreport.tables(View(results))
    (row,) = [r for r in table.records() if r["variant"] == "onnxruntime"]
    assert row["ms [95%]"].startswith("unsupported: torch.onnx.export could not export")
    assert dataclasses.replace(failed).status == "unsupported"


def test_tune_tries_engines_only_where_asked_in_the_dtypes_they_run_here(main_here):
    from compilebench.tune import halving

    assert not any(c.variant.engine for c in halving.space("cpu", vision=True))
    asked = halving.space("cpu", vision=True, engines=("onnxruntime", "openvino", "tensorrt"))
    tried = {(c.variant.engine, c.settings.dtype) for c in asked if c.variant.engine}
    # TensorRT needs CUDA; ONNX Runtime computes no bfloat16; OpenVINO computes bfloat16 by its pinned precision
    assert tried == {("onnxruntime", "float32"), ("openvino", "float32"), ("openvino", "bfloat16")}
    assert "onnxruntime.InferenceSession" in halving.Config.make("onnxruntime").code()
    code, _, err = main_here("tune", "--model", "fault-ok", "--engine", "onnxruntim", "--device", "cpu", "--db", "r.db")
    assert code == 2 and "unknown engine 'onnxruntim'" in err and len(err.strip().splitlines()) == 1, err


# -- the CUDA paths, on fakes as strict as the real APIs (a GPU runs them for real: gpu_acceptance's `engines`) -----


class FakeBinding:
    """ONNX Runtime's IOBinding as the CUDA path uses it: an input bound by its name, device, element type, shape and
    pointer; an output first bound to a device alone (ORT allocates it), then to a buffer of the shape ORT made."""

    def __init__(self, session):
        self.session, self.inputs, self.outputs, self.runs = session, {}, {}, 0

    def bind_input(self, name, device_type, device_id, element_type, shape, buffer_ptr):
        assert name in self.session.input_types and device_type == "cuda" and device_id == self.session.device_id
        assert element_type == self.session.input_types[name], (element_type, self.session.input_types[name])
        self.inputs[name] = (tuple(shape), buffer_ptr)

    def bind_output(self, name, device_type, device_id=0, element_type=None, shape=None, buffer_ptr=None):
        assert name in self.session.output_shapes and device_type == "cuda" and device_id == self.session.device_id
        assert (shape is None) == (buffer_ptr is None) == (element_type is None)
        if shape is not None:
            assert tuple(shape) == self.session.output_shapes[name] and element_type == "float32"
        self.outputs[name] = buffer_ptr

    def get_outputs(self):
        assert self.runs, "outputs ORT allocated exist after a run"
        return [types.SimpleNamespace(shape=lambda s=s: list(s), data_type=lambda: "tensor(float)")
                for s in self.session.output_shapes.values()]


class FakeSession:
    def __init__(self, device_id=0):
        self.device_id = device_id
        self.input_types = {"pixel_values": "float32"}
        self.output_shapes = {"logits": (1, 10)}
        self.binding = None

    def io_binding(self):
        self.binding = FakeBinding(self)
        return self.binding

    def get_outputs(self):
        return [types.SimpleNamespace(name=n) for n in self.output_shapes]

    def run_with_iobinding(self, binding):
        assert binding is self.binding and set(binding.inputs) == set(self.input_types), "an input left unbound"
        assert set(binding.outputs) == set(self.output_shapes)
        binding.runs += 1


def test_onnxruntime_on_a_gpu_binds_torchs_tensors_and_copies_nothing_a_call_need_not():
    from compilebench.kinds import onnxruntime

    session = FakeSession(device_id=1)
    example = {"pixel_values": torch.ones(1, 3, 8, 8)}
    call = onnxruntime.bound(session, ["logits"], example, 1)
    bound = session.binding
    (shape, pointer), = bound.inputs.values()
    assert shape == (1, 3, 8, 8)
    out = call(pixel_values=example["pixel_values"])  # the tensor bound: read in place
    assert bound.inputs["pixel_values"][1] == pointer and bound.runs == 2
    assert bound.outputs["logits"] == out["logits"].data_ptr() and out["logits"].shape == (1, 10)
    other = torch.full((1, 3, 8, 8), 2.0)
    again = call(pixel_values=other)  # another tensor: copied into the bound one, the binding left as it is
    assert bound.inputs["pixel_values"][1] == pointer and again["logits"].data_ptr() == out["logits"].data_ptr()
    assert pointer == example["pixel_values"].data_ptr() and float(example["pixel_values"].max()) == 2.0  # into it


def test_tensorrt_builds_its_engine_once_in_the_cases_dtype_and_a_later_repeat_takes_it_from_the_cache(
        tmp_path, monkeypatch):
    from compilebench.core.case import Case
    from compilebench.kinds import exported, tensorrt

    built = []

    def compile(module, *, ir, arg_inputs, kwarg_inputs, enabled_precisions, min_block_size, cache_built_engines,
                reuse_cached_engines, engine_cache_dir):
        assert ir == "dynamo" and arg_inputs == () and set(kwarg_inputs) == {"x"}
        assert enabled_precisions == {torch.float16} and cache_built_engines and reuse_cached_engines
        if bad:
            raise RuntimeError("Unsupported operator: aten::nonzero\nmore")
        engine = os.path.join(engine_cache_dir, "engine.trt")
        if not os.path.exists(engine):
            os.makedirs(engine_cache_dir, exist_ok=True)
            open(engine, "w").close()
            built.append(engine)
        return module  # the compiled module: keyword inputs in, the named outputs' tuple out

    monkeypatch.setitem(sys.modules, "torch_tensorrt", types.SimpleNamespace(compile=compile))
    class Model(torch.nn.Module):
        def forward(self, x):
            return {"y": x * 2}

    bad, model, inputs = False, Model(), {"x": torch.ones(1, 4)}
    names = exported.output_names(model, inputs)
    case = Case("fault-ok", 1, Variant("tensorrt"), device="cuda", dtype="float16")
    first, second = (EnginePrepared(engine="tensorrt"), EnginePrepared(engine="tensorrt"))
    for prepared in (first, second):
        call = tensorrt.KIND.make(model, inputs, names, str(tmp_path), case, prepared, lambda p: None)
    assert (first.cache, first.built, second.cache, second.built) == ("cold", True, "warm", False)
    assert len(built) == 1 and first.precision == "float16" and first.device == "TensorRT"
    assert set(call(x=torch.ones(1, 4))) == set(names)  # eager's output names, mapped back
    bad = True
    with pytest.raises(exported.Unsupported, match="Torch-TensorRT could not compile the model: .*aten::nonzero"):
        tensorrt.KIND.make(model, inputs, names, str(tmp_path / "other"), case, EnginePrepared(engine="tensorrt"),
                          lambda p: None)


def test_the_openvino_backend_is_registered_without_its_usage_data(tmp_path):
    """The torch.compile backend OpenVINO ships (--backend openvino) is registered as the engine is loaded: its
    telemetry module kept out (the engines' own run: this file's first test)."""
    home, env = _a_users_home(tmp_path)
    probe = ("from compilebench import kinds; kinds.register_backend('openvino')\n"
             "try:\n    import openvino_telemetry\nexcept ImportError:\n    print('kept out')")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert done.stdout.strip() == "kept out", done.stderr
