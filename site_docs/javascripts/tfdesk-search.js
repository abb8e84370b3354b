// The site's search: a box in the header that ranks the prebuilt index
// (search/tfd-index.json, written by knowledge_base/site/search.py at site-build time) in
// memory. The index is fetched once, on the first focus of the box, parsed once and kept
// (the browser's cache keeps the file between pages); nothing is built on a page load and
// nothing is loaded from elsewhere.
//
// Ranking, in tiers (a better tier always wins; inside a tier, small adjustments order):
//   the whole name typed (tf.keras.Model) > "tf." left out (keras.Model) > the end of a
//   dotted name (softmax, Model.fit) > the last part with "_" or spaces ignored (early
//   stopping) > a typo away (sofmax, tf.nn.sofmax) > the start of the last part > a
//   parameter (validation_split) > part of a name > every word in the summary.
// A whole name typed in another case (estimator, gradienttape) counts as the "_ ignored" tier.
// Adjustments: the case typed (conv2d is tf.nn.conv2d, Conv2D the layer), fewer dots, how
// much guides use it; names in tf.compat and tf.raw_ops, removed and deprecated ones lower.
(function (root) {
  "use strict";
  var E = { NAME: 0, KIND: 1, URL: 2, TEXT: 3, ALIASES: 4, PARAMS: 5, STATE: 6, PRIOR: 7, TF1: 8 };
  // Tiers lie further apart than all adjustments together can move a result.
  var TIER = { exact: 2000, tfPrefix: 1900, tail: 1800, squash: 1700, typo: 1400, prefix: 1200,
               param: 1000, part: 800, words: 400 };
  var ADJ = { caseExact: 50, perDot: 8, prior: 1.5, mirror: 40, removed: 30, deprecated: 5,
              tf1: 5, typoStep: 200 };
  var KIND_WORDS = { M: "module", C: "class", F: "function", d: "method", p: "property",
                     k: "constant", t: "TF1 name", g: "page" };
  var MIRRORS = /^tf\.(compat|raw_ops)\./;
  var UNSAFE = /[^A-Za-z0-9_.\-]/;

  function defaultUrl(name, kind) {
    // Mirrors knowledge_base/site/search.py default_url.
    if (UNSAFE.test(name) || name.indexOf(".") < 0) return null;
    if ("MCF".indexOf(kind) >= 0) return "api/" + name + "/";
    return "api/" + name.slice(0, name.lastIndexOf(".")) + "/#" + name;
  }

  function squash(s) { return s.replace(/[\s_]+/g, ""); }
  function lastPart(s) { return s.slice(s.lastIndexOf(".") + 1); }
  function dots(s) { return (s.match(/\./g) || []).length; }
  // Where the last k + 1 dotted parts of s start (-1: s has fewer); no string is made.
  function tailStart(s, k) {
    var p = s.length;
    for (var i = 0; i <= k; i++) {
      p = s.lastIndexOf(".", p - 1);
      if (p < 0) return i === k ? 0 : -1;
    }
    return p + 1;
  }

  // Damerau-Levenshtein (adjacent swaps count once), giving up past ``max``. Rows are
  // reused between calls: this runs for thousands of names per keystroke.
  var rows = [new Int32Array(64), new Int32Array(64), new Int32Array(64)];
  function distance(a, b, max) {
    if (Math.abs(a.length - b.length) > max) return max + 1;
    if (b.length >= 63) return a === b ? 0 : max + 1;
    var prev2 = rows[0], prev = rows[1], cur = rows[2], i, j, t;
    for (j = 0; j <= b.length; j++) prev[j] = j;
    for (i = 1; i <= a.length; i++) {
      cur[0] = i;
      var best = i, ai = a.charCodeAt(i - 1);
      for (j = 1; j <= b.length; j++) {
        var bj = b.charCodeAt(j - 1);
        var v = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ai === bj ? 0 : 1));
        if (i > 1 && j > 1 && ai === b.charCodeAt(j - 2) && a.charCodeAt(i - 2) === bj)
          v = Math.min(v, prev2[j - 2] + 1);
        cur[j] = v;
        if (v < best) best = v;
      }
      if (best > max) return max + 1;
      t = prev2; prev2 = prev; prev = cur; cur = t;
    }
    return prev[b.length];
  }

  // The index, ready to rank: each entry with its names (lower case) and parameter names.
  function prepare(index) {
    var params = index.params;
    var entries = index.entries.map(function (row) {
      var names = [{ name: row[E.NAME], url: null, tf1: false }];
      row[E.ALIASES].forEach(function (a) {
        if (typeof a === "number") a = "tf.compat.v" + a + "." + row[E.NAME].slice(3);
        names.push(typeof a === "string" ? { name: a, url: null, tf1: false }
                                         : { name: a[0], url: a[1], tf1: false });
      });
      row[E.TF1].forEach(function (n) { names.push({ name: n, url: null, tf1: true }); });
      names.forEach(function (n) {
        n.lower = n.name.toLowerCase();
        n.last = lastPart(n.lower);
        n.sq = n.last.indexOf("_") < 0 ? n.last : squash(n.last);
        n.adjust = -ADJ.perDot * Math.max(0, dots(n.name) - 1) - (n.tf1 ? ADJ.tf1 : 0);
      });
      var text = (row[E.TEXT] || "").toLowerCase();
      return { row: row, names: names, adjust: entryAdjust(row),
               hasWords: function (words) {
                 return words.every(function (w) {
                   return text.indexOf(w) >= 0 || names[0].lower.indexOf(w) >= 0;
                 });
               },
               params: row[E.PARAMS].map(function (i) { return params[i]; }) };
    });
    return { entries: entries, releases: index.releases };
  }

  function cleanQuery(q) {
    q = String(q || "").trim().replace(/\(\)$/, "").replace(/^[`'"]+|[`'"]+$/g, "");
    if (q.indexOf("tensorflow.") === 0) q = "tf." + q.slice(11);
    return q;
  }

  // The best tier a name reaches for the query (0: none). Cheap tests first; the typo test
  // only for names whose last part is about as long as the query.
  function nameTier(n, ql, qtf, qdot, qsq, qdots, maxTypo) {
    var l = n.lower;
    if (l === ql) return TIER.exact;
    if (l === qtf) return TIER.tfPrefix;
    if (l.endsWith(qdot)) return TIER.tail;
    if (qsq.length > 2 && n.sq === qsq) return TIER.squash;
    if (maxTypo) {
      var start = qdots ? tailStart(l, qdots) : l.length - n.last.length;
      if (start >= 0 && Math.abs(l.length - start - ql.length) <= maxTypo) {
        var d = distance(ql, start ? l.slice(start) : l, maxTypo);
        if (d <= maxTypo) return TIER.typo - ADJ.typoStep * (d - 1);
      }
    }
    if (n.last.lastIndexOf(ql, 0) === 0 || (qdots && l.indexOf("." + ql) >= 0))
      return TIER.prefix;
    if (ql.length >= 3 && l.indexOf(ql) >= 0) return TIER.part;
    return 0;
  }

  function caseMatches(name, q) {
    return name === q || name === "tf." + q ||
      (name.length > q.length && name.slice(-q.length - 1) === "." + q);
  }

  // What an entry's state and use add to every match of it (computed once, in prepare).
  function entryAdjust(row) {
    var s = ADJ.prior * (row[E.PRIOR] || 0);
    if (MIRRORS.test(row[E.NAME])) s -= ADJ.mirror;
    var state = row[E.STATE] || "";
    if (state.indexOf("removed") === 0 || state.indexOf("last in") === 0) s -= ADJ.removed;
    if (state === "deprecated") s -= ADJ.deprecated;
    return s;
  }

  function better(a, b) {
    return a.score - b.score || b.entry.row[E.NAME].length - a.entry.row[E.NAME].length;
  }

  // Insert ``r`` into the best-first list ``out`` of at most ``limit`` results (no sort of
  // every match: a short query matches thousands of names).
  function keep(out, r, limit) {
    if (out.length === limit && better(r, out[limit - 1]) <= 0) return;
    var i = out.length;
    while (i > 0 && better(r, out[i - 1]) > 0) i--;
    out.splice(i, 0, r);
    if (out.length > limit) out.pop();
  }

  // Results for ``query``: [{entry, score, matched (the name that matched), why, url}].
  function rank(prepared, query, limit) {
    var q = cleanQuery(query);
    if (!q) return [];
    var ql = q.toLowerCase(), qsq = squash(ql);
    var maxTypo = ql.length >= 8 ? 2 : ql.length >= 4 ? 1 : 0;
    var qdots = dots(ql), qtf = "tf." + ql, qdot = "." + ql;
    var words = ql.split(/\s+/).filter(Boolean);
    var plainWord = /^[a-z_][a-z0-9_]*$/.test(ql);
    var out = [], entries = prepared.entries;
    for (var i = 0; i < entries.length; i++) {
      var entry = entries[i], best = null, bestScore = -Infinity, names = entry.names;
      for (var j = 0; j < names.length; j++) {
        var n = names[j];
        var tier = nameTier(n, ql, qtf, qdot, qsq, qdots, maxTypo);
        if (!tier) continue;
        var cased = tier >= TIER.tail && caseMatches(n.name, q);
        // A whole name in another case (estimator for Estimator) is a weaker match.
        if (tier >= TIER.tail && !cased) tier = TIER.squash;
        var sc = tier + entry.adjust + n.adjust + (cased ? ADJ.caseExact : 0);
        if (sc > bestScore) { bestScore = sc; best = { n: n, tier: tier, why: n.tf1 ? "tf1" : "name" }; }
      }
      if (!best && plainWord && entry.params.indexOf(ql) >= 0) {
        bestScore = TIER.param + entry.adjust + names[0].adjust;
        best = { n: names[0], tier: TIER.param, why: "param" };
      }
      if (!best && words.length > 1 && entry.hasWords(words)) {
        bestScore = TIER.words + entry.adjust + names[0].adjust;
        best = { n: names[0], tier: TIER.words, why: "words" };
      }
      if (best) keep(out, { entry: entry, score: bestScore, matched: best.n, why: best.why,
                            tier: best.tier }, limit || 10);
    }
    out.forEach(function (r) {
      var row = r.entry.row, m = r.matched;
      // A name typed in full opens that name's own page; anything else, the entry's.
      var own = m.name !== row[E.NAME] && !m.tf1 && r.tier >= TIER.tail;
      r.url = own ? (m.url || defaultUrl(m.name, row[E.KIND]) || row[E.URL])
                  : (row[E.URL] || defaultUrl(row[E.NAME], row[E.KIND]));
    });
    return out;
  }

  var api = { rank: rank, prepare: prepare, defaultUrl: defaultUrl, distance: distance,
              E: E, KIND_WORDS: KIND_WORDS };
  if (typeof module !== "undefined" && module.exports) { module.exports = api; return; }
  root.tfdSearch = api;

  // ---- the box in the header -------------------------------------------------------------
  function siteBase() {
    var cfg = document.getElementById("__config");
    var base = ".";
    try { base = JSON.parse(cfg.textContent).base || "."; } catch (e) { /* default */ }
    return new URL(base.replace(/\/?$/, "/"), document.baseURI);
  }

  var loading = null;
  function load(base) {
    if (!loading) {
      loading = fetch(new URL("search/tfd-index.json", base).href)
        .then(function (r) {
          if (!r.ok) throw new Error("search index: HTTP " + r.status);
          return r.json();
        })
        .then(prepare);
    }
    return loading;
  }

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  }

  function render(list, results, base, q) {
    list.textContent = "";
    if (!results.length) {
      list.appendChild(el("p", "tfd-search-none", "Nothing found for " + q));
      return;
    }
    results.forEach(function (r, i) {
      var row = r.entry.row;
      var a = el("a", "tfd-search-link");
      a.href = new URL(r.url, base).href;
      if (i === 0) a.classList.add("tfd-search-current");
      var head = el("span", "tfd-search-head");
      head.appendChild(el("code", "tfd-search-name", row[E.NAME]));
      head.appendChild(el("span", "tfd-badge tfd-kind", KIND_WORDS[row[E.KIND]] || ""));
      if (row[E.STATE]) head.appendChild(el("span", "tfd-badge tfd-removed", row[E.STATE]));
      a.appendChild(head);
      var why = "";
      if (r.why === "tf1") why = "TF1 name " + r.matched.name;
      else if (r.why === "param") why = "parameter " + cleanQuery(q).toLowerCase();
      else if (r.matched.name !== row[E.NAME]) why = "also " + r.matched.name;
      if (why) a.appendChild(el("span", "tfd-search-why", why));
      if (row[E.TEXT]) a.appendChild(el("span", "tfd-search-text", row[E.TEXT]));
      list.appendChild(a);
    });
  }

  function setup() {
    var header = document.querySelector(".md-header__inner");
    if (!header || header.querySelector(".tfd-search")) return;
    var base = siteBase();
    var form = el("form", "tfd-search");
    form.setAttribute("role", "search");
    var input = el("input", "tfd-search-input");
    input.type = "search";
    input.placeholder = "Search the API (/)";
    input.setAttribute("aria-label", "Search");
    input.autocomplete = "off";
    input.spellcheck = false;
    var list = el("div", "tfd-search-results");
    list.hidden = true;
    form.appendChild(input);
    form.appendChild(list);
    var source = header.querySelector(".md-header__source");
    header.insertBefore(form, source);

    var scheduled = false;
    function update() {
      // Keystrokes that arrive while the index loads or a search runs are answered once,
      // with the box's text at that time.
      if (scheduled) return;
      scheduled = true;
      load(base).then(function (prepared) {
        setTimeout(function () {
          scheduled = false;
          var q = input.value;
          if (!q.trim()) { list.hidden = true; return; }
          render(list, rank(prepared, q, 10), base, q);
          list.hidden = false;
        }, 0);
      }, function (err) {
        scheduled = false;
        list.textContent = "";
        list.appendChild(el("p", "tfd-search-none", String(err.message || err)));
        list.hidden = false;
      });
    }
    function move(step) {
      var links = list.querySelectorAll("a.tfd-search-link");
      if (!links.length) return;
      var cur = list.querySelector(".tfd-search-current");
      var i = Array.prototype.indexOf.call(links, cur);
      if (cur) cur.classList.remove("tfd-search-current");
      var next = links[(i + step + links.length) % links.length];
      next.classList.add("tfd-search-current");
      next.scrollIntoView({ block: "nearest" });
    }
    input.addEventListener("focus", function () { load(base).catch(function () {}); });
    input.addEventListener("input", update);
    input.addEventListener("keydown", function (ev) {
      if (ev.key === "ArrowDown") { ev.preventDefault(); move(1); }
      else if (ev.key === "ArrowUp") { ev.preventDefault(); move(-1); }
      else if (ev.key === "Escape") { list.hidden = true; input.blur(); }
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var cur = list.querySelector(".tfd-search-current") || list.querySelector("a.tfd-search-link");
      if (cur) window.location.href = cur.href;
    });
    document.addEventListener("keydown", function (ev) {
      var t = ev.target && ev.target.tagName;
      if (ev.key === "/" && t !== "INPUT" && t !== "TEXTAREA" && t !== "SELECT") {
        ev.preventDefault();
        input.focus();
      }
    });
    document.addEventListener("click", function (ev) {
      if (!form.contains(ev.target)) list.hidden = true;
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})(this);
