"""A worker keeps the memory its calls free (measure/allocator.py): glibc's malloc set so, another allocator left to
its own settings, and the state in every repeat's environment."""

import platform
import subprocess
import sys

import pytest

from compilebench.measure import allocator

GLIBC = ("glibc", "2.36")


class Libc:
    """glibc's mallopt as ctypes calls it: each parameter it is given, and its answer (1: done, 0: refused)."""

    def __init__(self, answer: int = 1):
        self.answer, self.calls = answer, []

    def mallopt(self, param: int, value: int) -> int:
        assert param in (allocator.M_MMAP_THRESHOLD, allocator.M_TRIM_THRESHOLD) and isinstance(value, int)
        self.calls.append((param, value))
        return self.answer


class NoLibc:
    def mallopt(self, param, value):
        raise AssertionError("mallopt called where another allocator, or no glibc, serves the process")


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(allocator, "_state", None)  # what this process did stays this process's


def test_glibc_is_set_to_keep_freed_memory_and_says_so():
    libc = Libc()
    said = allocator.keep_freed_memory(libc, preload="", libc_ver=lambda: GLIBC)
    assert libc.calls == [(allocator.M_MMAP_THRESHOLD, 32 << 20), (allocator.M_TRIM_THRESHOLD, 2**31 - 1)]
    assert said == allocator.state() == "glibc 2.36: freed memory kept (mmap above 32 MiB, no trim)"


def test_a_refusal_another_allocator_or_another_libc_is_said_as_it_is():
    assert allocator.keep_freed_memory(Libc(0), preload="", libc_ver=lambda: GLIBC) == (
        "glibc 2.36: its defaults (mallopt refused)")
    assert allocator.keep_freed_memory(NoLibc(), preload="/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
                                       libc_ver=lambda: GLIBC) == "jemalloc (LD_PRELOAD), its own settings"
    assert allocator.keep_freed_memory(NoLibc(), preload="", libc_ver=lambda: ("", "")) == "not glibc: its defaults"


def test_a_process_that_was_not_set_says_its_defaults():
    assert allocator.state(libc_ver=lambda: GLIBC) == "glibc 2.36: its defaults"
    assert allocator.state(libc_ver=lambda: ("", "")) == "not glibc: its defaults"


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc" or tuple(map(int, platform.libc_ver()[1].split("."))) < (2, 33),
                    reason="mallinfo2 is glibc 2.33's")
def test_on_this_glibc_a_16_mib_block_comes_from_the_heap_once_set_and_from_mmap_before():
    # a fresh interpreter (its allocator is its own): the bytes glibc holds in mmapped blocks while a 16 MiB block
    # is held, before and after keep_freed_memory
    script = """
import ctypes
from compilebench.measure import allocator

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = Info

def mmapped_while_held():
    block = libc.malloc(16 << 20)
    held = libc.mallinfo2().hblkhd
    libc.free(block)
    return held

before = mmapped_while_held()
said = allocator.keep_freed_memory()
print(before, mmapped_while_held(), said, sep="|")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
    before, after, said = out.split("|")
    assert int(before) >= 16 << 20 and int(after) < 16 << 20
    assert said.endswith("freed memory kept (mmap above 32 MiB, no trim)")
