"""`compilebench report`, `compare` and `check`: results files in, tables and files out. No torch needed."""

from __future__ import annotations

import contextlib
import os
import sys

from compilebench import report as reportmod
from compilebench.cli import groups, history as historycmd
from compilebench.core import settings, shards, stats
from compilebench.core.drift import Drift
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.report import (
    check as checkmod,
    compare as comparemod,
    data as reportdata,
    markdown,
    reference as referencemod,
    shapes as shapesmod,
    suite,
    tables,
    terminal,
)
from compilebench.report.view import View
from compilebench.storage import schema


def default_out(db: str) -> str:
    return os.path.join(os.path.dirname(db) or ".", "report")


def main_file(written: list[str], out_dir: str) -> str:
    """The file to open: the HTML page when there is one."""
    for name in ("report.html", "report.md"):
        if os.path.join(out_dir, name) in written:
            return os.path.join(out_dir, name)
    return out_dir


def cmd_report(args) -> int:
    stats.check_min_effect(args.min_effect)  # before any file is read
    settings.integer("--requests", args.requests, 1)
    dbs = args.dbs or [schema.DEFAULT_PATH]
    formats = reportmod.parse_formats(args.format)
    out_dir = args.out or default_out(dbs[0])
    reportmod.check_out_dir(out_dir)
    # an unknown name is refused before any file is read
    published = (args.reference, referencemod.load(args.reference)) if args.reference is not None else None
    results, runs = reportdata.read(dbs)
    view = View(results, args.min_effect, args.requests, args.mix, shards.coverage(runs, results))
    written = reportmod.write(view, out_dir, formats, dbs, published)
    beside = referencemod.reference_table(view, published[1], published[0]) if published else None
    if args.details:
        print(markdown.tables([suite.summary_table(view), *tables.guide_tables(view), *([beside] if beside else [])]))
    else:
        # results that served shapes (`compilebench shapes`) are in no latency table: their summary per model
        served = [markdown.table(shapesmod.summary_table(view, m)) for m in shapesmod.models(view)]
        print("\n\n".join(filter(None, [terminal.summary(view, terminal.width()), *served,
                                         markdown.table(beside) if beside else ""])))
        noted = terminal.notes(view, terminal.width())  # where the machine moved, or a verdict left undecided: as run
        if noted:
            print(noted)
    print(f"wrote {len(written)} file(s) to {out_dir}; open {main_file(written, out_dir)}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    stats.check_min_effect(args.min_effect)  # before any file is read
    if args.b is None and not (args.env_a and args.env_b):
        raise UserError("compare needs two results files (A.db B.db), or one with --env-a NAME --env-b NAME: two "
                        "environments of one run")
    sides = []
    for path, machine, env, which in ((args.a, args.machine_a, args.env_a, "a"), (args.b or args.a, args.machine_b, args.env_b, "b")):
        sides.append((_side(path, machine, "--machine-" + which, env, "--env-" + which),
                      f"{path} [{env}]" if env else path))
    (a, a_name), (b, b_name) = sides
    given = Drift(args.drift, "given with --drift") if args.drift is not None else None
    print(markdown.table(comparemod.compare(a, b, a_name, b_name, args.min_effect, given)))
    return 0


def _side(path: str, machine: str | None, machine_option: str, env: str | None, env_option: str) -> list:
    """The results of one side of a comparison: a file's, of one machine and environment where asked."""
    everything, runs = reportdata.read([path])
    for c in shards.coverage(runs, everything):  # a side read from shard files says whether it is whole
        print(c.describe(), file=sys.stderr)
    results = comparemod.select(everything, machine, env)
    if not results:
        where = [f"from a machine matching {machine_option} {machine!r}"] if machine else []
        if env:
            held = comparemod.environments(everything)
            where.append(f"under {env_option} {env!r} (it holds: {', '.join(held) or 'no environment: a run without --env'})")
        raise UserError(f"no results in {path}" + (" " + " and ".join(where) if where else ""))
    return results


def cmd_check(args) -> int:
    """Exit 0 when nothing regressed, 1 when something did (2: bad input)."""
    stats.check_min_effect(args.min_effect)
    if args.history:
        if args.candidate or args.baseline or args.baseline_env:
            raise UserError("check --history reads the series of runs alone: give it no CANDIDATE.db, --baseline or "
                            "--baseline-env")
        _check_limits(args)
        return historycmd.cmd_check_history(args, finish_check)
    if args.candidate is None:
        raise UserError("check needs CANDIDATE.db (or --history FILE_OR_DIR)")
    _check_limits(args)
    if args.baseline is None and args.baseline_env is None:
        raise UserError("check needs --baseline BASELINE.db, or --baseline-env NAME to hold one run's environments "
                        "(--env) against one of them")
    baseline_path = args.baseline or args.candidate
    base = _side(baseline_path, args.machine, "--machine", args.baseline_env, "--baseline-env")
    cand = _side(args.candidate, args.machine, "--machine", _candidate_env(args), "--candidate-env")
    limits = checkmod.Limits(args.max_slowdown, args.max_compile_increase, args.max_memory_increase,
                             args.max_quality_drop)
    given = Drift(args.drift, "given with --drift") if args.drift is not None else None
    lines, moved = checkmod.check(base, cand, limits, args.min_effect, given)
    names = [f"{path} [{env}]" if env else path for path, env in ((args.candidate, _candidate_env(args)),
                                                                   (baseline_path, args.baseline_env))]
    text = markdown.table(checkmod.table(lines, f"{names[0]} against {names[1]}"))
    said = checkmod.summary(lines) + \
        (f". Latency and speed-up verdicts across runs hold the run-to-run drift, {moved.describe()}." if moved else
         ". No verdict compared results of different runs (environments of one run alternate): no run-to-run drift "
         "to allow for.")
    apart = comparemod.apart_note(reportdata.latest(base), reportdata.latest(cand), names=("the baseline",
                                                                                         "the candidate"))
    said += f" {apart[0].upper()}{apart[1:]}." if apart else ""
    return finish_check(args, "compilebench check", text, said, lines, (names[0], cand))


def finish_check(args, command: str, text: str, said: str, lines: list[checkmod.Line],
                 checked: tuple[str, list[Result]]) -> int:
    """A gate's end, for check and check --history alike: the table and its sentence printed, the markdown summary
    (with the suite summed up: `checked`, what was checked and its results) and JUnit written where asked; exit 1
    on any regression (and, with --fail-undecided, on any case undecided)."""
    print(text + "\n" + said)
    if args.summary:
        what, results = checked
        summed = markdown.table(suite.summary_table(View(results, args.min_effect)), level=4)
        _write(args.summary, f"**{command}: {said}**\n\n{text}\n\n#### The suite: {what}\n\n{summed}")
    if args.junit:
        _write(args.junit, checkmod.junit(lines))
    failed = any(line.regression or (args.fail_undecided and line.undecided) for line in lines)
    return 1 if failed else 0


def _check_limits(args) -> None:
    for option, value in (("--max-slowdown", args.max_slowdown), ("--max-compile-increase", args.max_compile_increase),
                          ("--max-memory-increase", args.max_memory_increase),
                          ("--max-quality-drop", args.max_quality_drop), ("--drift", args.drift)):
        if value is not None and not 0 <= value < 10:
            raise UserError(f"{option} must be a percentage from 0% to below 1000%, got {value * 100:g}%")
    for path in (args.summary, args.junit):
        if path:
            reportmod.check_out_dir(os.path.dirname(os.path.abspath(path)))


def _candidate_env(args) -> str | None:
    """--candidate-env, or where the baseline is another environment of the candidate's own run, the one other."""
    if args.candidate_env is not None or args.baseline_env is None or args.baseline not in (None, args.candidate):
        return args.candidate_env
    others = [e for e in comparemod.environments(reportdata.load([args.candidate])) if e != args.baseline_env]
    if len(others) != 1:
        raise UserError(f"--baseline-env {args.baseline_env}: {args.candidate} holds "
                        f"{'no other environment' if not others else 'environments ' + ', '.join(others)}: "
                        "pick the candidate with --candidate-env NAME")
    return others[0]


def _write(path: str, content: str) -> None:
    """Whole or not at all: a temporary file beside it, renamed over it."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(content)
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise UserError(f"cannot write {path!r} ({exc.strerror or exc})") from None


def report_parser(sub):
    """`compilebench report`: its options."""
    rep = sub.add_parser("report", help="render tables, charts, HTML, CSV and JSON from one or more results files")
    rep.add_argument("dbs", nargs="*", metavar="DB", help=f"results files to merge (default: {schema.DEFAULT_PATH})")
    rep.add_argument("--out", default=None, metavar="DIR", help="output folder (default: a report/ folder beside the first DB)")
    groups.formats(rep)
    groups.min_effect(rep, "the smallest difference worth calling faster or slower")
    rep.add_argument("--reference", default=None, metavar="NAME",
                     help="set published figures beside yours: guide (the transformers guide's A100, V100 and T4 "
                          "speed-ups)")
    groups.details(rep)
    groups.requests(rep)
    groups.mix(rep)
    return rep


def compare_parser(sub):
    """`compilebench compare`: its options."""
    cmp_ = sub.add_parser("compare", help="two results files side by side per case, with the ratio B/A and a verdict")
    cmp_.add_argument("a", metavar="A.db")
    cmp_.add_argument("b", metavar="B.db", nargs="?", default=None,
                      help="default: A.db again, for two environments of one run (--env-a, --env-b)")
    cmp_.add_argument("--env-a", default=None, metavar="NAME", help="use A's results measured under --env NAME")
    cmp_.add_argument("--env-b", default=None, metavar="NAME", help="the same for B")
    cmp_.add_argument("--machine-a", default=None, metavar="TEXT",
                      help="use A's results from the machine whose id or hardware name contains TEXT")
    cmp_.add_argument("--machine-b", default=None, metavar="TEXT", help="the same for B")
    groups.min_effect(cmp_, "the smallest difference worth calling faster or slower")
    groups.drift(cmp_)
    return cmp_


def check_parser(sub):
    """`compilebench check`: its options."""
    chk = sub.add_parser("check", help="a regression gate for CI: exit 1 when the candidate is worse than the baseline")
    chk.add_argument("candidate", metavar="CANDIDATE.db", nargs="?")
    chk.add_argument("--history", nargs="+", default=None, metavar="FILE_OR_DIR",
                     help="gate on a series of runs instead: exit 1 when the newest two runs of a case complete a "
                          "step for the worse beyond --max-slowdown (`compilebench history` shows the series)")
    chk.add_argument("--baseline", default=None, metavar="BASELINE.db",
                     help="the results file to hold it against (default: CANDIDATE.db itself, with --baseline-env)")
    chk.add_argument("--baseline-env", default=None, metavar="NAME",
                     help="the baseline is the environment NAME (--env) of its run: `check RUN.db --baseline-env stable`")
    chk.add_argument("--candidate-env", default=None, metavar="NAME",
                     help="the candidate is the environment NAME of its run (default: the one other environment)")
    chk.add_argument("--max-slowdown", type=groups.percent, default=0.05, metavar="P",
                     help="latency or speed-up over eager worse beyond this is a regression (default: 5%%)")
    chk.add_argument("--max-compile-increase", type=groups.percent, default=0.15, metavar="P",
                     help="compile seconds up beyond this is a regression (default: 15%%)")
    chk.add_argument("--max-memory-increase", type=groups.percent, default=0.10, metavar="P",
                     help="peak memory up beyond this is a regression (default: 10%%)")
    chk.add_argument("--max-quality-drop", type=groups.percent, default=0.01, metavar="P",
                     help="--quantize: a quality measure's agreement with the float model down more than P points "
                          "(top1 99%% to 97%%) is a regression (default: 1%%)")
    chk.add_argument("--fail-undecided", action="store_true",
                     help="exit 1 also when a case is undecided: its interval reaches beyond --max-slowdown on the "
                          "worse side without lying beyond it (by default: said apart, and JUnit marks it skipped)")
    groups.drift(chk)
    chk.add_argument("--machine", default=None, metavar="TEXT",
                     help="use the results of the machine whose id or hardware name contains TEXT")
    groups.min_effect(chk, "the smallest difference worth calling faster or slower")
    chk.add_argument("--summary", default=None, metavar="FILE", help="also write the table as markdown (a CI job summary)")
    chk.add_argument("--junit", default=None, metavar="FILE", help="also write JUnit XML, one test case per case and metric")
    return chk
