"""The HTML report's rule table and conformance levels (:func:`ndk._html.format_html`).

The rule table has one row per rule: its level (with a link to the docs/semantics.md entry a
reference choice relies on), its scenarios (file and function, linked to the file the run
collected), and its cell per provider; a small inline script filters the rows by text and by
cell state.  The levels are a table per level and provider, then the reference choices the run
met, each with its docs/semantics.md entry quoted.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from html import escape
from pathlib import Path
from typing import Sequence

from ._report import (COLLECTION, REFERENCE, REQUIRED, Record, level_cell, level_counts,
                      matrix, rule_label, rule_sort_key)
from ._semantics_doc import entries, semantics_path

CELL_CLASS = {"pass": "pass", "FAIL": "fail", "skip": "skip", "pass*": "partial",
              "CRASH": "crash", "TIMEOUT": "timeout", "DIFF": "diff"}
DIFFERS_STATE = "differs"  # the filter's pseudo state: the providers disagree on the rule

# The rule filter: rows match every word typed (rule, level, scenarios) and the chosen state.
FILTER_SCRIPT = """
(function () {
  var text = document.getElementById("rule-filter");
  var state = document.getElementById("rule-state");
  var shown = document.getElementById("rule-shown");
  var rows = document.querySelectorAll("#rules tbody tr");
  function apply() {
    var words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var want = state.value, n = 0;
    rows.forEach(function (row) {
      var hay = row.getAttribute("data-text");
      var states = row.getAttribute("data-states").split(" ");
      var ok = words.every(function (w) { return hay.indexOf(w) >= 0; }) &&
               (!want || states.indexOf(want) >= 0);
      row.hidden = !ok;
      if (ok) { n++; }
    });
    shown.textContent = n + " of " + rows.length + " rules shown";
  }
  text.addEventListener("input", apply);
  state.addEventListener("change", apply);
  apply();
})();
"""

_STATE_NAMES = {"FAIL": "FAIL", "CRASH": "CRASH", "TIMEOUT": "TIMEOUT", "DIFF": "DIFF",
                "pass*": "pass, some skipped", "skip": "skip", "-": "not run", "pass": "pass",
                DIFFERS_STATE: "providers differ"}


def differs(cells: Sequence[str]) -> bool:
    """The providers disagree on a rule: more than one provider ran it and the states differ."""
    ran = [c for c in cells if c != "-"]
    return len(cells) > 1 and len(set(cells)) > 1 and bool(ran)


def semantics_anchor(reference: str) -> str:
    """The id of a docs/semantics.md entry's row in the report's reference-choice table."""
    return f"semantics-{reference}"


def _function_of(nodeid: str) -> str:
    """``test_x`` of ``dir/test_m.py::Class::test_x[soft]`` (with its class, without params)."""
    return nodeid.split("::", 1)[1].split("[", 1)[0] if "::" in nodeid else nodeid


def scenario_file(nodeid: str, scenarios_dir: Path | None) -> Path | None:
    """The file a node ID names, found under the scenarios directory the run collected (the
    node ID is relative to pytest's rootdir, which may be the directory or an ancestor)."""
    if scenarios_dir is None:
        return None
    parts = Path(nodeid.split("::", 1)[0]).parts
    for k in range(len(parts)):
        candidate = scenarios_dir.joinpath(*parts[k:])
        if candidate.is_file():
            return candidate
    return None


def _line_of(path: Path, function: str, cache: dict[Path, str]) -> int | None:
    if path not in cache:
        cache[path] = path.read_text(encoding="utf-8", errors="replace")
    name = function.rsplit("::", 1)[-1]
    match = re.search(rf"^\s*(?:async\s+)?def {re.escape(name)}\(", cache[path], re.M)
    return cache[path].count("\n", 0, match.start()) + 1 if match else None


def _scenario_links(nodeids: Sequence[str], scenarios_dir: Path | None) -> list[str]:
    """One link per scenario function (its file, its name), in collection order."""
    texts: dict[str, str] = {}
    cache: dict[Path, str] = {}
    for nodeid in nodeids:
        function = _function_of(nodeid)
        path = scenario_file(nodeid, scenarios_dir)
        label = f"{path.name if path else nodeid.split('::', 1)[0]}::{function}"
        if label in texts:
            continue
        if path is None:
            texts[label] = f"<code>{escape(label)}</code>"
            continue
        line = _line_of(path, function, cache)
        where = f"{path}" + (f", line {line}" if line else "")
        texts[label] = (f'<a href="{escape(path.as_uri())}" title="{escape(where)}">'
                        f"<code>{escape(label)}</code></a>")
    return list(texts.values())


def rule_table(records: Sequence[Record], providers: Sequence[str],
               scenarios_dir: str | os.PathLike | None) -> str:
    """The rules x providers table with its filter: one row per rule, its level, its
    scenarios and one cell per provider."""
    directory = Path(scenarios_dir).resolve() if scenarios_dir is not None else None
    cols, rows = matrix(records, providers)
    nodeids: dict[str, list[str]] = defaultdict(list)
    references: dict[str, str] = {}
    for record in records:
        nodeids[rule_label(record)].append(record.nodeid)
        if record.reference is not None and record.rule is not None:
            references[record.rule] = record.reference
    present = {cell for row in rows for cell in row[1:]}
    if any(differs(row[1:]) for row in rows):
        present.add(DIFFERS_STATE)
    options = ['<option value="">any state</option>'] + [
        f'<option value="{escape(state)}">{escape(name)}</option>'
        for state, name in _STATE_NAMES.items() if state in present]
    out = [
        '<p class="filter"><label>Filter rules <input type="search" id="rule-filter" '
        'placeholder="rule, scenario or level words"></label> '
        f'<label>state <select id="rule-state">{"".join(options)}</select></label> '
        f'<span id="rule-shown">{len(rows)} rules</span></p>',
        '<table id="rules">',
        "<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in ["rule", "level", "scenarios"])
        + "".join(f'<th class="provider">{escape(col)}</th>' for col in cols) + "</tr></thead>",
        "<tbody>",
    ]
    for row in rows:
        rule, cells = row[0], row[1:]
        reference = references.get(rule)
        if rule == COLLECTION or rule.startswith("("):
            level = "-"
        elif reference is not None:
            level = (f'{REFERENCE} (<a href="#{escape(semantics_anchor(reference))}">'
                     f"{escape(reference)}</a>)")
        else:
            level = REQUIRED
        links = _scenario_links(nodeids[rule], directory)
        states = list(dict.fromkeys(cells)) + ([DIFFERS_STATE] if differs(cells) else [])
        text = " ".join([rule, re.sub(r"<[^>]+>", "", level),
                         *dict.fromkeys(_function_of(n) for n in nodeids[rule])]).lower()
        out.append(
            f'<tr id="rule-{escape(rule)}" data-text="{escape(text)}" '
            f'data-states="{escape(" ".join(states))}"><td>{escape(rule)}</td><td>{level}</td>'
            f'<td class="scenarios">{"<br>".join(links)}</td>'
            + "".join(f'<td class="{CELL_CLASS.get(c, "")}">{escape(c)}</td>' for c in cells)
            + "</tr>")
    out += ["</tbody>", "</table>", f"<script>{FILTER_SCRIPT}</script>"]
    return "\n".join(out)


def levels_section(records: Sequence[Record], providers: Sequence[str],
                   scenarios_dir: str | os.PathLike | None) -> str:
    """The conformance levels as a table (scenarios passed/failed/differing/skipped per level
    and provider), then each reference choice the run met with its docs/semantics.md entry."""
    levels = level_counts(records, providers)
    if not levels:
        return "<p>None.</p>"
    cols = list(levels[0][2])
    out = ["<table id=\"levels\">",
           "<tr>" + "".join(f"<th>{escape(h)}</th>" for h in ["level", "rules", *cols]) + "</tr>"]
    for level, rules, per_column in levels:
        out.append(f"<tr><td>{escape(level)}</td><td class=\"num\">{rules}</td>"
                   + "".join(f'<td class="num">{escape(level_cell(per_column[col]))}</td>'
                             for col in cols) + "</tr>")
    out.append("</table>")
    out.append("<p>Each provider's cell: scenarios passed/failed/differing/skipped.</p>")
    choices: dict[str, list[str]] = defaultdict(list)
    for record in records:
        rule, reference = record.rule, record.reference
        if reference is not None and rule is not None and rule != COLLECTION:
            if rule not in choices[reference]:
                choices[reference].append(rule)
    if not choices:
        return "\n".join(out)
    path = semantics_path(scenarios_dir) if scenarios_dir is not None else None
    known = entries(path.read_text(encoding="utf-8")) if path and path.is_file() else {}
    source = (f'<a href="{escape(path.as_uri())}"><code>{escape(str(path))}</code></a>'
              if path and path.is_file() else "<code>docs/semantics.md</code> (not found beside "
              "the scenarios)")
    out += ["<h3>Reference choices</h3>",
            f"<p>Where NDK is silent, the reference provider's choice, as {source} records it; "
            "a provider may choose otherwise (DIFF).</p>",
            '<table id="reference-choices">',
            "<tr><th>docs/semantics.md</th><th>rules</th><th>entry</th></tr>"]
    for reference in sorted(choices):
        entry = known.get(reference)
        text = ("<br>".join(_inline_code(item) for item in entry) if entry
                else "(no entry with this ID)")
        rule_ids = "<br>".join(escape(r) for r in sorted(choices[reference], key=rule_sort_key))
        out.append(f'<tr id="{escape(semantics_anchor(reference))}"><td>{escape(reference)}</td>'
                   f'<td class="ids">{rule_ids}</td><td>{text}</td></tr>')
    out.append("</table>")
    return "\n".join(out)


def _inline_code(markdown: str) -> str:
    """Escaped text with markdown's `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", escape(markdown, quote=False))

