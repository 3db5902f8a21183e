"""A person's mistake (UserError: one line, exit 2) or the machine's (EnvironmentFailure: one line, exit 1), as
opposed to a bug, which keeps its traceback."""

import difflib


class UserError(Exception):
    """Bad input: the message names what is wrong and what is allowed."""


class UnknownChoice(UserError):
    def __init__(self, what: str, given: str, allowed: list[str]):
        near = difflib.get_close_matches(given, allowed, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(n) for n in near)}?" if near else ""
        super().__init__(f"unknown {what} {given!r}{hint} (allowed: {', '.join(allowed)})")


class SchemaError(UserError):
    """A results file this version cannot read."""


class EnvironmentFailure(Exception):
    """The machine failed the command, not its input (a full disk, a file locked past the timeout): one line that
    says what to do, exit 1."""
