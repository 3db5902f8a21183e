"""Executors send a case to worker.run_case and bring a Result back. They know nothing of models.

process (default): a fresh Python process per case, in its own session so a timeout or Ctrl-C can kill it
with every compile worker it started; it dies with the driver too (PR_SET_PDEATHSIG), leaving no orphan.
The driver blocks in waitpid (no polling loop beside the timed loop); a timer thread enforces the timeout,
and a reader thread, blocked on a pipe, relays the worker's phase.
inline: run_case in this process (debugging, tests); dynamo and the inductor cache are reset per case."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Callable

from compilebench.result import Result
from compilebench.spec import Case, TimingPolicy

LOG_TAIL_CHARS = 4000


class Cancelled(Exception):
    """The run was stopped by cancel(): the sweep is being interrupted and keeps nothing of it."""


class InlineExecutor:
    name = "inline"

    def run(self, case: Case, policy: TimingPolicy, on_phase: Callable[[str], None]) -> Result:
        return self.run_group([case], policy, on_phase)[0]

    def run_group(self, cases: list[Case], policy: TimingPolicy, on_phase: Callable[[str], None]) -> list[Result]:
        from compilebench import worker

        return worker.run_cases(cases, policy, isolation="inline", on_phase=on_phase)


class ProcessExecutor:
    name = "process"

    def __init__(self, timeout_s: float | None = None, env: dict[str, str] | None = None):
        self.timeout_s = timeout_s
        self.env = env or {}  # added to the worker's environment: CUDA_VISIBLE_DEVICES, thread counts, CPUs
        self._live: set[int] = set()  # process groups of running workers, for cancel()
        self._cancelled: set[int] = set()

    def cancel(self) -> None:
        """Kill every worker this executor is running (from another thread: a sweep being interrupted)."""
        for pid in list(self._live):
            self._cancelled.add(pid)
            _kill_group(pid)

    def run(self, case: Case, policy: TimingPolicy, on_phase: Callable[[str], None]) -> Result:
        return self.run_group([case], policy, on_phase)[0]

    def run_group(self, cases: list[Case], policy: TimingPolicy, on_phase: Callable[[str], None]) -> list[Result]:
        """The cases in one worker process (several: --interleave); a result for each, whatever happens."""
        with tempfile.TemporaryDirectory(prefix="compilebench-case-") as tmp:
            job_path = os.path.join(tmp, "job.json")
            result_path = os.path.join(tmp, "result.json")
            log_path = os.path.join(tmp, "worker.log")
            with open(job_path, "w") as f:
                json.dump({"cases": [c.to_dict() for c in cases], "policy": vars(policy)}, f)
            return self._run_worker(cases, job_path, result_path, log_path, on_phase)

    def _run_worker(self, cases, job_path, result_path, log_path, on_phase) -> list[Result]:
        read_fd, write_fd = os.pipe()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "compilebench.worker", job_path, result_path, str(write_fd)],
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, **self.env, "COMPILEBENCH_PARENT_PID": str(os.getpid())},
            )
        self._live.add(proc.pid)
        os.close(write_fd)
        phase = ["start"]
        reader = threading.Thread(target=_relay_phases, args=(read_fd, phase, on_phase), daemon=True)
        reader.start()
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            _kill_group(proc.pid)

        timeout_s = self.timeout_s * len(cases) if self.timeout_s else None  # the timeout is per case
        timer = threading.Timer(timeout_s, on_timeout) if timeout_s else None
        if timer:
            timer.daemon = True
            timer.start()
        try:
            returncode = proc.wait()  # blocking waitpid: the driver takes no CPU while the case runs
        except BaseException:  # Ctrl-C: take the worker and its compile workers down, keep nothing half-done
            _kill_group(proc.pid)
            proc.wait()
            raise
        finally:
            if timer:
                timer.cancel()
            _kill_group(proc.pid)  # compile workers the case left behind
            self._live.discard(proc.pid)
            reader.join(timeout=5)

        if timed_out.is_set():
            return [Result(c, "timeout", phase=phase[0],
                           message=f"killed after the {timeout_s:g} s --timeout, during {phase[0]}") for c in cases]
        if os.path.exists(result_path):  # whole (written by rename): it finished, whatever came after
            with open(result_path) as f:
                return [Result.from_dict(d) for d in json.load(f)]
        if proc.pid in self._cancelled:
            raise Cancelled
        tail = _tail(log_path)
        if returncode < 0:
            name = signal.Signals(-returncode).name
            hint = " (often the kernel's out-of-memory killer)" if name == "SIGKILL" else ""
            message = f"worker killed by {name}{hint} during {phase[0]}"
        else:
            message = f"worker exited with code {returncode} without a result, during {phase[0]}"
        return [Result(c, "crashed", phase=phase[0], message=message, traceback=tail) for c in cases]


def _relay_phases(read_fd: int, phase: list, on_phase: Callable[[str], None]) -> None:
    with os.fdopen(read_fd) as pipe:
        for line in pipe:
            phase[0] = line.strip()
            on_phase(phase[0])


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _tail(path: str) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - LOG_TAIL_CHARS))
        return f.read().decode(errors="replace")


def make(isolation: str, timeout_s: float | None):
    return InlineExecutor() if isolation == "inline" else ProcessExecutor(timeout_s)
