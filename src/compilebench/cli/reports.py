"""`compilebench report`, `compare` and `check`: results files in, tables and files out. No torch needed."""

from __future__ import annotations

import contextlib
import os
import sys

from compilebench import report as reportmod, stats, store as storemod
from compilebench.errors import UserError
from compilebench.drift import Drift
from compilebench.report import check as checkmod
from compilebench.report import compare as comparemod
from compilebench.report import data as reportdata
from compilebench.report import markdown, tables
from compilebench.report.view import View


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
    dbs = args.dbs or [storemod.DEFAULT_PATH]
    formats = reportmod.parse_formats(args.format)
    out_dir = args.out or default_out(dbs[0])
    reportmod.check_out_dir(out_dir)
    view = View(reportdata.load(dbs), args.min_effect)
    written = reportmod.write(view, out_dir, formats, dbs)
    print(markdown.tables([tables.summary_table(view), *tables.guide_tables(view)]))
    print(f"wrote {len(written)} file(s) to {out_dir}; open {main_file(written, out_dir)}", file=sys.stderr)
    return 0


def cmd_compare(args) -> int:
    stats.check_min_effect(args.min_effect)  # before any file is read
    a = comparemod.select(reportdata.load([args.a]), args.machine_a)
    b = comparemod.select(reportdata.load([args.b]), args.machine_b)
    for results, path, option, text in ((a, args.a, "--machine-a", args.machine_a), (b, args.b, "--machine-b", args.machine_b)):
        if not results:
            raise UserError(f"no results in {path}" + (f" from a machine matching {option} {text!r}" if text else ""))
    print(markdown.table(comparemod.compare(a, b, args.a, args.b, args.min_effect)))
    return 0


def cmd_check(args) -> int:
    """Exit 0 when nothing regressed, 1 when something did (2: bad input)."""
    stats.check_min_effect(args.min_effect)
    for option, value in (("--max-slowdown", args.max_slowdown), ("--max-compile-increase", args.max_compile_increase),
                          ("--max-memory-increase", args.max_memory_increase), ("--drift", args.drift)):
        if value is not None and not 0 <= value < 10:
            raise UserError(f"{option} must be a percentage from 0% to below 1000%, got {value * 100:g}%")
    for path in (args.summary, args.junit):
        if path:
            reportmod.check_out_dir(os.path.dirname(os.path.abspath(path)))
    sides = []
    for path in (args.baseline, args.candidate):
        results = comparemod.select(reportdata.load([path]), args.machine)
        if not results:
            raise UserError(f"no results in {path}" + (f" from a machine matching --machine {args.machine!r}" if args.machine else ""))
        sides.append(results)
    limits = checkmod.Limits(args.max_slowdown, args.max_compile_increase, args.max_memory_increase)
    given = Drift(args.drift, "given with --drift") if args.drift is not None else None
    lines, moved = checkmod.check(*sides, limits, args.min_effect, given)
    regressions = [l for l in lines if l.regression]
    text = markdown.table(checkmod.table(lines, f"{args.candidate} against {args.baseline}"))
    said = (f"{len(regressions)} regression(s) in {len({l.label for l in lines})} case(s)" if regressions else
            f"no regression in {len({l.label for l in lines})} case(s)") + \
        f". Latency and speed-up verdicts across runs hold the run-to-run drift, {moved.describe()}."
    print(text + "\n" + said)
    if args.summary:
        _write(args.summary, f"**compilebench check: {said}**\n\n{text}\n")
    if args.junit:
        _write(args.junit, checkmod.junit(lines))
    return 1 if regressions else 0


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
