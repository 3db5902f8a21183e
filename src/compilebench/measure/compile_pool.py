"""Inductor's compile pool, let finish starting before a timed process warms up. Inductor wakes its pool (a sidecar
interpreter that imports torch, then forks one compile worker per core) at every compile of a graph whose inputs are
on a GPU, a graph loaded from its cache too (compile_fx's `AsyncCompile.wakeup`: torch 2.13, PyTorch's main; older
releases started it as inductor was imported, wherever triton is installed). A cold compile outlasts the pool's
start; a cached one (3 s on an H200 where a cold one took 12) does not, and the pool would go on starting through the
warm-up and the timed loop, a state no server that started minutes before is in. So the worker waits for the pool's
own readiness (its first job done, every worker forked), then leaves it idle, as a server's is."""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

from compilebench.core.conditions import Conditions
from compilebench.core.vocab import POOL_FAILED, POOL_READY, POOL_STARTING
from compilebench.measure import cores

WAIT_S = 60.0  # the longest a worker waits; torch's own wait_pool_ready waits 120


@dataclass
class PoolWait:
    """How the pool stood when the warm-up began: POOL_READY, POOL_STARTING (WAIT_S passed) or POOL_FAILED."""

    state: str
    waited_s: float


def settle(timeout_s: float = WAIT_S, clock=time.perf_counter) -> PoolWait | None:
    """Waits until the compile pool this process started is ready; None where it started none (an eager process,
    a compile on the CPU in a torch that wakes the pool for a GPU's graphs only: inductor imported or not)."""
    inductor = sys.modules.get("torch._inductor.async_compile")  # never imported here: an eager process stays so
    ready = ready_future(getattr(inductor, "AsyncCompile", None))
    if ready is None:
        return None
    t0 = clock()
    try:
        ready.result(timeout=timeout_s)
        state = POOL_READY
    except FutureTimeout:
        state = POOL_STARTING
    except Exception:  # the pool closed or its sidecar died: compiling is over, the loop runs without it
        state = POOL_FAILED
    return PoolWait(state, round(clock() - t0, 3))


def ready_future(compile_async):
    """The future inductor completes once its pool has started: `AsyncCompile._ready_future` where this torch keeps it
    (set as the pool is first used), else the pool's own `ready_future`, where releases before PyTorch's PR 156187 (June
    2025) kept it (set as the pool was made, which they did as inductor was imported wherever triton is installed, for a
    CPU compile too). That pool is read only where one was made (its maker's cache holds it), so reading it makes none,
    and only where this process has processes of its own: one made by the launcher this worker was forked from (a
    release that kept it over a fork) is answered through threads that stayed there, and would never be ready here.
    None: none to wait for."""
    if compile_async is None:
        return None
    if hasattr(compile_async, "_ready_future"):
        return compile_async._ready_future
    made = getattr(getattr(compile_async, "process_pool", None), "cache_info", None)
    if made is None or not made().currsize or not cores.descendants(os.getpid()):
        return None
    return getattr(compile_async.process_pool(), "ready_future", None)


def noted(conditions: Conditions, wait: PoolWait | None) -> Conditions:
    """The loop's conditions with how the pool stood before its warm-up, where the process had one."""
    if wait is not None:
        conditions.compile_pool, conditions.compile_pool_wait_s = wait.state, wait.waited_s
    return conditions
