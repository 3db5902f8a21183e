"""What a sweep shows while it runs: on a terminal one progress bar over its repeats, the case and phase of each
slot; where stderr is not a terminal (a CI log, `2>log`) one plain line per finished repeat instead, since a bar's
carriage-return frames make a log one endless line; and the lines that must be seen even with --quiet. It
implements dispatch.Progress."""

from __future__ import annotations

import sys
import threading

from tqdm import tqdm

from compilebench.run.dispatch import Unit

# tqdm's monitor thread wakes every few seconds; nothing of ours may run beside a timed loop.
tqdm.monitor_interval = 0


class Bar:
    """One bar over every repeat of the sweep (tqdm's rate gives the ETA) and, per slot, the case it runs and its
    phase. Updated only when something changes: nothing of ours runs beside a timed loop on a timer."""

    def __init__(self, total: int, repeats: int, quiet: bool, stream=None):
        stream = stream or sys.stderr
        plain = not quiet and not stream.isatty()
        self.bar = Lines(total, stream) if plain else tqdm(total=total, disable=quiet, unit="repeat",
                                                            dynamic_ncols=True, file=stream)
        self.repeats, self.quiet = repeats, quiet
        self.running: dict[str, tuple[str, str]] = {}
        self.lock = threading.Lock()

    def started(self, slot: str, unit: Unit) -> None:
        self._set(slot, (unit.describe(self.repeats), "start"))

    def phase(self, slot: str, phase: str) -> None:
        with self.lock:
            what = self.running.get(slot, ("", ""))[0]
        self._set(slot, (what, phase))

    def finished(self, slot: str) -> None:
        self._set(slot, None)

    def measured(self, what: str, outcome: str) -> None:
        """A repeat finished and stored: counted on the bar; its own line where the output is plain lines."""
        with self.lock:
            self.bar.update(1)
            if isinstance(self.bar, Lines):
                self.bar.write(f"[{self.bar.n}/{self.bar.total}] {what}: {outcome}")

    def note(self, message: str) -> None:
        """A line that must be seen even with --quiet (waiting for a device another run holds)."""
        with self.lock:
            if self.quiet:
                print(message, file=sys.stderr, flush=True)
            else:
                self.bar.write(message, file=sys.stderr)

    def _set(self, slot: str, value: tuple[str, str] | None) -> None:
        with self.lock:
            if value is None:
                self.running.pop(slot, None)
            else:
                self.running[slot] = value
            if len(self.running) == 1:  # one at a time (the default): the case, then its phase
                ((what, phase),) = self.running.values()
                self.bar.set_description(what, refresh=False)
                self.bar.set_postfix_str(phase)
            elif self.running:
                self.bar.set_description(f"{len(self.running)} running", refresh=False)
                self.bar.set_postfix_str(" | ".join(f"{s}: {w} ({p})" for s, (w, p) in sorted(self.running.items())))


class Lines:
    """tqdm's calls as the sweep makes them, for a log: no frames, only the lines written (each finished repeat
    writes one, see Bar.measured)."""

    def __init__(self, total: int, stream):
        self.total, self.n, self.stream = total, 0, stream

    def update(self, n: int = 1) -> None:
        self.n += n

    def write(self, line: str, file=None) -> None:
        print(line, file=file or self.stream, flush=True)

    def refresh(self) -> None:
        pass  # nothing is drawn between lines

    def set_description(self, desc: str, refresh: bool = True) -> None:
        pass

    def set_postfix_str(self, s: str) -> None:
        pass

    def close(self) -> None:
        pass
