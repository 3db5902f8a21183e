"""compilebench as a user runs it: a separate process, real worker processes, a real results file."""

import json
import os
import re
import sqlite3

import pytest
from conftest import run_cli, stored

from compilebench.storage.store import Store


def rows(db):
    """(model, batch size, variant, status, mean ms, the result as stored with what it derives) of each result."""
    return [(r["case"]["model"], r["case"]["batch_size"], r["case"]["variant"]["mode"], r["status"], r["stats"]["mean"],
             json.dumps(r)) for r in stored(db)]


QUICK = ["--iters", "3", "--warmup", "0", "--min-iters", "1", "--device", "cpu", "--quiet", "--format", "csv"]


@pytest.mark.slow
def test_end_to_end_eager_and_inductor_on_a_tiny_model_profiled_and_traced(tmp_path):
    """The issue's main command on a tiny config, as a user asks why it is (not) faster (--profile, --compile-trace):
    worker processes, a real inductor compile, tlparse's HTML, the report. One run for both: a real compile costs
    this suite's slow step about 30 s a run."""
    as_a_user = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_VEC_ISA_OK"}  # inductor checks it all
    p = run_cli("run", "--model", "resnet-50", "--tiny", "--batch-size", "1", "--variant", "eager", "default",
                "--iters", "20", "--warmup", "2", "--repeats", "2", "--device", "cpu", "--quiet", "--profile",
                "--compile-trace", cwd=tmp_path, env=as_a_user)
    assert p.returncode == 0, p.stderr
    db = tmp_path / "compilebench-results" / "results.db"
    got = rows(db)
    assert sorted((m, b, v, s) for m, b, v, s, _, _ in got) == [("resnet-50", 1, "default", "ok"),
                                                                ("resnet-50", 1, "eager", "ok")]  # in the order drawn
    eager, compiled = sorted((json.loads(r[5]) for r in got), key=lambda r: r["case"]["variant"]["mode"] != "eager")
    for r in (eager, compiled):
        assert [len(rep["samples_ms"]) for rep in r["repeats"]] == [20, 20] and r["stats"]["n"] == 40
        assert r["isolation"] == "process" and r["stats"]["repeats"] == 2
        assert r["env"]["torch"].startswith("2.") and r["machine_id"]
        assert len({rep["process"] for rep in r["repeats"]}) == 2  # two fresh processes
    # the random weights drawn by the run's first process, loaded by every process (measure/weights.py)
    spent = [rep["phases"] for r in (eager, compiled) for rep in r["repeats"]]
    assert sum("making the random weights" in p for p in spent) == 1 and all("build" in p for p in spent)
    # the first repeat compiled from an empty compiler state, the second from what the first left
    assert [rep["compile_cache"] for rep in compiled["repeats"]] == ["cold", "warm"]
    assert [rep["compile_cache_hits"] for rep in compiled["repeats"]][0] == 0 and compiled["repeats"][1]["compile_cache_hits"] >= 1
    assert compiled["cold_compile_s"] > 1 and compiled["warm_compile_s"] < compiled["cold_compile_s"]
    assert compiled["first_call_s"] >= compiled["cold_compile_s"]
    assert compiled["graph_breaks"] == 0 and compiled["recompiles_in_timed_loop"] == 0
    assert compiled["max_rel_err"] < 1e-3
    # the summary (piped: the same as on a terminal), no wider than 100 columns, with the stored means
    assert max(map(len, p.stdout.splitlines())) <= 100, p.stdout
    means = {v: ms for _, _, v, _, ms, _ in got}
    # the row that holds eager's figure: its name may be cut with "~" where wider figures need the columns
    row = next(line for line in p.stdout.splitlines() if f" {means['eager']:.3f} " in line)
    assert "ResNet".startswith(row.split()[0].rstrip("~")), row
    assert f"{means['eager']:.3f}" in row and f"{means['default']:.3f}" in row
    assert f"{means['eager'] / means['default']:.2f}x" in row
    # the guide-format table, with the stored means to 3 decimals: `report --details`, as `run --details` prints it
    p = run_cli("report", str(db), "--details", "--format", "md", "--out", "again", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "(batch size: 1)" in p.stdout
    assert ("| Task/Model | torch 2.13 - no compile, tiny config | torch 2.13 - compile, tiny config | "
            "% improvement (tiny config) | 95% CI (tiny config) | verdict (tiny config) | compile s (tiny config) |"
            ) in p.stdout
    row = next(line for line in p.stdout.splitlines() if line.startswith("| Image Classification/ResNet |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{means['eager']:.3f}" and cells[2] == f"{means['default']:.3f}"
    assert cells[3] == f"{(means['eager'] - means['default']) / means['eager'] * 100:.1f}%"
    _explained(eager, compiled, tmp_path)


def _explained(eager: dict, compiled: dict, tmp_path) -> None:
    """What --profile and --compile-trace added to the run (issue 26): the profile's top names the compiled graph,
    the bytes each moved, tlparse's HTML, the compile's phases, and the report's sections."""
    from compilebench.report import why

    first = compiled["repeats"][0]
    names = [t["name"] for t in first["profile"]["top"]]
    assert any(n.startswith("compiled graph") for n in names), names
    assert compiled["bytes_moved"] > 0 and eager["bytes_moved"] > 0  # inductor's count; the operators' count
    assert first["compile_trace"]["html"] and os.path.exists(first["compile_trace"]["html"])
    assert set(first["compile_phases"]) == {"dynamo_s", "aot_s", "inductor_s", "codegen_s", "cpu_checks_s"}
    # a new process from an empty compiler state: inductor built and loaded its checks of this CPU, within its phase
    assert 0 < first["compile_phases"]["cpu_checks_s"] < first["compile_phases"]["inductor_s"]
    text = next(tmp_path.rglob("report.md")).read_text()
    assert "| of it CPU checks s |" in text and why.CPU_CHECKS in text
    for heading in ("### Where the time goes: Image Classification/ResNet", "### What the compiler did",
                    "### How close to the hardware: forward passes"):
        assert heading in text
    # the CPU's measured peaks, recorded by the run's first worker (eager's or compiled's: the round's order is drawn)
    assert any(rep["host_peaks"].get("stream_gbs") for r in (eager, compiled) for rep in r["repeats"])


def test_each_status_lands_in_the_store_and_the_table_and_the_sweep_goes_on(tmp_path, main_here):
    code, out, err = main_here("run", "--model", "fault-oom", "fault-crash", "--model", "fault-ok", "--variant",
                               "eager", "--repeats", "2", "--iters", "3", "--warmup", "0", "--device", "cpu", "--db",
                               "r.db", "--format", "csv")
    assert code == 0, err
    got = stored(tmp_path / "r.db")
    assert [(r["case"]["model"], r["status"], len(r["repeats"])) for r in got] == [
        ("fault-oom", "oom", 1), ("fault-crash", "crashed", 1), ("fault-ok", "ok", 2)]  # a failed case stops its repeats
    summary = out.splitlines()
    assert ["oom", "OOM"] in [line.split() for line in summary] and ["crash", "crashed"] in [line.split() for line in summary]
    assert "fault-crash b1 eager (repeat 1/2): crashed: worker killed by SIGKILL" in err
    # stderr is not a terminal here: one plain line per finished repeat, no progress bar's carriage returns
    assert "\r" not in err
    assert re.search(r"^\[\d+/\d+\] fault-ok b1 eager \(repeat 2/2\): \d+\.\d{3} ms$", err, re.M), err
    assert re.search(r"^\[\d+/\d+\] fault-oom b1 eager \(repeat 1/2\): oom$", err, re.M), err
    assert "2 were not run because an earlier repeat of the case failed" in err


def test_finished_repeats_are_kept_more_repeats_are_added_and_rerun_measures_again(tmp_path, main_here):
    args = ["run", "--model", "fault-ok", "--variant", "eager", *QUICK, "--db", "r.db", "--isolation", "inline"]
    assert main_here(*args, "--repeats", "2")[0] == 0
    code, _, err = main_here(*args, "--repeats", "2")
    assert code == 0 and "0 repeat(s) measured" in err and "2 stored earlier were kept" in err
    code, _, err = main_here(*args, "--repeats", "3")  # an inconclusive verdict's remedy: more repeats
    assert code == 0 and "1 repeat(s) measured" in err
    (r,) = stored(tmp_path / "r.db")
    assert [rep["index"] for rep in r["repeats"]] == [1, 2, 3] and r["stats"]["repeats"] == 3
    assert main_here(*args, "--rerun", "--repeats", "1")[0] == 0
    assert len(rows(tmp_path / "r.db")) == 2


def test_a_budget_never_ends_a_repeat_before_min_iters(tmp_path, main_here):
    # issue 13: --max-time once ended a timed loop after 2 samples
    code, out, err = main_here("run", "--model", "fault-slow", "--variant", "eager", "--max-time", "0.001", "--warmup",
                               "0", "--repeats", "2", "--device", "cpu", "--isolation", "inline", "--db", "r.db",
                               "--quiet", "--format", "csv", "--details")
    assert code == 0, err
    (r,) = stored(tmp_path / "r.db")
    assert [len(rep["samples_ms"]) for rep in r["repeats"]] == [10, 10]
    assert all(rep["min_iters"] == 10 and rep["stopped_early"] for rep in r["repeats"])
    # R and N in the details table, with why N is short; the status in words a user knows (issue 39). The flags
    # column beside the status is left out: a loaded machine may flag the slow model's samples noisy
    assert "| no compile | ok | " in out and "| 2 | 10/10 (--max-time) |" in out and "(budget)" not in out


def test_sync_each_call_is_part_of_the_case_and_says_what_it_timed(tmp_path, main_here):
    args = ["run", "--model", "fault-ok", "--variant", "eager", *QUICK, "--db", "r.db", "--isolation", "inline",
            "--repeats", "1"]
    assert main_here(*args)[0] == 0
    code, out, err = main_here(*args, "--sync-each-call", "--warmup-time", "0.01", "--details")
    assert code == 0, err
    piped, synced = stored(tmp_path / "r.db")  # a second case, not a resume of the first
    assert piped["case_key"] != synced["case_key"] and synced["case"]["sync_each_call"]
    assert '"sync_each_call"' not in piped["case_key"]  # keys written before the setting existed still match
    assert (piped["repeats"][0]["timing"], synced["repeats"][0]["timing"]) == ("throughput", "latency")
    with Store.open(str(tmp_path / "r.db"), write=False) as store:
        assert [r.timing.warmup_s for r in store.results()] == [0.0, 0.01]  # as each one's run resolved it
    assert "latency (each call synced)" in out


BAD_INPUTS = [
    (["--model", "vitt"], "'vitt'; did you mean 'vit'"),
    (["--model", "vit", "--variant", "turbo"], "unknown variant 'turbo'"),
    (["--model", "vit", "--batch-size", "0"], "--batch-size must be an integer >= 1, got 0"),
    (["--model", "vit", "--batch-size", "-2"], "--batch-size must be an integer >= 1, got -2"),
    (["--model", "vit", "--batch-size", "two"], "argument --batch-size: invalid int value: 'two'"),
    (["--model", "vit", "--iters", "0"], "--iters must be an integer >= 1"),
    (["--model", "vit", "--warmup", "-1"], "--warmup must be an integer >= 0, got -1"),
    (["--model", "vit", "--repeats", "0"], "--repeats must be an integer from 1 to 100"),
    (["--model", "vit", "--min-iters", "0"], "--min-iters must be an integer >= 1"),
    (["--model", "vit", "--max-time", "-3"], "--max-time must be a positive, finite number"),
    (["--model", "vit", "--max-time", "nan"], "--max-time must be a positive, finite number"),
    (["--model", "vit", "--warmup-time", "-1"], "--warmup-time must be a finite number of seconds >= 0, got -1"),
    (["--model", "vit", "--timeout", "0"], "--timeout must be a positive, finite number"),
    (["--model", "vit", "--min-effect", "150%"], "--min-effect must be from 0% to below 100%"),
    (["--model", "vit", "--min-effect", "lots"], "expected a percentage such as 2%"),
    (["--model", "gpt2", "--new-tokens", "0"], "--new-tokens must be an integer >= 1"),
    (["--model", "gpt2", "--prompt-len", "-5"], "--prompt-len must be an integer >= 1"),
    (["--model", "vit", "--prompt-len", "16"], "--prompt-len is for text-generation models"),
    (["--model", "vit", "--variant", "eager-static-cache"], "--variant eager-static-cache is for text generation; vit does not generate text"),
    (["--model", "vit", "--cpus-per-case", "0", "--executor", "ray"], "--cpus-per-case must be an integer >= 1"),
    (["--model", "vit", "--weights", "pretrained"], "--weights pretrained: cannot load 'google/vit-base-patch16-224'"),
    (["--model", "vit", "--inductor-option", "freezng=True"], "no inductor option 'freezng'; closest: freezing"),
    (["--model", "vit", "--inductor-option", "freezing"], "expected KEY=VALUE"),
    (["--model", "vit", "--inductor-option", "freezing=3.5"], "inductor's freezing takes a bool"),
    (["--model", "vit", "--freezing", "--backend", "eager"], "--inductor-option configures inductor"),
    (["--model", "vit", "--device", "cuda"], "CUDA is not available on this machine"),
    (["--model", "vit", "--device", "tpu"], "--device must be cpu, cuda or cuda:N"),
    (["--model", "vit", "--backend", "inductr"], "unknown backend 'inductr'; did you mean 'inductor'"),
    (["--model", "vit", "--dtype", "int3"], "unknown dtype 'int3'"),
    (["--model", "vit", "--format", "md,pdf"], "unknown report format 'pdf'"),
    (["--model", "vit", "--variant", "default", "--interleave"], "--interleave needs at least two variants"),
    (["--model", "vit", "--dtype", "float32", "--autocast"], "--autocast needs --dtype float16 or bfloat16"),
    (["--model", "vit", "--batchsize", "4"],
     "unrecognized arguments: --batchsize 4; did you mean --batch-size? (see `compilebench run --help`)"),
]


@pytest.mark.parametrize("args, message", BAD_INPUTS, ids=[" ".join(a) or "nothing" for a, _ in BAD_INPUTS])
def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, main_here, args, message):
    if "cuda" in args and __import__("torch").cuda.is_available():
        pytest.skip("this machine has CUDA")
    code, out, err = main_here("run", *args, "--db", "out/r.db")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err, err
    assert out == ""
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv, message", [
    (["report", "r.db", "--batch-size", "1"], "unrecognized arguments: --batch-size 1 (see `compilebench report --help`)"),
    (["history", "r.db", "--itrs=5"], "unrecognized arguments: --itrs=5 (see `compilebench history --help`)"),
    (["--bogus"], "the following arguments are required: COMMAND (see `compilebench --help`)"),
])
def test_an_unknown_option_is_refused_by_the_command_it_was_given_to(tmp_path, main_here, argv, message):
    """argparse refuses extra arguments from the top parser, whose --help lists no command's options: the command
    given names its own --help, and its options spelt most like the unknown one where there are any."""
    code, out, err = main_here(*argv)
    assert (code, out, err) == (2, "", f"error: {message}\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["--model", "vitt"], ["--model", "vit", "--batch-size", "two"]])
def test_a_bad_input_exits_the_process_with_2_and_one_line(tmp_path, args):
    p = run_cli("run", *args, "--db", "out/r.db", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("error: ") and p.stdout == ""
    assert list(tmp_path.iterdir()) == []


def test_unwritable_db_path_is_refused(tmp_path):
    (tmp_path / "afile").write_text("x")
    p = run_cli("run", "--model", "vit", "--device", "cpu", "--db", "afile/r.db", cwd=tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a writable directory" in p.stderr


def test_a_file_that_is_not_a_results_db_is_refused_and_untouched(tmp_path, main_here):
    (tmp_path / "notes.db").write_text("my notes\n" * 50)
    code, _, err = main_here("run", "--model", "vit", "--device", "cpu", "--db", "notes.db")
    assert code == 2 and "not a compilebench results file" in err and err.count("\n") == 1
    assert (tmp_path / "notes.db").read_text() == "my notes\n" * 50


def test_env_prints_the_fingerprint(tmp_path):
    p = run_cli("env", "--device", "cpu", "--json", cwd=tmp_path)
    assert p.returncode == 0
    env = json.loads(p.stdout)
    for key in ("device_name", "torch", "transformers", "python", "cpu", "torch_threads", "float32_matmul_precision"):
        assert env[key] is not None


def test_models_lists_the_zoo(main_here):
    code, out, _ = main_here("models")  # in this process: the meta-device builds are the cost, not an interpreter
    assert code == 0
    # the causal LMs, with their parameters and default prompt
    assert "gemma-2b" in out and "2.51B" in out and "prompt 128 tokens" in out
    assert "smollm2-135m" in out and "134.52M" in out
    assert re.search(r"resnet-50 +Image Classification/ResNet +image-classification +microsoft/resnet-50 +25\.56M +pixel_values 1x3x224x224", out)
    assert re.search(r"detr +Object Detection/DETR .* 41\.52M +pixel_mask 1x800x1066, pixel_values 1x3x800x1066", out)
    assert re.search(r"owlvit .* 153\.23M +pixel_values 1x3x768x768, input_ids 2x16, attention_mask 2x16", out)


def test_flops_are_counted_once_per_model_and_settings_whichever_variants_follow(main_here, monkeypatch, tmp_path):
    """Counting FLOPs runs the eager model under a slow dispatch mode (8 s for DETR on 2 cores): once is enough."""
    from compilebench.run.executors import InlineExecutor

    jobs = []
    run = InlineExecutor.run

    def recording(self, job, env, on_phase):
        jobs.append((job.cases[0].variant.mode, job.repeat, job.count_flops))
        return run(self, job, env, on_phase)

    monkeypatch.setattr(InlineExecutor, "run", recording)
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "default", "--backend", "eager",
                               *QUICK, "--repeats", "2", "--isolation", "inline", "--db", "r.db")
    assert code == 0, err
    assert [j for j in jobs if j[2]] == [("eager", 1, True)], jobs  # the first measurement counts, no other
    flops = [r["flops"] for r in stored(tmp_path / "r.db")]
    assert len(flops) == 2 and flops[0] == flops[1] and flops[0] > 0


def test_a_failure_of_the_machine_is_one_line_and_exit_1(tmp_path, monkeypatch, capsys):
    """Issue 27.4: a full disk before the run is the environment's failure (exit 1, as mid-run), not bad input."""
    from compilebench import cli as climod
    from compilebench.storage import store as storemod

    Store = storemod.Store
    Store.open(str(tmp_path / "r.db")).close()

    def full(*a, **kw):
        raise sqlite3.OperationalError("database or disk is full")

    real = sqlite3.connect
    monkeypatch.setattr(storemod.sqlite3, "connect", lambda *a, **kw: full() if kw.get("timeout") else real(*a, **kw))
    code = climod.main(["run", "--model", "fault-ok", "--variant", "eager", "--device", "cpu", "--isolation", "inline",
                        "--db", str(tmp_path / "r.db"), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "the disk is full" in err, err
    assert "not a compilebench results file" not in err


def test_list_options_given_twice_add_up_and_single_options_are_refused():
    """Issue 27.7: a value the user typed is never dropped silently."""
    from compilebench.cli import _commands, options

    p = options.parser(_commands())
    args = p.parse_args(["run", "--model", "vit", "--batch-size", "1", "--batch-size", "2", "--variant", "eager",
                         "--variant", "default", "--model", "beit"])
    assert (args.models, args.batch_sizes, args.variants) == (["vit", "beit"], [1, 2], ["eager", "default"])
    for argv in (["run", "--model", "vit", "--iters", "20", "--iters", "30"],
                 ["run", "--model", "vit", "--dtype", "float32", "--dtype", "bfloat16"],
                 ["tune", "--model", "vit", "--model", "beit"],
                 ["report", "--out", "a", "--out", "b"]):
        with pytest.raises(SystemExit) as exit_:
            p.parse_args(argv)
        assert exit_.value.code == 2
