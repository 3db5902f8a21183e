"""The C allocator a worker process measures with: glibc's malloc set to keep the memory a call frees for the next
call, so that every process runs in the same state. Under its defaults glibc serves a large block from mmap and
returns it to the system when freed, and it moves that threshold with what the process freed before: two fresh
processes of one model may differ in whether each call's activations are page-faulted in anew. On this project's
2-core VM, eager DeepLabV3-MobileNet (full size, batch 1) read 144, 200, 205, 222, 231 and 231 ms in six fresh
processes under the defaults (the fast one held 649 MB, the others 480-575); with these settings 118-130 ms in six,
the state jemalloc with its decay off gives in Intel's PyTorch CPU benchmark scripts. A process that preloads another
allocator (LD_PRELOAD) keeps its own; the caller's process (an nn.Module measured inline) is never changed.
The state is recorded in each repeat's environment (`malloc`)."""

from __future__ import annotations

import ctypes
import os
import platform

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt's parameters (malloc.h)
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's ceiling for it on a 64-bit system: larger blocks still come from mmap
TRIM_THRESHOLD = 2**31 - 1  # the heap's top is never given back
PRELOADED = ("jemalloc", "tcmalloc", "mimalloc")

_state: str | None = None  # what keep_freed_memory did in this process; None: not asked (the defaults)


def keep_freed_memory(libc=None, preload: str | None = None, libc_ver=platform.libc_ver) -> str:
    """Set glibc's malloc to keep freed memory (above); returns the words the environment records. `libc`: the C
    library (ctypes), for tests; `preload`: LD_PRELOAD, from the environment by default."""
    global _state
    preload = os.environ.get("LD_PRELOAD", "") if preload is None else preload
    name, version = libc_ver()
    other = next((a for a in PRELOADED if a in preload), None)
    if other:
        _state = f"{other} (LD_PRELOAD), its own settings"
    elif name != "glibc":
        _state = f"{name or 'not glibc'}: its defaults"
    else:
        libc = libc if libc is not None else ctypes.CDLL(None)
        done = libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and libc.mallopt(M_TRIM_THRESHOLD,
                                                                                     TRIM_THRESHOLD) == 1
        _state = (f"glibc {version}: freed memory kept (mmap above {MMAP_THRESHOLD >> 20} MiB, no trim)" if done
                  else f"glibc {version}: its defaults (mallopt refused)")
    return _state


def state(libc_ver=platform.libc_ver) -> str:
    """What the environment records: what keep_freed_memory did, or the library's defaults where it was not asked."""
    if _state is not None:
        return _state
    name, version = libc_ver()
    return f"{name} {version}: its defaults" if name else "not glibc: its defaults"
