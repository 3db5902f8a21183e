"""An environment of `--env NAME=PATH`: the interpreter its workers run under and the variables they get, declared
by the user and part of every case it measures (its name). As data: run/interpreters.py declares, probes and
starts them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Environment:
    """A declared environment: its name (part of each case it measures), its interpreter, and its variables."""

    name: str
    python: str  # absolute, not resolved: a virtual environment's bin/python is a link its site-packages depend on
    set: tuple[tuple[str, str], ...] = ()  # (variable, value), sorted by variable

    def to_dict(self) -> dict:
        return {"name": self.name, "python": self.python, "set": dict(self.set)}

    @classmethod
    def from_dict(cls, d: dict) -> Environment:
        return cls(d["name"], d["python"], tuple(sorted(d.get("set", {}).items())))


def recorded(environment: dict) -> dict:
    """What a result's environment fingerprint says of the --env it ran under (flat, for the CSV's env_* columns)."""
    return {"environment": environment["name"], "environment_python": environment["python"],
            "environment_set": " ".join(f"{k}={v}" for k, v in sorted(environment.get("set", {}).items()))}
