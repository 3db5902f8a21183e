"""The command line. `main` reads like the architecture: parse, then hand over to the command, which validates
its input once, runs, stores and reports. A UserError is one line and exit 2; any other exception is a bug and
keeps its traceback."""

from __future__ import annotations

import sys

from compilebench.cli import options
from compilebench.errors import EnvironmentFailure, UserError

EXIT_BAD_INPUT = options.EXIT_BAD_INPUT
EXIT_FAILED = 1  # the machine failed the command (a full disk, a lock held too long), not its input


def _commands() -> dict:
    from compilebench.cli import info, reports, run, tune

    return {"run": run.cmd_run, "tune": tune.cmd_tune, "report": reports.cmd_report, "compare": reports.cmd_compare,
            "env": info.cmd_env, "models": info.cmd_models}


def main(argv: list[str] | None = None) -> int:
    args = options.parser(_commands()).parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except EnvironmentFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
