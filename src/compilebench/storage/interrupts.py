"""Ctrl-C and SIGTERM, the one way every command takes them: what finished is kept, the command stops with one line
(exit 130 or 143), and a write in progress (a result being committed, a report being moved into place) ends
first."""

from __future__ import annotations

import contextlib
import signal
import threading


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM: stop, keep what finished, say how to resume."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stop_signals(then=None):
    """SIGTERM ends a sweep as Ctrl-C does: what finished is kept and the way to resume is printed. `then`: the
    handler left in place on leaving (signal.SIG_IGN once a program's outcome is decided), else the previous."""

    def raise_(signum, frame):
        raise Interrupted(signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, raise_) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler if then is None else then)


@contextlib.contextmanager
def signals_deferred():
    """A stop signal that arrives while a result is being committed waits until it is committed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: received.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if received:
            raise Interrupted(received[0])
