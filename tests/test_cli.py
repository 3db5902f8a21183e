"""compilebench as a user runs it: a separate process, real worker processes, a real results file."""

import json
import re
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import run_cli


def rows(db):
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT model, batch_size, variant, status, mean_ms, data FROM results ORDER BY rowid").fetchall()
    finally:
        conn.close()


@pytest.mark.slow
def test_end_to_end_eager_and_inductor_on_a_tiny_model(tmp_path):
    """The issue's main command on a tiny config: the one real inductor compile of the suite."""
    p = run_cli("run", "--model", "resnet-50", "--tiny", "--batch-size", "1", "--variant", "eager", "default",
                "--iters", "20", "--warmup", "2", "--device", "cpu", "--quiet", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    db = tmp_path / "compilebench-results" / "results.db"
    got = rows(db)
    assert [(m, b, v, s) for m, b, v, s, _, _ in got] == [("resnet-50", 1, "eager", "ok"), ("resnet-50", 1, "default", "ok")]
    eager, compiled = (json.loads(r[5]) for r in got)
    for r in (eager, compiled):
        assert len(r["samples_ms"]) == 20 and r["stats"]["n"] == 20
        assert r["isolation"] == "process" and r["compile_cache"] == "cold"
        assert r["env"]["torch"].startswith("2.") and r["machine_id"]
    assert compiled["compile_s"] > 1 and compiled["first_call_s"] >= compiled["compile_s"]
    assert compiled["graph_breaks"] == 0 and compiled["recompiles_in_timed_loop"] == 0
    assert compiled["max_rel_err"] < 1e-3
    # the guide-format table, with the stored means to 3 decimals
    assert "(batch size: 1)" in p.stdout
    assert ("| Task/Model | torch 2.13 - no compile, tiny config | torch 2.13 - compile, tiny config | "
            "% improvement (tiny config) | compile s (tiny config) |") in p.stdout
    row = next(line for line in p.stdout.splitlines() if line.startswith("| Image Classification/ResNet |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{got[0][4]:.3f}" and cells[2] == f"{got[1][4]:.3f}"
    assert cells[3] == f"{(got[0][4] - got[1][4]) / got[0][4] * 100:.1f}%"


def test_each_status_lands_in_the_store_and_the_table_and_the_sweep_goes_on(tmp_path):
    p = run_cli("run", "--model", "fault-oom", "--model", "fault-crash", "--model", "fault-ok", "--variant", "eager",
                "--iters", "3", "--warmup", "0", "--device", "cpu", "--db", "r.db", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert [(m, s) for m, _, _, s, _, _ in rows(tmp_path / "r.db")] == [
        ("fault-oom", "oom"), ("fault-crash", "crashed"), ("fault-ok", "ok")]
    assert "| Test/oom | OOM |" in p.stdout
    assert "| Test/crash | crashed |" in p.stdout
    assert "fault-crash b1 eager: crashed: worker killed by SIGKILL" in p.stderr


def test_finished_cases_are_skipped_and_rerun_measures_again(tmp_path):
    args = ["run", "--model", "fault-ok", "--variant", "eager", "--iters", "3", "--warmup", "0", "--device", "cpu",
            "--db", "r.db", "--isolation", "inline", "--quiet"]
    assert run_cli(*args, cwd=tmp_path).returncode == 0
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0 and "1 case(s) already there were skipped" in again.stderr
    assert len(rows(tmp_path / "r.db")) == 1
    assert run_cli(*args, "--rerun", cwd=tmp_path).returncode == 0
    assert len(rows(tmp_path / "r.db")) == 2


def test_ctrl_c_keeps_what_finished_and_the_next_run_resumes(tmp_path):
    db = tmp_path / "r.db"
    args = ["run", "--model", "fault-slow", "--batch-size", "1", "2", "3", "--variant", "eager", "--iters", "10",
            "--warmup", "0", "--device", "cpu", "--db", "r.db", "--quiet"]
    # A shell's background job starts with SIGINT ignored, and Python keeps it so: give the driver the default,
    # as a terminal would, whatever started this test.
    proc = subprocess.Popen([sys.executable, "-m", "compilebench", *args], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 120
    while time.time() < deadline and not (db.exists() and len(rows(db)) >= 1):
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)  # while the second case runs
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "resume" in err
    kept = rows(db)
    assert 1 <= len(kept) < 3 and all(r[3] == "ok" for r in kept)

    resumed = run_cli(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    final = rows(db)
    assert sorted(r[1] for r in final) == [1, 2, 3]  # every case once: nothing lost, nothing duplicated
    assert final[: len(kept)] == kept


BAD_INPUTS = [
    (["--model", "vitt"], "'vitt'; did you mean 'vit'"),
    (["--model", "vit", "--variant", "turbo"], "unknown variant 'turbo'"),
    (["--model", "vit", "--batch-size", "0"], "--batch-size must be a positive integer, got 0"),
    (["--model", "vit", "--batch-size", "-2"], "--batch-size must be a positive integer, got -2"),
    (["--model", "vit", "--batch-size", "two"], "argument --batch-size: invalid int value: 'two'"),
    (["--model", "vit", "--iters", "0"], "--iters must be an integer >= 1"),
    (["--model", "vit", "--device", "cuda"], "CUDA is not available on this machine"),
    (["--model", "vit", "--device", "tpu"], "--device must be cpu, cuda or cuda:N"),
    (["--model", "vit", "--backend", "inductr"], "unknown backend 'inductr'; did you mean 'inductor'"),
    (["--model", "vit", "--dtype", "int3"], "unknown dtype 'int3'"),
    (["--model", "vit", "--format", "md,pdf"], "unknown report format 'pdf'"),
    (["--model", "vit", "--variant", "default", "--interleave"], "--interleave needs at least two variants"),
    (["--model", "vit", "--dtype", "float32", "--autocast"], "--autocast needs --dtype float16 or bfloat16"),
]


@pytest.mark.parametrize("args, message", BAD_INPUTS, ids=[" ".join(a) or "nothing" for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, args, message):
    if "cuda" in args and __import__("torch").cuda.is_available():
        pytest.skip("this machine has CUDA")
    p = run_cli("run", *args, "--db", "out/r.db", cwd=tmp_path)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and p.stderr.startswith("error: ") and message in p.stderr, p.stderr
    assert p.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_unwritable_db_path_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    p = run_cli("run", "--model", "vit", "--device", "cpu", "--db", "afile/r.db", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a writable directory" in p.stderr


def test_a_file_that_is_not_a_results_db_is_refused_and_untouched(tmp_path):
    (tmp_path / "notes.db").write_text("my notes\n" * 50)
    p = run_cli("run", "--model", "vit", "--device", "cpu", "--db", "notes.db", cwd=tmp_path)
    assert p.returncode == 2 and "not a compilebench results file" in p.stderr and p.stderr.count("\n") == 1
    assert (tmp_path / "notes.db").read_text() == "my notes\n" * 50


def test_env_prints_the_fingerprint(tmp_path):
    p = run_cli("env", "--device", "cpu", "--json", cwd=tmp_path)
    assert p.returncode == 0
    env = json.loads(p.stdout)
    for key in ("device_name", "torch", "transformers", "python", "cpu", "torch_threads", "float32_matmul_precision"):
        assert env[key] is not None


def test_models_lists_the_zoo(tmp_path):
    p = run_cli("models", cwd=tmp_path)
    assert p.returncode == 0
    assert re.search(r"resnet-50 +Image Classification/ResNet +image-classification +microsoft/resnet-50 +25\.56M +pixel_values 1x3x224x224", p.stdout)
    assert re.search(r"detr +Object Detection/DETR .* 41\.52M +pixel_mask 1x800x1066, pixel_values 1x3x800x1066", p.stdout)
    assert re.search(r"owlvit .* 153\.23M +pixel_values 1x3x768x768, input_ids 2x16, attention_mask 2x16", p.stdout)
