// 1. Addresses of the older layout keep working. Classes and functions have pages of their own
//    now; a module page keeps a row for each, whose id is the old anchor and whose
//    data-tfd-moved names the new page. An old link to a class member
//    (api/tf.keras/#tf.keras.Model.fit) finds no element: the longest dotted prefix that is
//    such a row (tf.keras.Model) says where the member now lives.
// 2. The release selector dims every row and entry that the chosen release does not have
//    (data-tfd-r holds runs of release ordinals, "0-3,5-19"); the choice is remembered. A
//    signature that changed over the releases (data-tfd-sigs: [[first, last, signature,
//    [parameter names]]]) shows the chosen release's, and its entry's Args rows
//    (data-tfd-param) that release lacks are marked; parameters only that release had are
//    named under the table. A description that release had differently (a docstring, a
//    class's __init__ Args) is fetched once from the file the page names (data-tfd-releases:
//    group key -> [[release runs, html]], the generator's own rendering) into hidden
//    siblings of the newest one (.tfd-docs[data-tfd-docs] > .tfd-docv[data-tfd-doc-r]).
(function () {
  function follow() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id) return;
    var el = document.getElementById(id);
    var to = el && el.getAttribute("data-tfd-moved");
    if (to) { window.location.replace(to); return; }
    if (el) return;
    var parts = id.split(".");
    for (var n = parts.length - 1; n > 1; n--) {
      var owner = document.getElementById(parts.slice(0, n).join("."));
      var page = owner && owner.getAttribute("data-tfd-moved");
      if (page) { window.location.replace(page.split("#")[0] + "#" + id); return; }
    }
  }

  function has(runs, ord) {
    return runs.split(",").some(function (r) {
      var ab = r.split("-");
      return ord >= +ab[0] && ord <= +ab[1];
    });
  }

  function runAt(runs, ord) {
    for (var i = 0; i < runs.length; i++) if (ord >= runs[i][0] && ord <= runs[i][1]) return runs[i];
    return null;
  }

  function showSignature(pre, ord, label) {
    var code = pre.querySelector("code");
    if (!pre.hasAttribute("data-tfd-newest")) pre.setAttribute("data-tfd-newest", code.textContent);
    var entry = pre.closest(".tfd-entry") || document;
    var run = ord === null ? null : runAt(JSON.parse(pre.getAttribute("data-tfd-sigs")), ord);
    code.textContent = run && run[2] !== null ? run[2] : pre.getAttribute("data-tfd-newest");
    pre.classList.toggle("tfd-sig-other", !!run && run[2] !== pre.getAttribute("data-tfd-newest"));
    var params = run ? run[3] : null;
    var listed = {};
    entry.querySelectorAll("tr[data-tfd-param]").forEach(function (tr) {
      var name = tr.getAttribute("data-tfd-param");
      if (!tr.closest("[hidden]")) listed[name] = true;
      var gone = !!params && params.indexOf(name) < 0;
      tr.classList.toggle("tfd-absent", gone);
      tr.title = gone ? "not a parameter in TensorFlow " + label : "";
    });
    var note = entry.querySelector(".tfd-params-only");
    if (note) note.remove();
    var only = (params || []).filter(function (p) { return !listed[p]; });
    var table = Array.prototype.find.call(entry.querySelectorAll("div.tfd-args"),
      function (t) { return !t.closest("[hidden]"); });
    if (only.length && table) {
      note = document.createElement("p");
      note.className = "tfd-params-only";
      note.textContent = "Also a parameter in TensorFlow " + label + ": " + only.join(", ");
      table.after(note);
    }
  }

  function showDescription(group, ord) {
    var chosen = null;
    group.querySelectorAll(":scope > .tfd-docv[data-tfd-doc-r]").forEach(function (v) {
      if (!chosen && ord !== null && has(v.getAttribute("data-tfd-doc-r"), ord)) chosen = v;
    });
    group.querySelectorAll(":scope > .tfd-docv").forEach(function (v) {
      v.hidden = chosen ? v !== chosen : !v.hasAttribute("data-tfd-doc-newest");
    });
  }

  var variants = null;  // the fetch of the page's older texts, once per page

  function loadVariants(then) {
    var src = document.querySelector("[data-tfd-releases]");
    if (variants || !src) return;
    variants = fetch(src.getAttribute("data-tfd-releases")).then(function (r) { return r.ok ? r.json() : {}; })
      .then(function (groups) {
        document.querySelectorAll(".tfd-docs[data-tfd-docs]").forEach(function (g) {
          (groups[g.getAttribute("data-tfd-docs")] || []).forEach(function (v) {
            var d = document.createElement("div");
            d.className = "tfd-docv";
            d.setAttribute("data-tfd-doc-r", v[0]);
            d.hidden = true;
            d.innerHTML = v[1];
            g.appendChild(d);
          });
        });
        document.documentElement.setAttribute("data-tfd-variants", "loaded");
        then();
      }).catch(function () { /* offline: the newest text stays */ });
  }

  function showRelease(value) {
    var ord = value === "" ? null : +value;
    var label = "";
    if (ord !== null) loadVariants(function () {
      var s = document.querySelector("select.tfd-release-select");
      if (s) showRelease(s.value);
    });
    document.querySelectorAll("[data-tfd-r]").forEach(function (el) {
      el.classList.toggle("tfd-absent", ord !== null && !has(el.getAttribute("data-tfd-r"), ord));
    });
    document.querySelectorAll("select.tfd-release-select").forEach(function (s) {
      s.value = value;
      var opt = s.options[s.selectedIndex];
      label = opt ? opt.textContent.replace(/^TensorFlow /, "") : "";
    });
    document.querySelectorAll(".tfd-docs").forEach(function (g) { showDescription(g, ord); });
    document.querySelectorAll("pre.tfd-sig[data-tfd-sigs]").forEach(function (pre) {
      showSignature(pre, ord, label);
    });
    document.querySelectorAll(".tfd-release-note").forEach(function (n) {
      n.hidden = ord === null;
    });
  }

  function setup() {
    follow();
    var selects = document.querySelectorAll("select.tfd-release-select");
    if (!selects.length) return;
    var saved = "";
    try { saved = window.localStorage.getItem("tfd-release") || ""; } catch (e) { /* private mode */ }
    selects.forEach(function (s) {
      s.addEventListener("change", function () {
        try { window.localStorage.setItem("tfd-release", s.value); } catch (e) { /* ignore */ }
        showRelease(s.value);
      });
    });
    if (saved && selects[0].querySelector('option[value="' + saved + '"]')) showRelease(saved);
  }

  window.addEventListener("hashchange", follow);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
