"""What a result is compared against, found one way: every table, the CSV, check, compare, history, the
quantization table and a run's own decisions ask a Pairing, so the same cell has one figure in every format.

What it is compared against (`against`):
- EAGER: its eager twin, the same case uncompiled (the same model, batch size and settings, quantization included);
- FLOAT: the eager float baseline of a quantized case (the same case uncompiled and unquantized).

Where the baseline may come from (the scope):
- MACHINE: the same machine and software (host, device, torch, transformers: the id resume matches) and the same
  --env;
- HARDWARE: the same hardware, torch version and --env, the same machine first (a report's table groups a
  hardware's machines: each result is still read against its own machine's baseline where it has one);
- RUN: the same machine, measured by the same run (history: a run's speed-up is its own).
Among several, the newest. `compare` and `check` set a file's cases against another's by `match_key` (the case
without its device and --env), each side paired within itself."""

from __future__ import annotations

from typing import Callable, Iterable

from compilebench.core.case import Case, eager_key_of, key_of
from compilebench.core.result import Result

EAGER, FLOAT = "eager", "float"
MACHINE, HARDWARE, RUN = "machine", "hardware", "run"
SCOPES = (MACHINE, HARDWARE, RUN)


def key(case: dict | Case, against: str = EAGER) -> str:
    """The case key of what a case (as stored, or a Case) is compared against."""
    d = case.to_dict() if isinstance(case, Case) else case
    return eager_key_of(d, quantize="none") if against == FLOAT else eager_key_of(d)


def baseline_key(r: Result, against: str = EAGER) -> str:
    return key({**r.case_extra, **r.case.to_dict()}, against)


def match_key(r: Result, eager: bool = False) -> str:
    """What a case is matched on between files (compare, check): everything but the device and the environment
    (--env) it ran under; `eager`: its eager twin's."""
    case = {**r.case_extra, **r.case.to_dict(), "device": "", "environment": None}
    return eager_key_of(case) if eager else key_of(case)


def compared(r: Result, against: str = EAGER) -> bool:
    """Whether a result is read against such a baseline: against eager, a compiled case (or eager changed in what it
    runs: a static cache, a CUDA graph); against float, any case but the eager float baseline itself."""
    if against == FLOAT:
        return baseline_key(r, FLOAT) != r.case_key
    return r.case.variant.against_eager


class Pairing:
    """The results a set of results is paired within, indexed once by what they are and where they ran."""

    def __init__(self, results: Iterable[Result], scope: str = HARDWARE):
        if scope not in SCOPES:
            raise ValueError(f"scope {scope!r} is not one of {SCOPES}")
        self.scope = scope
        self._by: dict[tuple, list[Result]] = {}
        for r in sorted(results, key=lambda r: r.created_at):
            for where in self._where(r):
                self._by.setdefault((r.case_key, where), []).append(r)

    def _where(self, r: Result) -> list:
        if self.scope == RUN:
            return [(r.machine_id, run) for run in sorted(r.run_ids)]
        if self.scope == MACHINE:
            return [r.machine_id]
        env = r.env
        return [(env.hardware, env.torch_version, r.case.environment)]

    def of(self, r: Result | None, against: str = EAGER) -> Result | None:
        """What `r` is compared against, in this scope; None where it has none (an eager result, or none found)."""
        if r is None or not compared(r, against):
            return None
        wanted = baseline_key(r, against)
        found = [x for where in self._where(r) for x in self._by.get((wanted, where), ()) if x is not r]
        if self.scope == HARDWARE:  # its own machine's first, then the newest
            found.sort(key=lambda x: (x.machine_id == r.machine_id, x.created_at))
        return found[-1] if found else None

    def pairs(self, results: Iterable[Result], against: str = EAGER) -> Iterable[tuple[Result, Result]]:
        """(result, baseline) for each result that has one here."""
        for r in results:
            base = self.of(r, against)
            if base is not None:
                yield r, base


def newest(results: Iterable[Result], by: Callable[[Result], object]) -> dict:
    """The newest result for each value of `by`, in the order first met."""
    out: dict = {}
    for r in results:
        k = by(r)
        if k not in out or r.created_at >= out[k].created_at:
            out[k] = r
    return out
