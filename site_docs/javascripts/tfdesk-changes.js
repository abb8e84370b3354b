// Filterable views of generated pages (written by knowledge_base/site/compare.py and
// changes.py); each does nothing on a page without its element.
// 1. "Compare releases" (#tfd-compare): the difference of any two releases, computed from
//    releases/tfd-changes.json (per symbol: runs of releases that have it, releases where its
//    signature changed, the release that deprecated it), narrowed by package, kind and name,
//    with totals. The address keeps the filters (?from=2.15&to=2.16&pkg=tf.keras&kind=removed).
// 2. Tables with a filter form (form.tfd-filter, the migration table): rows are shown when
//    they hold the text typed and match every chosen select (data-* of the row); totals count
//    what is shown.
(function () {
  "use strict";
  var LIMIT = 500;
  var KIND_TITLES = { added: "Added", removed: "Removed", signature: "Signature changed",
                      deprecated: "Deprecated" };

  function siteBase() {
    var cfg = document.getElementById("__config"), base = ".";
    try { base = JSON.parse(cfg.textContent).base || "."; } catch (e) { /* default */ }
    return new URL(base.replace(/\/?$/, "/"), document.baseURI);
  }

  function parseRuns(text) {
    return text.split(",").map(function (r) { var ab = r.split("-"); return [+ab[0], +ab[1]]; });
  }
  function has(runs, ord) {
    for (var i = 0; i < runs.length; i++) if (ord >= runs[i][0] && ord <= runs[i][1]) return true;
    return false;
  }

  // What happened to one symbol between releases a < b (ordinals), or null.
  function change(sym, a, b) {
    var runs = sym.runs, inA = has(runs, a), inB = has(runs, b);
    if (!inA && inB) return "added";
    if (inA && !inB) return "removed";
    if (!inA) return null;
    if (sym.sig.some(function (o) { return o > a && o <= b; })) return "signature";
    if (sym.dep > a && sym.dep <= b) return "deprecated";
    return null;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function setupCompare(form) {
    var params = new URLSearchParams(window.location.search);
    var totals = document.querySelector(".tfd-compare-totals");
    var list = document.querySelector(".tfd-compare-list");
    var notesBox = document.querySelector(".tfd-compare-notes");
    var base = siteBase();
    var data = null;
    ["from", "to", "pkg", "q"].forEach(function (k) {
      if (params.get(k)) form.elements[k].value = params.get(k);
    });
    if (!params.get("from") && form.elements.from.options.length > 1)
      form.elements.from.selectedIndex = 1;  // newest first: the one before the newest
    if (params.get("kind")) {
      var want = params.get("kind").split(",");
      form.querySelectorAll('input[name="kind"]').forEach(function (c) {
        c.checked = want.indexOf(c.value) >= 0;
      });
    }

    function render() {
      if (!data) return;
      var v = data.releases;
      var a = v.indexOf(form.elements.from.value), b = v.indexOf(form.elements.to.value);
      if (a > b) { var t = a; a = b; b = t; }
      var pkg = form.elements.pkg.value.trim().replace(/\.$/, "");
      var q = form.elements.q.value.trim().toLowerCase();
      var kinds = Array.prototype.filter.call(form.querySelectorAll('input[name="kind"]'),
        function (c) { return c.checked; }).map(function (c) { return c.value; });
      var counts = { added: 0, removed: 0, signature: 0, deprecated: 0 }, rows = [];
      data.symbols.forEach(function (s) {
        if (pkg && s.name !== pkg && s.name.lastIndexOf(pkg + ".", 0) !== 0) return;
        if (q && s.lower.indexOf(q) < 0) return;
        var c = a === b ? null : change(s, a, b);
        if (!c) return;
        counts[c]++;
        if (kinds.indexOf(c) >= 0) rows.push([c, s]);
      });
      notesBox.textContent = "";
      for (var o = a + 1; o <= b; o++) data.notes[o].forEach(function (n) {
        var box = el("div", "admonition note tfd-release-notes");
        box.appendChild(el("p", "admonition-title", "TensorFlow " + v[o]));
        box.appendChild(el("p", "", n));
        notesBox.appendChild(box);
      });
      totals.textContent = (a === b ? "Pick two different releases. " : "") +
        v[a] + " → " + v[b] + (pkg ? " in " + pkg : "") + ": " +
        Object.keys(counts).map(function (k) { return KIND_TITLES[k] + " " + counts[k]; })
          .join(" · ");
      list.textContent = "";
      var ul = el("ul", "tfd-changes");
      rows.slice(0, LIMIT).forEach(function (r) {
        var li = el("li"), s = r[1];
        li.setAttribute("data-kind", r[0]);
        li.appendChild(el("span", "tfd-badge tfd-ev-" + r[0], KIND_TITLES[r[0]]));
        li.appendChild(document.createTextNode(" "));
        var link = el("a", "", s.name);
        var url = s.url || (window.tfdSearch && window.tfdSearch.defaultUrl(s.name, s.kind));
        if (url) link.href = new URL(url, base).href;
        li.appendChild(link);
        ul.appendChild(li);
      });
      list.appendChild(ul);
      if (rows.length > LIMIT)
        list.appendChild(el("p", "", (rows.length - LIMIT) + " more: narrow by package or name."));
      var state = new URLSearchParams({ from: v[a], to: v[b] });
      if (pkg) state.set("pkg", pkg);
      if (q) state.set("q", q);
      if (kinds.length < 4) state.set("kind", kinds.join(","));
      window.history.replaceState(null, "", "?" + state.toString());
    }

    form.addEventListener("input", render);
    form.addEventListener("change", render);
    form.addEventListener("submit", function (ev) { ev.preventDefault(); });
    fetch(new URL(form.getAttribute("data-src"), document.baseURI).href)
      .then(function (r) { if (!r.ok) throw new Error("HTTP " + r.status); return r.json(); })
      .then(function (d) {
        d.symbols = d.symbols.map(function (row) {
          return { name: row[0], lower: row[0].toLowerCase(), kind: row[1], url: row[2],
                   runs: parseRuns(row[3]), sig: row[4], dep: row[5] };
        });
        data = d;
        render();
      }, function (err) { totals.textContent = "Could not load the releases: " + err.message; });
  }

  function setupFilter(form) {
    var table = document.getElementById(form.getAttribute("data-table"));
    var totals = form.querySelector(".tfd-filter-totals");
    if (!table) return;
    var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
    rows.forEach(function (r) { r._text = r.textContent.toLowerCase(); });
    function apply() {
      var q = (form.elements.q.value || "").trim().toLowerCase(), shown = 0;
      var selects = form.querySelectorAll("select");
      rows.forEach(function (r) {
        var ok = !q || r._text.indexOf(q) >= 0;
        selects.forEach(function (s) {
          if (ok && s.value && r.getAttribute("data-" + s.name) !== s.value) ok = false;
        });
        r.hidden = !ok;
        if (ok) shown++;
      });
      totals.textContent = shown + " of " + rows.length + " shown";
    }
    form.addEventListener("input", apply);
    form.addEventListener("change", apply);
    form.addEventListener("submit", function (ev) { ev.preventDefault(); });
    apply();
  }

  function setup() {
    var form = document.getElementById("tfd-compare");
    if (form) setupCompare(form);
    document.querySelectorAll("form.tfd-filter").forEach(setupFilter);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
