"""`compilebench report` and `compilebench compare`: results files in, tables and files out. No torch needed."""

from __future__ import annotations

import os
import sys

from compilebench import report as reportmod, stats, store as storemod
from compilebench.errors import UserError
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
