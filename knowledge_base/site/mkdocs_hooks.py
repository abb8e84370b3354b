"""MkDocs hooks for the generated pages (named in mkdocs.yml under ``hooks:``).

Generated pages are already HTML (escaped by :mod:`knowledge_base.site.markup`); running
Python-Markdown over megabytes of it was most of the build time. Pages whose front matter
says ``tfdesk_raw: true`` skip Markdown and keep their HTML as it is. They are also left out of
Material's per-page search parsing; the generator lists their search entries (names and
summaries) in ``.tfdesk-search.json`` in the docs folder, and they join the index here.
"""
from __future__ import annotations

import json
from pathlib import Path

SEARCH_FILE = ".tfdesk-search.json"
_raw: dict[str, str] = {}


def on_page_markdown(markdown, page, config, files):
    if page.meta.get("tfdesk_raw"):
        _raw[page.file.src_uri] = markdown
        return ""
    return markdown


def on_page_content(html, page, config, files):
    raw = _raw.pop(page.file.src_uri, None)
    return html if raw is None else raw


def on_post_build(config):
    extra = Path(config["docs_dir"]) / SEARCH_FILE
    index = Path(config["site_dir"]) / "search" / "search_index.json"
    if not extra.is_file() or not index.is_file():
        return
    data = json.loads(index.read_text(encoding="utf-8"))
    data["docs"].extend(json.loads(extra.read_text(encoding="utf-8")))
    index.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
