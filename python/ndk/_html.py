"""The self-contained HTML report of a conformance run (``ndk conformance --html FILE``).

A pure function over :class:`~ndk._report.Record` lists, like the text summary it mirrors:
the rules x providers matrix, the family counts, the failures, the skip reasons, the
validation layer's violations per provider and rule, and the totals line.  One file, no
scripts, no external style sheets.
"""

from __future__ import annotations

from html import escape
from typing import Sequence

from ._report import (
    FAILING,
    Record,
    columns,
    family_counts,
    format_totals,
    matrix,
    rule_sort_key,
    skip_reasons,
    violation_tallies,
)

_CELL_CLASS = {"pass": "pass", "FAIL": "fail", "skip": "skip", "pass*": "partial"}

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.pass { background: #dff0d8; } td.fail { background: #f2dede; font-weight: bold; }
td.skip { background: #f5f5f5; color: #777; } td.partial { background: #eef6e8; }
td.num { text-align: right; }
td.errors { background: #f2dede; font-weight: bold; }
code { font-size: 0.95em; }
p.totals { font-weight: bold; }
"""


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


def format_html(records: Sequence[Record], providers: Sequence[str], wall_seconds: float) -> str:
    """The whole report as one HTML document."""
    cols, rows = matrix(records, providers)
    matrix_table = _table(["rule", *cols], rows,
                          [[""] + [_CELL_CLASS.get(cell, "") for cell in row[1:]] for row in rows])

    counts = family_counts(records)
    family_rows = []
    for family in sorted(counts, key=rule_sort_key):
        row = [family]
        for col in columns(records, providers):
            c = counts[family].get(col)
            row.append(f"{c['passed']}/{c['failed']}/{c['skipped']}" if c else "-")
        family_rows.append(row)
    family_table = _table(["family", *cols], family_rows)

    failing = [r for r in records if r.outcome in FAILING]
    failures = (_table(["outcome", "scenario", "message"],
                       [[r.outcome.upper(), r.nodeid, r.message or ""] for r in failing])
                if failing else "<p>None.</p>")
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
        matrix_table,
        "<h2>Scenarios per family (passed/failed/skipped)</h2>",
        family_table,
        "<h2>Failures</h2>",
        failures,
        "<h2>Validation layer violations per provider and rule</h2>",
        _violations_section(records, providers),
        "<h2>Skip reasons</h2>",
        skips,
        "</body>",
        "</html>",
        "",
    ])
