// 1. Addresses of the older layout keep working. Classes and functions have pages of their own
//    now; a module page keeps a row for each, whose id is the old anchor and whose
//    data-tfd-moved names the new page. An old link to a class member
//    (api/tf.keras/#tf.keras.Model.fit) finds no element: the longest dotted prefix that is
//    such a row (tf.keras.Model) says where the member now lives.
// 2. The release selector dims every row and entry that the chosen release does not have
//    (data-tfd-r holds runs of release ordinals, "0-3,5-19"); the choice is remembered.
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

  function showRelease(value) {
    var ord = value === "" ? null : +value;
    document.querySelectorAll("[data-tfd-r]").forEach(function (el) {
      el.classList.toggle("tfd-absent", ord !== null && !has(el.getAttribute("data-tfd-r"), ord));
    });
    document.querySelectorAll("select.tfd-release-select").forEach(function (s) { s.value = value; });
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
