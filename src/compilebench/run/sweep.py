"""The driver loop: the run stored first (core/run.py: its command, spec, tag, design and timing), then every
repeat of every case not stored yet (run/rounds.py says which, in what order), handed to a dispatcher, each
claimed in the results file right before it runs and stored the moment it arrives, as a repeat of its case's
result naming the run; then, while a verdict is undecided and the design allows, more rounds of its cases
(run/rounds.py), a comparison left undecided said in the run's record. A case's repeats share one private
compiler-state folder: the first compiles cold, later ones from what it left (recorded as warm); the folder goes
when the case's last repeat is done."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
import time
import uuid
from dataclasses import dataclass, field

from compilebench.core import speedups
from compilebench.core.case import Case
from compilebench.core.job import Job
from compilebench.core.repeat import Repeat, utc_now
from compilebench.core.result import Result
from compilebench.core.run import STOPPED, Run
from compilebench.core.spec import RunSpec
from compilebench.core.vocab import FAILED
from compilebench.core.why import CompileTrace
from compilebench.diagnostics import traces
from compilebench.measure import compiler_state
from compilebench.run import rounds, storing
from compilebench.run.dispatch import Dispatcher, Target, Unit, Work
from compilebench.run.progress import Bar
from compilebench.run.storing import StoreFailed  # noqa: F401 - the commands catch it here
from compilebench.storage import interrupts
from compilebench.storage.store import Store


@dataclass
class SweepOutcome:
    results: list[Result] = field(default_factory=list)  # repeats measured in this run (one result each)
    done_before: int = 0  # repeats stored earlier, resumed past
    retried: int = 0  # repeats that had crashed or timed out, measured again
    not_retried: int = 0  # failed repeats (error, oom) left as they are: --retry-failed tries them again
    held_elsewhere: int = 0  # repeats another run was measuring, waited for and stored by it
    after_failure: int = 0  # repeats not run because an earlier repeat of the case failed in this run
    recovered: int = 0  # results an earlier run saved beside the results file, now stored
    interrupted: int = 0  # the signal that stopped the sweep, 0 if none
    extra: int = 0  # repeats measured to decide a verdict the planned ones left inconclusive
    undecided: list[str] = field(default_factory=list)  # comparisons left inconclusive, and what ended them


def run(spec: RunSpec, store: Store, dispatcher: Dispatcher, targets: list[Target], run_: Run, *,
        prompt_lens: dict[str, int] | None = None, labels: dict[str, tuple[str, str]] | None = None,
        cases: list[Case] | None = None, states: compiler_state.StateFolders | None = None,
        quiet: bool = False) -> SweepOutcome:
    """Every repeat of every case of the spec (or of `cases`) on every target, skipping what a target already
    has; each repeat stored the moment it arrives, by this thread alone, as measured by `run_` (stored as the
    sweep starts, again as it ends). `labels`: each model's row label and task. `states`: compiler-state folders
    that outlive this sweep (its caller closes them), so its cases compile warm when measured again."""
    outcome = SweepOutcome()
    outcome.recovered = storing.recover_unsaved(store) + storing.take_in(store, lambda i: _done(i, spec.retry_failed))
    cases = cases if cases is not None else spec.cases(prompt_lens)
    storing.keep_run(store, run_)
    sweep = _Sweep(spec, store, cases, targets, outcome, labels or {}, states, quiet, run_)
    try:
        with interrupts.stop_signals():
            units = sweep.plan.units
            while True:  # then the repeats another run held (measured here if it let them go), then extra rounds
                if units:
                    dispatcher.run(units, sweep.open_unit, sweep.progress, sweep.deliver)
                units = sweep.take_back(sweep.wait_for_others()) or sweep.more_rounds()
                if not units:
                    break
            sweep.render_compile_traces()
    except interrupts.Interrupted as exc:
        outcome.interrupted = exc.signum
    finally:
        sweep.close()
    run_.ended = utc_now()
    with contextlib.suppress(storing.StoreFailed):  # its repeats are stored: a run that cannot say it ended said it started
        storing.keep_run(store, run_)
    return outcome


class _Sweep:
    """One sweep's state, between the dispatcher's calls: which result each repeat joins, which cases failed,
    and which compiler-state folders are still in use."""

    def __init__(self, spec: RunSpec, store: Store, cases: list[Case], targets: list[Target], outcome: SweepOutcome,
                 labels: dict[str, tuple[str, str]], states: compiler_state.StateFolders | None, quiet: bool,
                 run_: Run):
        self.spec, self.store, self.outcome, self.labels, self.quiet = spec, store, outcome, labels, quiet
        self.run = run_
        self.tag = run_.tag
        self.groups = rounds.groups(cases, spec.interleave)
        self.plan = rounds.schedule(spec, cases, store, targets, outcome, self.tag)
        self.progress = Bar(sum(len(u.cases) for u in self.plan.units), spec.repeats, quiet)
        self.bar = self.progress.bar
        if self.plan.new_runs:  # a tag names a run: the cases stored under another are measured again
            held = [t for t in store.tags() if t != self.tag]
            self.progress.note(f"a new run: tag {self.tag}; {store.path} holds run(s) {', '.join(held)} "
                               f"({len(self.plan.new_runs)} case(s) measured again as results of this run)")
        self.own_states = states is None
        self.states = states or compiler_state.StateFolders()
        self.failed: set[tuple[str, str]] = set()  # (case key, resume id) of cases a repeat failed in this run
        self.series: dict[tuple[str, str, int], str] = {}  # (case key, resume id, repeat) -> the result it joins
        self.told: set[int] = set()  # pids of other runs already named as holding a claim
        self.held: list[tuple[Unit, Case]] = []  # repeats another run was measuring when this one came to them
        self.machines_measured: set[tuple[str, str]] = set()  # (resume id, dtype) whose peaks a worker was asked for
        self.targets, self.started, self.delivered = targets, time.monotonic(), 0
        self.extra = rounds.ExtraRounds(spec, self.groups, targets)
        self.given_up: set[tuple] = set()  # comparisons left undecided, said once

    def open_unit(self, unit: Unit) -> Work | None:
        """Claim the unit's repeats; the work to do for those this run got, or None."""
        todo = [case for case in unit.cases if self._claim(case, unit)]
        if not todo:
            self._release_state(unit)
            return None
        stored = [self.plan.stored.get((c.key(), unit.target.resume_id)) for c in todo]
        # FLOPs are the eager model's: counted once per model and settings, by whichever variant comes first
        count_flops = any((s is None or s.flops is None) and self.store.eager_flops(c, unit.target.resume_id) is None
                          for c, s in zip(todo, stored))
        env, cache, mega_path = compiler_state.for_job(self.spec.compile_cache, self.states, self._state(unit),
                                              every_repeat_cold=bool(todo[0].shapes))
        check = cache == "cold" or not all(_checked(s, cache) for s in stored)
        mine = storing.claim(self.store, unit, {c.key(): self.series[(c.key(), unit.target.resume_id, unit.repeat)]
                                                  for c in todo}, self.run.run_id, self.labels)
        environment = unit.target.environment.to_dict() if unit.target.environment else None
        # A profile and a compile trace are kept once per case: by the first repeat measured that has none yet.
        profile = self.spec.profile and any(not _kept(s, "profile") for s in stored)
        compile_trace = self.spec.compile_trace and any(c.variant.compiled and not _kept(s, "compile_trace")
                                                        for c, s in zip(todo, stored))
        where = traces.folder(self.store.path) if profile or compile_trace else None
        # A CPU's peaks (bandwidth.host_peaks) are the machine's: measured by the first worker of each target and dtype
        machine = (unit.target.resume_id, todo[0].dtype)
        measure = machine not in self.machines_measured
        self.machines_measured.add(machine)
        # aot-inductor packages outlive the repeat that built them: every later repeat of the case loads them
        packages = self.states.folder(f"{self._state(unit)}-packages") if any(
            c.variant.prepared for c in todo) else None
        # random weights are drawn once a run (measure/weights.py), on this host: a Ray node draws its own
        weights = None if unit.target.placement else self.states.folder("weights")
        return Work(Job(todo, self.run.timing[todo[0].timed_unit], repeat=unit.repeat, compile_cache=cache, count_flops=count_flops,
                        check=check, claim=mine, environment=environment, traces=where, profile=profile,
                        compile_trace=compile_trace, measure_machine=measure, mega_path=mega_path, packages=packages,
                        weights=weights), env)

    def _claim(self, case: Case, unit: Unit) -> bool:
        key, rid = case.key(), unit.target.resume_id
        if (key, rid) in self.failed:
            self.outcome.after_failure += 1
            self.bar.update(1)
            return False
        new = self.spec.rerun or (key, rid) in self.plan.new_runs  # a new result: --rerun, or another run's tag
        given = self.series.setdefault((key, rid, 0), uuid.uuid4().hex) if new else None
        try:
            result_id, holder = self.store.claim(key, rid, unit.repeat, given, self.done(unit.repeat))
        except (sqlite3.Error, OSError) as exc:
            raise storing.StoreFailed(f"cannot write to the results file {self.store.path!r} ({exc}) before measuring "
                              f"{unit.describe(self.spec.repeats)}") from exc
        if result_id is not None:
            self.series[(key, rid, unit.repeat)] = result_id
            return True
        self.bar.update(1)
        if holder is None:
            self.outcome.done_before += 1  # stored meanwhile, by another run
        else:
            self.outcome.held_elsewhere += 1
            self.held.append((unit, case))
            if holder.pid not in self.told:
                self.told.add(holder.pid)
                self.progress.note(f"{case.describe()} repeat {unit.repeat} is being measured by another run "
                                   f"(pid {holder.pid} on {holder.host}): left to it, and waited for at the end")
        return False

    def done(self, repeat: int):
        return _done(repeat, self.spec.retry_failed)

    def wait_for_others(self) -> list[Unit]:
        """Wait for the repeats other runs held (run/storing.py); the units they let go unmeasured."""
        held, self.held = self.held, []
        try:
            return storing.wait_for_holders(self.store, held, self.done, self.progress.note)
        except (sqlite3.Error, OSError) as exc:
            raise storing.StoreFailed(f"cannot read the results file {self.store.path!r} ({exc}) while waiting for the repeats "
                              "another run is measuring") from exc

    def take_back(self, units: list[Unit]) -> list[Unit]:
        """Repeats another run let go without storing them, to be measured here after all."""
        for unit in units:
            self.outcome.held_elsewhere -= len(unit.cases)
            self.bar.total += len(unit.cases)
            folder = self._state(unit)
            self.plan.uses[folder] = self.plan.uses.get(folder, 0) + 1
        if units:
            self.bar.refresh()
        return units

    def deliver(self, unit: Unit, job: Job, repeats: list[Repeat]) -> None:
        """Each repeat a worker measured (one per case of its job) into its case's result, the moment it arrives."""
        rid = unit.target.resume_id
        for case, rep in zip(job.cases, repeats):
            key = case.key()
            result = storing.as_result(case, rep, unit.target, self.run, self.store, self.labels,
                               self.series[(key, rid, unit.repeat)])
            self.plan.stored[(key, rid)] = storing.store_repeat(self.store, result)  # the FLOPs it counted are not counted again
            self.outcome.results.append(result)
            what = Unit(unit.target, (case,), unit.repeat, unit.group).describe(self.spec.repeats)
            self.progress.measured(what, f"{result.mean:.3f} ms" if result.mean is not None else rep.status)
            if rep.status in FAILED:
                self.failed.add((key, rid))
                self.machines_measured.discard((rid, case.dtype))  # it may have been to measure the machine
            if rep.status != "ok" and not self.quiet:
                where = f" on {unit.target.name}" if unit.target.placement else ""  # which GPU type of a cluster
                self.bar.write(f"{unit.describe(self.spec.repeats)}{where}: {rep.status}: {rep.message}", file=sys.stderr)
        self.delivered += 1
        self.outcome.extra += len(repeats) if unit.repeat > self.spec.repeats else 0
        self._release_state(unit)

    def more_rounds(self) -> list[Unit]:
        """Repeats until decided (run/rounds.py): the rounds the comparisons still inconclusive get next; each one
        the cap or the time budget ended says why, in the progress lines, the run's summary and its stored result."""
        if len(self.spec.looks) == 1:
            return []
        units, told, ended = self.extra.next(self.plan.stored, self.started, self.delivered)
        for o, why in ended:
            self._give_up(o, why)
        for line in told if not self.quiet else ():
            self.bar.write(line, file=sys.stderr)
        self._forget_states({u.group for u in units})
        self.bar.total += sum(len(u.cases) for u in units)
        for unit in units:
            folder = self._state(unit)
            self.plan.uses[folder] = self.plan.uses.get(folder, 0) + 1
        if units:
            self.bar.refresh()
        return units

    def _give_up(self, o: rounds.Open, why: str) -> None:
        """An undecided comparison the run measures no more: why, said once and stored with its case."""
        if o.comparison.keys in self.given_up:
            return
        self.given_up.add(o.comparison.keys)
        low, high = o.speedup.improvement_interval
        seen = speedups.out_of_reach(o.speedup, self.spec.min_effect)
        line = (f"{o.comparison.describe()}: still inconclusive after {o.repeats} repeats ({low:+.0f}% to {high:+.0f}%): "
                f"{STOPPED[why]}" + (f"; {seen}" if seen else ""))
        self.outcome.undecided.append(line)
        self.run.undecided[self.plan.stored[o.comparison.other.key].result_id] = why
        storing.keep_run(self.store, self.run)

    def render_compile_traces(self) -> None:
        """tlparse's HTML of each compile trace of these cases that has none yet (this run's, or one an interrupted
        run kept), made once every measurement is done (it would share the machine with a timed loop otherwise),
        and stored with its repeat."""
        rendered: dict[str, dict] = {}
        for key, result in list(self.plan.stored.items()):
            waiting = [rep for rep in result.repeats if rep.compile_trace.dir and not rep.compile_trace.rendered]
            for rep in waiting:
                where = rep.compile_trace.dir
                if where not in rendered:
                    rendered[where] = traces.render(where)
                rep.compile_trace = CompileTrace.from_dict({**rep.compile_trace.to_dict(), **rendered[where]})
            if waiting:
                self.plan.stored[key] = storing.store_repeat(self.store, result)

    def _state(self, unit: Unit) -> str:
        return rounds.state_name(self.groups[unit.group], unit.target)

    def _release_state(self, unit: Unit) -> None:
        folder = self._state(unit)
        self.plan.uses[folder] -= 1
        # repeats until decided: kept until the look after its last unit, so an extra round compiles warm
        if self.plan.uses[folder] == 0 and self.own_states and len(self.spec.looks) == 1:
            self.states.remove(folder)

    def _forget_states(self, measured_more: set[int]) -> None:
        """The compiler-state folders of the groups no extra round measures: done with for good."""
        for gi, group in enumerate(self.groups):
            for target in self.targets if self.own_states and gi not in measured_more else ():
                folder = rounds.state_name(group, target)
                if self.plan.uses.get(folder) == 0:
                    self.states.remove(folder)
                    self.plan.uses.pop(folder)

    def close(self) -> None:
        self.bar.close()
        if self.own_states:
            self.states.close()
        with contextlib.suppress(sqlite3.Error):
            self.store.release_claims()


def _done(index: int, retry_failed: bool):
    """Whether a stored result has repeat `index` and it needs no retry."""
    return lambda stored: any(r.index == index and not rounds.retryable(r.status, retry_failed) for r in stored.repeats)


def _kept(stored: Result | None, what: str) -> bool:
    """Whether a stored result already has a repeat that kept this (its profile, its compile trace)."""
    return stored is not None and any(getattr(r, what) for r in stored.repeats)


def _checked(stored: Result | None, cache: str) -> bool:
    """Whether a stored result already compared a compiled output with eager's from this compiler state."""
    return stored is not None and any(r.compile_cache == cache and (r.max_abs_err is not None or r.status == "mismatch")
                                      for r in stored.repeats)
