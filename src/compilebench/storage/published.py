"""Results as a published folder (a Hugging Face Hub dataset, or a downloaded snapshot of one): one JSON line per
result in a `.jsonl` file per run under data/, and a marker naming the format. A line holds the result's flat
figures (report/flat.py: its case, settings, estimate and interval, verdict, environment, the command that
reproduces it) for `datasets.load_dataset` and any reader, and the result and its runs whole, as JSON text, from
which a report reads it as it reads a results file. Written by `compilebench publish`; read wherever a results
file is."""

from __future__ import annotations

import json
import os

from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.core.run import Run

MARKER = "compilebench.json"
FORMAT = 1  # the newest this version reads
DATA = "data"
UNRECORDED = "unrecorded"  # results from before runs were recorded: their own file


def is_published(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, MARKER))


def run_of(r: Result) -> str:
    """The run a result is published under: the one that measured its newest repeat."""
    newest = max(r.repeats, key=lambda rep: rep.created_at, default=None)
    return newest.run if newest is not None and newest.run else UNRECORDED


def lines(results: list[Result], flat: dict[str, dict]) -> dict[str, list[str]]:
    """Each run's file name -> its lines; `flat`: each result's flat row, by result_id."""
    out: dict[str, list[str]] = {}
    for r in sorted(results, key=lambda x: x.created_at):
        row = {**flat[r.result_id], "result": json.dumps(r.to_dict(), sort_keys=True),
               "runs": json.dumps([run.to_dict() for run in r.runs], sort_keys=True)}
        out.setdefault(f"{run_of(r)}.jsonl", []).append(json.dumps(row, sort_keys=True, allow_nan=False))
    return out


def files(results: list[Result], flat: dict[str, dict], version: str | None) -> dict[str, str]:
    """The folder's files (name inside it -> content): a data file per run, and the marker."""
    out = {f"{DATA}/{name}": "\n".join(text) + "\n" for name, text in lines(results, flat).items()}
    out[MARKER] = json.dumps({"format": FORMAT, "compilebench": version, "data": f"{DATA}/*.jsonl"}, indent=1) + "\n"
    return out


def results(folder: str) -> list[Result]:
    """Every result a published folder holds, with its runs; a UserError naming the file and line of anything this
    version cannot read (a newer format, a line that is not a result)."""
    marker = os.path.join(folder, MARKER)
    try:
        with open(marker, encoding="utf-8") as f:
            made = json.load(f)
        fmt = int(made["format"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{marker}: not a compilebench published folder's marker ({exc})") from None
    if fmt > FORMAT:
        raise UserError(f"{folder} was published by compilebench {made.get('compilebench')} in format {fmt}; this "
                        f"version reads format {FORMAT} and older: pip install -U compilebench")
    data = os.path.join(folder, DATA)
    names = sorted(n for n in os.listdir(data) if n.endswith(".jsonl")) if os.path.isdir(data) else []
    if not names:
        raise UserError(f"{folder} holds no {DATA}/*.jsonl: nothing published there")
    out = []
    for name in names:
        path = os.path.join(data, name)
        with open(path, encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if line.strip():
                    out.append(_result(line, f"{path}:{number}"))
    return out


def _result(line: str, where: str) -> Result:
    try:
        row = json.loads(line)
        runs_ = tuple(Run.from_dict(d) for d in json.loads(row["runs"]))
        return Result.from_dict(json.loads(row["result"]), runs_)
    except (ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{where}: not a published result this compilebench reads ({type(exc).__name__}: {exc})") from None
