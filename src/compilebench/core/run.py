"""Run: one invocation of compilebench (a command, or a call of the Python API), stored once in the results file's
runs table: the command as typed, the spec as resolved, its tag, its design (the looks at its verdicts, the rounds
it pairs from), its timing resolved per kind of timed unit, the compilebench that ran it, when it started and
ended, and what it decided of its cases (those it left undecided, and why). Every repeat names the run that
measured it; a case's figures read its runs' facts from here, never from copies on its repeats.

Results written before runs were recorded get a run each when their file is migrated, `recorded` False: it holds
what the result itself stored (its timing, its isolation) and says nothing of which repeats ran together."""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field

from compilebench.core.job import Timing
from compilebench.core.record import Record, parts
from compilebench.core.repeat import utc_now

# why a run stopped measuring an undecided case, and how each is said
MAX_REPEATS, TIME_BUDGET, SHARING = "max-repeats", "time budget", "sharing"
STOPPED = {MAX_REPEATS: "--max-repeats ended it, not the data",
           TIME_BUDGET: "the time budget for extra rounds (--extra-time) ended it, not the data",
           SHARING: "the check of what sharing the process changed ended it"}


@dataclass(kw_only=True)
class Run(Record):
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    command: str | None = None  # as typed ("compilebench run --model vit"), or the Python API's call
    spec: dict = field(default_factory=dict)  # the RunSpec as resolved (the device found, the suite filled in)
    tag: str | None = None  # its label in a history: --tag, $COMPILEBENCH_TAG or the git commit
    # Repeats until decided: the processes per case at each look at its verdicts (sequential.looks; one look: a fixed
    # design, 95%), and the rounds from which it pairs a comparison's processes by round (sequential.PAIR_FROM; None:
    # never, as runs before issue 40 did)
    design: list[int] = field(default_factory=list)
    looks: int | None = None  # len(design); kept apart for results written under the equal split (no design)
    pair_from: int | None = None
    timing: dict = parts(Timing)  # per kind of timed unit ("forward", "generation", "serving"): as it was timed
    isolation: str = "process"  # "process" (a fresh worker per repeat) or "inline" (the caller's process)
    compilebench: str | None = None  # its version
    host: str | None = None  # where its driver ran
    started: str = field(default_factory=utc_now)
    ended: str | None = None  # None: still running, or stopped without saying (killed)
    undecided: dict = field(default_factory=dict)  # result id -> why the run stopped short of a verdict
    shard: dict | None = None  # --shard: core/shards.ShardPlan (this shard, the whole plan's partition)
    recorded: bool = True  # False: made when a file written before runs were recorded was migrated

    def __post_init__(self):
        self.timing = {k: v if isinstance(v, Timing) else Timing.from_dict(v) for k, v in self.timing.items()}

    def to_dict(self) -> dict:
        """Every field, always (a run is stored once: its defaults are facts too)."""
        return {**self.extra, **{f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)
                                 if f.name != "extra"}}


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value.to_dict() if hasattr(value, "to_dict") else value
