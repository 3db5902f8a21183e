"""How a worker process starts: forked from a launcher that has imported torch, transformers and compilebench
once, so a sweep spends its time measuring rather than importing (about 3 s per worker on 2 CPU cores).

The launcher is a process of its own, started with the slot's environment. It waits on a socket (blocked: it
takes no CPU while a case runs), and for each job forks a child that takes the job's environment (its private
compiler-state folders), starts a session of its own, and runs the worker. The child is as fresh as a new
interpreter where it matters: it holds no model, no compiled graph, no CUDA context (the launcher never touches
CUDA: it imports under torch's NVML-based CUDA check, since torch 2.11's inductor asks torch.cuda.is_available() as
it is imported, and it checks after each import that the driver is still uninitialized: if an import initialized
it, the executor starts new interpreters instead, and says which import), and inductor's on-disk folders are the
job's (the few that inductor fixes on import are pointed there in the child: compiler_state.follow_environment).
The launcher dies with the driver; its children die with it.

Processes forked from one launcher share its memory layout (address-space randomisation happens once, at its
start), and with it an offset of their own: measured here, one launcher's children ran ResNet-50 9% slower than
new interpreters in every one of 6 rounds, while over 8 launchers started afresh, forked / new interpreter was
0.98 (0.90-1.08) with the same spread (CV 10.1% and 10.5%). An A/A test with every repeat forked from one
launcher called the same case `faster` than itself in 3 of 5 pairs. So the executor keeps one launcher per
repeat index: the repeats of a case come from different launchers, each a draw of its own, and the spread
between them is in the interval. Exec (a new interpreter per job) is the fallback where fork is not available,
and the choice with COMPILEBENCH_LAUNCH=exec."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys

from compilebench.core.interpreter import Interpreter
from compilebench.run import interpreters

# A launcher per repeat index up to this many (each holds torch and transformers: a few hundred MB); later repeats
# start new interpreters.
MAX_LAUNCHERS = 8
# torch._dynamo: every worker resets it and reads its counters, eager ones too (a second of import each where the run
# compiles nothing with inductor and so preloads none of it).
PRELOAD = ("torch", "torch._dynamo", "transformers", "PIL.Image", "numpy", "compilebench.measure.worker",
           "compilebench.measure.forward", "compilebench.measure.generation", "compilebench.zoo")
# What torch.compile with inductor imports on its first call (0.9 s here, in every compiled case's worker until it
# was preloaded), for runs that compile with inductor; the folders it fixes on import follow each job's environment
# in the child.
INDUCTOR = "torch._inductor.compile_fx"


def enabled() -> bool:
    return hasattr(os, "fork") and hasattr(socket, "send_fds") and os.environ.get("COMPILEBENCH_LAUNCH", "fork") != "exec"


class LauncherDied(Exception):
    """The launcher went away (killed with the job it ran, or never started): start another."""


class LauncherUnfit(LauncherDied):
    """What the launcher imported touched the GPU driver: its children could not use CUDA. Start new interpreters."""


class Launcher:
    """The driver's end: start jobs in forked workers and wait for them, one at a time."""

    def __init__(self, env: dict[str, str], models: tuple[str, ...] = (), inductor: bool = False,
                 environment: Interpreter | None = None):
        """Starts it and returns at once: it imports while the driver goes on (wait_ready waits for it). It imports
        the classes of `models` (the zoo models the run measures) too, and inductor where the run compiles with it.
        Under an `environment` (--env) it is that environment's interpreter, with its variables from the start
        (some, thread counts among them, are read when torch is imported)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock = ours
        preload = json.dumps({"models": list(models), "inductor": inductor})
        python, variables = (environment.python, interpreters.variables(environment)) if environment else (sys.executable, {})
        self._proc = subprocess.Popen(
            [python, "-m", "compilebench.run.launcher", str(theirs.fileno()), preload], pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, **env, **variables, "COMPILEBENCH_PARENT_PID": str(os.getpid())})
        theirs.close()
        self._file = ours.makefile("r")
        self._ready = False

    @property
    def pid(self) -> int:
        return self._proc.pid

    def wait_ready(self) -> None:
        """Block until it has imported what it preloads (launchers started together import at once)."""
        if not self._ready:
            answer = self._readline()
            if answer.startswith("unfit "):
                raise LauncherUnfit(answer[len("unfit "):])
            if answer != "ready":
                raise LauncherDied("the launcher did not start")
            self._ready = True

    def _readline(self) -> str:
        line = self._file.readline()  # blocks: no polling beside a timed loop
        if not line:
            raise LauncherDied("the launcher closed its socket")
        return line.strip()

    def start(self, argv: list[str], env: dict[str, str], phase_fd: int, log_fd: int) -> int:
        """Fork a worker as `python -m compilebench.measure.worker JOB RESULT PHASE_FD CRASH` would run, with `env`
        added (argv: JOB, RESULT, CRASH); returns its pid."""
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
    from compilebench.measure import compiler_state, worker

    os.setsid()  # its own process group: a timeout kills it with every compile worker it starts
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.environ.update(job["env"])
    os.environ["COMPILEBENCH_PARENT_PID"] = str(os.getppid())  # dies with the launcher, which dies with the driver
    compiler_state.follow_environment()  # the job's folders, not the launcher's
    sys.argv = ["compilebench.measure.worker", *job["argv"]]
    job_path, result_path, crash_path = job["argv"]
    worker.main([job_path, result_path, str(phase_fd), crash_path])


def main(fd: int, preload: dict) -> None:
    from compilebench.measure import worker

    worker.confine()  # die with the driver
    sock = socket.socket(fileno=fd)
    touched = imported(preload)
    sock.sendall(f"unfit {touched}\n".encode() if touched else b"ready\n")
    if touched:
        return
    while True:
        got = _recv_job(sock)
        if got is None:
            return  # the driver closed its end
        job, (phase_fd, log_fd) = got
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


def imported(preload: dict) -> str | None:
    """Import what every child shares (PRELOAD, inductor where the run compiles with it, the run's model classes)
    and the environment's fingerprint; why the children could not use CUDA afterwards, naming the import after
    which it was so, or None. torch.cuda.is_available() answers through NVML meanwhile: torch 2.11's inductor asks
    it at import (torch/_inductor/runtime/benchmarking.py), and its default answer runs cuInit."""
    import importlib

    from compilebench import zoo
    from compilebench.measure import fingerprint

    steps = [(m, lambda m=m: importlib.import_module(m)) for m in PRELOAD + ((INDUCTOR,) if preload.get("inductor") else ())]
    steps.append(("the plugins of $COMPILEBENCH_PLUGINS", zoo.models))  # their models, registered once
    steps += [(f"the classes of {model}", lambda model=model: _preload_model(model)) for model in preload.get("models", ())]
    steps.append(("the fingerprint", fingerprint.static))  # forked children inherit it, collected once
    with _nvml_based_cuda_check(), _kept_out(KEPT_OUT):
        for what, step in steps:
            step()
            touched = cuda_touched()
            if touched:
                return f"{touched}, after importing {what}"
    return None


# What the launcher never imports, though what it preloads would: transformers imports torchao with every model
# class where torchao is installed (its quantization config), and on an H200 (2026-11-27, torchao 0.18) a launcher
# that had preloaded ViT's classes could not fork workers ("torch initialized CUDA in it, after importing the
# classes of vit"), so a quantized run started new interpreters. The worker that quantizes imports it itself.
KEPT_OUT = ("torchao",)


@contextlib.contextmanager
def _kept_out(packages: tuple[str, ...]):
    """These packages unimportable meanwhile (None in sys.modules: importing them fails, and find_spec finds none,
    so a library that imports them only where installed leaves them alone), then importable again, with
    transformers' cached answer to whether they are installed forgotten."""
    hidden = [p for p in packages if p not in sys.modules]
    for p in hidden:
        sys.modules[p] = None
    try:
        yield
    finally:
        for p in hidden:
            if sys.modules.get(p, 0) is None:
                del sys.modules[p]
        import_utils = sys.modules.get("transformers.utils.import_utils")
        for p in hidden:
            asked = getattr(import_utils, f"is_{p}_available", None)
            if hasattr(asked, "cache_clear"):
                asked.cache_clear()


# torch's fork-safe availability check: while set, torch.cuda.is_available() counts devices with NVML instead of
# cudaGetDeviceCount, which initializes the driver. Where NVML cannot answer (not installed, MIG UUIDs in
# CUDA_VISIBLE_DEVICES) torch asks CUDA after all, and the launcher is unfit.
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
NVML_ERROR_UNINITIALIZED = 1  # nvml.h: nvmlShutdown's answer once every nvmlInit is undone


@contextlib.contextmanager
def _nvml_based_cuda_check():
    """The launcher's imports under torch's NVML-based check; then NVML shut down as often as torch initialized it
    (it never shuts it down), so no child inherits an NVML session, and the variable as it was."""
    before = os.environ.get(NVML_CHECK)
    os.environ[NVML_CHECK] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(NVML_CHECK, None)
        else:
            os.environ[NVML_CHECK] = before
        _shut_nvml_down()


def _shut_nvml_down(maps_path: str = "/proc/self/maps") -> None:
    import ctypes

    path = _mapped("libnvidia-ml.so", maps_path)
    if path is None:
        return
    try:
        nvml = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)
        for _ in range(1000):  # one nvmlInit per question torch asked
            if nvml.nvmlShutdown() == NVML_ERROR_UNINITIALIZED:
                break
    except (OSError, AttributeError):
        pass


# The CUDA driver's answer to a question asked before cuInit (cuda.h).
CUDA_ERROR_NOT_INITIALIZED = 3


def cuda_touched(maps_path: str = "/proc/self/maps") -> str | None:
    """Why this process's children could not use CUDA, or None: CUDA is initialized in torch, or the driver library
    is (something asked it a question: cuInit, in this process only, and a forked child cannot initialize it again).
    Loaded alone, the driver is harmless: CUDA 13's cuBLASLt loads it as torch is imported (seen with torch
    2.11+cu130: LD_DEBUG names libcublasLt.so.13), and a child initializes it for itself, as after `import torch`.
    So a loaded driver is asked how many devices it has; before cuInit every driver answers "not initialized"."""
    import torch

    if torch.cuda.is_initialized():
        return "torch initialized CUDA in it"
    driver = _mapped("libcuda.so", maps_path)
    if driver is None:
        return None
    answer = _device_count_answer(driver)
    if answer == CUDA_ERROR_NOT_INITIALIZED:
        return None
    if answer is None:
        return "it loaded the CUDA driver (libcuda), which could not be asked whether it was initialized"
    return f"it initialized the CUDA driver (libcuda answered cuDeviceGetCount with {answer}, not 'not initialized')"


def _mapped(library: str, maps_path: str) -> str | None:
    """The path of the library (libcuda.so, libnvidia-ml.so) this process has loaded, or None."""
    try:
        with open(maps_path) as f:
            for line in f:
                path = line.split(maxsplit=5)[-1].strip()
                if os.path.basename(path).startswith(library):
                    return path
    except OSError:
        pass
    return None


def _device_count_answer(path: str) -> int | None:
    """cuDeviceGetCount's return code from the driver already loaded at `path` (never loading it), or None."""
    import ctypes

    try:
        driver = ctypes.CDLL(path, mode=os.RTLD_NOLOAD)  # the loaded one's handle, or an error: nothing is loaded
        count = ctypes.c_int(0)
        return int(driver.cuDeviceGetCount(ctypes.byref(count)))
    except (OSError, AttributeError):
        return None


def _preload_model(name: str):
    """Import a zoo model's class and its image processor's here, once for every repeat and variant its children
    run (1.6 s for the first one: most of transformers' modeling code): importing them is part of no measurement,
    and it is what a user's script imports before it builds the model anyway. Returns the model's class, or None
    (not a zoo model, or it cannot be imported)."""
    try:
        from compilebench import zoo

        entry = zoo.REGISTRY.get(name)
        class_name = getattr(entry, "model_class", None)
        if class_name:
            import transformers

            processor = getattr(entry, "processor_class", None)
            if processor:  # as HFModel.processor finds it
                getattr(transformers, processor, None) or getattr(transformers, processor.removesuffix("Pil"), None)
            return getattr(transformers, class_name)
    except Exception:  # a model that cannot be imported is the worker's to report
        pass
    return None


if __name__ == "__main__":
    main(int(sys.argv[1]), json.loads(sys.argv[2]) if len(sys.argv) > 2 else {})
