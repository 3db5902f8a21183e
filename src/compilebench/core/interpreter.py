"""An environment of `--env NAME=PATH`, as declared: the interpreter its workers run under and the variables they
get, part of every case it measures (its name). As data: run/interpreters.py declares, probes and starts them;
what a worker measured under one is recorded in its Environment (core/environment.py)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Interpreter:
    """A declared environment: its name (part of each case it measures), its interpreter, and its variables."""

    name: str
    python: str  # absolute, not resolved: a virtual environment's bin/python is a link its site-packages depend on
    set: tuple[tuple[str, str], ...] = ()  # (variable, value), sorted by variable

    def to_dict(self) -> dict:
        return {"name": self.name, "python": self.python, "set": dict(self.set)}

    @classmethod
    def from_dict(cls, d: dict) -> Interpreter:
        return cls(d["name"], d["python"], tuple(sorted(d.get("set", {}).items())))


def recorded(environment: dict) -> dict:
    """What a repeat's Environment says of the --env it ran under (its fields environment, environment_python,
    environment_set)."""
    return {"environment": environment["name"], "environment_python": environment["python"],
            "environment_set": " ".join(f"{k}={v}" for k, v in sorted(environment.get("set", {}).items()))}
