"""Executors send a job to worker.run_cases and bring its repeats back (one per case). They know nothing of models.

process (default): a fresh Python process per job (forked by the launcher, or a new interpreter), in its own
session so a timeout or Ctrl-C can kill it with every compile worker it started; it dies with the driver too
(PR_SET_PDEATHSIG), leaving no orphan. Its compiler state lives in the folders the `env` it is given names
(compiler_state). The driver blocks until the worker exits (no polling loop beside the timed loop); a timer
thread enforces the timeout, and a reader thread, blocked on a pipe, relays the worker's phase.
inline: run_cases in this process (debugging, tests, the Python API's nn.Module objects)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import Callable

from compilebench.core.interpreter import Interpreter
from compilebench.core.job import SPAWNED_AT, Job
from compilebench.core.repeat import Repeat
from compilebench.measure import cores
from compilebench.run import crashes, interpreters, launcher, room

LOG_TAIL_CHARS = 4000
JOB_FOLDER = "compilebench-job-"  # in the temporary folder: the job, its result, the worker's log (leftovers.py reads them)
JOB_FILE, RESULT_FILE, CRASH_FILE = "job.json", "result.json", "crash.txt"  # the last: faulthandler's, if it crashed


class Cancelled(Exception):
    """The run was stopped by cancel(): the sweep is being interrupted and keeps nothing of it."""


def failure(job: Job, status: str, message: str, phase: str | None = None, traceback: str | None = None) -> list[Repeat]:
    """A repeat for each case of a job whose worker came back with nothing (timeout, crash, lost node)."""
    return [Repeat(index=job.repeat, status=status, message=message, phase=phase, traceback=traceback,
                   compile_cache=job.compile_cache) for _ in job.cases]


class InlineExecutor:
    name = "inline"

    def cancel(self) -> None:
        """Nothing to kill: the case runs in the caller's thread, which the interruption reaches itself."""

    def start_launchers(self, repeats, environments=(None,), wait: bool = True) -> None:
        """Nothing to start: no worker process."""

    def keep_launchers_to(self, cpus: set[int]) -> None:
        """No launcher to move."""

    def run(self, job: Job, env: dict[str, str], on_phase: Callable[[str], None]) -> list[Repeat]:
        from torch._inductor.utils import clear_caches

        from compilebench.measure import compiler_state, worker

        with compiler_state.applied(env):
            clear_caches()  # inductor's in-memory view of the previous case's cache folder
            try:
                return worker.run_cases(job, isolation="inline", on_phase=on_phase)
            finally:
                clear_caches()


class ProcessExecutor:
    name = "process"

    def __init__(self, timeout_s: float | None = None, env: dict[str, str] | None = None, fork: bool = True,
                 models: tuple[str, ...] = (), inductor: bool = False, most_repeats: int = 0):
        self.timeout_s = timeout_s
        self.env = env or {}  # added to every worker's environment: CUDA_VISIBLE_DEVICES, thread counts, CPUs
        self.fork = fork and launcher.enabled()  # forked by a launcher (many jobs), or a new interpreter per job
        # What the launchers import while they start: the run's model classes, and inductor if the run compiles with it.
        self.models, self.inductor = tuple(models), inductor
        self.most_repeats = most_repeats  # the repeats a case may get by the design's last look (RunSpec.looks)
        self._live: set[int] = set()  # process groups of running workers, for cancel()
        self._cancelled: set[int] = set()
        self._launchers: dict[tuple, launcher.Launcher] = {}  # one per environment and repeat index

    def cancel(self) -> None:
        """Kill every worker this executor is running (from another thread: a sweep being interrupted)."""
        for pid in list(self._live):
            self._cancelled.add(pid)
            _kill_group(pid)

    def run(self, job: Job, env: dict[str, str], on_phase: Callable[[str], None]) -> list[Repeat]:
        """The job in one worker process; a result for each case, whatever happens."""
        with tempfile.TemporaryDirectory(prefix=JOB_FOLDER) as tmp:
            job_path = os.path.join(tmp, JOB_FILE)
            result_path = os.path.join(tmp, RESULT_FILE)
            with open(job_path, "w") as f:
                json.dump(job.to_dict(), f)
            return self._run_worker(job, [job_path, result_path, os.path.join(tmp, CRASH_FILE)],
                                    os.path.join(tmp, "worker.log"), env, on_phase)

    def start_launchers(self, repeats, environments=(None,), wait: bool = True) -> None:
        """Start the launchers these repeats will use (under each of these environments: None is this interpreter),
        all at once: their imports overlap each other (and, with wait=False, whatever the driver does next) instead
        of following one another. Where a later look may add repeats (most_repeats) and the host has room for
        their launchers too (room.room_for), those start with these, so a look waits for no import (on an H200 each
        look of the quick suite waited 12-21 s for its launchers, 2026-11-27/28). With wait=True (the sweep is
        about to run these repeats), the launchers of other repeats are stopped and every one kept is waited for,
        so none is still importing beside a timed loop."""
        if not self.fork:
            return
        environments = list(environments)
        needed = {(e, r) for e in environments for r in repeats if r <= launcher.MAX_LAUNCHERS}
        later = self._later(needed, environments)
        for environment, repeat in sorted(needed | later, key=lambda k: (k[1], k[0].name if k[0] else "")):
            self._launcher(environment, repeat)
        if wait:
            for key in set(self._launchers) - needed - later:
                self._forget_launcher(*key)
            for key, started in list(self._launchers.items()):
                try:
                    started.wait_ready()
                except launcher.LauncherUnfit as exc:
                    self._stop_forking(exc)
                    return
                except launcher.LauncherDied:
                    self._forget_launcher(*key)  # its repeat's first job starts another, or says why not

    def keep_launchers_to(self, cpus: set[int]) -> None:
        """Its launchers, every thread of each, onto these cores (the house's: run/dispatch.LocalPool), once they
        imported on every core."""
        for started in self._launchers.values():
            cores.move(started.pid, cpus)

    def _later(self, needed: set[tuple], environments: list) -> set[tuple]:
        """The launchers of the repeats later looks may add after these: kept where they started with earlier
        repeats, started where the host has room for them all."""
        if not needed:
            return set()
        most = min(self.most_repeats, launcher.MAX_LAUNCHERS)
        later = {(e, r) for e in environments for r in range(max(r for _, r in needed) + 1, most + 1)}
        if not later or later <= self._launchers.keys():
            return later
        return later if room.room_for(len(needed | later), len((needed | later) - self._launchers.keys())) else set()

    def _launcher(self, environment: Interpreter | None, repeat: int) -> launcher.Launcher:
        if (environment, repeat) not in self._launchers:
            started = self._launchers[(environment, repeat)] = launcher.Launcher(self.env, self.models, self.inductor,
                                                                                environment)
            weakref.finalize(self, started.close)
        return self._launchers[(environment, repeat)]

    def _stop_forking(self, why: Exception) -> None:
        """Workers start as new interpreters from now on (slower to start, as fresh)."""
        print(f"compilebench: workers start as new interpreters: a launcher cannot fork them ({why})", file=sys.stderr)
        self.fork = False
        for key in list(self._launchers):
            self._forget_launcher(*key)

    def _spawn(self, job: Job, paths: list[str], env: dict, write_fd: int, log) -> tuple[int, Callable[[], int]]:
        """Start the worker; returns its pid and a blocking wait for its exit code. Repeat i of every case is forked
        by launcher i: processes forked from one launcher share its memory layout and measured closer to each other
        than separate processes do (an A/A test called them different), so the repeats of a case come from
        different launchers, as independent as new interpreters. Beyond launcher.MAX_LAUNCHERS repeats, new
        interpreters."""
        environment = _environment(job)
        if self.fork and job.repeat <= launcher.MAX_LAUNCHERS:
            chosen = self._launcher(environment, job.repeat)
            try:
                pid = chosen.start(paths, env, write_fd, log.fileno())
                return pid, lambda: chosen.wait(pid)
            except launcher.LauncherUnfit as exc:
                self._stop_forking(exc)
            except launcher.LauncherDied:
                self._forget_launcher(environment, job.repeat)
                raise
        python, variables = (environment.python, interpreters.variables(environment)) if environment else (sys.executable, {})
        proc = subprocess.Popen(
            [python, "-m", "compilebench.measure.worker", paths[0], paths[1], str(write_fd), paths[2]],
            pass_fds=(write_fd,),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, **self.env, **variables, **env, "COMPILEBENCH_PARENT_PID": str(os.getpid())},
        )
        return proc.pid, proc.wait

    def _forget_launcher(self, environment: Interpreter | None, repeat: int) -> None:
        """After an interruption or a failure a launcher may be out of step: the next job starts another."""
        gone = self._launchers.pop((environment, repeat), None)
        if gone is not None:
            gone.close()

    def _run_worker(self, job, paths: list[str], log_path, env, on_phase) -> list[Repeat]:
        """`paths`: the job's file, its result's and its crash stack's (the worker writes the last two)."""
        result_path, crash_path = paths[1], paths[2]
        read_fd, write_fd = os.pipe()
        spawned_at = time.monotonic()
        with open(log_path, "wb") as log:
            try:
                pid, wait = self._spawn(job, paths, {**env, SPAWNED_AT: repr(spawned_at)}, write_fd, log)
            except launcher.LauncherDied as exc:
                os.close(write_fd)
                os.close(read_fd)
                return failure(job, "crashed", f"the worker could not be started ({exc})", "start")
        self._live.add(pid)
        os.close(write_fd)
        phase = ["start"]
        reader = threading.Thread(target=_relay_phases, args=(read_fd, phase, on_phase), daemon=True)
        reader.start()
        timed_out = threading.Event()

        def on_timeout() -> None:
            timed_out.set()
            _kill_group(pid)

        timeout_s = self.timeout_s * len(job.cases) if self.timeout_s else None  # the timeout is per case
        timer = threading.Timer(timeout_s, on_timeout) if timeout_s else None
        if timer:
            timer.daemon = True
            timer.start()
        try:
            returncode = wait()  # blocks: the driver takes no CPU while the case runs
        except launcher.LauncherDied:  # the launcher was killed, and its worker with it
            self._forget_launcher(_environment(job), job.repeat)
            returncode = -signal.SIGKILL
        except BaseException:  # Ctrl-C: take the worker and its compile workers down, keep nothing half-done
            _kill_group(pid)
            self._forget_launcher(_environment(job), job.repeat)
            raise
        finally:
            if timer:
                timer.cancel()
            _kill_group(pid)  # compile workers the case left behind
            self._live.discard(pid)
            reader.join(timeout=5)

        if timed_out.is_set():
            return failure(job, "timeout", f"killed after the {timeout_s:g} s --timeout, during {phase[0]}", phase[0])
        if os.path.exists(result_path):  # whole (written by rename): it finished, whatever came after
            with open(result_path) as f:
                repeats = [Repeat.from_dict(d) for d in json.load(f)]
            for rep in repeats:  # after its last phase: writing its result, and its exit
                rep.phases["end"] = round(max(0.0, time.monotonic() - spawned_at - sum(rep.phases.values())), 4)
            return repeats
        if pid in self._cancelled:
            raise Cancelled
        return failure(job, "crashed", _why_crashed(returncode, phase[0], job), phase[0],
                       _evidence(crash_path, log_path))


# AOTInductor's own phases (kinds/aot_inductor.py): a native crash there is torch's, not the model's
AOT_PHASES = ("exporting", "compiling ahead of time", "packaging", "loading the package")


def _why_crashed(returncode: int, phase: str, job: Job | None = None) -> str:
    if returncode < 0:
        name = signal.Signals(-returncode).name
        hint = " (often the kernel's out-of-memory killer)" if name == "SIGKILL" else ""
        return f"worker killed by {name}{hint} during {phase}" + _aot_hint(job, phase)
    return f"worker exited with code {returncode} without a result, during {phase}" + _aot_hint(job, phase)


def _aot_hint(job: Job | None, phase: str) -> str:
    """What to do where AOTInductor died in native code: its cause is not found yet (it died so under torch 2.11
    with CUDA 13 on an H200 and an H100, 2026-11-25/26), so the line names the torch and the ways around it."""
    if job is None or phase not in AOT_PHASES or not any(c.variant.ahead_of_time for c in job.cases):
        return ""
    if job.environment:
        torch = f"the {Interpreter.from_dict(job.environment).name} environment's torch"
    else:
        from importlib import metadata

        torch = f"torch {metadata.version('torch')}"
    return (f": AOTInductor died in native code under {torch} (its stack is in the details); torch.compile of the "
            "same model (--variant default) is measured without a package, or another torch under --env")


def _evidence(crash_path: str, log_path: str) -> str:
    """Where a worker that died was (its threads' stacks, if it crashed in native code), then what it printed last."""
    tail = _tail(log_path)
    crashed = crashes.read(crash_path)
    return f"{crashed}\n\n--- the end of the worker's output:\n{tail[-LOG_TAIL_CHARS // 2:]}" if crashed else tail


def _environment(job: Job) -> Interpreter | None:
    return Interpreter.from_dict(job.environment) if job.environment else None


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


def make(isolation: str, timeout_s: float | None, models: tuple[str, ...] = (), inductor: bool = False,
         most_repeats: int = 0):
    return InlineExecutor() if isolation == "inline" else ProcessExecutor(timeout_s, models=models, inductor=inductor,
                                                                          most_repeats=most_repeats)
