"""The exporters of every page compilebench writes, in one registry (a page's formats, each the files it writes from
what the page rendered), and the one way they are written: rendered into a scratch folder inside the output folder,
each finished file (and chart) moved into place, so an interrupted page leaves the previous files whole.

The report (report/__init__.py: md, html, csv, json) and the history page (history_page.py: html, csv, json)
register theirs; `--format` takes a page's formats by name (cli/groups.formats)."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Callable

from compilebench.core.errors import UnknownChoice, UserError
from compilebench.storage import interrupts, paths

CHARTS_DIR = "charts"
# page -> format -> exporter: what the page rendered -> {file name inside the output folder: content}
EXPORTERS: dict[str, dict[str, Callable[[object], dict[str, str]]]] = {}


def exporter(page: str, fmt: str):
    """Register a page's exporter of one format (a decorator)."""
    def register(fn):
        EXPORTERS.setdefault(page, {})[fmt] = fn
        return fn
    return register


def formats(page: str) -> tuple[str, ...]:
    """A page's formats, all written by default."""
    return tuple(EXPORTERS[page])


def parse_formats(text: str, page: str = "report") -> tuple[str, ...]:
    """--format's comma-separated formats of a page; a UserError naming the allowed ones."""
    allowed = formats(page)
    given = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    if not given:
        raise UserError(f"--format needs at least one of {', '.join(allowed)}")
    for f in given:
        if f not in allowed:
            raise UnknownChoice(f"{page} format", f, list(allowed))
    return given


def check_out_dir(out_dir: str) -> None:
    """Refuse an output folder that cannot be written before anything is measured or rendered: the nearest
    folder that exists on its path must take a file (tried for real, then removed; permission bits say nothing
    to root or on a read-only file system)."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise UserError(f"--out {out_dir!r} is a file; give a folder for the report")
    probe = paths.nearest_folder(out_dir)
    if not os.path.isdir(probe):
        raise UserError(f"cannot write the report to {out_dir!r}: {probe!r} is a file, not a folder")
    why = paths.why_not_writable(probe)
    if why:
        raise UserError(f"cannot write the report to {out_dir!r}: {probe!r} is not writable ({why})")
    if full := paths.why_full(probe):
        raise UserError(f"cannot write the report to {out_dir!r}: {full}; free some space or give --out on another "
                        "disk")


def write(page: str, fmts: tuple[str, ...], out_dir: str, render: Callable[[str], object],
          charts: Callable[[object], list] = lambda rendered: []) -> list[str]:
    """A page's files in each of `fmts` into out_dir; returns the paths written. `render(scratch)`: what its
    exporters read, made with the scratch folder at hand (charts are drawn into its CHARTS_DIR); `charts(rendered)`:
    the charts it drew (each with its png and svg paths), moved beside the files, old ones removed."""
    check_out_dir(out_dir)
    made = not os.path.exists(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=f".{page}-", dir=out_dir)
    except OSError as exc:
        raise UserError(f"cannot write the {page} to {out_dir!r} ({exc.strerror or exc})") from None
    try:
        rendered = render(scratch)
        files: dict[str, str] = {}  # name inside out_dir -> content
        for f in fmts:
            files.update(EXPORTERS[page][f](rendered))
        drawn = charts(rendered)
        for name, content in files.items():
            os.makedirs(os.path.dirname(os.path.join(scratch, name)), exist_ok=True)  # a page's subfolder (data/)
            with open(os.path.join(scratch, name), "w", encoding="utf-8") as f:
                f.write(content)
        with interrupts.signals_deferred():  # a page is replaced whole, or not at all
            return _move_into_place(scratch, out_dir, list(files), drawn)
    except OSError as exc:  # a full disk while rendering: the previous files stay whole
        raise UserError(f"cannot write the {page} to {out_dir!r} ({exc.strerror or exc}); the previous {page} "
                        "there, if any, is unchanged") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if made and os.path.isdir(out_dir) and not os.listdir(out_dir):  # stopped before any file: the folder goes too
            os.rmdir(out_dir)


def _move_into_place(scratch: str, out_dir: str, names: list[str], charts: list) -> list[str]:
    written = []
    if charts:
        chart_dir = os.path.join(out_dir, CHARTS_DIR)
        os.makedirs(chart_dir, exist_ok=True)
        new = {os.path.basename(p) for c in charts for p in (c.png, c.svg)}
        for name in new:
            os.replace(os.path.join(scratch, CHARTS_DIR, name), os.path.join(chart_dir, name))
            written.append(os.path.join(chart_dir, name))
        for name in os.listdir(chart_dir):  # charts of an earlier page that this one no longer has
            if name not in new and name.endswith((".png", ".svg")):
                os.remove(os.path.join(chart_dir, name))
    for name in names:
        os.makedirs(os.path.dirname(os.path.join(out_dir, name)), exist_ok=True)
        os.replace(os.path.join(scratch, name), os.path.join(out_dir, name))
        written.append(os.path.join(out_dir, name))
    return sorted(written)
