"""Every command of the command line with its options (`run`'s, in groups of one concern each, are groups.py's).
Values are range-checked where they become a RunSpec (core/spec); here they are only parsed."""

from __future__ import annotations

import argparse
import difflib

from compilebench import __version__

EXIT_BAD_INPUT = 2


class _Once(argparse._StoreAction):
    """An option of one value, given twice, is refused: which of two typed values the user meant is not ours to
    guess (list options, --model, --batch-size, --variant, --inductor-option, add up instead)."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_given", set())
        if self.dest in given:
            parser.error(f"{option_string} given twice ({getattr(namespace, self.dest)!r}, then {values!r}): give it once")
        given.add(self.dest)
        setattr(namespace, self.dest, values)


class Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("action", None, _Once)  # every plain option of this parser and its groups
        self.register("action", "store", _Once)

    def error(self, message: str):  # argparse's default prints the usage too: keep bad input to one line
        self.exit(EXIT_BAD_INPUT, f"error: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but an unknown option is refused by the command it was given to, which names its own
        --help and the options of its own that are spelt most like it (argparse refuses it from the top)."""
        known, extras = self.parse_known_args(args, namespace)
        if extras:
            owner = getattr(self, "commands", {}).get(getattr(known, "command", None), self)
            close = {m for word in extras if word.startswith("-")
                     for m in difflib.get_close_matches(word.split("=")[0], owner._option_string_actions, 2, 0.75)}
            hint = f"; did you mean {', '.join(sorted(close))}?" if close else ""
            owner.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return known


def parser(commands: dict) -> argparse.ArgumentParser:
    """`commands` maps each command name to the function that runs it; each command's module declares its options
    (add_parser), sharing run's groups (groups.py)."""
    from compilebench.cli import history, info, publish, reports, run, shapes, tune

    p = Parser(prog="compilebench", description="Measure what torch.compile does for Hugging Face models.")
    p.add_argument("--version", action="version", version=f"compilebench {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, add in (("run", run.add_parser), ("shapes", shapes.add_parser), ("tune", tune.add_parser),
                      ("report", reports.report_parser), ("compare", reports.compare_parser),
                      ("check", reports.check_parser), ("history", history.add_parser), ("env", info.env_parser),
                      ("models", info.models_parser), ("publish", publish.add_parser)):
        add(sub).set_defaults(func=commands[name])
    p.commands = sub.choices  # each command's own parser, to refuse what it does not know (Parser.parse_args)
    return p
