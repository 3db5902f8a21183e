"""Each way of running a model is one thing (issue 63): a module of kinds/ behind one protocol, listed by one
registry. The plan asks each kind asked for its refusal in one loop; an engine that is only a module and a registry
entry is measured, checked, prepared cold then warm and reported as the others are; no module outside a kind's own
branches on its name; a kind adds no field to a repeat's record."""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import pathlib

import pytest
from conftest import stored

from compilebench import kinds
from compilebench.core.engines import EnginePrepared
from compilebench.core.environment import Environment
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.spec import asked
from compilebench.core.variant import TORCH_WAYS
from compilebench.kinds import exported
from compilebench.kinds.engine import Engine
from compilebench.run import dispatch, refusals

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "src" / "compilebench"


class Wrapped(Engine):
    """A new engine, as its module would declare it: it runs the model through the exporter's wrapper, keeps a file
    per case (its 'export') and says its precision."""

    name, title, extra = "wrapped", "Wrapped Engine", "wrapped"
    distributions = ("torch",)
    code = ("compiled = Wrapped(model)",)

    def make(self, model, inputs, names, folder, case, prepared, enter):
        path, export = exported.kept(folder, case, ".wrapped", model)
        if export:
            open(path, "w").close()
            prepared.built, prepared.export_s = True, 0.001
        prepared.build_s, prepared.cache, prepared.precision = 0.002, "cold" if export else "warm", case.dtype
        prepared.device = "CPU"
        flat = exported.flat(model, names)
        return lambda **given: dict(zip(names, flat(**given)))


class Asking(Wrapped):
    """A kind that says what it was asked, and refuses a device named 'nowhere'."""

    name, title = "asking", "Asking"
    seen: list = []

    def refusal(self, asked):
        self.seen.append(asked)
        return "--variant asking cannot run on nowhere" if asked.device == "nowhere" else None


@pytest.fixture
def registered(monkeypatch):
    """The registry with the test's kinds added, as a module and a line in ALL add one."""
    added = (Wrapped(), Asking())
    monkeypatch.setattr(kinds, "ALL", (*kinds.ALL, *added))
    monkeypatch.setattr(kinds, "_BY_NAME", {**kinds._BY_NAME, **{k.name: k for k in added}})
    Asking.seen = []
    return added


def test_the_registry_lists_every_way_once_torchs_first_each_with_its_title():
    names = kinds.names()
    assert len(set(names)) == len(names) and names[:len(TORCH_WAYS)] == TORCH_WAYS
    assert all(k.title for k in kinds.ALL)
    assert {k.name for k in kinds.engines()} >= {"onnxruntime", "openvino", "tensorrt"}
    assert all(k.keeps_files and k.extra and k.prepares for k in kinds.engines())
    assert kinds.get("max-autotune").version() == importlib.metadata.version("torch")  # torch's ways: torch's
    with pytest.raises(Exception, match="unknown engine 'default'"):
        kinds.get("default", "engine")  # a torch.compile mode is a kind, not an engine


def test_every_quantization_the_settings_name_is_a_transform_that_answers_as_a_kind():
    from compilebench.core import settings

    assert tuple(kinds.QUANTIZATIONS) == settings.QUANTIZATIONS[1:]  # "none" aside, in the settings' order
    for q in kinds.QUANTIZATIONS.values():
        assert q.extra == "quant" and q.code[0].startswith("torchao.quantization.quantize_(model")
        assert q.refusal(kinds.Asked(device=None)) is None  # a device not known yet is not refused
    assert "needs a CUDA device" in kinds.quantization("int4-weight-only").refusal(kinds.Asked(device="cpu"))


def test_an_engine_that_is_a_module_and_a_registry_line_is_measured_and_reported_as_the_others(
        registered, main_here, tmp_path):
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "wrapped", "--iters", "3",
                               "--warmup", "0", "--min-iters", "1", "--device", "cpu", "--format", "md",
                               "--isolation", "inline", "--repeats", "2", "--db", "r.db")
    assert code == 0, err
    (r,) = [r for r in stored(tmp_path / "r.db") if r["case"]["variant"]["mode"] == "wrapped"]
    assert r["status"] == "ok", r["message"]
    cold, warm = r["repeats"]
    assert (cold["engine"]["cache"], cold["engine"]["built"], warm["engine"]["cache"]) == ("cold", True, "warm")
    assert r["engine"]["precision"] == "float32" and r["engine"]["version"]  # the version its distribution says
    assert r["max_rel_err"] == 0.0  # checked against eager: the same math
    assert "Engines: " in out and "wrapped" in out.split("Engines: ")[1]  # the terminal's table
    assert "Wrapped Engine 2." in next(tmp_path.rglob("report.md")).read_text()  # its title and version
    code, out, _ = main_here("run", "--help")
    assert code == 0 and "wrapped" in " ".join(out.split())  # --variant's help lists it


def test_a_name_no_kind_has_is_one_line_with_the_names_allowed_before_anything_runs(main_here, tmp_path):
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "fast", "--device", "cpu")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "unknown variant 'fast'" in err and "onnxruntime" in err and "aot-inductor" in err
    assert not list(tmp_path.iterdir())  # nothing written
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "reduce_overhead", "--device", "cpu")
    assert code == 2 and "did you mean 'reduce-overhead'" in err


def test_the_plan_asks_each_kind_for_its_refusal_at_the_run_and_at_each_target(registered):
    spec = asked(models=("fault-ok",), variants=("eager", "asking"), device="cpu", dtype="float32")
    refusals.check_kinds(spec, {"fault-ok": type("Entry", (), {"kind": "vision"})()})
    (first,) = Asking.seen
    assert (first.device, first.dtype, first.vision, first.generation) == ("cpu", "float32", "fault-ok", None)
    target = dispatch.Target("elsewhere", "m", Environment(device="nowhere", torch="2.13.0"))
    with pytest.raises(Exception, match="--variant asking cannot run on nowhere"):
        refusals.check_devices([], spec, [target])
    assert Asking.seen[-1].torch == "2.13.0"


def _kind_modules() -> dict[str, str]:
    """Each kind's name -> the module that declares it."""
    return {k.name: type(k).__module__ for k in kinds.ALL}


def test_no_module_outside_a_kinds_own_branches_on_its_name():
    """No comparison with a kind's name (`mode == "onnxruntime"`, `v in ("tensorrt", ...)`) outside kinds/ and
    core/variant.py (which declares torch's own ways as a Variant's fields), and no engine's name as a value of its
    own (a table keyed by it) outside its module."""
    names, homes = set(kinds.names()), _kind_modules()
    engines = {k.name for k in kinds.engines()}
    found, declaring = [], ("compilebench.kinds", "compilebench.core.variant")
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and not module.startswith(declaring):
                sides = [node.left, *node.comparators]
                values = [e for s in sides for e in (s.elts if isinstance(s, (ast.Tuple, ast.List, ast.Set)) else [s])]
                if any(isinstance(v, ast.Constant) and v.value in names or isinstance(v, ast.Name)
                       and v.id == "AOT_INDUCTOR" for v in values):
                    found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
            if isinstance(node, ast.Constant) and node.value in engines and homes[node.value] != module:
                found.append(f"{module}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_a_kind_adds_no_field_a_new_engine_keeps_what_it_alone_records():
    fields = {f.name for f in dataclasses.fields(Repeat)} | {f.name for f in dataclasses.fields(Result)}
    assert not fields & set(kinds.names())
    said = {"engine": "executorch", "build_s": 0.1, "cache": "cold", "delegate": "XnnpackBackend"}
    again = EnginePrepared.from_dict(said)
    assert again.engine == "executorch" and again.to_dict()["delegate"] == "XnnpackBackend"  # kept, written back
