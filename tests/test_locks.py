"""One benchmark per device per machine: device locks between real processes, and two runs on one results
file. Every wait is a handshake."""

import json
import os
import queue
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from compilebench.run import locks

HOLDER = """
import sys
from compilebench.run import locks
names = [(n, e == "x") for n, e in (part.split("=") for part in sys.argv[1].split(","))]
with locks.hold(names, "a test holder", on_wait=lambda m: None):
    print("held", flush=True)
    sys.stdin.readline()  # hold until told
"""


@pytest.fixture(autouse=True)
def _own_locks(tmp_path, monkeypatch):
    """Each test's locks in a folder of its own: the session's are taken by every run the other pytest worker
    starts, and a test that asserts a lock is taken at once found it held by one of those."""
    monkeypatch.setenv("COMPILEBENCH_LOCK_DIR", str(tmp_path / "locks"))


def holder(spec: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, spec], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "held\n"  # the handshake
    return p


def take_in_thread(names):
    """Take the locks in a thread: (messages, acquired event, release event)."""
    messages, acquired, release = queue.Queue(), threading.Event(), threading.Event()

    def run():
        with locks.hold(names, "the second run", on_wait=messages.put):
            acquired.set()
            release.wait(60)

    threading.Thread(target=run, daemon=True).start()
    return messages, acquired, release


def test_a_second_run_waits_for_the_device_says_for_whom_once_and_goes_on_when_it_is_free():
    first = holder("cpu=x")
    messages, acquired, release = take_in_thread([("cpu", True)])
    try:
        message = messages.get(timeout=60)  # it found the lock taken
        assert message.startswith(f"waiting for cpu: run by pid {first.pid} since ") and "(a test holder)" in message
        assert not acquired.is_set()
        first.stdin.write("done\n")
        first.stdin.flush()
        assert acquired.wait(60)
        assert messages.empty()  # said once
    finally:
        release.set()
        first.kill()
        first.wait()


def test_a_lock_held_by_a_dead_process_is_taken_over():
    first = holder("cpu=x")
    first.send_signal(signal.SIGKILL)
    first.wait()
    messages, acquired, release = take_in_thread([("cpu", True)])
    try:
        assert acquired.wait(60) and messages.empty()
    finally:
        release.set()


def test_a_lock_is_free_once_released_though_a_process_forked_while_it_was_held_lives_on():
    # a library may fork while a run holds the device (OpenVINO's telemetry sender did, and hung): its child shares
    # the lock's open file, so closing the descriptor alone left the device locked for as long as the child lived
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    with locks.hold([("cpu", True)], "a case"):
        pid = os.fork()
        if pid == 0:  # the child: says it is there, then waits until told to end
            os.write(ready_w, b"x")
            os.read(go_r, 1)
            os._exit(0)
        assert os.read(ready_r, 1) == b"x"
    try:
        messages, acquired, release = take_in_thread([("cpu", True)])
        try:
            assert acquired.wait(60) and messages.empty()  # taken at once: nobody waited for
        finally:
            release.set()
    finally:
        os.write(go_w, b"x")
        os.waitpid(pid, 0)
        for fd in (ready_r, ready_w, go_r, go_w):
            os.close(fd)


def test_gpu_cases_share_the_cpu_with_each_other_but_not_with_a_cpu_case():
    gpu0 = holder(",".join(f"{n}={'x' if e else 's'}" for n, e in locks.names_for("cuda:0", "GPU-aaa")))
    gpu1 = holder(",".join(f"{n}={'x' if e else 's'}" for n, e in locks.names_for("cuda:1", "GPU-bbb")))  # no wait
    messages, acquired, release = take_in_thread(locks.names_for("cpu"))
    try:
        assert messages.get(timeout=60).startswith("waiting for cpu: ")
        for p in (gpu0, gpu1):
            p.stdin.write("done\n")
            p.stdin.flush()
        assert acquired.wait(60)
    finally:
        release.set()
        for p in (gpu0, gpu1):
            p.kill()
            p.wait()


@pytest.mark.slow  # two real drivers (14 s): CI's slow step, keeping the default selection under 4 minutes
def test_two_runs_on_one_results_file_measure_each_repeat_once_and_never_time_at_once(tmp_path):
    fifo, reply = tmp_path / "fifo", tmp_path / "reply"
    os.mkfifo(fifo)
    os.mkfifo(reply)
    args = ["run", "--model", "fault-handshake", "fault-slow", "--variant", "eager", "--iters", "3", "--warmup", "0",
            "--min-iters", "1", "--repeats", "2", "--device", "cpu", "--db", "r.db", "--format", "csv", "--quiet"]
    first = subprocess.Popen([sys.executable, "-m", "compilebench", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "COMPILEBENCH_FAULT_FIFO": str(fifo), "COMPILEBENCH_FAULT_REPLY": str(reply),
                                  "COMPILEBENCH_FAULT_ONCE": "1"})  # rounds: its later handshake repeat goes on
    with open(fifo) as told, open(reply, "w") as go:  # the first run's worker holds the CPU, paused
        told.readline()
        second = subprocess.Popen([sys.executable, "-m", "compilebench", *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        said = []
        for line in second.stderr:  # it leaves the first run's claim alone, claims the next repeat, finds the CPU taken
            said.append(line)
            if line.startswith("waiting for cpu"):
                break
        assert said[0].startswith("fault-handshake b1 eager repeat 1 is being measured by another run"), said
        assert said[-1].startswith(f"waiting for cpu: run by pid {first.pid} since "), said
        go.write("go\n")  # the first run's worker goes on
        go.flush()
        out, err = first.communicate(timeout=300)
        out2, err2 = second.communicate(timeout=300)
    assert first.returncode == 0 and second.returncode == 0, (err, err2)
    conn = sqlite3.connect(tmp_path / "r.db")
    results = [json.loads(r[0]) for r in conn.execute("SELECT data FROM results")]
    assert sorted(r["case"]["model"] for r in results) == ["fault-handshake", "fault-slow"]  # each case once
    repeats = [rep for r in results for rep in r["repeats"]]
    assert sorted(rep["index"] for rep in repeats) == [1, 1, 2, 2]  # each repeat once
    loops = sorted((rep["loop_started_at"], rep["loop_ended_at"]) for rep in repeats)
    assert all(a_end <= b_start for (_, a_end), (b_start, _) in zip(loops, loops[1:])), loops  # never at once
    measured = [int(line.split()[0]) for line in (err + err2).splitlines() if "repeat(s) measured" in line]
    assert sum(measured) == 4 and all(measured)  # both runs measured: the work was shared


def test_the_driver_never_touches_cuda(main_here, monkeypatch):
    """Device discovery runs in a child: the driver holds no CUDA context and never counts as a GPU process."""
    import torch

    from compilebench import zoo

    zoo.models()  # the test plugin imports dynamo, which records torch.cuda's functions: before they are replaced

    def forbidden(*a, **k):
        raise AssertionError("the driver called into torch.cuda")

    for name in ("is_available", "device_count", "get_device_name", "get_device_properties", "init", "_lazy_init",
                 "current_device", "set_device"):
        monkeypatch.setattr(torch.cuda, name, forbidden)
    code, out, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--iters", "3", "--warmup", "0",
                               "--min-iters", "1", "--repeats", "1", "--db", "r.db", "--format", "csv", "--quiet")
    assert code == 0, err
    assert "1 repeat(s) measured" in err
