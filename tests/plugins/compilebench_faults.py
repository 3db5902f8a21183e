"""Models and a backend that fail on purpose, loaded through COMPILEBENCH_PLUGINS so that every status
(oom, error, invalid, crashed, timeout) is produced for real, in-process or in a worker process."""

import ctypes
import os
import signal
import threading
import time
from dataclasses import dataclass

import torch
from torch import nn

from compilebench import zoo
from compilebench.zoo.entry import ModelEntry

RECOMPILE_AT_CALL = 7  # with --warmup 2: calls 1-3 are eager (the reference, again: is it steady?, and on its input
# moved by one rounding step: how sensitive?), 4 the first compiled call, 5-6 warm-up, 7+ timed


class Small(nn.Module):
    def __init__(self, behaviour: str):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.behaviour = behaviour
        self.calls = 0
        self.switched = False
        self.told = False

    def forward(self, pixel_values):
        if self.behaviour == "oom":
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB (injected)")
        if self.behaviour == "host-oom":
            raise MemoryError("injected host allocation failure")
        if self.behaviour == "crash":
            os.kill(os.getpid(), signal.SIGKILL)
        if self.behaviour == "segfault":  # a crash in native code (AOTInductor's packaging), in a thread, with as many
            # extension modules as the GPU image
            _load_extension_modules()
            crashing = threading.Thread(target=_crash_in_a_thread, name="crashing")
            crashing.start()
            crashing.join()
        if self.behaviour == "kill-parent":  # the process running the worker (a Ray worker) dies
            os.kill(os.getppid(), signal.SIGKILL)
            time.sleep(60)  # the worker dies with its parent (PR_SET_PDEATHSIG) long before this ends
        if self.behaviour == "hang":
            time.sleep(3600)
        if self.behaviour == "slow":
            start = time.time()
            time.sleep(0.2)
            if os.environ.get("COMPILEBENCH_FAULT_LOG"):  # when each call ran: tests check cases never overlap
                with open(os.environ["COMPILEBENCH_FAULT_LOG"], "a") as f:
                    f.write(f"{os.getpid()} {start} {time.time()}\n")
        if self.behaviour == "paced":  # each call takes what the environment says: a model made slower on demand
            # held on its core, not asleep: a sleeping thread woke up to 6 ms late here behind torch's OpenMP worker
            # spinning after the conv (10 ms read 15.7: a 30% slower model read 17-25% slower)
            until = time.perf_counter() + float(os.environ.get("COMPILEBENCH_FAULT_CALL_MS", "5")) / 1000
            while time.perf_counter() < until:
                pass
        if self.behaviour == "handshake":
            # Tells the test it is running (a line on a FIFO: "pid batch_size"), then waits for the test's reply
            # where one is asked for: the test acts at a known point, never after a sleep.
            fifo = os.environ.get("COMPILEBENCH_FAULT_FIFO")
            # COMPILEBENCH_FAULT_ONCE: only the run's first handshake worker tells (later ones go straight on)
            once = os.environ.get("COMPILEBENCH_FAULT_ONCE") and f"{fifo}.told"
            if fifo and not self.told and not (once and os.path.exists(once)):
                self.told = True
                if once:
                    open(once, "w").close()
                with open(fifo, "w") as f:
                    f.write(f"{os.getpid()} {pixel_values.shape[0]}\n")
                reply = os.environ.get("COMPILEBENCH_FAULT_REPLY")
                if reply:
                    with open(reply) as f:
                        f.readline()  # a line from the test: go on
        if self.behaviour == "flaky":  # fails the way COMPILEBENCH_FAULT_MODE says, this run only
            mode = os.environ.get("COMPILEBENCH_FAULT_MODE")
            if mode == "crash":
                os.kill(os.getpid(), signal.SIGKILL)
            if mode == "error":
                raise ValueError("injected error")
        if self.behaviour == "compiles":  # a model that compiles part of itself: its "eager" is not eager
            return {"logits": _compiled_scale(self.conv(pixel_values))}
        if self.behaviour == "break":
            x = self.conv(pixel_values)
            scale = x.abs().max().item()  # a Python number from a tensor: dynamo breaks the graph here
            if scale > 1e9:  # and branching on it cannot be captured even by fullgraph=True
                x = x * 0
            return {"logits": x}
        if self.behaviour == "jitter":  # eager that differs from itself: every other call 2% larger
            return {"logits": _jitter(self, self.conv(pixel_values))}
        if self.behaviour == "recompile":
            _tick(self)
            # dynamo guards on this flag: when it flips, the frame after the break compiles again
            return {"logits": self.conv(pixel_values) * (2.0 if self.switched else 1.0)}
        return {"logits": self.conv(pixel_values)}


@torch.compile(backend="eager")
def _compiled_scale(x):
    return x * 2.0


def _load_extension_modules():
    """scipy's subpackages: a few hundred extension modules, whose names faulthandler lists after the stacks."""
    import importlib

    for sub in ("linalg", "sparse", "signal", "stats", "optimize", "special", "interpolate", "integrate", "spatial",
                "ndimage", "fft", "io", "cluster", "odr"):
        importlib.import_module(f"scipy.{sub}")


def _crash_in_a_thread():
    ctypes.string_at(0)


@torch._dynamo.disable
def _tick(module):
    module.calls += 1
    if module.calls == RECOMPILE_AT_CALL:
        module.switched = True


@torch._dynamo.disable
def _jitter(module, x):
    module.calls += 1
    return x * (1.0 + JITTER * (module.calls % 2))


JITTER = 0.02


@dataclass(frozen=True)
class FaultModel(ModelEntry):
    behaviour: str = "ok"

    def build(self, weights, size):
        torch.manual_seed(0)
        return Small(self.behaviour).eval()

    def inputs(self, image, batch_size, weights, size):
        return {"pixel_values": torch.randn(batch_size, 3, 8, 8, generator=torch.Generator().manual_seed(0))}


for behaviour in ("ok", "oom", "host-oom", "crash", "kill-parent", "hang", "slow", "recompile", "break", "handshake", "flaky",
                  "paced", "segfault", "compiles", "jitter"):
    zoo.register(FaultModel(f"fault-{behaviour}", f"Test/{behaviour}", "image-classification", "none", behaviour))


def _raising_backend(gm, example_inputs):
    raise RuntimeError("injected compile failure")


def _perturbing_backend(gm, example_inputs):
    def run(*args):
        return [o + 1.0 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in gm(*args)]

    return run


torch._dynamo.register_backend(_raising_backend, name="test_raise")
torch._dynamo.register_backend(_perturbing_backend, name="test_perturb")
