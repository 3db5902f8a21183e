"""The warm-up before a timed loop: calls until the process is in the state the loop will keep (warm_up), and the
process set as its loop should find it (settled). Its clock is the timing's (measure/timing.py), injectable, so
the logic is tested on a fake clock."""

from __future__ import annotations

import contextlib
import gc
from dataclasses import dataclass, field
from typing import Callable

from compilebench.core.vocab import CAP, FIXED, STEADY
from compilebench.measure import compile_pool, cores

# Warm-up goes on in windows of calls until the machine is in the state the timed loop will keep: a window no faster
# than the one before by more than STEADY_TOLERANCE (warming up is getting faster; a state that gets slower is not
# one more calls cure), and on a GPU the SM clock where it was after the window before (not still rising, as an
# H200's does from 345 MHz idle to 1980 MHz under load). A window is at least
# WINDOW_S of calls (one call at least, WINDOW_CALLS at most), queued back to back as the timed loop queues them.
# No warm-up outlasts its cap (--warmup-cap, or --warmup-time where longer): the repeat records that it ended at
# the cap, unsteady. A cap of 0: the calls and seconds asked for, no more (as runs before issue 62 warmed up).
STEADY_TOLERANCE = 0.02
CLOCK_TOLERANCE = 0.02  # of the SM clock after the window before
WINDOW_S, WINDOW_CALLS = 0.1, 100


# After a switch between an interleaved process's variants, a variant's first calls run slower, its code and data
# out of the caches the other's calls used: on this project's 2-core VM (2026-11-28) a tiny ResNet-50's compiled
# calls read +60%, +20% and +10% at a block's first three, eager's +25% and +8%, and blocks of 10 read compile's
# speed-up 3.5-9% under each variant's alone; with 2 untimed calls opening each block, 0.99 of it. On an H200 a
# block's first call read 10-15% over its last ones. So each block opens with SWITCH_CALLS untimed calls, fewer
# where they would take over SWITCH_S (a large model's calls: the switch is a small share of one).
SWITCH_CALLS, SWITCH_S = 2, 0.05


@dataclass
class WarmUp:
    """What a warm-up did: its calls, how long they took, why it ended, and the per-call time of each window."""

    calls: int
    ns: int
    ended: str  # STEADY, CAP or FIXED
    windows_ms: list[float] = field(default_factory=list)  # each window's time per call
    sm_clock_mhz: int | None = None  # the GPU's SM clock when it ended (NVML), where read
    after_switch: int | None = None  # interleaved: the untimed calls that opened each of its blocks


def after_switch(w: WarmUp) -> int:
    """The untimed calls opening each interleaved block of a variant warmed up so (SWITCH_CALLS, above): none where
    its warm-up timed no window (a fixed warm-up, as runs before issue 62 had)."""
    per_call_s = w.windows_ms[-1] / 1e3 if w.windows_ms else None
    return min(SWITCH_CALLS, int(SWITCH_S / per_call_s)) if per_call_s else 0


def warm_up(fn: Callable[[], object], calls: int, clock, min_s: float = 0.0, cap_s: float | None = 0.0,
            sm_clock: Callable[[], int | None] | None = None, min_windows: int = 0) -> WarmUp:
    """At least `calls` untimed calls (the first window) and `min_s` seconds, then windows of calls until steady
    (above) over `min_windows` windows at least, or until `cap_s` (or `min_s`, where longer) has passed. `sm_clock`
    reads the GPU's SM clock (None: not read). A cap of None (a timing recorded before the cap existed) is 0: the
    warm-up asked for, no more."""
    cap_s = cap_s or 0.0
    t0 = clock.now_ns()
    for _ in range(calls):
        fn()
    clock.sync()
    per_call_ns = (clock.now_ns() - t0) / calls if calls else None
    made, cap_ns, min_ns = calls, int(max(cap_s, min_s) * 1e9), int(min_s * 1e9)
    # the calls asked for are the first window (a 3.7 s call on a CPU needs one more call, not two, to be judged)
    windows = [per_call_ns / 1e6] if per_call_ns and cap_s else []
    clocks = [sm_clock() if sm_clock else None] if windows else []
    while True:
        elapsed = clock.now_ns() - t0
        steady = (len(windows) > max(1, min_windows - 1) and windows[-1] >= windows[-2] * (1 - STEADY_TOLERANCE)
                  and (clocks[-1] is None or abs(clocks[-1] - clocks[-2]) <= clocks[-2] * CLOCK_TOLERANCE))
        if elapsed >= min_ns and (steady or elapsed >= cap_ns):
            return WarmUp(made, elapsed, STEADY if steady else CAP if cap_s else FIXED, windows,
                          clocks[-1] if clocks else None)
        size = _window(per_call_ns)
        start = clock.now_ns()
        for _ in range(size):
            fn()
        clock.sync()  # the device's time, not the host's queueing, is what must pass
        made, per_call_ns = made + size, (clock.now_ns() - start) / size
        windows.append(per_call_ns / 1e6)
        clocks.append(sm_clock() if sm_clock else None)


def _window(per_call_ns: float | None) -> int:
    """Calls in a warm-up window: WINDOW_S of them, one at least and WINDOW_CALLS at most (one before any is timed)."""
    if not per_call_ns:
        return 1
    return max(1, min(WINDOW_CALLS, round(WINDOW_S * 1e9 / per_call_ns)))


@contextlib.contextmanager
def settled():
    """The process as its timed loop should find it, from its warm-up to the loop's end: the compile pool its first
    call woke done starting (compile_pool.settle, what it yields), its compile workers moved off its cores
    (cores.set_aside), and what it built before (the model, the weights it drew, the compiler's graphs) kept out of
    the garbage collector's passes (gc.freeze): a process that drew the run's random weights holds more objects than
    one that loaded them, and each collection during its loop would walk them all. What the calls themselves leave
    behind is collected as always. A process that had frozen its heap before (a pre-forking server measuring in its
    own process) keeps it frozen after, with what the loop froze: unfreezing gives back every frozen object at once,
    its own too."""
    pool = compile_pool.settle()  # first: the pool whole (every worker forked) when its processes are moved
    cores.set_aside()
    frozen_before = gc.get_freeze_count()
    gc.collect()
    gc.freeze()
    try:
        yield pool
    finally:
        if not frozen_before:
            gc.unfreeze()


def sm_clock_of(watch) -> Callable[[], int | None] | None:
    """The watch's reader of the GPU's SM clock, where it has one (a GPU with NVML)."""
    return getattr(watch, "sm_clock", None)
