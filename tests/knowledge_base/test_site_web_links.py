"""The docs site links to the web view: ``[words](web:/path)`` in the Markdown becomes a link
to ``[web] url`` (with a header link on every page) or, without one, the words alone; both
builds pass ``mkdocs build --strict`` (a real MkDocs Material build of a small project). Every
``web:`` link the hand-written pages hold names a page the web view serves."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.routing import Route

from bot.web.pages import ROUTES
from knowledge_base.site.build import WEB_LINK, run_mkdocs, stage

REPO = Path(__file__).resolve().parents[2]
PAGE = "# Runs\n\nEvery job is a run; the [run list](web:/runs) and [models](web:/models) show them.\n"


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "index.md").write_text(PAGE)
    (project / "mkdocs.yml").write_text("site_name: t\ndocs_dir: docs\ntheme:\n  name: material\n"
                                        "  font: false\nplugins: []\nnav:\n  - Home: index.md\n")
    return project


@pytest.mark.parametrize("web_url", ["", "https://tfdesk.example.com/"])
def test_web_links_build_strict_with_and_without_a_web_url(tmp_path, web_url):
    site = tmp_path / "site"
    _, cfg = stage(_project(tmp_path), tmp_path / "staging", "http://127.0.0.1:8000/", site,
                   web_url=web_url)
    run_mkdocs(cfg, site)  # --strict: raises on any warning
    html = (site / "index.html").read_text()
    if web_url:
        assert 'href="https://tfdesk.example.com/runs"' in html
        assert 'href="https://tfdesk.example.com/models"' in html
        assert 'class="tfdesk-web-link" href="https://tfdesk.example.com/"' in html
    else:
        assert "run list" in html and "web:" not in html and "tfdesk-web-link" not in html
        assert "tfdesk.example" not in html


def test_every_web_link_in_the_docs_names_a_served_page():
    routes = [Route(path, lambda r: None) for path, _ in ROUTES]
    found = []
    for page in (REPO / "site_docs").rglob("*.md"):
        for m in WEB_LINK.finditer(page.read_text(encoding="utf-8")):
            path = m.group(2).split("?", 1)[0].split("#", 1)[0]
            scope = {"type": "http", "path": path, "method": "GET"}
            assert any(r.matches(scope)[0].name == "FULL" for r in routes), (page, path)
            found.append(path)
    assert found, "the docs link to the web view nowhere"
