"""MkDocs hooks for the generated pages (named in mkdocs.yml under ``hooks:``).

Generated pages are already HTML (escaped by :mod:`knowledge_base.site.markup`); running
Python-Markdown over megabytes of it was most of the build time. Pages whose front matter
says ``tfdesk_raw: true`` skip Markdown and keep their HTML as it is.

Search: the generator writes the index of every symbol (``search/tfd-index.json``, see
:mod:`knowledge_base.site.search`); the hand-written pages (guides, admin) join it here, a
page and each of its sections as an entry, so one box finds both.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

INDEX_FILE = "search/tfd-index.json"
_raw: dict[str, str] = {}
_pages: list[list] = []
_TAGS = re.compile(r"<[^>]+>")


def on_pre_build(config):
    _raw.clear()
    _pages.clear()


def on_page_markdown(markdown, page, config, files):
    if page.meta.get("tfdesk_raw"):
        _raw[page.file.src_uri] = markdown
        return ""
    return markdown


def _first_sentence(html: str, limit: int = 120) -> str:
    text = " ".join(_TAGS.sub(" ", html).split())
    first = text.split(". ", 1)[0]
    return first if len(first) <= limit else first[:limit].rsplit(" ", 1)[0] + "…"


_HEADING = re.compile(r'<h([23]) id="([^"]+)"[^>]*>(.*?)</h\1>', re.S)


def raw_toc(html: str):
    """The table of contents of a generated page (its h2 sections and the h3 entries under
    them: a class's members), for Material's sidebar: MkDocs builds none for raw HTML."""
    from mkdocs.structure.toc import get_toc
    tokens: list[dict] = []
    for level, ident, inner in _HEADING.findall(html):
        title = " ".join(_TAGS.sub("", inner.replace("¶", "")).split())
        token = {"level": int(level), "id": ident, "name": title, "children": []}
        if level == "3" and tokens:
            tokens[-1]["children"].append(token)
        else:
            tokens.append(token)
    return get_toc(tokens)


def on_page_content(html, page, config, files):
    raw = _raw.pop(page.file.src_uri, None)
    if raw is not None:
        page.toc = raw_toc(raw)
        return raw
    title = page.title or page.url
    body = re.sub(r"<h1[^>]*>.*?</h1>", "", html, count=1, flags=re.S)
    _pages.append([title, "g", page.url, _first_sentence(body), [], [], "", 0, []])

    def sections(items):
        for item in items:
            if item.level > 1:
                _pages.append([f"{title} › {item.title}", "g", page.url + item.url, "", [], [],
                               "", 0, []])
            yield from sections(item.children)
    list(sections(page.toc))
    return html


def on_post_build(config):
    index = Path(config["site_dir"]) / INDEX_FILE
    if index.is_file():
        data = json.loads(index.read_text(encoding="utf-8"))
    else:  # a site without generated pages still searches its own
        index.parent.mkdir(parents=True, exist_ok=True)
        data = {"format": 1, "releases": [], "params": [], "entries": []}
    data["entries"].extend(_pages)
    index.write_text(json.dumps(data, separators=(",", ":"), ensure_ascii=False),
                     encoding="utf-8")
