"""Issue 62: inductor's compile pool, which compile_fx wakes at every compile of a graph on a GPU (a cached one too,
3 s where a cold one took 12 on an H200), has finished starting before a timed process warms up, and each loop
records how it stood."""

import functools
import os
import sys
from concurrent.futures import TimeoutError as FutureTimeout
from types import SimpleNamespace

import pytest
from fakeclock import FakeClock

from compilebench.core.vocab import POOL_FAILED, POOL_READY, POOL_STARTING
from compilebench.measure import compile_pool, cores, timing, warmup

MODULE = "torch._inductor.async_compile"


class Ready:
    """A strict stand-in for the pool's readiness future: result(timeout) as concurrent.futures has it."""

    def __init__(self, clock=None, takes_s=0.0, raises=None):
        self.clock, self.takes_s, self.raises, self.timeouts = clock, takes_s, raises, []

    def result(self, timeout=None):
        self.timeouts.append(timeout)
        if self.clock:
            self.clock.advance(int(self.takes_s * 1e9))
        if self.raises:
            raise self.raises
        return "ready"


def pool_module(monkeypatch, ready):
    monkeypatch.setitem(sys.modules, MODULE, SimpleNamespace(AsyncCompile=SimpleNamespace(_ready_future=ready)))


def seconds(clock):
    return lambda: clock.now_ns() / 1e9


def test_a_process_that_woke_no_pool_waits_for_none(monkeypatch):
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    assert compile_pool.settle() is None  # eager: inductor never imported, and settle does not import it
    assert MODULE not in sys.modules
    pool_module(monkeypatch, None)  # inductor imported, no pool woken (a compile on the CPU)
    assert compile_pool.settle() is None


def test_the_worker_waits_for_a_starting_pool_and_says_how_it_stood(monkeypatch):
    clock = FakeClock()
    ready = Ready(clock, takes_s=1.25)
    pool_module(monkeypatch, ready)
    assert compile_pool.settle(clock=seconds(clock)) == compile_pool.PoolWait(POOL_READY, 1.25)
    assert ready.timeouts == [compile_pool.WAIT_S]
    pool_module(monkeypatch, Ready(clock, takes_s=60, raises=FutureTimeout()))
    assert compile_pool.settle(clock=seconds(clock)) == compile_pool.PoolWait(POOL_STARTING, 60.0)
    pool_module(monkeypatch, Ready(raises=RuntimeError("SubprocPool closed")))
    assert compile_pool.settle().state == POOL_FAILED


def test_every_timed_loop_records_how_the_pool_stood_before_its_warm_up(monkeypatch):
    clock = FakeClock()
    pool_module(monkeypatch, Ready())

    def call():
        clock.advance(1_000_000)

    m = timing.measure(call, iters=3, warmup=1, clock=clock)
    assert m.conditions.compile_pool == POOL_READY and m.conditions.compile_pool_wait_s is not None
    both = timing.measure_interleaved({"eager": call, "default": call}, iters=3, warmup={"eager": 1, "default": 1},
                                      clock=clock)
    assert {m.conditions.compile_pool for m in both.values()} == {POOL_READY}
    generated = timing.measure_generation({"g": lambda stamp: (clock.advance(1_000), stamp())}, first_calls=1,
                                          iters=2, clock=clock)
    assert generated["g"].conditions.compile_pool == POOL_READY
    monkeypatch.delitem(sys.modules, MODULE)
    m = timing.measure(call, iters=3, warmup=1, clock=clock)
    assert m.conditions.compile_pool is None and m.conditions.compile_pool_wait_s is None


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="inductor starts no pool with one compile thread")
def test_a_real_pool_woken_as_a_gpu_compile_wakes_it_is_ready_and_all_of_it_set_aside(monkeypatch):
    """The real pool (the sidecar imports torch: seconds on 2 cores), woken as compile_fx wakes it for a graph on a
    GPU: once settled, its readiness is done and every process of it, each worker forked, keeps to the house's core.
    Before the worker waited, the timed process met it still importing, its workers not yet forked."""
    from torch._inductor import async_compile

    cpu = min(os.sched_getaffinity(0))
    monkeypatch.setenv(cores.HOUSE_ENV, str(cpu))
    async_compile.AsyncCompile.wakeup()
    try:
        with warmup.settled() as pool:
            assert pool.state == POOL_READY and async_compile.AsyncCompile._ready_future.done()
            helpers = cores.descendants(os.getpid())
            assert len(helpers) >= 1 + async_compile.get_compile_threads()  # the sidecar and its workers
            for pid in helpers:
                assert all(os.sched_getaffinity(int(t)) == {cpu} for t in os.listdir(f"/proc/{pid}/task"))
    finally:
        async_compile.shutdown_compile_workers()


def older_async_compile(ready):
    """Inductor's AsyncCompile as older torch releases had it: no `_ready_future`; the pool, made once (its maker's
    lru_cache), holds its own `ready_future`. Returns it and the list of pools made, which a reader must not add to."""
    made = []

    @functools.lru_cache(1)
    def process_pool():
        made.append(SimpleNamespace(ready_future=ready))
        return made[-1]

    return SimpleNamespace(process_pool=process_pool), made


def test_an_older_torchs_pool_is_waited_for_where_this_process_made_one_and_none_is_made_by_asking(monkeypatch):
    clock = FakeClock()
    older, made = older_async_compile(Ready(clock, takes_s=2.5))
    monkeypatch.setitem(sys.modules, MODULE, SimpleNamespace(AsyncCompile=older))
    children = {os.getpid(): [4242]}  # the pool's first process, as /proc would list it under this one
    monkeypatch.setattr(cores, "descendants", lambda pid: children.get(pid, []))
    assert compile_pool.settle(clock=seconds(clock)) is None and made == []  # none made, and asking made none
    older.process_pool()  # as those releases did on importing inductor, where triton is installed
    assert compile_pool.settle(clock=seconds(clock)) == compile_pool.PoolWait(POOL_READY, 2.5)
    assert len(made) == 1
    children.clear()  # the same pool, made by the launcher this worker was forked from: its processes are not ours
    assert compile_pool.settle(clock=seconds(clock)) is None
