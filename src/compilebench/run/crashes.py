"""What a worker killed by a signal leaves behind: faulthandler's dump of every thread's Python stack, written to a
file of the job's own (not the worker's log), read back with the thread that crashed first.

faulthandler ends its dump with the list of loaded extension modules (190 on the GPU image, thousands of
characters): kept in the log's tail, that list was all a crashed repeat held, its stack cut off. Here the list
becomes its count."""

from __future__ import annotations

import re

MAX_CHARS = 12000  # the crashing thread whole; the other threads as far as they fit
_CRASHED = ("Current thread", "Stack (most recent call first)")  # how faulthandler names the thread that crashed
_MODULES = re.compile(r"^Extension modules: .*?\(total: (\d+)\)\s*$", re.S)


def stack(dump: str) -> str | None:
    """The dump reordered: the fatal error's line, the crashing thread's stack, the other threads'; None if empty."""
    if not dump.strip():
        return None
    blocks = [b.strip("\n") for b in re.split(r"\n\s*\n", dump) if b.strip()]
    head, crashed, others, modules = [], [], [], ""
    for block in blocks:
        listed = _MODULES.match(block.strip())
        if listed:
            modules = f"({listed.group(1)} extension modules were loaded)"
        elif block.startswith(_CRASHED):
            crashed.append(block)
        elif block.startswith("Thread "):
            others.append(block)
        else:
            head.append(block)
    text = "\n\n".join(head + crashed)
    for block in others:
        if len(text) + len(block) + 2 > MAX_CHARS:
            text += f"\n\n({len(others) - others.index(block)} more threads left out)"
            break
        text += "\n\n" + block
    return text + (f"\n\n{modules}" if modules else "")


def read(path: str) -> str | None:
    """The crash stack a worker left at `path`, or None (it left none: it was killed, or exited, without a fault)."""
    try:
        with open(path, errors="replace") as f:
            return stack(f.read())
    except OSError:
        return None
