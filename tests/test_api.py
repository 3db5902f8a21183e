"""The Python API: the same measurement as `compilebench run`, as Results a notebook can use."""

import pytest
from tiny_factories import make_inputs, make_model

import compilebench
from compilebench.core import spec
from compilebench.core.errors import UserError

FAST = dict(iters=5, warmup=1, backend="eager", repeats=2)


def test_a_factory_model_is_measured_in_fresh_processes_and_comes_back_as_a_dataframe(tmp_path):
    results = compilebench.benchmark("tiny_factories:make_model", inputs="tiny_factories:make_inputs",
                                     batch_sizes=(2,), db=str(tmp_path / "r.db"), **FAST)
    frame = results.to_pandas()
    assert len(frame) == 2 and set(frame.columns) >= {"model", "batch_size", "variant", "status", "mean_ms",
                                                      "ci95_low_ms", "ci95_high_ms", "speedup", "speedup_ci95_low",
                                                      "speedup_ci95_high", "verdict"}
    assert set(frame.status) == {"ok"} and set(frame.batch_size) == {2} and set(frame.repeats) == {2}
    compiled = frame[frame.variant == "default"]
    assert compiled.speedup.notna().all() and compiled.verdict.notna().all()
    assert not frame.inline_model.any()  # rebuilt from its factory by each worker
    assert "| Custom/make_model |" in results.table()
    assert "(batch size: 2)" in results.table()
    again = compilebench.load(str(tmp_path / "r.db"))
    assert len(again) == 2 and again.to_pandas().mean_ms.tolist() == pytest.approx(frame.mean_ms.tolist())
    written = results.report(str(tmp_path / "report"))
    assert any(w.endswith("report.html") for w in written)


def test_an_nn_module_object_is_measured_in_this_process_and_says_so(tmp_path, capsys):
    results = compilebench.benchmark(make_model(), inputs=make_inputs, variants=("eager",), db=str(tmp_path / "r.db"),
                                     iters=5, warmup=1, repeats=1)
    (row,) = results.to_pandas().itertuples()
    assert row.status == "ok" and row.inline_model and row.isolation == "inline"
    assert "measured in this process" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, message", [
    (dict(model="tiny_factories:make_model"), "say how to make its inputs"),
    (dict(model="__main__:make", inputs="__main__:inputs"), "cannot be imported by a worker process"),
    (dict(model="no_such_module:f", inputs="tiny_factories:make_inputs"), "cannot be imported"),
    (dict(model="resnet-50", turbo=True), "unknown setting(s) turbo"),
    (dict(model=3), "model must be a name"),
    (dict(model="resnet-50", variants=("fast",)), "unknown variant 'fast'"),
])
def test_bad_arguments_are_user_errors_before_anything_runs(tmp_path, kwargs, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        compilebench.benchmark(db=str(tmp_path / "r.db"), **kwargs)
    assert not (tmp_path / "r.db").exists()


def test_the_api_runs_a_suite_as_the_command_line_does(monkeypatch):
    """`benchmark(suite=...)` takes the suite's models, batch sizes, variants and timing, as `run --suite` does;
    what is given explicitly wins. The measuring itself is `compilebench run`'s (tested above); here it is caught."""
    from compilebench import api
    from compilebench.core import suites

    seen = []
    monkeypatch.setattr(api, "_benchmark", lambda spec, where, db, quiet, **kw: seen.append(spec))
    compilebench.benchmark(suite="quick")
    compilebench.benchmark(suite="seed-generation", variants=("eager", "default"), model_size="tiny", max_time_s=2.0)
    compilebench.benchmark(suite="quick", interleave=False)
    quick, gen, apart = seen
    s = suites.SUITES["quick"]
    assert (quick.models, quick.batch_sizes, quick.variants) == (s.models, s.batch_sizes, s.variants)
    assert quick.interleave and not apart.interleave and not gen.interleave
    assert (quick.timing.warmup, quick.timing.max_time_s) == (s.warmup, s.max_time_s)
    assert gen.models == ("gemma-2b",) and gen.variants == ("eager", "default") and gen.model_size == "tiny"
    assert gen.timing.max_time_s == 2.0 and not gen.compile.fullgraph  # the suite's fullgraph goes with its own variants
    with pytest.raises(UserError, match="suite"):
        compilebench.benchmark(suite="no-such-suite")
    with pytest.raises(UserError, match="a model, or a suite"):
        compilebench.benchmark()


def _asked(monkeypatch) -> list:
    """The specs and placements benchmark() and shapes() would run, caught before anything runs."""
    from compilebench import api

    seen = []
    monkeypatch.setattr(api, "_benchmark", lambda spec, where, *a, **kw: seen.append((spec, where)))
    return seen


def test_the_command_line_and_the_api_ask_for_the_same_run_by_the_same_names(monkeypatch):
    """One builder (core/spec.asked) for both: the same options give the same RunSpec, and shapes() takes --min-iters
    as benchmark() does (their copies had drifted: shapes() clamped a --min-iters benchmark() refused)."""
    from compilebench import cli
    from compilebench.cli import options, run

    seen = _asked(monkeypatch)
    argv = ["run", "--model", "resnet-50", "--batch-size", "1", "2", "--iters", "5", "--dtype", "bfloat16",
            "--inductor-option", "freezing=True", "--fullgraph", "--max-time", "2"]
    from_cli = run.run_spec(options.parser(cli._commands()).parse_args(argv))
    compilebench.benchmark("resnet-50", batch_sizes=(1, 2), iters=5, dtype="bfloat16",
                           inductor_options={"freezing": True}, fullgraph=True, max_time_s=2.0)
    assert seen[0][0] == from_cli and from_cli.timing.resolve("forward", "cpu").min_iters == 5
    compilebench.shapes("resnet-50", batch_sizes=(1, 2), iters=3)
    served = seen[1][0].timing.resolve("serving", "cpu")
    assert served.min_iters == 3 and served.warmup == 2  # a shape's default warm-up
    for call in (compilebench.benchmark, compilebench.shapes):
        with pytest.raises(UserError, match="--min-iters 5 is more than --iters 3"):
            call("resnet-50", batch_sizes=(1, 2), iters=3, min_iters=5)


@pytest.mark.parametrize("model", ["resnet-50", "smollm2-135m"])
def test_an_option_left_unset_is_the_same_run_from_the_api_and_the_command_line(monkeypatch, model):
    """Issue 51: benchmark() passed iters=300 where `run` passes none, so it timed 300 generate() calls of a causal
    LM where the command line times 20. Nothing given but the model: every option at its default, the same spec."""
    from compilebench import cli
    from compilebench.cli import options, run

    seen = _asked(monkeypatch)
    parser = options.parser(cli._commands())
    compilebench.benchmark(model)
    assert seen[0][0] == run.run_spec(parser.parse_args(["run", "--model", model]))
    compilebench.shapes(model)
    shaped = parser.parse_args(["shapes", "--model", model])
    assert seen[1][0] == run.run_spec(shaped, shapes=True, variants=spec.shape_variants(shaped.mode))
    assert seen[0][0].timing.iters is None  # each timed unit's own default: 300 forward calls, 20 generate() calls


def test_the_api_says_where_cases_run_as_the_command_line_does(monkeypatch, tmp_path):
    """gpus= and executor="ray" are --gpus and --executor ray: the same Placement, refused in the same words."""
    seen = _asked(monkeypatch)
    compilebench.benchmark("resnet-50", gpus=[0, 1])
    compilebench.shapes("resnet-50", batch_sizes=(1, 2), executor="ray", ray_address="auto", cpus_per_case=4)
    assert seen[0][1].gpus == "0,1" and seen[1][1].executor == "ray" and seen[1][1].cpus_per_case == 4
    monkeypatch.undo()
    for kwargs, message in [(dict(gpus="0,1", device="cpu"), "--gpus 0,1 with --device cpu: give one of them"),
                            (dict(executor="ray", profile=True), "--profile keeps its files on this host"),
                            (dict(executor="slurm"), "unknown executor 'slurm'"),
                            (dict(cpus_per_case=2), "--cpus-per-case is for --executor ray")]:
        with pytest.raises(UserError, match=message):
            compilebench.benchmark("resnet-50", db=str(tmp_path / "r.db"), **kwargs)
    assert not (tmp_path / "r.db").exists()


@pytest.mark.slow
def test_a_suite_measured_through_the_api_comes_back_whole(tmp_path):
    results = compilebench.benchmark(suite="quick", model_size="tiny", variants=("eager",), iters=3, warmup=1,
                                     repeats=1, db=str(tmp_path / "r.db"))
    frame = results.to_pandas()
    assert sorted(frame.model) == sorted(("resnet-50", "deeplabv3-mobilenet", "detr"))
    assert set(frame.status) == {"ok"}


def test_a_results_file_from_a_newer_compilebench_is_refused_with_no_side_files_left(tmp_path):
    """Issue 39, 7: every refused open closes its connection, so SQLite's -wal and -shm go with it (the file was
    left with both beside it when benchmark() refused it)."""
    import sqlite3

    from compilebench.storage import schema
    from compilebench.storage.store import Store

    path = tmp_path / "r.db"
    Store.open(str(path)).close()
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(schema.SCHEMA_VERSION + 1),))
    conn.close()
    for refused in (lambda: compilebench.benchmark(make_model(), inputs=make_inputs, variants=("eager",),
                                                   db=str(path), iters=5, warmup=1, repeats=1),
                    lambda: compilebench.load(str(path)),
                    lambda: Store.open(str(path), write=False)):
        with pytest.raises(UserError, match="written by a newer compilebench"):
            refused()
        assert [p.name for p in tmp_path.iterdir()] == ["r.db"]


def test_a_full_disk_is_named_before_anything_runs(tmp_path, monkeypatch):
    """Issue 39, 7: SQLite on a full disk says only "disk I/O error"; the free space is asked first."""
    import collections

    from compilebench.storage import paths

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(paths.shutil, "disk_usage", lambda folder: usage(10 * 2**30, 10 * 2**30 - 4096, 4096))
    with pytest.raises(UserError, match=r"cannot write results file .*r\.db': the disk is full \(4 KiB free; a run "
                                        r"needs at least 16 MiB\)"):
        compilebench.benchmark(make_model(), inputs=make_inputs, variants=("eager",), db=str(tmp_path / "r.db"))
    assert list(tmp_path.iterdir()) == []
