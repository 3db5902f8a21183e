"""Inductor's checks of which vector instruction sets this CPU runs, timed: part of a compile's seconds that is the
machine's, not the model's.

Before it generates C++ for a CPU, inductor builds a small library per instruction set it knows (AVX2, AVX-512,
AMX, ...) into its cache folder and loads each in a new Python process (`torch._inductor.cpu_vec_isa`), once a
process. From an empty compiler state it builds them too: on this project's 2-core VM 9.2 of a tiny model's 17.3 s
cold compile, 1.4 of its 3.0 s warm one (2026-11-29). A machine whose compiler state already holds them (one that
has compiled before, outside this tool's fresh state per case) pays the loads alone. Recorded as a phase of the
compile (`cpu_checks_s`), so a report can say how much of a cold compile a new process on a used machine would not
repeat."""

from __future__ import annotations

import functools
import time

_spent = {"s": 0.0, "watched": False}


def watch() -> None:
    """Time every check from now on (once a process; a torch without the checks where they are looked for is left
    alone, and its compiles record none)."""
    if _spent["watched"]:
        return
    try:
        from torch._inductor.cpu_vec_isa import VecISA
    except ImportError:
        return
    check = getattr(VecISA, "check_build", None)
    if check is None:
        return

    @functools.wraps(check)
    def timed(self, code):
        since = time.perf_counter()
        try:
            return check(self, code)
        finally:
            _spent["s"] += time.perf_counter() - since

    VecISA.check_build = timed
    _spent["watched"] = True


def reset() -> None:
    """Forget what earlier compiles of this process spent (a new case)."""
    _spent["s"] = 0.0


def spent() -> float | None:
    """Seconds the checks took since the last reset; None where they were not watched."""
    return _spent["s"] if _spent["watched"] else None
