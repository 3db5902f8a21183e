"""How a stopped command ends: a line saying what it kept, then the command that goes on (the same command line,
again) alone on the last line, shell-quoted, so it can be pasted back as it is."""

from __future__ import annotations

import shlex

from compilebench.core.errors import EnvironmentFailure, UserError
from compilebench.storage import store as storemod


def command(args) -> str:
    """The command line that resumes this one: the same one."""
    return " ".join(["compilebench", *map(shlex.quote, args.argv)])


def interrupted(args) -> str:
    """The line for Ctrl-C or SIGTERM: the resume command wherever the command's results file holds anything."""
    db = getattr(args, "db", None) if args.command in ("run", "tune") else None
    if db is None:
        return "interrupted"
    try:
        with storemod.Store.open(db, create=False, write=False) as store:
            stored = store.count()
    except (UserError, EnvironmentFailure):  # missing, empty, or unreadable now: nothing of it to resume from
        stored = 0
    if not stored:
        return f"interrupted before anything was stored in {db}"
    return f"interrupted: every finished result is in {db}; to resume, run the same command again:\n{command(args)}"


def failed(message: str, args) -> str:
    """The lines for a sweep the environment stopped (a full disk, a locked results file)."""
    return f"error: {message}. Every result stored before it is kept; to resume, run the same command again:\n{command(args)}"
