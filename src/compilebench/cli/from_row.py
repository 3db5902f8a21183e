"""`compilebench run --from-row ID`: a stored result's command (core/reproduce.py), parsed as the command line
parses it and run into the row's own file as a new result of its case (--rerun), with where its results and
report go as given."""

from __future__ import annotations

import argparse
import shlex
import sys

from compilebench.core import reproduce
from compilebench.core.errors import UserError
from compilebench.report import data as reportdata

# What --from-row takes beside the row: where its results and report go, and how they are shown.
KEEPS = ("--db", "--out", "--format", "--quiet", "--details", "--tag", "--requests")


def resolve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The arguments of the row's command, to run in place of `run --from-row ID`."""
    r = _row(args.db, args.from_row)
    words = reproduce.argv(r)
    if words is None:
        raise UserError(f"--from-row {args.from_row}: no command measures this result again: {reproduce.why_not(r)}")
    defaults = vars(parser.parse_args(["run"]))
    keeps = {_dest(option) for option in KEEPS} | {"from_row", "argv", "_given"}
    changed = [name for name, value in vars(args).items()
               if name not in keeps and name in defaults and value != defaults[name]]
    if changed:
        raise UserError(f"--from-row measures the row as it was measured: drop --{changed[0].replace('_', '-')} (or "
                        f"run the row's command, changed: {shlex.join(words)})")
    kept = [word for option in KEEPS for word in _given(args, option)]
    again = parser.parse_args([*words[1:], *kept, "--rerun"])
    again.argv = [*words[1:], *kept]  # the command that resumes it
    print(f"measuring result {r.result_id} again: {shlex.join(words)}", file=sys.stderr)
    return again


def _row(db: str, wanted: str):
    """The result whose id starts with `wanted` (the details table shows its first 8 characters)."""
    found = [r for r in reportdata.load([db]) if r.result_id.startswith(wanted.strip().lower())]
    if len(found) != 1:
        what = "no result" if not found else f"{len(found)} results"
        raise UserError(f"--from-row: {what} whose id starts with {wanted!r} in {db} (the details table's id "
                        "column, or result_id in the CSV and JSON)")
    return found[0]


def _dest(option: str) -> str:
    return option.lstrip("-").replace("-", "_")


def _given(args, option: str) -> list[str]:
    """An option of this command as words again, where it is set (a flag alone)."""
    value = getattr(args, _dest(option))
    if value is True:
        return [option]
    return [] if value is None or value is False else [option, str(value)]
