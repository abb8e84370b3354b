// Big modules keep full entries on part pages; their module page only lists the symbols.
// A link to module-page#symbol lands on that list's row, which names the entry's real home:
// go there, so every address tfdesk prints opens the full entry.
(function () {
  function follow() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    if (!id) return;
    var el = document.getElementById(id);
    var to = el && el.getAttribute("data-tfd-moved");
    if (to) window.location.replace(to);
  }
  window.addEventListener("hashchange", follow);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", follow);
  else follow();
})();
