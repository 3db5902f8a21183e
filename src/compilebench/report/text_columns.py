"""Text tables for the terminal: rows as columns no wider than a terminal, names cut where they must be, words that
hold figures wrapped onto lines of their own, never cut."""

from __future__ import annotations

import textwrap


def fit(header: list[str], body: list[list[str]], width: int, free: tuple[int, ...] = (2, 0),
        left: tuple[int, ...] = (0, 2, 6), optional: tuple[int, ...] = (8, 7, 3, 1),
        wrap: tuple[int, ...] = ()) -> list[str]:
    """Rows as text columns no wider than `width`: the `free` columns (names) are cut, with '~', when they must be;
    the `wrap` columns (words holding figures, which a cut would misread: "pixel_class 87.~") go on over lines of
    their own below their row, broken between their comma-separated items (or their words), never within a word;
    then the `optional` columns are left out, in that order, until the rest fits (as pytest-benchmark hides what it
    cannot fit; the lines in words below the table still say it). The `left` columns (words) are aligned left, the
    numbers right."""
    widths = [max(len(x) for x in col) for col in zip(header, *body)]
    shown = list(range(len(header)))

    def over() -> int:
        return sum(widths[i] for i in shown) + 2 * (len(shown) - 1) - width

    for i in free:
        cut = min(over(), widths[i] - len(header[i]))
        if cut > 0:
            widths[i] -= cut
    for i in wrap:
        words = [header[i], *(word for r in body for word in r[i].split())]
        cut = min(over(), widths[i] - max(map(len, words)))
        if cut > 0:
            widths[i] -= cut
    for i in optional:
        if over() > 0 and i < len(header):
            shown.remove(i)

    def line(cells: list[str]) -> str:
        texts = [(i, cells[i] if len(cells[i]) <= widths[i] else cells[i][:widths[i] - 1] + "~") for i in shown]
        return "  ".join(x.ljust(widths[i]) if i in left else x.rjust(widths[i]) for i, x in texts).rstrip()

    def lines(cells: list[str]) -> list[str]:
        parts = {i: _wrapped(cells[i], widths[i]) for i in wrap if i in shown}

        def at(i: int, k: int) -> str:
            if i in parts:
                return parts[i][k] if k < len(parts[i]) else ""
            return cells[i] if k == 0 else ""

        return [line([at(i, k) for i in range(len(cells))]) for k in range(max(map(len, parts.values()), default=1))]

    return [line(header)] + [x for r in body for x in lines(r)]


def _wrapped(text: str, width: int) -> list[str]:
    """A cell's lines no wider than `width`, broken between its comma-separated items (one item a line reads
    without its comma), or between an item's words where it is wider than that."""
    out: list[str] = []
    for item in text.split(", "):
        if out and len(out[-1]) + 2 + len(item) <= width:
            out[-1] += ", " + item
        else:
            out += textwrap.wrap(item, width, break_long_words=False) or [""]
    return out or [""]
