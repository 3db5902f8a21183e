"""The command line. `main` reads like the architecture: parse, then hand over to the command, which validates
its input once, runs, stores and reports. A UserError is one line and exit 2; any other exception is a bug and
keeps its traceback. Ctrl-C or SIGTERM is one line, with the command that resumes where anything is stored.

On top of everything with the Python API (api.py): it may import any layer, and nothing imports it."""

from __future__ import annotations

import signal
import sys

from compilebench.cli import from_row, options, resume
from compilebench.core.errors import EnvironmentFailure, UserError
from compilebench.storage import interrupts

EXIT_BAD_INPUT = options.EXIT_BAD_INPUT
EXIT_FAILED = 1  # the machine failed the command (a full disk, a lock held too long), not its input


def _commands() -> dict:
    from compilebench.cli import history, info, publish, reports, run, shapes, tune

    return {"run": run.cmd_run, "shapes": shapes.cmd_shapes, "tune": tune.cmd_tune, "report": reports.cmd_report, "compare": reports.cmd_compare,
            "check": reports.cmd_check, "history": history.cmd_history, "env": info.cmd_env,
            "models": info.cmd_models, "publish": publish.cmd_publish}


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process is this command: once its outcome is decided, signals change nothing
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = options.parser(_commands())
    args = parser.parse_args(argv)
    args.argv = argv  # the command that resumes this one
    try:
        if getattr(args, "from_row", None):  # run --from-row ID: the row's own command
            args = from_row.resolve(args, parser)
        # SIGTERM as Ctrl-C, wherever the command is; ignored once it has ended (its line said, its workers closing)
        with interrupts.stop_signals(then=signal.SIG_IGN if program else None):
            return args.func(args)
    except KeyboardInterrupt as exc:  # outside a sweep, which keeps its own: the device probe, the report
        print(resume.interrupted(args), file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except EnvironmentFailure as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED
