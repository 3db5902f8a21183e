"""What a report over shard files says of them (`run --shard i/N`, core/shards.py): for each sharded plan, which
shards are present, and which of its planned cases have no result yet, so a report over some of the files is never
read as the whole run. Shards of different plans under one tag (another command, another compilebench) are
refused: their tables would mix two runs as one."""

from __future__ import annotations

from dataclasses import dataclass, field

from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.core.shards import ShardPlan
from compilebench.report import data

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


def of_files(paths: list[str], results: list[Result]) -> list[Coverage]:
    """coverage() of the runs the files (or folders of them) hold."""
    return coverage(data.read(paths)[1], results)


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
