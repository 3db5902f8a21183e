"""--executor ray on a Ray cluster started here with a few CPUs: the same results as a local sweep, cases held
apart, a lost Ray worker recorded as `crashed`, and resume after Ctrl-C."""

import os
import signal
import subprocess
import sys
import tempfile
from collections import defaultdict

import pytest
import ray

from compilebench import cli as climod
from compilebench.storage import store as storemod
from compilebench.storage.store import Store

CLUSTER_CPUS = 4
# a local Ray cluster: tens of seconds to start and run; one per module, so its tests share one xdist worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]


@pytest.fixture(scope="module", autouse=True)
def cluster(tmp_path_factory):
    # Ray's processes inherit this environment: the fault plugin, and where the slow model logs its calls.
    os.environ["COMPILEBENCH_FAULT_LOG"] = str(tmp_path_factory.mktemp("calls") / "calls.log")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # as a run's own local cluster: nothing sent to Ray's server
    # The job folders its workers make (a killed one's stays, for a rerun of its results file to take back) go here,
    # not into the machine's temporary folder, where each run of this module had left a few; Ray's own folder stays
    # where it was (its sockets' paths must be short).
    with pytest.MonkeyPatch.context() as env:
        env.setenv("RAY_TMPDIR", tempfile.gettempdir())
        env.setenv("TMPDIR", str(tmp_path_factory.mktemp("jobs")))
        ray.init(num_cpus=CLUSTER_CPUS, include_dashboard=False, log_to_driver=False)
        yield
        ray.shutdown()
    del os.environ["COMPILEBENCH_FAULT_LOG"]


def run(db, *args) -> int:
    """compilebench run --executor ray, in this process (the driver joins the cluster started above)."""
    return climod.main(["run", "--db", str(db), "--format", "md", "--executor", "ray", "--iters", "5",
                        "--warmup", "2", "--repeats", "1", *map(str, args)])


def stored(db) -> list[dict]:
    """The results of a file, as stored with what they derive (Result.export)."""
    with Store.open(str(db), create=False) as s:
        return [r.export() for r in s.results()]


def test_a_ray_sweep_stores_what_a_local_sweep_stores(tmp_path, cli):
    sweep = ["--model", "vit", "--model", "resnet-50", "--tiny", "--variant", "eager", "default", "--backend", "eager"]
    local = cli("run", "--db", "local.db", "--format", "md", "--iters", "5", "--warmup", "2", "--repeats", "1", *sweep)
    assert local.returncode == 0, local.stderr
    assert run(tmp_path / "ray.db", "--cpus-per-case", "2", *sweep) == 0
    here, there = stored(tmp_path / "local.db"), stored(tmp_path / "ray.db")
    assert sorted(r["case_key"] for r in there) == sorted(r["case_key"] for r in here) and len(there) == 4
    assert {r["status"] for r in there} == {"ok"}
    torch_version = there[0]["env"]["torch"]
    assert {r["placement"] for r in there} == {f"ray|CPU|torch {torch_version}|transformers {there[0]['env']['transformers']}"}
    assert {r["env"]["torch_threads"] for r in there} == {2}  # a case runs as many threads as CPUs it reserved
    assert (tmp_path / "report" / "report.md").exists()


def test_cases_that_ask_for_a_whole_node_never_run_together(tmp_path):
    assert run(tmp_path / "r.db", "--model", "fault-slow", "--variant", "eager", "--batch-size", 1, 2, 3,
               "--cpus-per-case", CLUSTER_CPUS) == 0
    assert [r["status"] for r in stored(tmp_path / "r.db")] == ["ok"] * 3
    spans = defaultdict(list)
    with open(os.environ["COMPILEBENCH_FAULT_LOG"]) as f:
        for line in f:
            pid, start, end = line.split()
            spans[pid] += [float(start), float(end)]
    intervals = sorted((min(v), max(v)) for v in spans.values())
    assert len(intervals) == 3
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(intervals, intervals[1:]))


def test_a_lost_ray_worker_is_a_crashed_result_and_the_sweep_goes_on(tmp_path, capsys):
    db = tmp_path / "r.db"
    args = ["--model", "fault-kill-parent", "--model", "fault-ok", "--variant", "eager", "--cpus-per-case", 2]
    assert run(db, *args) == 0
    by_model = {r["case"]["model"]: r for r in stored(db)}
    assert by_model["fault-ok"]["status"] == "ok"
    lost = by_model["fault-kill-parent"]
    assert lost["status"] == "crashed" and lost["message"].startswith("Ray task lost on ")
    assert lost["placement"].startswith("ray|CPU|") and lost["env"]["torch"]  # the target's environment
    assert ["kill-parent", "crashed"] in [line.split() for line in capsys.readouterr().out.splitlines()]
    assert run(db, *args) == 0  # resuming: the ok case is kept, the crashed one is tried again (and crashes again)
    assert len(stored(db)) == 2 and [len(r["repeats"]) for r in stored(db)] == [1, 1]
    err = capsys.readouterr().err
    assert "1 repeat(s) measured" in err and "1 stored earlier were kept" in err
    assert "1 that had crashed or timed out were tried again" in err


def test_an_interrupted_ray_sweep_resumes_without_duplicates(tmp_path, monkeypatch, capsys):
    db = tmp_path / "r.db"
    args = ["--model", "fault-ok", "--variant", "eager", "--batch-size", 1, 2, 3, 4, "--cpus-per-case", 2]
    add = Store.add_repeat

    def add_then_ctrl_c(self, result):
        new = add(self, result)
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C as the first result is stored: it waits for the commit
        return new

    monkeypatch.setattr(storemod.Store, "add_repeat", add_then_ctrl_c)
    assert run(db, *args) == 130
    first = stored(db)
    assert 1 <= len(first) < 4
    assert "to resume, run the same command again:\ncompilebench run" in capsys.readouterr().err
    monkeypatch.setattr(storemod.Store, "add_repeat", add)
    assert run(db, *args) == 0
    keys = [r["case_key"] for r in stored(db)]
    assert len(keys) == len(set(keys)) == 4
    assert f"{len(first)} stored earlier were kept" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--accelerator-type", "H100"], "--accelerator-type pins GPU cases; this sweep runs on CPUs"),
    (["--device", "cuda"], "--device cuda: the Ray cluster has no GPU"),
    (["--device", "cuda:1"], "--device cuda:1 with --executor ray: Ray assigns the GPU"),
    (["--cpus-per-case", "64"], "--cpus-per-case 64: no node of the Ray cluster has that many CPUs (the largest has 4)"),
    (["--cpus-per-case", "0"], "--cpus-per-case must be an integer >= 1, got 0"),
])
def test_ray_options_are_checked_against_the_cluster(tmp_path, capsys, args, message):
    assert run(tmp_path / "r.db", "--model", "fault-ok", "--variant", "eager", *args) == 2
    err = capsys.readouterr().err
    assert err == f"error: {message}\n" or (err.startswith("error: ") and message in err and err.count("\n") == 1)
    assert not (tmp_path / "r.db").exists()


def test_without_ray_the_executor_says_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['ray'] = None\n"  # as if Ray were not installed
            "from compilebench import cli\n"
            "sys.exit(cli.main(['run', '--model', 'fault-ok', '--executor', 'ray', '--db', 'r.db']))")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert p.stderr == "error: --executor ray needs Ray, which is not installed: pip install compilebench[ray]\n"
    assert not (tmp_path / "r.db").exists()

