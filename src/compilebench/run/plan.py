"""A run made ready, the one way into a run for `compilebench run`, `shapes`, `tune` and the Python API:
`prepare(spec, placement)` looks every model up once, refuses what cannot work (run/refusals.py), and finds where
the cases run (run/placement.py: this machine's device, found without initializing CUDA in this process, its GPUs, or a Ray
cluster); `plan.run(store)` measures, `plan.results(store)` reads back what it measured."""

from __future__ import annotations

import dataclasses
import os
import socket
from dataclasses import dataclass

from compilebench.core import (
    case as casemod,
    interpreter,
    sequential,
    settings,
    shards,
    spec as specmod,
    traffic,
)
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.run import Run
from compilebench.measure import fingerprint
from compilebench.run import costs, dispatch, interpreters, refusals, sweep, tags
from compilebench.run.placement import Placement


@dataclass
class Plan:
    """What a run measures and where: its spec (the device resolved), its models, cases and targets."""

    spec: specmod.RunSpec
    models: dict  # name -> zoo entry
    dispatcher: dispatch.Dispatcher
    targets: list[dispatch.Target]
    command: str | None = None  # as typed, for the run's record
    shard: shards.ShardPlan | None = None  # --shard: the whole plan's partition, this run measuring its own part

    def new_run(self, spec: specmod.RunSpec, cases: list[casemod.Case]) -> Run:
        """The record of one sweep of `cases` under `spec` (a run; tune measures a run per rung): its command, spec,
        tag, design, and its timing resolved once per kind of timed unit its cases have, for the device found."""
        units = dict.fromkeys(c.timed_unit for c in cases)
        return Run(command=self.command, spec=specmod.recorded(spec), tag=spec.tag or tags.default(),
                   design=list(spec.looks), looks=len(spec.looks), pair_from=sequential.PAIR_FROM,
                   timing={u: spec.timing.resolve(u, spec.device) for u in units}, isolation=spec.isolation,
                   compilebench=fingerprint.version("compilebench"), host=socket.gethostname(),
                   shard=self.shard.to_dict() if self.shard else None)

    @property
    def cases(self) -> list[casemod.Case]:
        """The cases this run measures: the plan's, or under --shard the shard's part of them."""
        every = self.spec.cases(self.models)
        return [c for c in every if self.shard.mine(c.key())] if self.shard else every

    def check_mix(self, mix: str | None) -> None:
        """--mix names shapes that every shapes case serves: refused (a UserError) before anything runs."""
        for c in self.cases:
            traffic.parse_mix(mix, tuple(traffic.Shape.parse(t) for t in c.shapes))

    @property
    def labels(self) -> dict[str, tuple[str, str]]:
        """Each model's row label and task, for results that come back without them (a timeout)."""
        return {name: (e.label, e.task) for name, e in self.models.items()}

    def run(self, store, *, cases: list[casemod.Case] | None = None, spec: specmod.RunSpec | None = None,
            states=None, quiet: bool = False) -> sweep.SweepOutcome:
        """Measure every repeat of the plan's cases (or of `cases`, under `spec`: tune's rungs) not stored yet, as one
        run."""
        spec, cases = spec or self.spec, self.cases if cases is None else cases
        return sweep.run(spec, store, self.dispatcher, self.targets, self.new_run(spec, cases), cases=cases,
                         labels=self.labels, states=states, quiet=quiet)

    def results(self, store, cases: list[casemod.Case] | None = None) -> list[Result]:
        """The newest stored result of each case on each target, whoever measured it (this run or another
        process on the same file): as `compilebench run` reports them."""
        found = (store.latest(c.key(), t.resume_id) for c in (self.cases if cases is None else cases)
                 for t in self.targets if t.takes(c))
        return [r for r in found if r is not None]


def prepare(spec: specmod.RunSpec, placement: Placement = Placement(), command: str | None = None,
            shard: shards.Shard | None = None, shard_history: str | None = None,
            shared_command: str | None = None) -> Plan:
    """Check everything a run needs before anything runs or is written; a UserError names what is wrong. `command`:
    the run as typed (or the API's call), for its record. `shard`: measure only that part of the cases, balanced
    by their expected seconds (from `shard_history`, a results file, where given); `shared_command`: the command as
    every shard types it, part of the plan's identity."""
    models, quantized = refusals.asked(spec)
    # the workers, and a later run that resumes, may stand in another folder
    spec = dataclasses.replace(spec, image=spec.image and os.path.abspath(spec.image),
                               compile_cache=absolute_cache(spec.compile_cache))
    fingerprints = interpreters.probe(spec.environments)
    spec, dispatcher, targets = placement.resolve(spec)
    refusals.where(spec, targets, models, quantized)
    if spec.environments:
        targets = environment_targets(spec.environments, fingerprints, targets)
    made = Plan(spec, models, dispatcher, targets, command)
    if shard is not None:
        made.shard = costs.plan_of(shard, spec, made.cases, models, shard_history, shared_command or command,
                                   fingerprint.version("compilebench"))
    made.cases  # a case that cannot be made (a model serving one shape) is refused here, before anything is written
    return made


def environment_targets(declared, fingerprints: dict[str, dict],
                        targets: list[dispatch.Target]) -> list[dispatch.Target]:
    """Each target once per environment (--env): its cases, its fingerprint (torch, transformers, triton: what its
    results are resumed by), its interpreter."""
    if any(t.placement for t in targets):
        raise UserError("--env starts workers from interpreters of this machine; --executor ray runs them on the "
                        "cluster's (run a sweep per environment there instead)")
    out = []
    for t in targets:
        for e in declared:
            env = dataclasses.replace(t.env, **fingerprints[e.name], **interpreter.recorded(e.to_dict()))
            out.append(dispatch.Target(f"{t.name} [{e.name}]", env.machine_id, env, environment=e))
    return out


def absolute_cache(given: str) -> str:
    """--compile-cache's folder as an absolute path (the workers run elsewhere, and a later run must find it)."""
    if given in settings.COMPILE_CACHES:
        return given
    kept = settings.mega_dir(given)
    if kept is not None:  # mega: with no folder is refused by the check
        return f"{settings.MEGA}:{os.path.abspath(kept)}" if kept else given
    return os.path.abspath(given)
