"""The self-contained HTML report of a conformance run (``ndk conformance --html FILE``).

A pure function over :class:`~ndk._report.Record` lists, like the text summary it mirrors:
the rules x providers matrix (as an inline SVG picture, :func:`matrix_svg`, and as a table),
the family counts, the failures, the skip reasons, the
validation layer's violations per provider and rule, and the totals line.  One file, no
scripts, no external style sheets.
"""

from __future__ import annotations

from html import escape
from typing import Sequence
from xml.sax.saxutils import quoteattr

from ._report import (
    COLLECTION,
    DIFFERS,
    REFERENCE,
    REQUIRED,
    level_of,
    FAILING,
    FATE_LABELS,
    has_differences,
    Record,
    columns,
    count_cell,
    family_counts,
    family_counts_title,
    family_of,
    format_levels,
    format_totals,
    matrix,
    has_fates,
    rule_sort_key,
    skip_reasons,
    violation_tallies,
)

_CELL_CLASS = {"pass": "pass", "FAIL": "fail", "skip": "skip", "pass*": "partial",
               "CRASH": "crash", "TIMEOUT": "timeout", "DIFF": "diff"}

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
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
td.errors { background: #f2dede; font-weight: bold; }
code { font-size: 0.95em; }
p.totals { font-weight: bold; }
figure.matrix { margin: 0.5em 0 1em 0; } figure.matrix svg { max-width: 100%; height: auto; }
figcaption { font-size: 0.9em; color: #555; }
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
_SVG_NS = "http://www.w3.org/2000/svg"


def differs(cells: Sequence[str]) -> bool:
    """The providers disagree on a rule: more than one provider ran it and the states differ."""
    ran = [c for c in cells if c != "-"]
    return len(cells) > 1 and len(set(cells)) > 1 and bool(ran)


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
    legend_h = 40 + 14 * len(cols)
    width = _LABEL_W + _PER_ROW * rule_w + 70
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

    legend = ['<g class="legend">']
    x = 8
    for state, (fill, text) in PICTURE_COLOURS.items():
        legend.append(f'<rect x="{x}" y="8" width="{_CELL_W}" height="{_CELL_H}" fill="{fill}" '
                      f'stroke="#888" stroke-width="0.4"/>')
        legend.append(f'<text x="{x + _CELL_W + 5}" y="16">{escape(text)}</text>')
        x += _CELL_W + 12 + 7 * len(text)
    legend.append(f'<rect x="{x}" y="11" width="{_CELL_W}" height="3" fill="{DIFFERS_COLOUR}"/>')
    legend.append(f'<text x="{x + _CELL_W + 5}" y="16">providers differ (bar over the rule)</text>')
    legend.append(f'<text x="8" y="36">each rule is a column, one cell per provider, top to '
                  f'bottom:</text>')
    for j, col in enumerate(cols):
        legend.append(f'<text x="24" y="{50 + 14 * j}" class="provider">{j + 1}. '
                      f'{escape(col)}</text>')
    legend.append("</g>")

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


def _table(header: Sequence[str], rows: Sequence[Sequence[str | Sequence[str]]],
           classes: Sequence[Sequence[str]] | None = None) -> str:
    """An HTML table of escaped cells; ``classes`` gives each cell's class ("": none)."""
    out = ["<table>", "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in header) + "</tr>"]
    for i, row in enumerate(rows):
        cells = []
        for j, value in enumerate(row):
            cls = classes[i][j] if classes else ""
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


def rule_levels(records: Sequence[Record]) -> dict[str, str]:
    """Each rule's conformance level as the matrix table shows it: "required", or
    "reference choice (ID)" with its docs/semantics.md entry."""
    return {r.rule: (f"{REFERENCE} ({r.reference})" if level_of(r) == REFERENCE else REQUIRED)
            for r in records if r.rule is not None and r.rule != COLLECTION}


def format_html(records: Sequence[Record], providers: Sequence[str], wall_seconds: float) -> str:
    """The whole report as one HTML document."""
    cols, rows = matrix(records, providers)
    levels = rule_levels(records)
    matrix_table = _table(["rule", "level", *cols],
                          [[row[0], levels.get(row[0], "-"), *row[1:]] for row in rows],
                          [["", ""] + [_CELL_CLASS.get(cell, "") for cell in row[1:]]
                           for row in rows])

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
    levels = format_levels(records, providers)
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
        matrix_table,
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
        f"<pre>{escape(levels)}</pre>" if levels else "<p>None.</p>",
        "<h2>Validation layer violations per provider and rule</h2>",
        _violations_section(records, providers),
        "<h2>Skip reasons</h2>",
        skips,
        "</body>",
        "</html>",
        "",
    ])
