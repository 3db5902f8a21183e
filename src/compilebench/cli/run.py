"""`compilebench run`: options -> RunSpec, checked whole before anything is measured or written; then the sweep,
the tables and the report of what it ran."""

from __future__ import annotations

import sys

from compilebench import report as reportmod
from compilebench.cli import groups, resume
from compilebench.cli.reports import default_out, main_file
from compilebench.core import settings, shards, spec as specmod, variant
from compilebench.core.errors import UserError
from compilebench.report import details, markdown, tables, terminal
from compilebench.report.view import View
from compilebench.run import interpreters, plan, sweep
from compilebench.run.placement import Placement
from compilebench.storage import schema, store as storemod

EXIT_FAILED = 1  # the environment failed the sweep (a full disk, a locked results file): nothing of it was lost


def cmd_run(args) -> int:
    settings.integer("--requests", args.requests, 1)  # the report's: refused before anything is measured
    return execute(args, run_spec(args), lambda view: guide_tables(view) if args.details else terminal.summary(
        view, terminal.width()))


def guide_tables(view: View) -> str:
    """What --details prints: the report's tables as markdown."""
    return (markdown.tables([*tables.guide_tables(view), *tables.generation_tables(view), details.details_table(view)])
            + "\n\nRecommendation\n\n" + markdown.table(tables.recommendation_table(view)))


def execute(args, spec: specmod.RunSpec, show, check=lambda prepared: None) -> int:
    """Measure a spec as `run` does (every check first, then the sweep into the results file), print `show(view)`
    of what it ran and write its report. `check(prepared)`: the command's own checks of the prepared run."""
    formats = reportmod.parse_formats(args.format)
    schema.check_path(args.db)
    out_dir = args.out or default_out(args.db)
    reportmod.check_out_dir(out_dir)
    shard = shards.Shard.parse(args.shard) if args.shard else None
    if args.shard_history and not shard:
        raise UserError("--shard-history balances shards: give --shard i/N too")
    prepared = plan.prepare(spec, placement(args), resume.command(args), shard, args.shard_history,
                            shards.shared_command(["compilebench", *args.argv]))
    check(prepared)

    with storemod.Store.open(args.db) as store:  # the last check: nothing is written before it
        try:
            outcome = prepared.run(store, quiet=args.quiet)
        except sweep.StoreFailed as exc:
            print(resume.failed(exc.message, args), file=sys.stderr)
            return EXIT_FAILED
        results = prepared.results(store)
        # a shard's own report says which shards of its plan this file holds: the file's runs, read while open
        sharded = shards.coverage([(args.db, r) for r in store.runs().values()], results) if prepared.shard else None

    if results:
        view = View(results, prepared.spec.min_effect, args.requests, getattr(args, "mix", None), sharded)
        print(show(view))
        noted = terminal.notes(view, terminal.width())  # where the machine moved, or a verdict was left undecided
        if noted:
            print(noted)
        written = reportmod.write(view, out_dir, formats, [args.db])
        print(f"report: {main_file(written, out_dir)}", file=sys.stderr)
    print(summary(outcome, args.db), file=sys.stderr)
    if outcome.interrupted:
        print(resume.interrupted(args), file=sys.stderr)
        return 128 + outcome.interrupted
    return 0


def summary(outcome: sweep.SweepOutcome, db: str) -> str:
    parts = [f"{len(outcome.results)} repeat(s) measured into {db}"]
    if outcome.recovered:
        parts.append(f"{outcome.recovered} result(s) an earlier run could not store were stored now")
    if outcome.done_before:
        parts.append(f"{outcome.done_before} stored earlier were kept (--rerun measures them again)")
    if outcome.retried:
        parts.append(f"{outcome.retried} that had crashed or timed out were tried again")
    if outcome.not_retried:
        parts.append(f"{outcome.not_retried} that failed earlier (error, oom) were left as they are "
                     "(--retry-failed tries them again)")
    if outcome.held_elsewhere:
        parts.append(f"{outcome.held_elsewhere} were measured by another run at the same time")
    if outcome.after_failure:
        parts.append(f"{outcome.after_failure} were not run because an earlier repeat of the case failed")
    if outcome.extra:
        parts.insert(1, f"{outcome.extra} of them in extra rounds, to decide a verdict the planned repeats left "
                        "inconclusive")
    return "\n".join(["; ".join(parts), *outcome.undecided])


def run_spec(args, **overrides) -> specmod.RunSpec:
    """The spec the options ask for (explicit options win over the suite's; no --model and no --suite means the
    quick suite): every option whose destination has the name core/spec.asked takes, and those the command line
    spells otherwise."""
    given = {name: value for name, value in vars(args).items() if name in specmod.ASKED}
    options = [variant.parse_option(o) for o in args.inductor_option] + ([("freezing", True)] if args.freezing else [])
    return specmod.asked(**given, inductor_options=options, model_size="tiny" if args.tiny else "full",
                         environments=interpreters.declare(args.env, args.env_set), **overrides)


def placement(args) -> Placement:
    return Placement(args.executor, args.gpus, args.ray_address, args.accelerator_type, args.cpus_per_case)


def add_parser(sub):
    """`compilebench run`: its options, in groups of one concern each (groups.py)."""
    run = sub.add_parser("run", help="measure eager vs compiled latency and store every result")
    for add in (groups.what_to_measure, groups.how_to_compile, groups.model_settings, groups.how_to_time,
                groups.why_it_is, groups.where_to_run, groups.where_results_go):
        add(run)
    run.add_argument("--from-row", default=None, metavar="RESULT_ID",
                     help="measure a stored result's case again into --db, as it was measured (its command: the "
                          "details table's reproduce column); RESULT_ID: its id, or the first characters of it")
    return run
