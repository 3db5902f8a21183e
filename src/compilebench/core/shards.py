"""Shards: one run's cases split over N machines that never talk to each other (a Slurm job array, a Kubernetes
Indexed Job, a CI matrix), each shard running `compilebench run ... --shard i/N` into its own results file.

Every shard computes the same partition on any machine, from the plan alone: the cases are grouped so a model's
eager twin, its compiled variants and its quantizations (what a verdict is read against) land together, with all
their repeats; the groups are dealt to the shards longest first, each to the shard with the least expected work
so far (LPT), by each case's expected cost (`Costs`). The plan (every case and its shard, the command without
--shard, compilebench) is recorded with each shard's run, so a report over the shard files says what is missing (coverage).
Pure data and arithmetic."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from compilebench.core.errors import UserError

if TYPE_CHECKING:
    from compilebench.core.result import Result
    from compilebench.core.run import Run

# The schedulers' own variables. Slurm numbers array tasks from --array's first index (often 0 or 1); Kubernetes
# numbers an Indexed Job's pods from 0 and does not say how many there are.
SLURM_ID, SLURM_MIN, SLURM_COUNT = "SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_COUNT"
K8S_INDEX = "JOB_COMPLETION_INDEX"
FROM_SCHEDULER = "auto"

SHARD_HELP = (f"i/N: measure the i-th of N parts of the run's cases (i from 1), each shard into its own results "
              f"file; {FROM_SCHEDULER}: i and N from Slurm's array ({SLURM_ID}, {SLURM_COUNT}); {FROM_SCHEDULER}/N: "
              f"i from Kubernetes' {K8S_INDEX} (or Slurm's), N given")


@dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, text: str, environ=os.environ) -> Shard:
        """'2/8'; 'auto' (Slurm's array); 'auto/8' (Kubernetes' completion index, or Slurm's, out of 8)."""
        given = text.strip()
        head, _, tail = given.partition("/")
        if head == FROM_SCHEDULER:
            return cls._from_scheduler(given, _count(tail, given) if tail else None, environ)
        if not tail:
            raise UserError(f"--shard {given!r}: expected i/N (the i-th of N shards, i from 1), {FROM_SCHEDULER} or "
                            f"{FROM_SCHEDULER}/N")
        return cls._checked(_integer(head, given, "i"), _count(tail, given), given)

    @classmethod
    def _from_scheduler(cls, given: str, count: int | None, environ) -> Shard:
        if environ.get(SLURM_ID, "").strip():
            first = _integer(environ.get(SLURM_MIN, "0"), given, SLURM_MIN)
            index = _integer(environ[SLURM_ID], given, SLURM_ID) - first + 1
            slurm_count = environ.get(SLURM_COUNT, "").strip()
            total = _integer(slurm_count, given, SLURM_COUNT) if slurm_count else count
            if count is not None and total != count:
                raise UserError(f"--shard {given}: Slurm's array has {total} tasks ({SLURM_COUNT}), not {count}")
            if total is None:
                raise UserError(f"--shard {given}: {SLURM_COUNT} is not set: give the count ({FROM_SCHEDULER}/N)")
            return cls._checked(index, total, f"{given} (Slurm's array task {environ[SLURM_ID]})")
        if environ.get(K8S_INDEX, "").strip():
            if count is None:
                raise UserError(f"--shard {given}: Kubernetes' {K8S_INDEX} does not say how many shards there are: "
                                f"give it ({FROM_SCHEDULER}/N, N the Job's completions)")
            return cls._checked(_integer(environ[K8S_INDEX], given, K8S_INDEX) + 1, count,
                                f"{given} ({K8S_INDEX}={environ[K8S_INDEX]})")
        raise UserError(f"--shard {given}: neither {SLURM_ID} (a Slurm array) nor {K8S_INDEX} (a Kubernetes Indexed "
                        "Job) is set here: give i/N")

    @classmethod
    def _checked(cls, index: int, count: int, given: str) -> Shard:
        if not 1 <= index <= count:
            raise UserError(f"--shard {given}: shard {index} is out of range (shards count from 1 to {count})")
        return cls(index, count)


def _integer(text: str, given: str, what: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise UserError(f"--shard {given}: {what} must be a whole number, got {text!r}") from None


def _count(text: str, given: str) -> int:
    n = _integer(text, given, "N")
    if n < 1:
        raise UserError(f"--shard {given}: N must be at least 1 (the number of shards)")
    return n


def dealt(items: list, shard: Shard) -> list:
    """A shard's share of an ordered list, dealt round-robin (the likeliest configurations of a search first: each
    shard gets its fair share of them)."""
    return items[shard.index - 1::shard.count]


def partition(groups: dict[str, float], count: int) -> dict[str, int]:
    """Each group (name -> expected seconds) to a shard 1..count: longest first, each to the least loaded shard
    (ties: the lower shard), names breaking ties between equal costs, so every machine computes the same."""
    load = [0.0] * count
    out = {}
    for name, cost in sorted(groups.items(), key=lambda g: (-g[1], g[0])):
        shard = min(range(count), key=lambda i: (load[i], i))
        load[shard] += cost
        out[name] = shard + 1
    return out


@dataclass
class ShardPlan:
    """The partition of one plan, as recorded with each shard's run: which shard each case (by key) runs in, and
    its expected seconds; `plan`: an id of the whole plan (the cases, the command without --shard, compilebench),
    the same in every shard of one sharded run."""

    index: int
    count: int
    plan: str
    cases: dict[str, int] = field(default_factory=dict)  # case key -> its shard
    seconds: dict[str, float] = field(default_factory=dict)  # case key -> expected seconds
    names: dict[str, str] = field(default_factory=dict)  # case key -> the case in words (model b1 default)
    costs_from: str = "estimate"  # "estimate", or the results file the costs were measured in
    command: str | None = None  # the command without --shard
    search: bool = False  # tune's search: each shard searches its share of the configurations (no cases planned)

    @classmethod
    def made(cls, shard: Shard, groups: dict[str, dict[str, float]], command: str | None, version: str | None,
             costs_from: str = "estimate", names: dict[str, str] | None = None) -> ShardPlan:
        """`groups`: group name -> {case key: expected seconds}; `names`: each case in words."""
        placed = partition({g: sum(c.values()) for g, c in groups.items()}, shard.count)
        cases = {k: placed[g] for g, c in groups.items() for k in c}
        seconds = {k: s for c in groups.values() for k, s in c.items()}
        # the partition itself is part of the id: shards whose estimates differed (another history file, a model one
        # machine could not build) deal the cases otherwise, and are then two plans, refused together
        ident = _plan_id(cases=sorted(cases.items()), count=shard.count, command=command, compilebench=version)
        return cls(shard.index, shard.count, ident, cases,
                   {k: round(s, 1) for k, s in seconds.items()}, names or {}, costs_from, command)

    @classmethod
    def of_search(cls, shard: Shard, command: str | None, version: str | None) -> ShardPlan:
        """`tune --shard`: the shard's share of the search space (dealt()), which configurations a budget reaches
        being the search's to decide, not a plan's."""
        return cls(shard.index, shard.count, _plan_id(search=True, count=shard.count, command=command,
                                                      compilebench=version), command=command, search=True)

    def mine(self, key: str) -> bool:
        """Whether this shard measures the case: a search's shard measures every case its share leads it to."""
        return self.search or self.cases.get(key) == self.index

    def expected(self) -> list[float]:
        """Expected seconds of each shard, 1..count."""
        out = [0.0] * self.count
        for key, shard in self.cases.items():
            out[shard - 1] += self.seconds.get(key, 0.0)
        return out

    def to_dict(self) -> dict:
        return dict(vars(self))

    @classmethod
    def from_dict(cls, d: dict) -> ShardPlan:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in known})


def _plan_id(**what) -> str:
    """The same 12 hex digits for the same plan on every machine."""
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:12]


# What only says where a shard's results go, or how they are shown: left out of the command every shard shares.
PER_SHARD = {"--shard": True, "--db": True, "--out": True, "--format": True, "--quiet": False}


def shared_command(argv: list[str]) -> str:
    """A command line as every shard of one plan types it: without --shard, --db, --out, --format and --quiet."""
    out, skip = [], False
    for arg in argv:
        name = arg.split("=", 1)[0]
        if skip:
            skip = False
        elif name in PER_SHARD:
            skip = PER_SHARD[name] and "=" not in arg
        else:
            out.append(arg)
    return " ".join(out)


# What a report over shard files says of them: for each sharded plan, which shards are present, and which of its
# planned cases have no result yet, so a report over some of the files is never read as the whole run. Shards of
# different plans under one tag (another command, another compilebench) are refused: their tables would mix two
# runs as one.

SHOWN = 8  # missing cases named on a line; the rest counted


@dataclass
class Coverage:
    """One sharded plan as the files hold it."""

    plan: ShardPlan  # as its first shard found recorded it (every shard records the whole partition)
    shards: dict[int, list[str]] = field(default_factory=dict)  # shard index -> the files holding its run(s)
    missing_cases: list[str] = field(default_factory=list)  # planned cases (in words) without a result

    @property
    def missing_shards(self) -> list[int]:
        return [i for i in range(1, self.plan.count + 1) if i not in self.shards]

    @property
    def complete(self) -> bool:
        return not self.missing_shards and not self.missing_cases

    def describe(self) -> str:
        what = "tune's search in shards" if self.plan.search else "Shards"
        head = (f"{what} of plan {self.plan.plan} ({self.plan.command or 'a run'}): "
                f"{len(self.shards)} of {self.plan.count} present")
        if self.complete:
            return f"{head}, " + ("each its share of the configurations searched: complete; the best over them is "
                                  "the Recommendation's." if self.plan.search else "every planned case measured: complete.")
        parts = []
        if self.missing_shards:
            parts.append("missing shard(s) " + ", ".join(f"{i}/{self.plan.count}" for i in self.missing_shards))
        if self.missing_cases:
            named = ", ".join(self.missing_cases[:SHOWN])
            more = f" and {len(self.missing_cases) - SHOWN} more" if len(self.missing_cases) > SHOWN else ""
            parts.append(f"{len(self.missing_cases)} of {len(self.plan.cases)} planned cases without a result: "
                         f"{named}{more}")
        return f"{head}; INCOMPLETE: " + "; ".join(parts) + "."


def coverage(runs: list[tuple[str, Run]], results: list[Result]) -> list[Coverage]:
    """Each sharded plan the files' runs (file, run) belong to, oldest first; a UserError where two plans claim
    the same tag and shard count."""
    measured = {r.case_key for r in results if r.repeats}
    plans: dict[str, Coverage] = {}
    by_tag: dict[tuple, tuple[str, Run]] = {}
    for path, run in sorted(runs, key=lambda x: x[1].started):
        if not run.shard:
            continue
        plan = ShardPlan.from_dict(run.shard)
        other = by_tag.setdefault((run.tag, plan.count), (path, run))
        other_plan = ShardPlan.from_dict(other[1].shard)
        if other_plan.plan != plan.plan:
            raise UserError(_mixed(other, other_plan, (path, run), plan))
        found = plans.setdefault(plan.plan, Coverage(plan))
        found.shards.setdefault(plan.index, []).append(path)
    for c in plans.values():
        c.missing_cases = [c.plan.names.get(k, k) for k in c.plan.cases if k not in measured]
    return list(plans.values())


def _mixed(a: tuple[str, Run], plan_a: ShardPlan, b: tuple[str, Run], plan_b: ShardPlan) -> str:
    differ = []
    if plan_a.command != plan_b.command:
        differ.append(f"{plan_a.command!r} and {plan_b.command!r}")
    if a[1].compilebench != b[1].compilebench:
        differ.append(f"compilebench {a[1].compilebench} and {b[1].compilebench}")
    why = "; ".join(differ) or "they dealt the cases otherwise: another --shard-history, or estimates that differed"
    return (f"{a[0]} (shard {plan_a.index}/{plan_a.count}) and {b[0]} (shard {plan_b.index}/{plan_b.count}) are "
            f"shards of different plans under tag {a[1].tag!r} ({why}): report each plan's shard files apart, or "
            "measure the shards again with one command and one compilebench")
