"""Results: a set of results (a run's, or a results file's) with the View built from them once, and what a notebook
asks of it: one row per result (a DataFrame), the guide's tables, the report's files. The Python API returns it
(compilebench.benchmark, load); ShapesResults for `shapes()`."""

from __future__ import annotations

import functools

from compilebench import report as reportmod
from compilebench.core import stats
from compilebench.core.errors import UserError
from compilebench.core.result import Result
from compilebench.report import flat, markdown, reference as referencemod, shapes as shapesmod, tables
from compilebench.report.view import DEFAULT_REQUESTS, View


class Results:
    """Results of a benchmark or a results file: rows, tables and reports, with the CLI's numbers."""

    def __init__(self, results: list[Result], path: str | None = None, min_effect: float = stats.DEFAULT_MIN_EFFECT,
                 requests: int = DEFAULT_REQUESTS, mix: str | None = None):
        self.results, self.path, self.min_effect, self.requests, self.mix = results, path, min_effect, requests, mix

    @functools.cached_property
    def view(self) -> View:
        """The report's model of these results, built on first use: tables, rows and files all read it. `requests`:
        the traffic the start-up and shapes views weigh each start against; `mix`: the shapes' shares of it."""
        return View(self.results, self.min_effect, self.requests, self.mix)

    def __len__(self) -> int:
        return len(self.results)

    def __iter__(self):
        return iter(self.results)

    def __repr__(self) -> str:
        ok = sum(1 for r in self.results if r.status == "ok")
        return f"<Results: {len(self.results)} result(s), {ok} ok, from {self.path or 'memory'}>"

    def to_pandas(self):
        """One row per result (pandas.DataFrame): the case, mean_ms and its 95% interval, the speed-up over eager
        with its interval and verdict, compile times, status and flags, the environment as env_*."""
        try:
            import pandas
        except ImportError:
            raise UserError("Results.to_pandas needs pandas: pip install pandas") from None
        return pandas.DataFrame(flat.rows(self.view))

    def table(self) -> str:
        """The guide's tables (and text generation's), as markdown."""
        if not self.results:
            return "(no results)"
        return markdown.tables([*tables.guide_tables(self.view), *tables.generation_tables(self.view)])

    def _repr_markdown_(self) -> str:  # a notebook shows the tables
        return self.table()

    def report(self, out_dir: str, formats: tuple[str, ...] = reportmod.FORMATS, reference: str | None = None) -> list[str]:
        """Write the report (markdown, HTML, charts, CSV, JSON) into out_dir; returns the files written. `reference`:
        "guide" sets the guide's published speed-ups beside these (`compilebench report --reference guide`)."""
        published = (reference, referencemod.load(reference)) if reference else None
        return reportmod.write(self.view, out_dir, tuple(formats), [self.path or "memory"], published)


class ShapesResults(Results):
    """Results of `shapes()`: rows per setting and shape served, and the shapes tables."""

    def to_pandas(self):
        """One row per setting and shape (pandas.DataFrame): the first call and the graphs it compiled, dynamo's
        reasons, the steady latency with its 95% interval and speed-up, and the setting's time to serve the mix."""
        try:
            import pandas
        except ImportError:
            raise UserError("Results.to_pandas needs pandas: pip install pandas") from None
        return pandas.DataFrame(flat.shape_rows(self.view))

    def table(self) -> str:
        found = shapesmod.tables(self.view)
        return markdown.tables(found) if found else "(no results)"
