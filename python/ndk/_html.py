"""The self-contained HTML report of a conformance run (``ndk conformance --html FILE``).

A pure function over :class:`~ndk._report.Record` lists, like the text summary it mirrors:
the rules x providers matrix (as an inline SVG picture, :func:`matrix_svg`, and as a filtered
table with each rule's scenarios, :mod:`ndk._html_rules`), the family counts, the failures,
the conformance levels, the skip reasons, the validation layer's violations per provider and
rule, and the totals line.  One file: its style and its one small script (the rule filter) are
inline, nothing is fetched from elsewhere.  The page fits a 1280 px window without scrolling
sideways (long names wrap; the picture scales down), which tests/report/test_html_browser.py
checks in Chromium.
"""

from __future__ import annotations

import os
from html import escape
from typing import Sequence
from xml.sax.saxutils import quoteattr

from ._html_rules import differs, levels_section, rule_table
from ._report import (
    DIFFERS,
    FAILING,
    FATE_LABELS,
    has_differences,
    Record,
    columns,
    count_cell,
    family_counts,
    family_counts_title,
    family_of,
    format_totals,
    matrix,
    has_fates,
    rule_sort_key,
    skip_reasons,
    violation_tallies,
)

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
th, td, p, figcaption { overflow-wrap: break-word; }
td.long, td.scenarios { overflow-wrap: anywhere; }  /* node IDs, paths: no sideways scroll */
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.pass { background: #dff0d8; } td.fail { background: #f2dede; font-weight: bold; }
td.crash { background: #e3c4f0; font-weight: bold; }
td.diff { background: #fcefc7; }
td.timeout { background: #f7dcb4; font-weight: bold; }
td.skip { background: #f5f5f5; color: #777; } td.partial { background: #eef6e8; }
td.num { text-align: right; }
td.pass, td.fail, td.crash, td.diff, td.timeout, td.skip, td.partial, td.num {
  white-space: nowrap; }
td.errors { background: #f2dede; font-weight: bold; }
code { font-size: 0.95em; }
p.totals { font-weight: bold; }
figure.matrix { margin: 0.5em 0 1em 0; } figure.matrix svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
p.filter input { width: 22em; } #rule-shown { color: #555; margin-left: 1em; }
td.scenarios { font-size: 0.9em; } th.provider { min-width: 3.5em; } td.ids { white-space: nowrap; }
"""


# --- the matrix as a picture ----------------------------------------------------------------

# Cell states of the matrix (ndk._report.cell) -> (fill colour, legend text).
PICTURE_COLOURS = {
    "pass": ("#4cae4c", "pass"),
    "pass*": ("#a8d99a", "pass, some skipped"),
    "FAIL": ("#d9534f", "FAIL"),
    "CRASH": ("#8e44ad", "CRASH (process died)"),
    "TIMEOUT": ("#e67e22", "TIMEOUT (past --timeout)"),
    "DIFF": ("#f6d365", "DIFF (a reference choice made otherwise)"),
    "skip": ("#bdbdbd", "skip"),
    "-": ("#ffffff", "not run"),
}
DIFFERS_COLOUR = "#f0a030"  # bar over a rule whose providers disagree
_CELL_W, _CELL_H, _GAP = 11, 9, 2  # one provider's cell of one rule
_PER_ROW = 40  # rules per line of a family before it wraps
_LABEL_W = 150
_MARGIN = 8
_LEGEND_LINE = 16  # one line of legend entries
_CHAR_W = 6.5  # px per character of the 11 px legend text, above DejaVu Sans's average
_SVG_NS = "http://www.w3.org/2000/svg"
# A cell with a word longer than this (a node ID, a path) may break anywhere: only such cells,
# so that a table's other columns keep their words whole.
_LONG_WORD = 24


def _legend(cols: Sequence[str], width: int) -> tuple[list[str], int]:
    """The picture's legend, wrapped to stay within ``width``: each state's colour, the
    "providers differ" bar, and the order of a rule's cells; returns (SVG elements, height)."""
    items = [(fill, text, _CELL_H) for fill, text in PICTURE_COLOURS.values()]
    items.append((DIFFERS_COLOUR, "providers differ (bar over the rule)", 3))
    out = ['<g class="legend">']
    x, y = _MARGIN, _MARGIN
    for fill, text, h in items:
        item_w = _CELL_W + 5 + _CHAR_W * len(text)
        if x > _MARGIN and x + item_w > width - _MARGIN:
            x, y = _MARGIN, y + _LEGEND_LINE
        stroke = ' stroke="#888" stroke-width="0.4"' if h == _CELL_H else ""
        out.append(f'<rect x="{x}" y="{y + (_CELL_H - h) // 2}" width="{_CELL_W}" height="{h}" '
                   f'fill="{fill}"{stroke}/>')
        out.append(f'<text x="{x + _CELL_W + 5}" y="{y + 8}">{escape(text)}</text>')
        x += round(item_w) + 12
    y += _LEGEND_LINE + 12
    out.append(f'<text x="{_MARGIN}" y="{y}">each rule is a column, one cell per provider, '
               f'top to bottom:</text>')
    for j, col in enumerate(cols):
        y += 14
        out.append(f'<text x="24" y="{y}" class="provider">{j + 1}. {escape(col)}</text>')
    out.append("</g>")
    return out, y + 6


def matrix_svg(records: Sequence[Record], providers: Sequence[str]) -> str:
    """The rules x providers matrix as an inline SVG picture people can scan.

    One line per rule family (wrapping after _PER_ROW rules); each rule is a small column with
    one cell per provider, top to bottom in the matrix's column order, coloured by its state
    (PICTURE_COLOURS); a rule whose providers disagree has a bar over it (DIFFERS_COLOUR).  Hovering
    a rule shows its ID and each provider's state (an SVG <title>).  Pure text: the report
    stays one self-contained file, and the picture scales.
    """
    cols, rows = matrix(records, providers)
    families: dict[str, list[list[str]]] = {}
    for row in rows:
        families.setdefault(family_of(row[0]), []).append(row)
    rule_w = _CELL_W + 3
    rule_h = len(cols) * (_CELL_H + _GAP) - _GAP
    line_h = rule_h + 10  # room for the "providers differ" bar above each line
    width = _LABEL_W + _PER_ROW * rule_w + 70
    legend, legend_h = _legend(cols, width)
    out: list[str] = []
    y = legend_h + 4
    for family, family_rows in families.items():
        lines = (len(family_rows) + _PER_ROW - 1) // _PER_ROW
        failed = sum(1 for row in family_rows
                     if {"FAIL", "CRASH", "TIMEOUT"} & set(row[1:]))
        label = f"{family} ({len(family_rows)})"
        out.append(f'<text x="{_LABEL_W - 8}" y="{y + rule_h / 2 + 4:.0f}" text-anchor="end" '
                   f'class="family{" failed" if failed else ""}">{escape(label)}</text>')
        for i, row in enumerate(family_rows):
            rule, cells = row[0], row[1:]
            x = _LABEL_W + (i % _PER_ROW) * rule_w
            top = y + (i // _PER_ROW) * line_h
            tip = f"{rule}: " + ", ".join(f"{col} {cell}" for col, cell in zip(cols, cells))
            attrs = ' class="rule differs"' if differs(cells) else ' class="rule"'
            out.append(f"<g{attrs}><title>{escape(tip)}</title>")
            if differs(cells):  # a bar over the column (separate bars: they do not merge)
                out.append(f'<rect x="{x}" y="{top - 4}" width="{_CELL_W}" height="3" '
                           f'fill="{DIFFERS_COLOUR}" class="differs"/>')
            for j, cell in enumerate(cells):
                fill = PICTURE_COLOURS.get(cell, PICTURE_COLOURS["-"])[0]
                out.append(f'<rect x="{x}" y="{top + j * (_CELL_H + _GAP)}" width="{_CELL_W}" '
                           f'height="{_CELL_H}" fill="{fill}" stroke="#888" stroke-width="0.4" '
                           f'data-state={quoteattr(cell)}/>')
            out.append("</g>")
        y += lines * line_h + 6
    height = y + 6

    title = (f"Conformance matrix: {len(rows)} rules x {len(cols)} provider"
             f"{'s' if len(cols) != 1 else ''} ({', '.join(cols)})")
    return "\n".join([
        f'<svg xmlns="{_SVG_NS}" class="matrix-picture" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" aria-label={quoteattr(title)}>',
        f"<title>{escape(title)}</title>",
        "<style>text { font: 11px sans-serif; fill: #222; } text.family { font-weight: bold; } "
        "text.failed { fill: #c9302c; } g.rule:hover rect { stroke: #000; stroke-width: 1; }"
        "</style>",
        *legend,
        *out,
        "</svg>",
    ])


def _cell(value: str | Sequence[str]) -> str:
    """A cell's content: escaped text, or a list of texts one per line."""
    if isinstance(value, str):
        return escape(value)
    return "<br>".join(escape(text) for text in value)


def _longest_word(value: str | Sequence[str]) -> int:
    texts = [value] if isinstance(value, str) else value
    return max((len(word) for text in texts for word in text.split()), default=0)


def _table(header: Sequence[str], rows: Sequence[Sequence[str | Sequence[str]]],
           classes: Sequence[Sequence[str]] | None = None) -> str:
    """An HTML table of escaped cells; ``classes`` gives each cell's class ("": none)."""
    out = ["<table>", "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cells = []
        for j, value in enumerate(row):
            cls = classes[i][j] if classes else ""
            if _longest_word(value) > _LONG_WORD:
                cls = f"{cls} long".strip()
            attr = f' class="{escape(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{_cell(value)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def _violations_section(records: Sequence[Record], providers: Sequence[str]) -> str:
    tallies = violation_tallies(records, providers)
    if not tallies:
        return "<p>The validation layer recorded no violations.</p>"
    header = ["provider", "rule", "side", "digest", "errors", "warnings", "expected", "scenarios"]
    rows, classes = [], []
    for t in tallies:
        rows.append([t.provider, t.rule, t.side, t.section, str(t.errors), str(t.warnings),
                     str(t.expected), t.scenarios])
        classes.append(["", "", "", "", "num errors" if t.errors else "num", "num", "num", ""])
    details = [[record.nodeid, v.rule, v.severity + (" (expected)" if v.expected else ""),
                v.object, v.call, v.message, v.section]
               for record in records for v in record.violations]
    return "\n".join([
        "<p>errors: error-severity violations no scenario declared (each failed its scenario); "
        "warnings: never a failure; expected: declared with "
        "<code>@pytest.mark.expect_violation</code>.</p>",
        _table(header, rows, classes),
        "<h3>Every violation</h3>",
        _table(["scenario", "rule", "severity", "object", "call", "message", "digest"], details),
    ])


def format_html(records: Sequence[Record], providers: Sequence[str], wall_seconds: float,
                scenarios_dir: str | os.PathLike | None = None) -> str:
    """The whole report as one HTML document; ``scenarios_dir`` is the directory the run
    collected, which the rule table links each scenario into (None: no links)."""
    cols, _ = matrix(records, providers)

    counts = family_counts(records)
    fates, differences = has_fates(records), has_differences(records)
    family_rows = []
    for family in sorted(counts, key=rule_sort_key):
        row = [family]
        for col in columns(records, providers):
            c = counts[family].get(col)
            row.append(count_cell(c, fates, differences) if c else "-")
        family_rows.append(row)
    family_table = _table(["family", *cols], family_rows)

    failing = [r for r in records if r.outcome in FAILING]
    failures = (_table(["outcome", "scenario", "message"],
                       [[FATE_LABELS.get(r.fate or "", r.outcome.upper()), r.nodeid,
                         r.message or ""] for r in failing])
                if failing else "<p>None.</p>")
    differing = [r for r in records if r.outcome == DIFFERS]
    differences_table = (_table(["scenario", "docs/semantics.md", "message"],
                                [[r.nodeid, r.reference or "", r.message or ""]
                                 for r in differing])
                         if differing else "<p>None.</p>")
    reasons = skip_reasons(records)
    skips = (_table(["count", "reason"], [[str(n), reason] for reason, n in reasons])
             if reasons else "<p>None.</p>")

    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<title>NDK conformance report</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>NDK conformance report</h1>",
        f'<p class="totals">{escape(format_totals(records, wall_seconds))}</p>',
        "<h2>Rules x providers</h2>",
        '<figure class="matrix">',
        matrix_svg(records, providers),
        "<figcaption>Every rule by family; hover a cell for the rule and its states.  The "
        "table below has the same cells.</figcaption>",
        "</figure>",
        rule_table(records, providers, scenarios_dir),
        f"<h2>Scenarios per family ({escape(family_counts_title(records))})</h2>",
        family_table,
        "<h2>Failures</h2>",
        failures,
        "<h2>Differs (reference choice)</h2>",
        "<p>Scenarios whose expectation is the reference provider's choice where NDK is silent "
        "(docs/semantics.md), and which a provider answered otherwise: not failures unless "
        "<code>ndk conformance --strict</code>.</p>",
        differences_table,
        "<h2>Conformance levels</h2>",
        levels_section(records, providers, scenarios_dir),
        "<h2>Validation layer violations per provider and rule</h2>",
        _violations_section(records, providers),
        "<h2>Skip reasons</h2>",
        skips,
        "</body>",
        "</html>",
        "",
    ])
