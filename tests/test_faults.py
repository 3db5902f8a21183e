"""The fault matrix of issue 16: each defect a fault run found, pinned by a test that failed before its fix.
Real processes, real results files; a test acts when a worker tells it (through a FIFO) that it is running,
never after a sleep."""

import json
import os
import resource
import shlex
import signal
import sqlite3
import stat
import subprocess
import sys

import fakeresults as fr
import pytest
from conftest import run_cli, stored

QUICK = ["--warmup", "0", "--min-iters", "1", "--device", "cpu", "--quiet"]


def start(args, cwd, env=None, preexec=None):
    """The CLI in the background, with SIGINT at its default as a terminal gives it (a shell's background job
    starts with it ignored, and Python keeps it so)."""

    def setup():
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if preexec:
            preexec()

    return subprocess.Popen([sys.executable, "-m", "compilebench", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=setup, env={**os.environ, **(env or {})})


class Fifo:
    """The test's end of the handshake: each worker of the `fault-handshake` model writes "pid batch" here when
    its timed calls begin."""

    def __init__(self, path):
        self.path = str(path)
        os.mkfifo(self.path)
        self._file = None

    def next(self) -> tuple[int, int]:
        if self._file is None:
            self._file = open(self.path)  # blocks until the first worker opens it to write
        line = self._file.readline()
        if not line:  # that writer closed: wait for the next one
            self._file.close()
            self._file = open(self.path)
            line = self._file.readline()
        pid, batch = line.split()
        return int(pid), int(batch)


def exited(pid: int, within_s: float = 30) -> bool:
    """Whether a process has exited (or exits within the time given): a blocking wait on its pidfd, no polling."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], within_s)[0])
    finally:
        os.close(fd)


def test_1_a_value_given_twice_is_measured_and_stored_once(tmp_path):
    p = run_cli("run", "--model", "fault-ok", "fault-slow", "--model", "fault-ok", "--batch-size", "1", "1",
                "--variant", "eager", "eager", "--iters", "3", *QUICK, "--repeats", "1", "--isolation", "inline",
                "--db", "r.db", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert [(r["case"]["model"], r["case"]["batch_size"]) for r in stored(tmp_path / "r.db")] == [
        ("fault-ok", 1), ("fault-slow", 1)]


def test_2a_a_full_disk_while_storing_keeps_the_result_beside_the_file_and_the_next_run_stores_it(tmp_path, main_here):
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--iters", "3000", *QUICK, "--repeats",
                             "1", "--isolation", "inline", "--db", "devices.db", "--format", "csv")
    assert code == 0, err
    size = len(json.dumps(stored(tmp_path / "devices.db")[0]))  # the bytes one stored result takes
    args = ["run", "--model", "fault-ok", "--variant", "eager", "--iters", "3000", *QUICK, "--repeats", "1",
            "--isolation", "inline", "--db", "r.db", "--format", "csv"]
    # Measured with SQLite's WAL: the schema and the claim take about 62 KiB of WAL, storing the result adds its
    # size and about 20 KiB more. So the claim fits, the result does not, and a saved copy of it (size) does.
    limit = 64 * 1024 + size // 2
    full = start(args, tmp_path, preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    out, err = full.communicate(timeout=300)
    assert full.returncode == 1, err
    line = [l for l in err.splitlines() if l.startswith("error:")]
    assert len(line) == 1 and "cannot write to the results file 'r.db'" in line[0], err
    assert "the result just measured was saved to " in line[0] and line[0].endswith("to resume, run the same command again:")
    assert err.splitlines()[err.splitlines().index(line[0]) + 1].startswith("compilebench run ")  # alone: pastable
    assert "Traceback" not in err
    unsaved = list((tmp_path / "r.db.unsaved").iterdir())
    assert len(unsaved) == 1
    measured = json.loads(unsaved[0].read_text())
    code, _, err = main_here(*args)  # room again: it is stored first, and not measured twice
    assert code == 0, err
    assert "1 result(s) an earlier run could not store were stored now" in err and "0 repeat(s) measured" in err
    (r,) = stored(tmp_path / "r.db")
    assert r["repeats"][0]["samples_ms"] == measured["repeats"][0]["samples_ms"]
    assert not (tmp_path / "r.db.unsaved").exists()


@pytest.mark.slow  # a real driver and a locking program (9 s): CI's slow step keeps the default selection under 4 min
def test_2b_a_results_file_locked_by_another_program_while_storing_loses_nothing(tmp_path):
    fifo, reply = Fifo(tmp_path / "fifo"), tmp_path / "reply"
    os.mkfifo(reply)
    args = ["run", "--model", "fault-handshake", "--variant", "eager", "--iters", "3", *QUICK, "--repeats", "1",
            "--db", "r.db", "--format", "csv"]
    run = start(args, tmp_path, env={"COMPILEBENCH_FAULT_FIFO": fifo.path, "COMPILEBENCH_FAULT_REPLY": str(reply),
                                     "COMPILEBENCH_DB_TIMEOUT": "1"})
    fifo.next()  # the case is being measured (its claim is committed): now another program locks the file
    other = sqlite3.connect(tmp_path / "r.db", isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with open(reply, "w") as f:
        f.write("go\n")  # the worker goes on; the driver will find the file locked when it stores
    out, err = run.communicate(timeout=300)
    other.execute("ROLLBACK")
    other.close()
    assert run.returncode == 1, err
    assert "database is locked" in err and "was saved to" in err and "Traceback" not in err
    again = run_cli(*args, cwd=tmp_path)
    assert again.returncode == 0 and "1 result(s) an earlier run could not store were stored now" in again.stderr
    assert [r["status"] for r in stored(tmp_path / "r.db")] == ["ok"]


def test_3_a_damaged_results_file_is_refused_before_anything_is_measured(tmp_path, main_here, monkeypatch):
    fr.fill(tmp_path / "r.db", [fr.result("vit", b, "eager", 9.0) for b in range(1, 40)])
    fr.damage(tmp_path / "r.db")
    log = tmp_path / "calls.log"
    monkeypatch.setenv("COMPILEBENCH_FAULT_LOG", str(log))  # what a worker would write, had one started
    code, _, err = main_here("run", "--model", "fault-slow", "--variant", "eager", "--iters", "3", *QUICK, "--db",
                             "r.db")
    assert code == 2 and err.count("\n") == 1 and "is damaged" in err, err
    assert not log.exists()  # nothing was measured


def test_4_a_read_only_results_file_is_reported_and_a_run_says_why_it_cannot_add(tmp_path):
    fr.fill(tmp_path / "r.db", [fr.result("vit", 1, "eager", 9.0)])
    os.chmod(tmp_path / "r.db", stat.S_IRUSR | stat.S_IRGRP)
    p = run_cli("report", "r.db", "--out", "out", "--format", "md", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    if os.geteuid() != 0:  # root may write a read-only file
        p = run_cli("run", "--model", "fault-ok", "--variant", "eager", *QUICK, "--db", "r.db", cwd=tmp_path)
        assert p.returncode == 2 and "is read-only" in p.stderr


@pytest.mark.slow  # three runs of crashing workers (9 s): CI's slow step keeps the default selection under 4 min
def test_5_crashed_repeats_are_retried_on_resume_and_errors_with_retry_failed(tmp_path, main_here, monkeypatch):
    args = ["run", "--model", "fault-flaky", "--variant", "eager", "--iters", "3", *QUICK, "--repeats", "1", "--db",
            "r.db", "--format", "csv"]
    crash = run_cli(*args, cwd=tmp_path, env={**os.environ, "COMPILEBENCH_FAULT_MODE": "crash"})
    assert crash.returncode == 0 and [r["status"] for r in stored(tmp_path / "r.db")] == ["crashed"]
    retried = run_cli(*args, cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert "1 that had crashed or timed out were tried again" in retried.stderr
    assert [r["status"] for r in stored(tmp_path / "r.db")] == ["ok"]

    args[args.index("r.db")] = "e.db"
    args.insert(1, "--isolation=inline")  # an error needs no process of its own: this one runs here
    monkeypatch.setenv("COMPILEBENCH_FAULT_MODE", "error")
    main_here(*args)
    monkeypatch.delenv("COMPILEBENCH_FAULT_MODE")
    code, out, err = main_here(*args)
    assert "1 that failed earlier (error, oom) were left as they are (--retry-failed tries them again)" in err
    assert [r["status"] for r in stored(tmp_path / "e.db")] == ["error"]
    code, out, err = main_here(*args, "--retry-failed")
    assert code == 0 and [r["status"] for r in stored(tmp_path / "e.db")] == ["ok"]
    (r,) = stored(tmp_path / "e.db")
    assert len(r["repeats"]) == 1  # the retry replaced the failed repeat


def test_6_csv_cells_a_spreadsheet_would_run_are_escaped(tmp_path):
    fr.fill(tmp_path / "r.db", [fr.result("=cmd|'/C calc'!A0", 1, "eager", None, status="error",
                                          message="@SUM(1+1)*cmd|' /C calc'!A0")])
    p = run_cli("report", "r.db", "--out", "out", "--format", "csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = (tmp_path / "out" / "results.csv").read_text()
    assert "'=cmd|'/C calc'!A0" in text and "'@SUM(1+1)" in text
    assert ",=" not in text and ",@" not in text


def test_7_an_output_folder_that_cannot_be_written_is_one_line_for_run_and_report(tmp_path):
    fr.fill(tmp_path / "r.db", [fr.result("vit", 1, "eager", 9.0)])
    (tmp_path / "afile").write_text("x")
    for args in (["report", "r.db", "--out", "afile/report"], ["report", "r.db", "--out", "/proc/nope"],
                 ["run", "--model", "fault-ok", *QUICK, "--db", "new.db", "--out", "afile/report"],
                 ["run", "--model", "fault-ok", *QUICK, "--db", "new.db", "--out", "/proc/nope"]):
        p = run_cli(*args, cwd=tmp_path)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "cannot write the report" in p.stderr, (args, p.stderr)
    assert sorted(os.listdir(tmp_path)) == ["afile", "r.db"]


@pytest.mark.slow  # a real driver stopped and resumed (13 s): CI's slow step, keeping the default under 4 minutes
def test_8_sigterm_keeps_every_finished_repeat_and_a_resume_runs_only_the_rest(tmp_path):
    fifo, reply = Fifo(tmp_path / "fifo"), tmp_path / "reply"
    os.mkfifo(reply)
    args = ["run", "--model", "fault-handshake", "--variant", "eager", "--iters", "3",
            *QUICK, "--repeats", "3", "--db", "r.db", "--format", "csv"]
    run = start(args, tmp_path, env={"COMPILEBENCH_FAULT_FIFO": fifo.path, "COMPILEBENCH_FAULT_REPLY": str(reply)})
    seen = []
    for _ in range(3):  # repeats 1 and 2 go on when told; repeat 3 waits for a reply that never comes
        seen.append(fifo.next())
        if len(seen) < 3:
            reply.write_text("go\n")
    run.send_signal(signal.SIGTERM)  # while repeat 3 runs: repeats 1 and 2 are stored
    out, err = run.communicate(timeout=120)
    assert run.returncode == 143, err
    assert "interrupted: every finished result is in r.db; to resume, run the same command again:\ncompilebench run" in err
    (kept,) = stored(tmp_path / "r.db")
    assert [rep["index"] for rep in kept["repeats"]] == [1, 2]
    assert exited(seen[-1][0])  # the interrupted worker is gone

    resumed = run_cli(*args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "1 repeat(s) measured" in resumed.stderr and "2 stored earlier were kept" in resumed.stderr
    (final,) = stored(tmp_path / "r.db")
    assert [rep["index"] for rep in final["repeats"]] == [1, 2, 3]
    assert final["repeats"][:2] == kept["repeats"]  # kept as they were: nothing measured twice


def test_8_sigint_stops_a_run_as_sigterm_does(tmp_path, main_here, monkeypatch):
    """Ctrl-C, here to a run in this process (the worker inline): the same path, exit 130."""
    import threading

    fifo, reply = Fifo(tmp_path / "fifo"), tmp_path / "reply"
    os.mkfifo(reply)
    monkeypatch.setenv("COMPILEBENCH_FAULT_FIFO", fifo.path)
    monkeypatch.setenv("COMPILEBENCH_FAULT_REPLY", str(reply))

    def interrupt_at_repeat_2():
        fifo.next()
        reply.write_text("go\n")
        fifo.next()  # repeat 2 is timing, and waits for a reply that never comes: repeat 1 is stored
        # to the main thread, which is blocked in that wait (a signal to the process may land on this thread)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt_at_repeat_2, daemon=True).start()
    args = ["run", "--model", "fault-handshake", "--variant", "eager", "--iters", "3", *QUICK, "--repeats", "2",
            "--isolation", "inline", "--db", "r.db", "--format", "csv", "--out", "my report"]
    code, out, err = main_here(*args)
    assert code == 130 and "to resume, run the same command again:\ncompilebench run --model" in err, err
    assert [[rep["index"] for rep in r["repeats"]] for r in stored(tmp_path / "r.db")] == [[1]]
    monkeypatch.delenv("COMPILEBENCH_FAULT_FIFO")
    monkeypatch.delenv("COMPILEBENCH_FAULT_REPLY")
    pasted = shlex.split(err.strip().splitlines()[-1])  # the last line, as a shell reads it when pasted
    assert pasted[0] == "compilebench" and pasted[1:] == args  # "my report" survives as one argument
    code, out, err = main_here(*pasted[1:])
    assert code == 0 and "1 repeat(s) measured" in err
    assert [[rep["index"] for rep in r["repeats"]] for r in stored(tmp_path / "r.db")] == [[1, 2]]


def test_9_every_numeric_option_is_range_checked_before_anything_is_written(tmp_path, main_here):
    for args, message in ((["--warmup", "-1"], "--warmup must be an integer >= 0, got -1"),
                          (["--iters", "-5"], "--iters must be an integer >= 1"),
                          (["--repeats", "-1"], "--repeats must be an integer from 1 to 100"),
                          (["--max-time", "inf"], "--max-time must be a positive, finite number"),
                          (["--first-calls", "0"], "--first-calls must be an integer >= 1")):
        code, out, err = main_here("run", "--model", "fault-ok", "--device", "cpu", *args, "--db", "out/r.db")
        assert code == 2 and err.count("\n") == 1 and message in err, (args, err)
    assert list(tmp_path.iterdir()) == []


def test_10_pretrained_weights_that_cannot_be_had_are_refused_up_front(tmp_path, main_here):
    code, _, err = main_here("run", "--model", "resnet-50", "--weights", "pretrained", "--device", "cpu", "--db",
                             "out/r.db")
    assert code == 2 and err.count("\n") == 1
    assert "--weights pretrained: cannot load 'microsoft/resnet-50': no local copy" in err
    assert list(tmp_path.iterdir()) == []


def test_11_a_result_with_fields_this_version_does_not_know_is_reported_and_kept(tmp_path):
    r = fr.result("vit", 1, "eager", 9.0)
    r.extra["energy_joules"] = 2.5  # fields a newer compilebench wrote
    r.repeats[0].extra["gpu_energy_joules"] = 0.8
    r.case_extra["future_setting"] = "on"
    fr.fill(tmp_path / "r.db", [r])
    p = run_cli("report", "r.db", "--out", "out", "--format", "md,json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (row,) = json.loads((tmp_path / "out" / "results.json").read_text())
    assert row["energy_joules"] == 2.5
    # a run that adds a repeat to such a result keeps what it did not understand
    from compilebench.core.repeat import Repeat
    from compilebench.core.result import Result
    from compilebench.storage.store import Store

    with Store.open(str(tmp_path / "r.db")) as store:
        (back,) = store.results()
        more = Result(back.case, [Repeat(index=4, samples_ms=[9.0], stats={"mean": 9.0})], result_id=back.result_id,
                      machine_id=back.machine_id)
        store.add_repeat(more)
        (merged,) = store.results()
    assert merged.extra["energy_joules"] == 2.5 and merged.case_extra["future_setting"] == "on"
    assert merged.repeats[0].extra["gpu_energy_joules"] == 0.8 and len(merged.repeats) == 4


def _benchmark_beside_another_run(tmp_path, monkeypatch, then):
    """benchmark() on the results file of another run whose worker holds repeat 1, paused at the handshake;
    `then(other, reply)` is done when benchmark() says it waits for that run. Returns (results, waits, other)."""
    import compilebench
    from compilebench.run import storing

    fifo, reply = Fifo(tmp_path / "fifo"), tmp_path / "reply"
    os.mkfifo(reply)
    other = start(["run", "--model", "fault-handshake", "--variant", "eager", "--iters", "3", *QUICK, "--repeats", "1",
                   "--db", "r.db", "--format", "csv"], tmp_path,
                  env={"COMPILEBENCH_FAULT_FIFO": fifo.path, "COMPILEBENCH_FAULT_REPLY": str(reply)})
    try:
        fifo.next()  # the other run has claimed repeat 1 and is timing it
        waits = []

        def pause(seconds):
            waits.append(seconds)
            if len(waits) == 1:
                then(other, reply)

        monkeypatch.setattr(storing, "pause", pause)
        got = compilebench.benchmark("fault-handshake", variants=("eager",), iters=3, warmup=0, min_iters=1,
                                     device="cpu", repeats=1, db=str(tmp_path / "r.db"))
    finally:
        other.kill()
        other.communicate()
    return got, waits, other


@pytest.mark.slow  # real worker processes: CI's second step (the default selection stays under 4 minutes)
def test_the_api_returns_a_repeat_another_run_was_measuring_once_that_run_stores_it(tmp_path, monkeypatch):
    """Issue 27, 2: benchmark() finds repeat 1 held by another run, waits, and returns it once that run stored it,
    instead of returning without it."""

    def let_it_finish(other, reply):
        reply.write_text("go\n")
        other.wait(300)

    got, waits, other = _benchmark_beside_another_run(tmp_path, monkeypatch, let_it_finish)
    assert other.returncode == 0 and waits
    (result,) = got.results
    assert [rep.index for rep in result.repeats] == [1] and result.repeats[0].status == "ok"
    assert [r["result_id"] for r in stored(tmp_path / "r.db")] == [result.result_id]  # measured once, by the other


@pytest.mark.slow  # real worker processes: CI's second step (the default selection stays under 4 minutes)
def test_a_repeat_another_run_let_go_unmeasured_is_measured_here(tmp_path, monkeypatch):
    def interrupt_it(other, reply):
        other.send_signal(signal.SIGINT)  # it stops its worker and releases its claim, storing nothing
        other.wait(300)

    got, waits, other = _benchmark_beside_another_run(tmp_path, monkeypatch, interrupt_it)
    assert other.returncode == 130 and waits
    (result,) = got.results
    assert [rep.index for rep in result.repeats] == [1] and result.repeats[0].status == "ok"
    assert len(stored(tmp_path / "r.db")) == 1


def test_ctrl_c_while_the_report_renders_is_one_line_with_the_resume_command(tmp_path, main_here, monkeypatch):
    """Issue 27, 3: the sweep has stored its result; Ctrl-C lands while the charts render."""
    from compilebench.report import charts

    render = charts.render

    def interrupted_render(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C, to this process, in the middle of rendering
        return render(*args, **kwargs)

    monkeypatch.setattr(charts, "render", interrupted_render)
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--iters", "3", *QUICK,
                               "--repeats", "1", "--isolation", "inline", "--db", "r.db")
    assert code == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1].startswith("compilebench run --model fault-ok"), err
    assert len(stored(tmp_path / "r.db")) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["r.db"]  # no report half-written, no folder left for it


def test_ctrl_c_while_the_device_is_probed_is_one_line_with_the_resume_command(tmp_path, main_here, monkeypatch):
    """Issue 27, 3: Ctrl-C while the driver waits for the device probe's child; r.db holds an earlier result."""
    import subprocess as sp

    from compilebench.run import devices

    fr.fill(tmp_path / "r.db", [fr.result("vit", 1, "eager", 9.0)])

    real_run = sp.run

    def probe_interrupted(command, **kwargs):  # the child the driver waits for: Ctrl-C reaches the driver meanwhile
        return real_run([sys.executable, "-c", "import os, signal, time; os.kill(os.getppid(), signal.SIGINT); "
                       "time.sleep(60)"], **kwargs)

    monkeypatch.setattr(devices.subprocess, "run", probe_interrupted)
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--db", "r.db", "--quiet")
    assert code == 130, err
    assert err.strip().splitlines() == [
        "interrupted: every finished result is in r.db; to resume, run the same command again:",
        "compilebench run --model fault-ok --variant eager --db r.db --quiet"]


@pytest.mark.slow  # real worker processes: CI's second step (the default selection stays under 4 minutes)
def test_a_result_a_killed_driver_never_stored_is_taken_in_by_the_next_run(tmp_path):
    """Issue 27, 12: the worker finished and wrote its result, then its driver was SIGKILLed before storing it: the
    job folder it left holds a whole result that the next run on the same file stores instead of measuring again."""
    fifo, reply = Fifo(tmp_path / "fifo"), tmp_path / "reply"
    os.mkfifo(reply)
    (tmp_path / "tmp").mkdir()
    args = ["run", "--model", "fault-handshake", "--variant", "eager", "--iters", "3", *QUICK, "--repeats", "1",
            "--db", "r.db", "--format", "csv"]
    temp = {"TMPDIR": str(tmp_path / "tmp")}
    driver = start(args, tmp_path, env={**temp, "COMPILEBENCH_FAULT_FIFO": fifo.path,
                                        "COMPILEBENCH_FAULT_REPLY": str(reply)})
    worker, _ = fifo.next()
    driver.send_signal(signal.SIGSTOP)  # the driver cannot store what comes back
    reply.write_text("go\n")
    assert exited(worker, 120)  # the worker wrote its result and ended
    driver.kill()
    driver.communicate()
    (job,) = [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("compilebench-job-")]
    assert (job / "result.json").exists() and stored(tmp_path / "r.db") == []

    again = run_cli(*args, cwd=tmp_path, env={**os.environ, **temp})
    assert again.returncode == 0, again.stderr
    assert "0 repeat(s) measured" in again.stderr and "1 result(s) an earlier run" in again.stderr, again.stderr
    (result,) = stored(tmp_path / "r.db")
    assert [(rep["index"], rep["status"]) for rep in result["repeats"]] == [(1, "ok")]
    assert not job.exists()


def test_a_signal_after_the_command_has_ended_changes_nothing(tmp_path):
    """The fault run's Ctrl-C and SIGTERM 5 s into a run landed after its last line, while its workers closed: a
    traceback with exit 0, or a silent death by SIGTERM. Once the outcome is decided, signals are ignored."""
    code = ("import os, signal, sys; from compilebench import cli; sys.argv = ['compilebench', 'env']; "
            "code = cli.main(); os.kill(os.getpid(), signal.SIGINT); os.kill(os.getpid(), signal.SIGTERM); "
            "print('closed'); raise SystemExit(code)")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.endswith("closed\n") and "Traceback" not in p.stderr, p.stderr


def test_a_run_on_a_full_disk_says_so_in_one_line_and_writes_nothing(tmp_path, main_here, monkeypatch):
    """Issue 39, 7: started on a full disk, SQLite said "not a compilebench results file (disk I/O error)"."""
    import collections

    from compilebench.storage import paths

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(paths.shutil, "disk_usage", lambda folder: usage(2**30, 2**30, 0))
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--db", "r.db")
    assert code == 2 and err.strip().splitlines() == [
        "error: cannot write results file 'r.db': the disk is full (0 KiB free; a run needs at least 16 MiB); free "
        "some space or give a --db on another disk"], err
    assert list(tmp_path.iterdir()) == []
