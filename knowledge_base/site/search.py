"""Which generated entries go into the site's search index, as data.

Material builds its search index in the browser when the first search starts; that costs
time per entry, so the index holds names and summaries (never docstrings), and only the
entries people search the site for: modules and top-level symbols of the newest release,
shallow names first, up to a budget. Everything else is on its module page and found by
``tfdesk ask``.
"""
from __future__ import annotations

from knowledge_base import links
from knowledge_base.site.data import SiteData
from knowledge_base.site.markup import esc

# Mirrors of other namespaces and generated op wrappers: pages built, not indexed.
SKIP_PREFIXES = ("tf.compat.v1.", "tf.compat.v2.", "tf.raw_ops.")
SKIP_MODULES = ("tf.compat.v1", "tf.compat.v2", "tf.raw_ops")
# Entries beyond this make the first search in the browser slower than a second.
BUDGET = 2500


def _skipped(name: str) -> bool:
    return name in SKIP_MODULES or name.startswith(SKIP_PREFIXES)


def entries(data: SiteData, locations: dict[str, str], budget: int = BUDGET) -> list[dict]:
    def entry(loc: str, title: str, summary: str | None) -> dict:
        return {"location": loc, "title": esc(title).replace("&#96;", "`"),
                "text": f"<p>{esc(summary)}</p>" if summary else ""}

    modules, symbols = [], []
    for s in data.symbols:
        if not data.present(s) or _skipped(s["name"]):
            continue
        if s["name"] == s["module"]:
            modules.append(s)
        elif s["parent"] == s["module"]:
            symbols.append(s)
    symbols.sort(key=lambda s: (s["depth"], s["name"]))
    chosen = (sorted(modules, key=lambda s: (s["depth"], s["name"])) + symbols)[:budget]
    out = [entry(locations.get(s["name"]) or links.symbol_path(s["name"], s["module"]),
                 s["name"], s["summary"]) for s in chosen]
    out += [entry(links.release_page(v), f"What changed in TensorFlow {v}", None)
            for v in data.versions]
    out += [entry(links.RELEASES_PAGE, "Releases", None),
            entry(links.MIGRATION_PAGE, "TF1 → TF2 migration", None),
            entry("api/", "API reference", None)]
    return out
