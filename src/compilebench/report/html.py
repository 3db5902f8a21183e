"""The HTML report: one self-contained file (charts embedded as data URIs, no network), every piece of text from a
result escaped. Its one script is the copy buttons of the commands that measure a result again; a
Content-Security-Policy lets that script alone run (by its hash) and forbids remote loads, as a second guard."""

from __future__ import annotations

import base64
import hashlib
import html
import itertools
import os
import pathlib

from compilebench.core.vocab import STATUSES
from compilebench.report.cells import Table
from compilebench.report.charts import Chart

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; } h3 { margin-top: 1.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
div.wide { overflow-x: auto; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; text-align: center; } td:first-child { text-align: left; }
td.fail { color: #b00020; font-weight: 600; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0 1.5em; }
p.note, li { font-size: 13px; color: #444; }
td.command { text-align: left; white-space: nowrap; }
td.command code { user-select: all; }
"""
# A command cell's copy button puts its command on the clipboard (a click on the command selects it whole, where a
# browser keeps the clipboard from a page).
_SCRIPT = """document.addEventListener("click", function (event) {
  var button = event.target.closest("button.copy");
  if (!button) return;
  navigator.clipboard.writeText(button.dataset.command).then(function () { button.textContent = "copied"; });
});"""
SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(_SCRIPT.encode()).digest()).decode("ascii")
CSP = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src '{SCRIPT_HASH}'"

_FAILURES = {"OOM", *(s for s in STATUSES if s not in ("ok", "oom"))}  # cells that show a status instead of a number


def escape(text) -> str:
    return html.escape(str(text), quote=True)


def table(t: Table) -> str:
    out = [f"<h3>{escape(t.title)}</h3>"] if t.title else []
    out.append('<div class="wide"><table>')  # a table wider than the page scrolls alone, not the whole page
    out.append("<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in t.header) + "</tr></thead>")
    out.append("<tbody>")
    kinds = ["link" if h in t.links else "command" if h in t.commands else "" for h in t.header]
    for row in t.rows:
        cells = "".join(
            f'<td class="fail">{escape(c)}</td>' if c in _FAILURES else
            f'<td><a href="{escape(pathlib.Path(c).as_uri())}">{escape(os.path.basename(c))}</a></td>'
            if kind == "link" and c else command(c) if kind == "command" and c
            else f"<td>{escape(c)}</td>" for c, kind in zip(row, kinds)
        )
        out.append(f"<tr>{cells}</tr>")
    out.append("</tbody></table></div>")
    for is_item, notes in itertools.groupby(t.notes, key=lambda n: n.startswith("- ")):  # in order: a list under
        if is_item:                                                                      # the line that heads it
            out.append("<ul>" + "".join(f"<li>{escape(n[2:])}</li>" for n in notes) + "</ul>")
        else:
            out += [f'<p class="note">{escape(n)}</p>' for n in notes]
    return "\n".join(out)


def command(text: str) -> str:
    """A command's cell: the command as code, and a button that copies it."""
    return (f'<td class="command"><button type="button" class="copy" data-command="{escape(text)}">copy</button> '
            f"<code>{escape(text)}</code></td>")


def image(alt: str, svg_path: str) -> str:
    with open(svg_path, "rb") as f:
        payload = base64.b64encode(f.read()).decode("ascii")
    return f'<img alt="{escape(alt)}" src="data:image/svg+xml;base64,{payload}">'


def page(title: str, intro: list[str], sections: list[tuple[str, list]]) -> str:
    """Sections of (heading, items); an item is a Table, a paragraph or a Chart (its SVG embedded)."""
    body = [f"<h1>{escape(title)}</h1>"] + [f"<p>{escape(p)}</p>" for p in intro]
    for heading, items in sections:
        if not items:
            continue
        body.append(f"<h2>{escape(heading)}</h2>")
        for item in items:
            if isinstance(item, Table):
                body.append(table(item))
            elif isinstance(item, str):
                body.append(f"<p>{escape(item)}</p>")
            else:
                assert isinstance(item, Chart)
                body.append(image(item.title, item.svg))
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        f"<title>{escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head><body>",
        *body,
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
        "",
    ])
