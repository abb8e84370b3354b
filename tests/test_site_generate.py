"""The site generator, without MkDocs: pages at the addresses links.py hands out, escaping,
splitting of big modules, change pages."""
from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from knowledge_base import links
from knowledge_base.site import generate
from knowledge_base.site.markup import page_file
from knowledge_base.store import KB
from site_kb import ODD_NAME, make_kb


@pytest.fixture(scope="module")
def kb(tmp_path_factory) -> KB:
    return KB(make_kb(tmp_path_factory.mktemp("kb") / "kb.sqlite"))


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: dict[str, dict] = {}
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids[a["id"]] = {"tag": tag, **a}


def ids_in(path: Path) -> dict[str, dict]:
    p = _Ids()
    p.feed(path.read_text(encoding="utf-8").split("---\n", 2)[-1])
    return p.ids


def test_every_symbol_has_its_anchor_on_its_module_page(kb, tmp_path):
    generate(kb, tmp_path)
    names = [r[0] for r in kb.db.execute("SELECT name FROM symbols")]
    assert ODD_NAME in names
    for name in names:
        sym = kb.symbol(name)
        path, _, frag = links.symbol_path(name, sym["module"]).partition("#")
        f = page_file(tmp_path, path)
        assert f.is_file(), f"{name}: no page {path}"
        if frag:
            assert frag in ids_in(f), f"{name}: no #{frag} on {path}"
    for v in kb.versions:
        assert page_file(tmp_path, links.release_page(v)).is_file()
    assert page_file(tmp_path, links.MIGRATION_PAGE).is_file()
    assert page_file(tmp_path, links.RELEASES_PAGE).is_file()


def test_badges_deprecation_and_history(kb, tmp_path):
    generate(kb, tmp_path)
    nn = page_file(tmp_path, links.module_page("tf.nn")).read_text()
    entry = nn[nn.index('id="tf.nn.old_fn"'):]
    assert "2.4–2.5" in entry and "deprecated in 2.5" in entry and "removed in 2.6" in entry
    assert "Scheduled for removal after 2021-01-01" in entry
    assert "<code>tf.nn.relu</code>" in entry  # instructions' `code` rendered as code
    soft = nn[nn.index('id="tf.nn.softmax"'):nn.index('id="tf.nn.we')]
    assert "softmax(logits, axis=-1, name=None)" in soft
    assert "signature changed" in soft and "../../changes/2.5/" in soft
    # Moves are followed both ways.
    exp = page_file(tmp_path, links.module_page("tf.experimental")).read_text()
    assert 'moved to <a href="../tf/#tf.thing">tf.thing</a>' in exp


def test_odd_names_and_nasty_docstrings_are_escaped(kb, tmp_path):
    generate(kb, tmp_path)
    text = page_file(tmp_path, links.module_page("tf.nn")).read_text()
    body = text.split("---\n", 2)[-1]
    assert "<script>" not in body and "<b>bold" not in body
    assert "```" not in body  # no line could open a Markdown fence inside the raw HTML
    assert '<div class="oops">' not in body
    # Tags balance: every block the generator opened is closed.
    opened = re.findall(r"<(pre|details|div|table|h2|h3|ul)[ >]", body)
    closed = re.findall(r"</(pre|details|div|table|h2|h3|ul)>", body)
    assert sorted(opened) == sorted(closed)
    ids = ids_in(page_file(tmp_path, links.module_page("tf.nn")))
    assert links.anchor(ODD_NAME) in ids
    assert "tf.nn.old_fn" in ids  # the entry after the nasty one is intact


def test_big_modules_split_into_parts_keeping_every_anchor(kb, tmp_path):
    result = generate(kb, tmp_path, budget=1500)
    main = page_file(tmp_path, links.module_page("tf.nn"))
    ids = ids_in(main)
    parts = sorted((tmp_path / "api" / "tf.nn").glob("part-*/index.md"))
    assert len(parts) >= 2
    for name in ("tf.nn.softmax", "tf.nn.relu", "tf.nn.old_fn", ODD_NAME):
        a = links.anchor(name)
        moved = ids[a]["data-tfd-moved"]
        part = (main.parent / moved.partition("#")[0] / "index.md").resolve()
        assert part.is_file() and a in ids_in(part), name
    assert max(p.bytes for p in result.pages) < 1500 * 3


def test_release_pages_group_changes_by_module(kb, tmp_path):
    generate(kb, tmp_path)
    page = page_file(tmp_path, links.release_page("2.6")).read_text()
    for module in ("tf.estimator", "tf.experimental", "tf.nn", "tf"):
        assert f'id="{module}"' in page
    assert "Removed" in page and "Moved here" in page
    p25 = page_file(tmp_path, links.release_page("2.5")).read_text()
    assert "Signature changes" in p25 and "Deprecated" in p25
    mig = page_file(tmp_path, links.MIGRATION_PAGE).read_text()
    assert 'href="../api/tf.compat.v1/#tf.compat.v1.Session"' in mig
    assert "no replacement" in mig
    rel = page_file(tmp_path, links.RELEASES_PAGE).read_text()
    assert rel.index(">2.6<") < rel.index(">2.4<")  # newest first
