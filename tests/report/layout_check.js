// Measures the HTML report as the browser laid it out and writes what it found, as JSON, into
// a pre element (id layout-findings), which `chromium --dump-dom` then prints (test_html_browser.py).
// Appended to a copy of the report: the report itself carries no test code.
(function () {
  var svg = document.querySelector("svg.matrix-picture");
  var box = svg.viewBox.baseVal;
  function outside(el) {
    var b = el.getBBox();
    return b.x < 0 || b.y < 0 || b.x + b.width > box.width || b.y + b.height > box.height;
  }
  function describe(el) {
    var b = el.getBBox();
    return (el.textContent || el.getAttribute("data-state") || el.tagName) + " at " +
           [b.x, b.y, b.width, b.height].map(Math.round).join(",");
  }
  var legend = Array.prototype.slice.call(svg.querySelectorAll("g.legend > *"));
  var cells = Array.prototype.slice.call(svg.querySelectorAll("rect[data-state], rect.differs"));
  var labels = Array.prototype.slice.call(svg.querySelectorAll("text.family"));
  var shown = svg.getBoundingClientRect();

  // The rule filter: typed words and a chosen state.
  var text = document.getElementById("rule-filter");
  var state = document.getElementById("rule-state");
  var rows = Array.prototype.slice.call(document.querySelectorAll("#rules tbody tr"));
  function visible() { return rows.filter(function (r) { return !r.hidden; }); }
  function ids(list) { return list.map(function (r) { return r.id; }); }
  text.value = "cq";
  text.dispatchEvent(new Event("input"));
  var byText = ids(visible());
  text.value = "";
  text.dispatchEvent(new Event("input"));
  state.value = "skip";
  state.dispatchEvent(new Event("change"));
  var bySkip = ids(visible());
  var skipCells = visible().every(function (r) {
    return Array.prototype.some.call(r.cells, function (c) { return c.className === "skip"; });
  });
  state.value = "";
  state.dispatchEvent(new Event("change"));

  var findings = {
    innerWidth: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth,
    viewBox: [box.width, box.height],
    pictureRight: shown.right,
    legendItems: legend.length,
    legendOutside: legend.filter(outside).map(describe),
    cells: cells.length,
    cellsOutside: cells.filter(outside).map(describe),
    labelsOutside: labels.filter(outside).map(describe),
    rows: rows.length,
    filteredCq: byText,
    filteredSkip: bySkip,
    filteredSkipHaveSkipCells: skipCells,
    shownAfterReset: visible().length,
    shownText: document.getElementById("rule-shown").textContent,
  };
  var out = document.createElement("pre");
  out.id = "layout-findings";
  out.textContent = JSON.stringify(findings);
  document.body.appendChild(out);
})();
