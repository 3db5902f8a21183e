"""ExecuTorch as an engine (issue 63): a module of kinds/ and a registry line. Exported once per case and lowered
to XNNPACK by the repeat that finds no program (its cold cost), loaded by every repeat (warm where the program was
left), checked against eager, its precision, version and what XNNPACK took recorded; a model it cannot lower is a
result with ExecuTorch's reason; what it cannot run is refused in one line before anything is written. One real
export and lowering of the fault plugin's one-convolution model (seconds)."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest
import torch
from conftest import stored

RUN = ["run", "--variant", "eager", "executorch", "--iters", "3", "--warmup", "0", "--min-iters", "1",
       "--device", "cpu", "--format", "md", "--isolation", "inline", "--db", "r.db"]


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
def test_executorch_is_lowered_to_xnnpack_once_loaded_by_each_repeat_checked_and_reported(main_here, tmp_path):
    code, out, err = main_here(*RUN, "--model", "fault-ok", "fault-break", "--repeats", "2")
    assert code == 0, err
    found = {(r["case"]["model"], r["case"]["variant"]["mode"]): r for r in stored(tmp_path / "r.db")}
    r = found[("fault-ok", "executorch")]
    assert r["status"] == "ok", r["message"]
    cold, warm = (rep["engine"] for rep in r["repeats"])
    assert cold["built"] and cold["cache"] == "cold" and cold["export_s"] > 0 and cold["model_bytes"] > 0
    assert warm["cache"] == "warm" and "export_s" not in warm  # it loaded the program the first left
    assert cold["xnnpack_partitions"] >= 1 and cold["portable_ops"] == 0 and cold["device"] == "XNNPACK"
    assert cold["threads"] == warm["threads"] == torch.get_num_threads()  # the run's, as XNNPACK says back
    assert r["engine"]["precision"] == "float32" and r["engine"]["version"] == importlib.metadata.version("executorch")
    assert r["max_rel_err"] < 1e-4 and r["sensitivity_rel_err"] is not None  # checked against eager
    broken = found[("fault-break", "executorch")]  # a shape that depends on the data: torch.export refuses it
    assert broken["status"] == "unsupported" and broken["message"].startswith("ExecuTorch could not lower the model")
    assert found[("fault-break", "eager")]["status"] == "ok"  # the sweep went on
    assert "executorch" in out.split("Engines: ")[1]
    assert "ExecuTorch " + importlib.metadata.version("executorch") in next(tmp_path.rglob("report.md")).read_text()


@pytest.mark.parametrize("args, said", [
    (["--model", "fault-ok", "--dtype", "bfloat16"], "--variant executorch computes in float32; --dtype bfloat16"),
    (["--model", "smollm2-135m", "--tiny"], "--variant executorch runs the model's forward pass; smollm2-135m"),
    (["--model", "fault-ok", "--interleave"], "leave out --interleave"),
    (["--model", "fault-ok", "--executor", "ray"], "--variant executorch keeps its files on this host"),
])
def test_what_executorch_cannot_run_is_refused_in_one_line_before_anything_is_written(main_here, tmp_path, args, said):
    code, _, err = main_here(*RUN, *args)
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "r.db").exists()


def test_without_executorch_installed_the_line_names_its_extra(main_here, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "executorch" else real(name, *a))
    code, _, err = main_here(*RUN, "--model", "fault-ok")
    assert code == 2 and "pip install compilebench[executorch]" in err and len(err.strip().splitlines()) == 1
