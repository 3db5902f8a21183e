"""Reports from results alone: markdown and HTML (tables and charts), CSV and JSON (one flat row per result).

`write()` renders into a scratch folder inside the output folder and moves each finished file into place, so
an interrupted report leaves the previous files whole.

Owns the View (view.py: groups, cells and speed-ups, built once) and everything drawn from it, and `compare` and
`check`. Imports core, storage (to read results files) and diagnostics; never run, measure or zoo: no torch, no
GPU, nothing that runs a case."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile

from compilebench.core.errors import UnknownChoice, UserError
from compilebench.core.vocab import FLAGS
from compilebench.report import (
    cells,
    charts as chartsmod,
    cudagraphs,
    data,
    details,
    flat,
    html,
    markdown,
    quantization,
    reference as referencemod,
    shapes,
    stability,
    start,
    suite,
    tables,
    why,
)
from compilebench.report.cells import Table
from compilebench.report.view import View
from compilebench.storage import interrupts, paths

FILES = {"md": "report.md", "html": "report.html", "csv": "results.csv", "json": "results.json"}
REFERENCE_CSV = "reference.csv"  # with --reference: your speed-ups beside the published ones, one row per pair
SHAPES = {"csv": "shapes.csv", "json": "shapes.json"}  # `compilebench shapes`: a row per setting and shape served
CHARTS_DIR = "charts"


def parse_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(f.strip() for f in text.split(",") if f.strip()))
    if not formats:
        raise UserError(f"--format needs at least one of {', '.join(FORMATS)}")
    for f in formats:
        if f not in FORMATS:
            raise UnknownChoice("report format", f, list(FORMATS))
    return formats


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


def sections(view: View, charts: list[chartsmod.Chart], reference: tuple[str, list] | None = None) -> list[tuple[str, list]]:
    """The report in reading order; an item is a Table, a paragraph or a Chart. `reference`: a published
    reference's name and figures, set beside yours (--reference)."""
    by_section: dict[tuple, list] = {}
    for c in charts:
        by_section.setdefault(c.section, []).append(c)
    ok = sum(1 for r in view.latest + view.served if r.status == "ok")
    guide = bool(view.latest)  # a file of shapes results alone has no guide table, nor its summary
    summary: list = [suite.summary_table(view)] if guide else []
    if not ok:
        summary.insert(0, "No case was measured ok: the details below say why each failed.")
    flags = tables.flags_note(view)
    if flags:
        summary += ["Flags (see Details):", Table("", ["flag"], [[f[2:]] for f in flags])]
    results_items: list = []
    for g in view.groups:  # each group's table, then its charts
        table = tables.generation_table(view, g) if g.generation else tables.guide_table(view, g)
        results_items += [table, *by_section.get(g.key, [])]
    batch_items = [c for key, cs in by_section.items() if key[0] == "hardware" for c in cs]
    hardware_items = [c for key, cs in by_section.items() if key[0] == "batch" for c in cs]
    if view.across_runs:  # asked while the tables above were built
        summary.append(cells.drift_note(view.drift))
    moved = stability.notes(view)
    if moved:
        summary += ["Where the machine moved, or a verdict was left undecided:", Table("", ["note"], [[n] for n in moved])]
    return [
        ("Summary", summary),
        ("Results", results_items),
        ("Quantization", quantization.tables(view)),
        ("CUDA graphs", cudagraphs.tables(view)),
        ("Recommendation", [tables.recommendation_table(view), *filter(None, [start.recommendation_rows(view)])]
         if guide else []),
        ("Speed-ups and compile cost", [tables.speedup_table(view)] if guide else []),
        ("Start-up", start.sections(view, charts)),
        ("Shapes", shapes.sections(view, charts)),
        ("Batch sizes", batch_items),
        ("Hardware", hardware_items),
        ("Torch versions", tables.version_tables(view)),
        ("Compile modes", tables.mode_tables(view)),
        ("Why it is (not) faster", why.sections(view, charts)),
        *([("The guide's figures", _reference_items(view, *reference))] if reference else []),
        ("Details", [details.details_table(view)] if guide else []),
        ("Environment", details.environment_tables(view.results)),
    ]


def _reference_items(view: View, name: str, figures: list) -> list:
    found = referencemod.reference_table(view, figures, name)
    return [found] if found else [f"None of these results is of a model, batch size and compile mode the {name}'s "
                                  "tables hold: nothing to set beside them."]


def intro(view: View, sources: list[str]) -> list[str]:
    latest = view.latest + view.served
    ok = sum(1 for r in latest if r.status == "ok")
    machines = len({r.machine_id for r in view.results})
    counts = data.flag_counts(latest)
    flags = ", ".join(f"{n} {f}" for f, n in counts.items() if n or FLAGS[f].counted_at_zero)
    return [f"{len(latest)} results ({ok} measured ok) from {machines} machine(s), read from {', '.join(sources)}. "
            f"Flags: {flags}.",
            "Times are the mean milliseconds of one call of the whole batch (a forward pass, or a generate() call), "
            "estimated from independent worker processes (repeats); see Details for each result's 95% interval, R, "
            "N and noise."]


class Rendered:
    """What the formats share, each made once, the first time one asks for it: the charts (drawn into the scratch
    folder), the sections of the markdown and HTML reports, the flat rows of CSV and JSON."""

    def __init__(self, view: View, sources: list[str], published: tuple[str, list] | None, scratch: str):
        self.view, self.sources, self.published, self.scratch = view, sources, published, scratch

    @functools.cached_property
    def charts(self) -> list[chartsmod.Chart]:
        return chartsmod.render(self.view, os.path.join(self.scratch, CHARTS_DIR))

    @functools.cached_property
    def sections(self) -> list:
        return sections(self.view, self.charts, self.published)

    @functools.cached_property
    def intro(self) -> list[str]:
        return intro(self.view, self.sources)

    @functools.cached_property
    def rows(self) -> list[dict]:
        return flat.rows(self.view)

    @functools.cached_property
    def served(self) -> list[dict]:
        """`compilebench shapes`: a row per setting and shape served (none for any other run)."""
        return shapes.rows(self.view)


def _csv(r: Rendered) -> dict[str, str]:
    pairs = referencemod.rows(r.view, r.published[1]) if r.published else []
    return {FILES["csv"]: flat.to_csv(r.rows), **({REFERENCE_CSV: flat.to_csv(pairs)} if pairs else {}),
            **({SHAPES["csv"]: flat.to_csv(r.served)} if r.served else {})}


def _json(r: Rendered) -> dict[str, str]:
    return {FILES["json"]: flat.to_json(r.rows), **({SHAPES["json"]: flat.to_json(r.served)} if r.served else {})}


# One exporter a format: the files it writes (name inside the output folder -> content).
EXPORTERS = {
    "md": lambda r: {FILES["md"]: markdown.report(r.sections, r.intro, CHARTS_DIR)},
    "html": lambda r: {FILES["html"]: html.page("compilebench report", r.intro, r.sections)},
    "csv": _csv,
    "json": _json,
}
FORMATS = tuple(EXPORTERS)  # --format's choices, all written by default


def write(view: View, out_dir: str, formats: tuple[str, ...], sources: list[str],
          published: tuple[str, list] | None = None) -> list[str]:
    """Render every requested format into out_dir; returns the paths written. The View is built once by the caller,
    who may print its tables too. `published`: a reference's name and figures (reference.load) to set beside the
    results."""
    data.require(view.results, sources)
    check_out_dir(out_dir)
    made = not os.path.exists(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix=".report-", dir=out_dir)
    except OSError as exc:
        raise UserError(f"cannot write the report to {out_dir!r} ({exc.strerror or exc})") from None
    try:
        rendered = Rendered(view, sources, published, scratch)
        files: dict[str, str] = {}  # name inside out_dir -> content
        for f in formats:
            files.update(EXPORTERS[f](rendered))
        charts = rendered.charts if "charts" in vars(rendered) else []
        for name, content in files.items():
            with open(os.path.join(scratch, name), "w", encoding="utf-8") as f:
                f.write(content)
        with interrupts.signals_deferred():  # a report is replaced whole, or not at all
            return _move_into_place(scratch, out_dir, list(files), charts)
    except OSError as exc:  # a full disk while rendering: the previous report stays whole
        raise UserError(f"cannot write the report to {out_dir!r} ({exc.strerror or exc}); the previous report there, "
                        "if any, is unchanged") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if made and os.path.isdir(out_dir) and not os.listdir(out_dir):  # stopped before any file: the folder goes too
            os.rmdir(out_dir)


def _move_into_place(scratch: str, out_dir: str, names: list[str], charts: list[chartsmod.Chart]) -> list[str]:
    written = []
    if charts:
        chart_dir = os.path.join(out_dir, CHARTS_DIR)
        os.makedirs(chart_dir, exist_ok=True)
        new = {os.path.basename(p) for c in charts for p in (c.png, c.svg)}
        for name in new:
            os.replace(os.path.join(scratch, CHARTS_DIR, name), os.path.join(chart_dir, name))
            written.append(os.path.join(chart_dir, name))
        for name in os.listdir(chart_dir):  # charts of an earlier report that this one no longer has
            if name not in new and name.endswith((".png", ".svg")):
                os.remove(os.path.join(chart_dir, name))
    for name in names:
        os.replace(os.path.join(scratch, name), os.path.join(out_dir, name))
        written.append(os.path.join(out_dir, name))
    return sorted(written)
