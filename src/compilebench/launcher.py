"""How a worker process starts: forked from a launcher that has imported torch, transformers and compilebench
once, so a sweep spends its time measuring rather than importing (about 3 s per worker on 2 CPU cores).

The launcher is a process of its own, started with the slot's environment. It waits on a socket (blocked: it
takes no CPU while a case runs), and for each job forks a child that takes the job's environment (its private
compiler-state folders), starts a session of its own, and runs the worker. The child is as fresh as a new
interpreter where it matters: it holds no model, no compiled graph, no CUDA context (the launcher never touches
CUDA), and inductor's on-disk locations are decided in the child (its code cache module, which fixes the
precompiled-header folder, is not imported by the launcher). The launcher dies with the driver; its children
die with it.

Processes forked from one launcher share its memory layout (address-space randomisation happens once, at its
start), and with it an offset of their own: measured here, one launcher's children ran ResNet-50 9% slower than
new interpreters in every one of 6 rounds, while over 8 launchers started afresh, forked / new interpreter was
0.98 (0.90-1.08) with the same spread (CV 10.1% and 10.5%). An A/A test with every repeat forked from one
launcher called the same case `faster` than itself in 3 of 5 pairs. So the executor keeps one launcher per
repeat index: the repeats of a case come from different launchers, each a draw of its own, and the spread
between them is in the interval. Exec (a new interpreter per job) is the fallback where fork is not available,
and the choice with COMPILEBENCH_LAUNCH=exec."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

# A launcher per repeat index up to this many (each holds torch and transformers: a few hundred MB); later repeats
# start new interpreters.
MAX_LAUNCHERS = 8
PRELOAD = ("torch", "transformers", "PIL.Image", "numpy", "compilebench.worker", "compilebench.forward",
           "compilebench.generation", "compilebench.zoo")


def enabled() -> bool:
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and os.environ.get("COMPILEBENCH_LAUNCH", "fork") != "exec"


class LauncherDied(Exception):
    """The launcher went away (killed with the job it ran, or never started): start another."""


class Launcher:
    """The driver's end: start jobs in forked workers and wait for them, one at a time."""

    def __init__(self, env: dict[str, str]):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = ours
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "compilebench.launcher", str(theirs.fileno())], pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, **env, "COMPILEBENCH_PARENT_PID": str(os.getpid())})
        theirs.close()
        self._file = ours.makefile("r")
        self._ready = False

    def wait_ready(self) -> None:
        """Block until it has imported what it preloads (launchers started together import at once)."""
        if not self._ready:
            if self._readline() != "ready":
                raise LauncherDied("the launcher did not start")
            self._ready = True

    def _readline(self) -> str:
        line = self._file.readline()  # blocks: no polling beside a timed loop
        if not line:
            raise LauncherDied("the launcher closed its socket")
        return line.strip()

    def start(self, argv: list[str], env: dict[str, str], phase_fd: int, log_fd: int) -> int:
        """Fork a worker running `python -m compilebench.worker ARGV` with `env` added; returns its pid."""
        message = json.dumps({"argv": argv, "env": env}).encode()
        self.wait_ready()
        try:
            socket.send_fds(self._sock, [len(message).to_bytes(8, "big") + message], [phase_fd, log_fd])
            return int(self._readline())
        except OSError as exc:
            raise LauncherDied(str(exc)) from exc

    def wait(self, pid: int) -> int:
        """The worker's exit code (negative: the signal that killed it), once it has exited."""
        answer = json.loads(self._readline())
        assert answer["pid"] == pid, answer
        return answer["returncode"]

    def close(self) -> None:
        self._sock.close()
        self._file.close()
        self._proc.kill()
        self._proc.wait()


def _recv_job(sock: socket.socket) -> tuple[dict, list[int]] | None:
    head, fds, _, _ = socket.recv_fds(sock, 8, 2)
    if not head:
        return None
    size = int.from_bytes(head, "big")
    body = b""
    while len(body) < size:
        chunk = sock.recv(size - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body), fds


def _child(job: dict, phase_fd: int, log_fd: int) -> None:
    """In the forked worker: become a fresh worker process with the job's environment, run it, exit."""
    import tempfile

    from compilebench import worker

    os.setsid()  # its own process group: a timeout kills it with every compile worker it starts
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.environ.update(job["env"])
    os.environ["COMPILEBENCH_PARENT_PID"] = str(os.getppid())  # dies with the launcher, which dies with the driver
    tempfile.tempdir = None  # the launcher's cached temporary folder: the job's TMPDIR decides now
    sys.argv = ["compilebench.worker", *job["argv"]]
    worker.main([*job["argv"][:2], str(phase_fd)])


def main(fd: int) -> None:
    import importlib

    from compilebench import worker

    worker.confine()  # die with the driver
    sock = socket.socket(fileno=fd)
    for module in PRELOAD:
        importlib.import_module(module)
    sock.sendall(b"ready\n")
    while True:
        got = _recv_job(sock)
        if got is None:
            return  # the driver closed its end
        job, (phase_fd, log_fd) = got
        _preload_model(job)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                sock.close()
                _child(job, phase_fd, log_fd)
                code = 0
            finally:
                os._exit(code)
        os.close(phase_fd)
        os.close(log_fd)
        sock.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)  # blocks while the case runs
        sock.sendall((json.dumps({"pid": pid, "returncode": os.waitstatus_to_exitcode(status)}) + "\n").encode())


def _preload_model(job: dict) -> None:
    """Import the job's model class here, once for every later repeat and variant: importing it is part of no
    measurement, and it is what a user's script imports before it builds the model anyway."""
    try:
        with open(job["argv"][0]) as f:
            case = json.load(f)["cases"][0]
        from compilebench import zoo

        entry = zoo.REGISTRY.get(case["model"])
        name = getattr(entry, "model_class", None)
        if name:
            import transformers

            getattr(transformers, name)
    except Exception:  # anything wrong with the job is the worker's to report
        pass


if __name__ == "__main__":
    main(int(sys.argv[1]))
