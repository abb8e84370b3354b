"""The site's search entries for generated pages, as data.

Every symbol of the newest release is searchable from the box, class members included
(``Model.fit``, ``Dataset.map``), with compact entries: the full name as title, the first
sentence of its summary as text, never docstrings. Material builds its index in the browser
at the first search, so the size of each entry is what the first search pays for.

Ranking: Material's lunr index ranks title matches by how much of the title they cover, so
the exact, short names come first (mkdocs.yml's search separator splits dotted names, CamelCase
and snake_case, so `fit` is a whole word of `tf.keras.Model.fit` but not of `fit_on_texts`); entries are boosted by how central the name is (classes
and functions a module exports over their members), which puts ``tf.keras.Model.fit`` above
the dozens of other ``fit`` methods.

Every entry whose address has a ``#`` lands on a page that has an entry of its own (Material
groups results by page and renders a section whose page has no entry as a dead link).
"""
from __future__ import annotations

from knowledge_base import links
from knowledge_base.site.data import SiteData
from knowledge_base.site.markup import esc

# Mirrors of other namespaces and generated op wrappers: pages built, not indexed.
SKIP_PREFIXES = ("tf.compat.v1.", "tf.compat.v2.", "tf.raw_ops.")
SKIP_MODULES = ("tf.compat.v1", "tf.compat.v2", "tf.raw_ops")
SUMMARY_CHARS = 90


def _skipped(name: str) -> bool:
    return name in SKIP_MODULES or name.startswith(SKIP_PREFIXES)


# Material multiplies the score of a whole page by up to 4 and of a section on a page (a class
# member, a constant) by up to 2; members get this back, or a name's own method would rank below
# every page that merely mentions the word (measured: `fit` gave Tokenizer.fit_on_texts first).
SECTION_BOOST = 2.5


def _boost(s: dict) -> float:
    """Shallow, exported names first; members as findable as pages."""
    depth = s["name"].count(".")
    b = {"module": 1.5, "class": 2.0, "function": 1.6}.get(s["kind"], 1.0)
    if not links.has_own_page(s["kind"], s["parent"], s["module"]) and s["kind"] != "module":
        b *= SECTION_BOOST
    return round(b * (1.0 + max(0, 4 - depth) * 0.15), 2)


def _summary(text: str | None) -> str:
    if not text:
        return ""
    first = text.split(". ", 1)[0].rstrip(".")
    return first if len(first) <= SUMMARY_CHARS else first[:SUMMARY_CHARS].rsplit(" ", 1)[0] + "…"


def entries(data: SiteData) -> list[dict]:
    def entry(loc: str, title: str, summary: str | None, boost: float | None = None) -> dict:
        e = {"location": loc, "title": esc(title).replace("&#96;", "`"),
             "text": esc(_summary(summary))}
        if boost and boost != 1.0:
            e["boost"] = boost
        return e

    chosen = [s for s in data.symbols if data.present(s) and not _skipped(s["name"])]
    chosen.sort(key=lambda s: (s["depth"], s["name"]))
    out = [entry(links.sym_path(s), s["name"], s["summary"], _boost(s)) for s in chosen]
    pages = {e["location"] for e in out if "#" not in e["location"]}
    for e in out:  # a section needs its page in the index (see above)
        page = e["location"].partition("#")[0]
        if "#" in e["location"] and page not in pages:
            owner = page.removeprefix("api/").rstrip("/")
            out.append(entry(page, owner, None))
            pages.add(page)
    out += [entry(links.release_page(v), f"What changed in TensorFlow {v}", None)
            for v in data.versions]
    out += [entry(links.RELEASES_PAGE, "Releases", None),
            entry(links.MIGRATION_PAGE, "TF1 → TF2 migration", None),
            entry("api/", "API reference", None)]
    return out
