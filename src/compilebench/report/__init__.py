"""Reports from results alone: markdown and HTML (tables and charts), CSV and JSON (one flat row per result).

`write()` renders them through the exporters' registry (exporters.py: into a scratch folder inside the output
folder, each finished file moved into place, so an interrupted report leaves the previous files whole).

Owns the View (view.py: groups, cells and speed-ups, built once) and everything drawn from it, and `compare` and
`check`. Imports core, storage (to read results files) and diagnostics; never run, measure or zoo: no torch, no
GPU, nothing that runs a case."""

from __future__ import annotations

import functools
import os

from compilebench.core.vocab import FLAGS
from compilebench.report import (
    cells,
    charts as chartsmod,
    cudagraphs,
    data,
    details,
    diffusion,
    engines,
    exporters,
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
from compilebench.report.exporters import CHARTS_DIR, check_out_dir  # noqa: F401 - the commands' checks
from compilebench.report.view import View

FILES = {"md": "report.md", "html": "report.html", "csv": "results.csv", "json": "results.json"}
REFERENCE_CSV = "reference.csv"  # with --reference: your speed-ups beside the published ones, one row per pair
SHAPES = {"csv": "shapes.csv", "json": "shapes.json"}  # `compilebench shapes`: a row per setting and shape served


def sections(view: View, charts: list[chartsmod.Chart], reference: tuple[str, list] | None = None) -> list[tuple[str, list]]:
    """The report in reading order; an item is a Table, a paragraph or a Chart. `reference`: a published
    reference's name and figures, set beside yours (--reference)."""
    by_section: dict[tuple, list] = {}
    for c in charts:
        by_section.setdefault(c.section, []).append(c)
    ok = sum(1 for r in view.latest + view.served if r.status == "ok")
    guide = bool(view.latest)  # a file of shapes results alone has no guide table, nor its summary
    summary: list = [c.describe() for c in view.shards] + ([suite.summary_table(view)] if guide else [])
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
        ("Engines", engines.tables(view)),
        ("Quantization", quantization.tables(view)),
        ("CUDA graphs", cudagraphs.tables(view)),
        ("Text-to-image", diffusion.tables(view)),
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
            "Times are the milliseconds of one call of the whole batch (a forward pass, or a generate() call): the "
            "median of each worker process's calls, estimated over independent processes (repeats); see Details for "
            "each result's 95% interval, R, N, noise and the guide's mean of the calls."]


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
        return flat.shape_rows(self.view)


@exporters.exporter("report", "md")
def _md(r: Rendered) -> dict[str, str]:
    return {FILES["md"]: markdown.report(r.sections, r.intro, CHARTS_DIR)}


@exporters.exporter("report", "html")
def _html(r: Rendered) -> dict[str, str]:
    return {FILES["html"]: html.page("compilebench report", r.intro, r.sections)}


@exporters.exporter("report", "csv")
def _csv(r: Rendered) -> dict[str, str]:
    pairs = referencemod.rows(r.view, r.published[1]) if r.published else []
    return {FILES["csv"]: flat.to_csv(r.rows), **({REFERENCE_CSV: flat.to_csv(pairs)} if pairs else {}),
            **({SHAPES["csv"]: flat.to_csv(r.served)} if r.served else {})}


@exporters.exporter("report", "json")
def _json(r: Rendered) -> dict[str, str]:
    return {FILES["json"]: flat.to_json(r.rows), **({SHAPES["json"]: flat.to_json(r.served)} if r.served else {})}


FORMATS = exporters.formats("report")  # --format's choices, all written by default


def parse_formats(text: str) -> tuple[str, ...]:
    return exporters.parse_formats(text, "report")


def write(view: View, out_dir: str, formats: tuple[str, ...], sources: list[str],
          published: tuple[str, list] | None = None) -> list[str]:
    """Render every requested format into out_dir; returns the paths written. The View is built once by the caller,
    who may print its tables too. `published`: a reference's name and figures (reference.load) to set beside the
    results."""
    data.require(view.results, sources)
    return exporters.write("report", formats, out_dir, lambda scratch: Rendered(view, sources, published, scratch),
                           lambda rendered: rendered.charts if "charts" in vars(rendered) else [])
