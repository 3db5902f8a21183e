"""`compilebench publish`'s folder, a Hugging Face Hub dataset: the results as JSON lines, a file per run
(storage/published.py), a dataset card (README.md: the YAML header the Hub and `datasets.load_dataset` read, the
suite's summary, how to read it back) and the HTML report under report/. Written whole or not at all, as every page
is (report/exporters.py)."""

from __future__ import annotations

import datetime
import json
import os

from compilebench import report as reportmod
from compilebench.report import data, exporters, flat, markdown, suite, tables
from compilebench.report.scrub import Scrubbed
from compilebench.report.view import View
from compilebench.storage import published

PAGE = "dataset"
REPORT_DIR = "report"
CARD = "README.md"
HEADER = f"""---
configs:
- config_name: default
  data_files:
  - split: train
    path: {published.DATA}/*.jsonl
tags:
- compilebench
- torch-compile
- benchmark
pretty_name: {{name}}
---
"""


class Rendered:
    def __init__(self, view: View, sources: list[str], version: str | None, scrubbed: Scrubbed):
        self.view, self.sources, self.version, self.scrubbed = view, sources, version, scrubbed


@exporters.exporter(PAGE, "hub")
def _hub(r: Rendered) -> dict[str, str]:
    rows = {row["result_id"]: row for row in flat.rows(r.view)}
    return {**published.files(r.view.results, rows, r.version), CARD: card(r.view, r.version, r.scrubbed)}


def card(view: View, version: str | None, scrubbed: Scrubbed) -> str:
    """The dataset card: what was measured where, the suite's summary, and how to read the rows back."""
    hardware = sorted({data.hardware(r) for r in view.results})
    torches = sorted({data.torch_version(r) for r in view.results})
    runs = {published.run_of(r) for r in view.results}
    name = f"compilebench results: {', '.join(hardware)}"
    out = [HEADER.format(name=json.dumps(name)), f"# {name}", "",
           f"{len(view.results)} results of {len({r.case_key for r in view.results})} cases from {len(runs)} run(s), "
           f"on {', '.join(hardware)} under torch {', '.join(torches)}; published by compilebench {version} on "
           f"{datetime.date.today().isoformat()}. Every row says the command that measures its case again "
           "(`reproduce`).", ""]
    out += [c.describe() for c in view.shards] + ([""] if view.shards else [])
    if view.latest:
        out += [markdown.table(suite.summary_table(view), 2), ""]
        out += [markdown.tables(tables.guide_tables(view)), ""]
    out += ["## Read it", "",
            "- `compilebench report DIR` (and `compare`, `check`, `history`) reads this folder, a snapshot of this "
            "dataset, as it reads a results file: set your GPU's results beside these.",
            "- `datasets.load_dataset(DIR)`: one row per result, its case, settings, estimate and interval, verdict "
            "and environment as columns; `result` and `runs` hold the whole result as JSON text.",
            f"- {REPORT_DIR}/report.html: the report of these results.", ""]
    out += scrubbed.card()
    return "\n".join(out)


def write(view: View, out_dir: str, sources: list[str], version: str | None, scrubbed: Scrubbed) -> list[str]:
    """The folder: data files, marker and card, then the HTML report beside them; the paths written. `scrubbed`:
    what was done to the results before (report/scrub.py), for the card to say."""
    data.require(view.results, sources)
    written = exporters.write(PAGE, ("hub",), out_dir, lambda scratch: Rendered(view, sources, version, scrubbed))
    runs = os.path.join(out_dir, published.DATA)
    for name in os.listdir(runs):  # a run an earlier publish into this folder wrote and this one does not hold
        if name.endswith(".jsonl") and os.path.join(runs, name) not in written:
            os.remove(os.path.join(runs, name))
    return written + reportmod.write(view, os.path.join(out_dir, REPORT_DIR), ("html",), sources)
