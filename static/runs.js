// Speed Matrix: sorting, filtering and searching runs listings, and sorting any
// `table.sortable`. No framework, no network beyond the site's own index; works from file://.
// Without this script every page still works: listings are paginated HTML.
(function () {
  "use strict";
  var PAGE = 100;
  var FILTERS = [
    ["model_id", "Model"], ["device", "Hardware"], ["engine", "Engine"],
    ["quantization", "Quantization"], ["bench_tool", "Benchmark tool"], ["origin", "Origin"]
  ];
  var NUMERIC = { peak: 1, single: 1, prefill: 1, count: 1, capacity: 1 };

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  function link(href, text) { return el("a", { href: href }, text); }

  function compare(a, b, key, desc) {
    var x = a[key], y = b[key];
    var missingX = x === null || x === undefined || x === "", missingY = y === null || y === undefined || y === "";
    if (missingX || missingY) return missingX === missingY ? 0 : (missingX ? 1 : -1);
    var r = NUMERIC[key] ? x - y : String(x).localeCompare(String(y));
    return desc ? -r : r;
  }

  // The index's rows are arrays under one list of column names: back to objects.
  function objects(index) {
    if (!index || !index.runs) return null;
    return index.runs.map(function (a) {
      var o = {};
      index.columns.forEach(function (c, i) { o[c] = a[i]; });
      return o;
    });
  }

  function loadIndex(root, done) {
    if (window.speedMatrixIndex) return done(objects(window.speedMatrixIndex));
    function viaScript() {
      var s = el("script", { src: root + "index.js" });
      s.onload = function () { done(objects(window.speedMatrixIndex)); };
      s.onerror = function () { done(null); };
      document.head.appendChild(s);
    }
    if (location.protocol === "file:" || !window.fetch) return viaScript();
    fetch(root + "index.json").then(function (r) { return r.ok ? r.json() : Promise.reject(r.status); })
      .then(function (j) { done(objects(j)); }, viaScript);
  }

  function row(r, root) {
    var tr = el("tr");
    var td = el("td");
    // The name says what the other columns do not; the full title is the link's tooltip.
    var a = link(root + "runs/" + r.id + "/index.html", r.name || r.title);
    a.setAttribute("title", r.title);
    td.appendChild(a);
    if (r.origin === "imported") { td.appendChild(document.createTextNode(" ")); td.appendChild(el("span", { "class": "tag" }, "imported")); }
    tr.appendChild(td);
    tr.appendChild(el("td", {}, r.date || "—"));
    td = el("td"); td.appendChild(link(root + "models/" + r.model_slug + "/index.html", r.model)); tr.appendChild(td);
    td = el("td"); td.appendChild(link(root + "engines/" + r.engine_slug + "/index.html", r.engine));
    td.appendChild(document.createTextNode(" " + r.engine_version + (r.quantization ? " · " + r.quantization : ""))); tr.appendChild(td);
    td = el("td"); td.appendChild(link(root + "hardware/" + r.hardware_slug + "/index.html", r.device));
    td.appendChild(document.createTextNode(" ×" + r.count)); tr.appendChild(td);
    [["peak_text", "peak_at"], ["single_text", "single_at"], ["prefill_text", null], ["capacity_text", "capacity_at"]].forEach(function (f) {
      var c = el("td", { "class": "num" }, r[f[0]]);
      if (f[1] && r[f[1]]) c.appendChild(el("small", {}, " at " + r[f[1]]));
      tr.appendChild(c);
    });
    return tr;
  }

  function setupListing(box) {
    var root = box.getAttribute("data-root") || "";
    var presetField = box.getAttribute("data-field"), presetValue = box.getAttribute("data-value");
    var table = box.querySelector("table.runs"), tbody = table.tBodies[0];
    var count = box.querySelector(".listing-count"), pager = box.querySelector(".pager");
    var params = new URLSearchParams(location.search);
    var state = { sort: params.get("sort") || "date", desc: params.get("dir") !== "asc", q: params.get("q") || "",
      from: params.get("from") || "", to: params.get("to") || "", shown: PAGE, f: {} };
    FILTERS.forEach(function (f) { state.f[f[0]] = params.get(f[0]) || ""; });
    var all = null;

    var tools = el("form", { "class": "listing-tools", role: "search", "aria-label": "Filter runs" });
    tools.addEventListener("submit", function (e) { e.preventDefault(); });
    // One control folds the filters away on a phone; they are open on wider screens and
    // whenever the address already filters.
    var fold = el("details", { "class": "listing-fold" });
    fold.appendChild(el("summary", {}, "Search and filter"));
    fold.appendChild(tools);
    var filtered = ["q", "from", "to"].concat(FILTERS.map(function (f) { return f[0]; })).some(function (k) { return params.get(k); });
    if (filtered || !window.matchMedia || window.matchMedia("(min-width: 40rem)").matches) fold.open = true;
    var search = el("input", { type: "search", name: "q", placeholder: "Search runs", "aria-label": "Search runs" });
    search.value = state.q;
    tools.appendChild(search);
    var selects = {};
    var from = el("input", { type: "date", name: "from", "aria-label": "From date" }); from.value = state.from;
    var to = el("input", { type: "date", name: "to", "aria-label": "To date" }); to.value = state.to;
    box.insertBefore(fold, box.firstChild);

    function matches(r) {
      if (presetField && String(r[presetField]) !== presetValue) return false;
      for (var k in state.f) if (state.f[k] && String(r[k] == null ? "" : r[k]) !== state.f[k]) return false;
      if (state.from && (!r.date || r.date < state.from)) return false;
      if (state.to && (!r.date || r.date > state.to)) return false;
      if (state.q) {
        var hay = [r.title, r.id, r.model_id, r.engine, r.engine_version, r.device, r.quantization || "", r.bench_tool].join(" ").toLowerCase();
        var words = state.q.toLowerCase().split(/\s+/);
        for (var i = 0; i < words.length; i++) if (words[i] && hay.indexOf(words[i]) < 0) return false;
      }
      return true;
    }

    function saveUrl() {
      var p = new URLSearchParams();
      if (state.q) p.set("q", state.q);
      FILTERS.forEach(function (f) { if (state.f[f[0]]) p.set(f[0], state.f[f[0]]); });
      if (state.from) p.set("from", state.from);
      if (state.to) p.set("to", state.to);
      if (state.sort !== "date") p.set("sort", state.sort);
      if (!state.desc) p.set("dir", "asc");
      var qs = p.toString();
      try { history.replaceState(null, "", location.pathname + (qs ? "?" + qs : "") + location.hash); } catch (e) { /* file:// in some browsers */ }
    }

    function render() {
      if (!all) return;
      var rows = all.filter(matches);
      rows.sort(function (a, b) { return compare(a, b, state.sort, state.desc) || (a.id < b.id ? -1 : 1); });
      var frag = document.createDocumentFragment();
      rows.slice(0, state.shown).forEach(function (r) { frag.appendChild(row(r, root)); });
      tbody.textContent = "";
      tbody.appendChild(frag);
      count.textContent = rows.length + " of " + all.filter(function (r) { return !presetField || String(r[presetField]) === presetValue; }).length + " runs" + (rows.length > state.shown ? ", first " + state.shown + " shown" : "");
      more.hidden = rows.length <= state.shown;
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
        var key = th.getAttribute("data-key");
        th.setAttribute("aria-sort", key === state.sort ? (state.desc ? "descending" : "ascending") : "none");
      });
      saveUrl();
    }

    var more = el("button", { type: "button", "class": "more" }, "Show more");
    more.hidden = true;
    more.addEventListener("click", function () { state.shown += PAGE; render(); });
    box.appendChild(more);

    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th) {
      var key = th.getAttribute("data-key");
      if (!key) return;
      var b = el("button", { type: "button", "class": "sort" }, th.textContent);
      th.textContent = "";
      th.appendChild(b);
      b.addEventListener("click", function () {
        if (state.sort === key) state.desc = !state.desc; else { state.sort = key; state.desc = !!NUMERIC[key] || key === "date"; }
        render();
      });
    });

    function change() {
      state.q = search.value.trim();
      state.from = from.value; state.to = to.value;
      FILTERS.forEach(function (f) { if (selects[f[0]]) state.f[f[0]] = selects[f[0]].value; });
      state.shown = PAGE;
      render();
    }
    search.addEventListener("input", change);
    from.addEventListener("change", change);
    to.addEventListener("change", change);

    loadIndex(root, function (runs) {
      if (!runs) return; // the rendered first page and the pager stay
      all = runs;
      FILTERS.forEach(function (f) {
        var key = f[0];
        if (key === presetField) return;
        // A Map, not a plain object: a value such as "__proto__" is a key like any other.
        var values = new Map();
        all.forEach(function (r) { if (!presetField || String(r[presetField]) === presetValue) if (r[key] !== null && r[key] !== undefined && r[key] !== "") values.set(String(r[key]), 1); });
        var names = Array.from(values.keys()).sort();
        if (names.length < 2 && !state.f[key]) return;
        var s = el("select", { name: key, "aria-label": f[1] });
        s.appendChild(el("option", { value: "" }, "Any " + f[1].toLowerCase()));
        names.forEach(function (n) { s.appendChild(el("option", { value: n }, n)); });
        // A value from the address that no run has is shown as what filters the list (to 0
        // runs), not as "Any".
        if (state.f[key] && !values.has(state.f[key])) s.appendChild(el("option", { value: state.f[key] }, state.f[key] + " (no run)"));
        s.value = state.f[key];
        s.addEventListener("change", change);
        selects[key] = s;
        tools.appendChild(s);
      });
      var dates = el("span", { "class": "dates" });
      dates.appendChild(document.createTextNode("From "));
      dates.appendChild(from);
      dates.appendChild(document.createTextNode(" to "));
      dates.appendChild(to);
      tools.appendChild(dates);
      if (pager) pager.hidden = true;
      box.classList.add("live");
      render();
    });
  }

  function setupSortable(table) {
    var tbody = table.tBodies[0];
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, col) {
      var kind = th.getAttribute("data-key");
      if (!kind) return;
      var b = el("button", { type: "button", "class": "sort" }, th.textContent);
      th.textContent = "";
      th.appendChild(b);
      b.addEventListener("click", function () {
        var desc = th.getAttribute("aria-sort") === "ascending";
        var rows = Array.prototype.slice.call(tbody.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col], y = b.cells[col];
          if (kind === "num") {
            var p = parseFloat(x.getAttribute("data-v")), q = parseFloat(y.getAttribute("data-v"));
            if (isNaN(p) || isNaN(q)) return isNaN(p) === isNaN(q) ? 0 : (isNaN(p) ? 1 : -1);
            return desc ? q - p : p - q;
          }
          var r = x.textContent.localeCompare(y.textContent);
          return desc ? -r : r;
        });
        rows.forEach(function (r) { tbody.appendChild(r); });
        Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) { h.setAttribute("aria-sort", "none"); });
        th.setAttribute("aria-sort", desc ? "descending" : "ascending");
      });
    });
  }

  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".runs-listing"), setupListing);
    Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), setupSortable);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start); else start();
})();
