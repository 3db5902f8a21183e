"""Record: a typed part of a repeat or of a result, one concern each (how it starts, its generation, the shapes it
served, its profile, ...), its fields declared once with their meaning.

A record is stored as a dict of its fields that are known (a None is left out: read back, it is None again), and
a record with nothing recorded (every field at its default) as an empty dict, as before records; a dict is read
back into the record's fields, and the keys a newer compilebench wrote, which this one does not know, are kept
(`extra`) and written back unchanged. A record nested in another, or in a Repeat or Result, is a field declared
with `part(Kind)`; a record with nothing recorded is false, as an empty dict was."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def column(default=None, *, csv: str) -> Any:
    """A field with a column of its own, named `csv`, in the CSV and JSON rows (report/flat.py)."""
    return field(default=default, metadata={"column": csv})


def stored_as(key: str, default=None) -> Any:
    """A field stored under another key than its name (a Python keyword: "from")."""
    return field(default=default, metadata={"key": key})


def part(kind: type, **metadata) -> Any:
    """A field holding a record of `kind` (empty where nothing was recorded)."""
    return field(default_factory=kind, metadata={"record": kind, **metadata})


def items(kind: type) -> Any:
    """A field holding a list of records of `kind`."""
    return field(default_factory=list, metadata={"items": kind})


def parts(kind: type) -> Any:
    """A field holding records of `kind` by name (a shapes run's per-shape records, by shape)."""
    return field(default_factory=dict, metadata={"records": kind})


@dataclass(kw_only=True)
class Record:
    extra: dict = field(default_factory=dict, repr=False)  # keys a newer compilebench wrote, kept as they were

    def to_dict(self) -> dict:
        out = dict(self.extra)
        if self._recorded():
            for f in dataclasses.fields(self):
                if f.name != "extra" and getattr(self, f.name) is not None:
                    out[f.metadata.get("key", f.name)] = plain(getattr(self, f.name))
        return out

    def _recorded(self) -> bool:
        return any(f.name != "extra" and getattr(self, f.name) != default(f) for f in dataclasses.fields(self))

    @classmethod
    def from_dict(cls, d: dict | None):
        return cls(**typed(cls, d or {}))

    def __bool__(self) -> bool:
        return bool(self.extra) or self._recorded()

    @classmethod
    def columns(cls) -> tuple[str, ...]:
        """The CSV and JSON columns its fields declare, in their order."""
        return tuple(f.metadata["column"] for f in dataclasses.fields(cls) if "column" in f.metadata)

    def row(self) -> dict:
        """Its columns' values (None where not set)."""
        return columns_of(self)


def columns_of(obj) -> dict:
    """The columns a dataclass's fields declare (`column`), with their values."""
    return {f.metadata["column"]: getattr(obj, f.name) for f in dataclasses.fields(obj) if "column" in f.metadata}


def default(f: dataclasses.Field):
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def plain(value):
    """A value as JSON holds it: records (and estimates) as their dicts."""
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def coerce(obj) -> None:
    """Its record fields given as dicts (a test, a caller writing one by hand) made records."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if "record" in f.metadata and (value is None or isinstance(value, dict)):
            setattr(obj, f.name, f.metadata["record"].from_dict(value))
        elif "records" in f.metadata and any(isinstance(v, dict) for v in value.values()):
            setattr(obj, f.name, {k: v if isinstance(v, Record) else f.metadata["records"].from_dict(v)
                                  for k, v in value.items()})
        elif "items" in f.metadata and any(isinstance(v, dict) for v in value):
            setattr(obj, f.name, [v if isinstance(v, Record) else f.metadata["items"].from_dict(v) for v in value])


def typed(cls, d: dict) -> dict:
    """The keyword arguments of `cls` (a dataclass) from a stored dict: records made from their dicts, keys it does
    not know in `extra` (where it has one)."""
    known = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls) if f.init and f.name != "extra"}
    kwargs, extra = {}, {}
    for key, v in d.items():
        f = known.get(key)
        if f is None:
            extra[key] = v
            continue
        k = f.name
        if "record" in f.metadata:
            kind = f.metadata["record"]
            kwargs[k] = v if isinstance(v, kind) else kind.from_dict(v)
        elif "records" in f.metadata:
            kind = f.metadata["records"]
            kwargs[k] = {name: r if isinstance(r, Record) else kind.from_dict(r) for name, r in (v or {}).items()}
        elif "items" in f.metadata:
            kwargs[k] = [r if isinstance(r, Record) else f.metadata["items"].from_dict(r) for r in v or []]
        else:
            kwargs[k] = v
    if any(f.name == "extra" for f in dataclasses.fields(cls)):
        kwargs["extra"] = extra
    return kwargs
