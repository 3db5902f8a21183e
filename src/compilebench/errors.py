"""A person's mistake, as opposed to a bug: the CLI prints these as one line and exits 2."""

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
