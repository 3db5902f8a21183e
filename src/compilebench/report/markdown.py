"""Tables as markdown, and the markdown report: summary, the guide's tables with their charts, comparisons,
details, environments."""

from __future__ import annotations

import html
import os

from compilebench.report.cells import Table
from compilebench.report.charts import Chart


def escape(text: str) -> str:
    """A cell that cannot break the table or inject markup: pipes escaped, newlines folded, <>& as entities."""
    return html.escape(str(text), quote=False).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def code(text: str) -> str:
    """A command as an inline code span in a table cell: shown as written (a code span shows entities as typed, so
    only the pipe is escaped), fenced by two backticks where it holds one."""
    if not text:
        return ""
    fence = "``" if "`" in text else "`"
    one_line = text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return f"{fence}{one_line}{fence}"


def heading(text: str, level: int) -> str:
    return f"{'#' * level} {html.escape(text, quote=False)}"


def table(t: Table, level: int = 3) -> str:
    lines = [heading(t.title, level), ""] if t.title else []
    lines.append("| " + " | ".join(escape(h) for h in t.header) + " |")
    lines.append("|" + ":---:|" * len(t.header))
    kinds = ["link" if h in t.links else "command" if h in t.commands else "" for h in t.header]
    lines += ["| " + " | ".join(f"[{escape(os.path.basename(c))}](<{c}>)" if kind == "link" and c else
                                code(c) if kind == "command" else escape(c)
                                for c, kind in zip(row, kinds)) + " |" for row in t.rows]
    if t.notes:
        lines += ["", *map(escape, t.notes)]
    return "\n".join(lines) + "\n"


def tables(ts: list[Table]) -> str:
    return "\n".join(table(t) for t in ts)


def report(sections: list[tuple[str, list]], intro: list[str], charts_dir: str) -> str:
    """Sections of (heading, items); an item is a Table, a paragraph or a Chart (linked as charts_dir/NAME.png)."""
    out = ["# compilebench report", ""]
    for line in intro:
        out += [escape(line), ""]
    for title, items in sections:
        if not items:
            continue
        out += [heading(title, 2), ""]
        for item in items:
            if isinstance(item, Table):
                out.append(table(item))
            elif isinstance(item, str):
                out += [escape(item), ""]
            else:
                assert isinstance(item, Chart)
                out += [f"![{escape(item.title)}]({charts_dir}/{os.path.basename(item.png)})", ""]
    return "\n".join(out)
