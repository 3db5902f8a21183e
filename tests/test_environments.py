"""Issue 23, 1: environments side by side in one run (`--env NAME=PATH`, `--env-set NAME KEY=VALUE`): declared and
refused up front, every case measured under each with the repeats alternating, results that say which environment
they ran under, and the report, `compare` and `check` reading one run's environments against each other."""

from __future__ import annotations

import os
import subprocess
import sys
import venv

import fakeresults as fr
import pytest
from conftest import stored

from compilebench.core.case import Case
from compilebench.core.errors import UserError
from compilebench.core.interpreter import Interpreter
from compilebench.core.spec import RunSpec
from compilebench.core.variant import Variant
from compilebench.report import check, compare, flat, markdown, tables
from compilebench.report.view import View
from compilebench.run import dispatch, interpreters, rounds, sweep

PY = sys.executable


def test_environments_are_declared_with_their_variables_in_the_order_given(tmp_path):
    folder = tmp_path / "venv"
    (folder / "bin").mkdir(parents=True)
    os.symlink(PY, folder / "bin" / "python")
    declared = interpreters.declare([f"stable={PY}", f"nightly={folder}"],
                                    [["nightly", "TORCHINDUCTOR_FREEZING=1"], ["nightly", "OMP_NUM_THREADS=1"]])
    assert [e.name for e in declared] == ["stable", "nightly"]
    assert declared[0] == Interpreter("stable", os.path.abspath(PY))
    # a virtual environment's own bin/python, not the interpreter its link points to: that is what its packages need
    assert declared[1].python == str(folder / "bin" / "python")
    assert declared[1].set == (("OMP_NUM_THREADS", "1"), ("TORCHINDUCTOR_FREEZING", "1"))
    assert Interpreter.from_dict(declared[1].to_dict()) == declared[1]


@pytest.mark.parametrize("envs, sets, says", [
    (["stable"], [], "expected NAME=PATH"),
    (["=python"], [], "a name is 1-40 letters"),
    (["-x=python"], [], "a name is 1-40 letters"),
    ([f"a={PY}", f"a={PY}"], [], "named twice"),
    (["a=/no/such/python"], [], "no such file or folder"),
    ([f"a={os.path.dirname(__file__)}"], [], "a folder without bin/python"),
    ([f"a={__file__}"], [], "not executable"),
    ([f"a={PY}"], [["b", "X=1"]], "no environment 'b' (declared: a)"),
    ([], [["b", "X=1"]], "declared: none: declare one with --env NAME=PATH first"),
    ([f"a={PY}"], [["a", "X"]], "expected KEY=VALUE"),
    ([f"a={PY}"], [["a", "1X=2"]], "expected KEY=VALUE"),
    ([f"a={PY}"], [["a", "PYTHONPATH=/x"]], "compilebench puts its own code there"),
    ([f"a={PY}"], [["a", "CUDA_VISIBLE_DEVICES=1"]], "--device or --gpus"),
    ([f"a={PY}"], [["a", "X=1"], ["a", "X=2"]], "set twice"),
])
def test_a_declaration_that_cannot_work_is_one_clear_line(envs, sets, says):
    with pytest.raises(UserError) as caught:
        interpreters.declare(envs, sets)
    assert says in str(caught.value) and "\n" not in str(caught.value)


def _probe_answer(**answer) -> str:
    import json

    return "some warning\n" + json.dumps({"python": "3.12.1", "executable": PY, "torch": "2.13.0",
                                          "transformers": "5.0.0", **answer})


@pytest.mark.parametrize("answer, says", [
    ({"python": "3.8.10"}, "Python 3.8.10 is too old for compilebench's worker (it needs 3.10 or newer)"),
    ({"missing": "transformers", "why": "ModuleNotFoundError: No module named 'transformers'"},
     "install it: /opt/n/bin/python -m pip install transformers"),
    ({"missing": "PIL", "why": "ModuleNotFoundError: No module named 'PIL'"}, "pip install pillow"),
    ({"missing": "compilebench", "why": "SyntaxError: bad"}, "install compilebench's requirements there"),
    ({"torch": "2.1.0+cu121"}, "torch 2.1.0+cu121 is older than compilebench supports (2.4 or newer"),
])
def test_an_environment_that_cannot_run_the_worker_is_refused_saying_what_it_lacks(answer, says):
    e = Interpreter("n", "/opt/n/bin/python")
    with pytest.raises(UserError) as caught:
        interpreters.refusal_or_fingerprint(e, 0, _probe_answer(**answer), "")
    assert str(caught.value).startswith("--env n=/opt/n/bin/python: ") and says in str(caught.value)


def test_a_probe_that_is_not_python_is_refused_and_a_good_one_gives_the_fingerprint():
    e = Interpreter("n", "/bin/true")
    with pytest.raises(UserError, match="not a Python interpreter compilebench can use"):
        interpreters.refusal_or_fingerprint(e, 0, "", "")
    got = interpreters.refusal_or_fingerprint(e, 0, _probe_answer(torch="2.14.0.dev20261101", triton="3.5.0"), "")
    assert got == {"python": "3.12.1", "torch": "2.14.0.dev20261101", "transformers": "5.0.0", "triton": "3.5.0"}


def test_a_virtual_environment_without_torch_is_refused_before_anything_is_written(tmp_path, main_here):
    """A real interpreter, a bare virtual environment's: the probe runs it and it cannot import torch."""
    venv.create(tmp_path / "bare", with_pip=False)
    code, out, err = main_here("run", "--model", "resnet-50", "--tiny", "--env", f"here={PY}",
                               "--env", f"bare={tmp_path / 'bare'}", "--db", tmp_path / "r.db")
    assert code == 2 and out == ""
    assert err.startswith(f"error: --env bare={tmp_path / 'bare' / 'bin' / 'python'}: cannot run compilebench's "
                          "worker, ModuleNotFoundError: No module named 'torch'")
    assert "-m pip install torch" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.db").exists()


def test_the_probe_runs_this_compilebench_in_the_environment_with_its_variables(tmp_path):
    """The environment's interpreter imports this compilebench (from the private folder first on its PYTHONPATH,
    not an installed copy) and sees its --env-set variables."""
    e = interpreters.declare([f"a={PY}"], [["a", "COMPILEBENCH_PROBE_TEST=42"]])[0]
    out = subprocess.run([e.python, "-c", "import compilebench, os; print(compilebench.__file__); "
                          "print(os.environ['COMPILEBENCH_PROBE_TEST'])"], env={**os.environ, **interpreters.variables(e)},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [os.path.join(interpreters.own_code(), "compilebench", "__init__.py"), "42"]
    assert os.path.realpath(out[0]) == os.path.realpath(interpreters.__file__.replace("run/interpreters.py", "__init__.py"))


def test_a_run_measures_every_case_under_every_environment_each_with_a_key_of_its_own():
    envs = (Interpreter("a", PY), Interpreter("b", PY))
    cases = RunSpec(models=("resnet-50",), variants=("eager", "default"), device="cpu", environments=envs).cases()
    assert [(c.variant.name, c.environment) for c in cases] == [("eager", "a"), ("eager", "b"), ("default", "a"),
                                                                ("default", "b")]
    assert len({c.key() for c in cases}) == 4
    plain = Case("resnet-50", 1, Variant(), device="cpu")
    assert '"environment"' not in plain.key()  # keys written before environments existed still match


def test_environments_and_inline_isolation_are_refused_together():
    with pytest.raises(UserError, match="--isolation inline runs them in this one"):
        RunSpec(models=("resnet-50",), isolation="inline", environments=(Interpreter("a", PY),))


class _Store:
    """Nothing stored yet."""

    def latest(self, key, resume_id):
        return None


def test_the_repeats_of_a_case_alternate_between_environments():
    envs = (Interpreter("a", PY), Interpreter("b", PY))
    spec = RunSpec(models=("resnet-50",), variants=("eager", "default"), device="cpu", repeats=3, environments=envs)
    targets = [dispatch.Target(f"cpu [{e.name}]", f"m {e.name}", {}, environment=e) for e in envs]
    units = rounds.schedule(spec, spec.cases(), _Store(), targets, sweep.SweepOutcome()).units
    order = [(u.repeat, u.target.environment.name, u.cases[0].variant.name) for u in units]
    planned = [(e, v) for e in "ab" for v in ("eager", "default")]
    by_round = [[(e, v) for r, e, v in order if r == i] for i in (1, 2, 3)]
    assert all(sorted(got) == sorted(planned) for got in by_round)  # every environment's variants, each round
    assert by_round[1] == by_round[0][::-1]  # drawn for round 1, reversed in round 2
    assert all(u.cases[0].environment == u.target.environment.name for u in units)


def _two_environments(b_ms: float, run: str = "run-1") -> list:
    out = []
    for env, scale in (("stable", 1.0), ("nightly", b_ms / 10.0)):
        out += [fr.result("vit", 1, "eager", 10.0 * scale, env=fr.CPU, environment=env, run=run,
                          processes=[10.0 * scale * x for x in (0.995, 1.0, 1.005)]),
                fr.result("vit", 1, "default", 5.0 * scale, env=fr.CPU, environment=env, run=run, compile_s=20.0,
                          processes=[5.0 * scale * x for x in (0.995, 1.0, 1.005)])]
    return out


def test_the_report_has_the_torch_version_table_of_one_runs_environments():
    view = View(_two_environments(13.0))
    (table,) = tables.version_tables(view)
    text = markdown.table(table)
    assert table.title.endswith("torch versions and environments")
    assert "torch 2.13 [nightly] - no compile" in text and "torch 2.13 [stable] - compile" in text
    header = [h for h in table.header if h.startswith("% faster")]
    assert header == ["% faster torch 2.13 [stable] vs 2.13 [nightly], no compile",
                      "% faster torch 2.13 [stable] vs 2.13 [nightly], compile"]
    row = dict(zip(table.header, table.rows[0]))
    # one run: no drift widens it; nightly takes 13 ms where stable takes 10: stable takes 23.1% less time
    assert row[header[0]] == "23.1% (faster)" and "across" not in row[header[0]]
    assert row["95% CI torch 2.13 [stable] vs 2.13 [nightly], no compile"]
    assert not view.across_runs
    rows = flat.rows(view)
    assert {(r["environment"], r["variant"]) for r in rows} == {(e, v) for e in ("stable", "nightly")
                                                              for v in ("eager", "default")}


def test_compare_and_check_read_two_environments_of_one_run():
    results = _two_environments(13.0)
    stable = compare.select(results, None, "stable")
    nightly = compare.select(results, None, "nightly")
    text = markdown.table(compare.compare(stable, nightly, "r.db [stable]", "r.db [nightly]"))
    assert "| 1.300 |" in text and "| slower |" in text and "across runs" not in text
    lines, moved = check.check(stable, nightly)
    assert moved is None  # one run: no drift to allow for
    latency = [l for l in lines if l.metric == "latency ms"]
    assert latency and all(l.regression and l.verdict == "slower" for l in latency)
    lines, _ = check.check(stable, compare.select(_two_environments(10.0), None, "nightly"))
    assert not any(l.regression for l in lines)


def test_a_file_of_several_environments_is_refused_unless_one_is_picked():
    with pytest.raises(UserError, match=r"holds the same cases under 2 environments \(nightly, stable\): pick one "
                                        r"with --env-a NAME"):
        compare.compare(_two_environments(10.0), _two_environments(10.0), "a.db", "b.db")


def test_compare_and_check_pick_environments_from_the_command_line(tmp_path, main_here):
    from compilebench.storage.store import Store

    db = tmp_path / "r.db"
    with Store.open(str(db)) as store:
        for r in _two_environments(13.0):
            store.add(r)
    code, out, err = main_here("compare", db, "--env-a", "stable", "--env-b", "nightly")
    assert code == 0 and "| slower |" in out and "environment nightly" in out
    code, out, err = main_here("check", db, "--baseline-env", "stable")
    assert code == 1 and "r.db [nightly] against" in out and "REGRESSION" in out and "No verdict compared" in out
    code, out, err = main_here("check", db, "--baseline-env", "nightly", "--candidate-env", "stable")
    assert code == 0
    for args, says in ((("compare", db), "compare needs two results files"),
                       (("compare", db, db), "pick one with --env-a NAME"),
                       (("compare", db, "--env-a", "stable", "--env-b", "beta"), "under --env-b 'beta' (it holds: nightly, stable)"),
                       (("check", db), "check needs --baseline BASELINE.db, or --baseline-env NAME"),
                       (("check", db, "--baseline-env", "beta"), "under --baseline-env 'beta'")):
        code, out, err = main_here(*args)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, (args, err)


def _wrapper(tmp_path) -> str:
    """An interpreter of its own: a script that logs each start, then runs this Python."""
    path = tmp_path / "python-wrapper"
    path.write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path / "starts.log"}"\nexec "{PY}" "$@"\n')
    path.chmod(0o755)
    return str(path)


@pytest.mark.slow
@pytest.mark.alone  # check's 5% gate reads measured times another test's processes would slow (2026-12-01 CI failed)
@pytest.mark.parametrize("launch", ["fork", "exec"])
def test_a_variable_set_for_one_environment_reaches_its_workers_alone(tmp_path, cli, launch):
    """The paced test model takes COMPILEBENCH_FAULT_CALL_MS per call (5 ms when unset): set for `slow` alone, its
    cases take 30 ms a call and `fast`'s do not; `slow`'s workers start from its own interpreter (a logging
    wrapper), by a launcher or as new interpreters; and `check` holds one against the other."""
    db = tmp_path / "r.db"
    # three repeats: with two, one degree of freedom makes an interval too wide to call even 5x slower slower
    done = cli("run", "--model", "fault-paced", "--variant", "eager", "--batch-size", "1", "--repeats", "3",
               "--iters", "5", "--warmup", "1", "--env", f"fast={PY}", "--env", f"slow={_wrapper(tmp_path)}",
               "--env-set", "slow", "COMPILEBENCH_FAULT_CALL_MS=30", "--db", db, "--format", "md", "--quiet",
               env={**os.environ, "COMPILEBENCH_LAUNCH": launch})
    assert done.returncode == 0, done.stderr
    # the fastest call of each: a call the variable reached spins 30 ms on the clock, however loaded the machine;
    # means, with another test's compile beside (CI's slow step), read 22-24 ms for `fast`'s 5 on 2026-12-01
    fastest = {(r["case"]["environment"], r["case"]["batch_size"]): r["stats"]["min"] for r in stored(db)}
    assert set(fastest) == {("fast", 1), ("slow", 1)}
    assert fastest[("slow", 1)] >= 30 and fastest[("fast", 1)] < 30, fastest
    starts = (tmp_path / "starts.log").read_text()
    assert ("-m compilebench.run.launcher" if launch == "fork" else "-m compilebench.measure.worker") in starts
    assert {r["env"]["environment_set"] for r in stored(db) if r["case"]["environment"] == "slow"} == \
        {"COMPILEBENCH_FAULT_CALL_MS=30"}
    gate = cli("check", db, "--baseline-env", "fast", "--junit", tmp_path / "j.xml")
    assert gate.returncode == 1 and gate.stdout.count("REGRESSION: slower beyond 5%") == 1, gate.stdout


@pytest.mark.slow
def test_an_a_a_pair_of_environments_alternates_and_the_report_and_compare_give_it_one_verdict(tmp_path, cli):
    """The issue's run: the same interpreter as two environments, four repeats each, of the test plugin's
    one-convolution model in eager (what is tested is the alternation and the comparison, not the model: with tiny
    ResNet-50 the test took 50 s alone here, with this one 34 to 41 s). How often an A/A pair is called faster or slower
    is a rate, measured by benchmarks/aa.py --env (tiny ResNet-50 eager: 0 in 20 on 2026-11-30, one interval of 20 off
    1.0 at 95%): one run's verdict is a draw that a calibrated 95% interval with a 5% margin still gets wrong now and
    then (0.7% of simulated runs at this spread), and a run of the slow tests here drew it once (18.4% faster, 5.1% to
    29.9%). What every run must show is one verdict in every format, read within the run (no drift across runs)."""
    db = tmp_path / "r.db"
    done = cli("run", "--model", "fault-ok", "--variant", "eager", "--env", f"a={PY}",
               "--env", f"b={PY}", "--repeats", "4", "--iters", "30", "--warmup", "3", "--db", db, "--format", "md",
               "--quiet")
    assert done.returncode == 0, done.stderr
    results = stored(db)
    assert len(results) == 2 and all(len(r["repeats"]) == 4 for r in results)
    assert {(r["env"]["environment"], r["env"]["environment_python"]) for r in results} == {("a", PY), ("b", PY)}
    by_start = sorted((rep["loop_started_at"], r["case"]["environment"], r["case"]["variant"]["mode"], rep["index"])
                      for r in results for rep in r["repeats"])
    # round by round: both environments in each, each odd round's order drawn and the even one after reversing it
    rounds = [[e for _, e, _, i in by_start if i == k] for k in (1, 2, 3, 4)]
    assert all(sorted(r) == ["a", "b"] for r in rounds) and rounds[1] == rounds[0][::-1] and rounds[3] == rounds[2][::-1]
    report = (tmp_path / "report" / "report.md").read_text()
    section = report[report.index("torch versions and environments"):report.index("## Details")]
    row = [line for line in section.splitlines() if line.startswith("| Test/ok")][0]
    import torch

    short = ".".join(torch.__version__.split(".")[:2])
    assert f"% faster torch {short} [b] vs {short} [a], no compile" in section
    assert "across runs" not in row, row
    compared = cli("compare", db, "--env-a", "a", "--env-b", "b")
    assert compared.returncode == 0, compared.stderr
    line = [line for line in compared.stdout.splitlines() if line.startswith("| Test/ok")][0]
    said = line.strip("| ").split(" | ")[7]
    assert said in ("faster", "slower", "same", "inconclusive"), line
    assert f"({said})" in row, (row, line)  # the report's cell: '18.4% (faster)', '2.0% (inconclusive)'


def test_the_api_declares_environments_as_the_command_line_does():
    from compilebench import api

    given = {"environments": {"a": PY}, "environment_vars": {"a": {"OMP_NUM_THREADS": 1}}, "repeats": 2}
    api._declare_environments(given)
    assert given == {"environments": (Interpreter("a", os.path.abspath(PY), (("OMP_NUM_THREADS", "1"),)),), "repeats": 2}
    with pytest.raises(UserError, match="environments= is a dict"):
        api._declare_environments({"environments": [PY]})
    with pytest.raises(UserError, match="no environment 'b'"):
        api.benchmark("resnet-50", environments={"a": PY}, environment_vars={"b": {"X": "1"}})
