"""`compilebench history FILE_OR_DIR...` (every run of every case over time, per machine, with its steps) and
`compilebench check --history FILE_OR_DIR` (exit 1 when the newest runs complete a step for the worse)."""

from __future__ import annotations

import math
import os
import sys
import textwrap

from compilebench import report as reportmod
from compilebench.cli import groups
from compilebench.core import shards, stats, steps as stepsmod
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.report import (
    check as checkmod,
    data as reportdata,
    exporters,
    history,
    history_page,
    markdown,
)


def load(paths: list[str], min_effect: float, gate: bool = False) -> tuple[list[Result], list[history.Series]]:
    """The files' results and the series they hold (`gate`: their steps as the gate reads them); one clear error
    where they hold no history (no run, or one run of each case)."""
    stats.check_min_effect(min_effect)
    results, runs = reportdata.read(paths)
    for c in shards.coverage(runs, results):  # a series read from shard files says where it is not whole
        print(c.describe(), file=sys.stderr)
    if not results:
        raise UserError(f"{', '.join(paths)} hold(s) no results")
    series = history.series(results, min_effect, gate=gate)
    if not any(len(s.points) >= 2 for s in series):
        raise UserError(f"{', '.join(paths)} hold(s) one run of each case: a history needs two runs or more of a case "
                        "on one machine (`compilebench run --rerun` measures a case again)")
    return results, series


def cmd_history(args) -> int:
    formats = exporters.parse_formats(args.format, "history")
    out_dir = args.out or os.path.join(os.path.dirname(os.path.abspath(args.paths[0])), "history")
    reportmod.check_out_dir(out_dir)
    _, series = load(args.paths, args.min_effect)
    print(text(series))
    written = history_page.write(series, out_dir, formats, intro(series, args.paths))
    print(f"wrote {len(written)} file(s) to {out_dir}", file=sys.stderr)
    return 0


def intro(series: list[history.Series], paths: list[str]) -> list[str]:
    runs = {r.run_id or r.at for s in series for r in s.runs}
    return [f"{len(runs)} run(s) of {len({(s.machine, s.case) for s in series})} case(s) on "
            f"{len({s.machine for s in series})} machine(s), from {', '.join(paths)}. A machine is its host and "
            "hardware: a new one starts new series, never compared with the old."]


def text(series: list[history.Series]) -> str:
    """Per machine its series and their steps; then the steps newest first, and where a case moved machines."""
    lines = intro(series, [])[0].split(", from")[:1]
    for machine in dict.fromkeys(s.machine for s in series):
        mine = [s for s in series if s.machine == machine]
        lines += ["", f"{machine}: {len({r.run_id or r.at for s in mine for r in s.runs})} run(s)"]
        # what a step there must clear: each metric's drift (one for all its series on the machine) and how it is known
        drifts = {s.metric: s.drift for s in mine}
        lines += textwrap.wrap("how far one run moves from the next beyond its interval: " + "; ".join(
            f"{metric} {d.describe()}" for metric, d in drifts.items()), 100, initial_indent="  ", subsequent_indent="    ")
        for s in mine:
            said = ", ".join(f"{st.ratio:.2f}x [{st.low:.2f}-{st.high:.2f}] {'worse' if s.worse(st) else 'better'} "
                             f"at {s.runs[st.at].label}" for st in s.steps) or "no step"
            lines.append(f"  {s.case}, {s.metric}: {len(s.points)} run(s), {s.points[0].value:.4g} -> "
                         f"{s.points[-1].value:.4g}; {said}")
    moved = _moves(series)
    if moved:
        lines += ["", *moved]
    found = sorted(((s, st) for s in series for st in s.steps), key=lambda x: x[0].runs[x[1].at].at, reverse=True)
    if found:
        lines += ["", "Steps, newest first:"]
        lines += [textwrap.fill(
            f"- {s.case}, {s.metric}, on {s.machine}: {st.ratio:.3f}x [{st.low:.3f}-{st.high:.3f}], for the "
            f"{'worse' if s.worse(st) else 'better'}, between {s.runs[st.at - 1].label} and {s.runs[st.at].label}: "
            f"{'; '.join(s.changed(st)) or 'nothing recorded changed'}", 100, subsequent_indent="  ")
            for s, st in found]
    return "\n".join(lines)


def _moves(series: list[history.Series]) -> list[str]:
    """A case measured on several machines: a new series on each, said once."""
    where: dict[str, list[history.Series]] = {}
    for s in series:
        if s.metric == history.LATENCY:
            where.setdefault(s.case, []).append(s)
    out = []
    for case, found in where.items():
        found.sort(key=lambda s: s.runs[0].at)
        for a, b in zip(found, found[1:]):
            out.append(f"{case}: a new series on {b.machine} from {b.runs[0].label} (before: {a.machine}, up to "
                       f"{a.runs[-1].label}); a machine change is never read as a step")
    return out


def cmd_check_history(args, finish) -> int:
    """check --history: exit 0 when no series' newest runs complete a step for the worse, 1 when one does.
    `finish(args, command, text, said, lines)`: check's own end (print, summary, JUnit, exit code)."""
    results, series = load(args.history, args.min_effect, gate=True)
    verdicts = history.gate(results, args.min_effect, args.max_slowdown, args.max_compile_increase, series)
    lines = [_line(s, step, bad, args.max_compile_increase if s.metric == history.COMPILE else args.max_slowdown)
             for s, step, bad in verdicts]
    text = markdown.table(checkmod.table(lines, f"the newest runs of {', '.join(args.history)} against the runs "
                                                "before them"))
    said = checkmod.summary(lines, "series") + \
        (". A regression: the newest two runs complete a step for the worse, significant at 95% with each run's "
         f"interval and the machine's run-to-run drift, beyond --max-slowdown ({args.max_slowdown:.0%}; compile "
         f"seconds: --max-compile-increase, {args.max_compile_increase:.0%}, and how far one cold compile moves "
         "from another), each of the two beyond it too.")
    # the suite as its newest run of each case left it
    return finish(args, "compilebench check --history", text, said, lines, ("the newest run of each case", results))


def _line(s: history.Series, step: stepsmod.Step | None, bad: bool, limit: float) -> checkmod.Line:
    """One series' line; `limit`: its own (--max-slowdown, or --max-compile-increase for compile seconds)."""
    n = len(s.points)
    before = s.points[step.before[0]:step.before[1]] if step else s.points[:n - stepsmod.MIN_SEGMENT]
    after = s.points[step.after[0]:] if step else s.points[n - stepsmod.MIN_SEGMENT:]
    mean = lambda ps: sum(p.value for p in ps) / len(ps)  # noqa: E731
    if step is None:
        why = ""
    elif bad:
        worse = {history.LATENCY: "slower", history.COMPILE: "compile s up"}.get(s.metric, s.metric + " lower")
        why = f"{worse} beyond {limit:.0%}"
    else:
        why = f"a step for the worse, within {_option(s)}" if s.worse(step) else "a step for the better"
    return checkmod.Line(f"{s.case} on {s.machine}", s.metric, f"{mean(before):.4g} ({len(before)} runs)",
                         f"{mean(after):.4g} ({len(after)} runs)", step.ratio if step else mean(after) / mean(before),
                         step.low if step else None, step.high if step else None,
                         "step" if step else "no step", bad, why,
                         "" if bad else _undecided(s, step, limit))


def _option(s: history.Series) -> str:
    return "--max-compile-increase" if s.metric == history.COMPILE else "--max-slowdown"


def _undecided(s: history.Series, step: stepsmod.Step | None, limit: float) -> str:
    """Why a series' gate is open: the newest step is worse beyond its limit but its newest runs are not all
    beyond it, or (no new step) the newest run is, against the runs since the series' last step, and beyond how far
    one run moves from another (a cold compile 20% longer than the last few is one compile's noise); "" where
    nothing points that way."""
    higher = s.metric in history.HIGHER_IS_BETTER
    beyond = history.worse_beyond(s, limit)
    level = [p.value for p in s.points[max((st.at for st in s.steps), default=0):-1]]
    ratio = step.ratio if step else s.points[-1].value / (sum(level) / len(level)) if level else 1.0
    one_run = stepsmod.critical(2 * stepsmod.MIN_SEGMENT, s.drift.df) * s.drift.sd  # how far one run moves, at 95%
    if not beyond(ratio) or (not step and abs(math.log(ratio)) <= one_run):
        return ""
    worse = "longer" if s.metric == history.COMPILE else "slower"
    size = f"{1 / ratio:.2f}x lower" if higher else f"{ratio:.2f}x {worse}"
    if step and not history.cleared(s, step, beyond):
        return (f"a step {size} [{step.low:.2f}-{step.high:.2f}], but its interval reaches within {_option(s)}: "
                "one cold compile a run cannot tell it from the compile's own noise yet")
    if step:
        return f"a step {size}, but its newest runs are not all beyond {_option(s)}: the next run decides"
    return f"the newest run is {size} than the runs before it, but no step of two runs beyond it: the next run decides"


def add_parser(sub):
    """`compilebench history`: its options."""
    h = sub.add_parser("history", help="every run of every case over time, per machine, with the steps found in "
                                       "each series and what changed at each")
    h.add_argument("paths", nargs="+", metavar="FILE_OR_DIR", help="results files, or folders of them (*.db)")
    h.add_argument("--out", default=None, metavar="DIR",
                   help="where history.html, history.csv and history.json go (default: a history/ folder beside "
                        "the first path)")
    groups.formats(h, "history")
    groups.min_effect(h, "the smallest step worth naming")
    return h
