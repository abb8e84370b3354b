"""The site generator, without MkDocs: pages at the addresses links.py hands out, old addresses,
rendered docstrings, escaping, search entries, change pages."""
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


def page_of(tmp_path: Path, name: str, kb: KB) -> str:
    return page_file(tmp_path, links.sym_path(kb.symbol(name))).read_text()


def test_every_symbol_has_its_page_and_anchor(kb, tmp_path):
    generate(kb, tmp_path)
    names = [r[0] for r in kb.db.execute("SELECT name FROM symbols")]
    assert ODD_NAME in names
    for name in names:
        path, _, frag = links.sym_path(kb.symbol(name)).partition("#")
        f = page_file(tmp_path, path)
        assert f.is_file(), f"{name}: no page {path}"
        if frag:
            assert frag in ids_in(f), f"{name}: no #{frag} on {path}"
    for v in kb.versions:
        assert page_file(tmp_path, links.release_page(v)).is_file()
    assert page_file(tmp_path, links.MIGRATION_PAGE).is_file()
    assert page_file(tmp_path, links.RELEASES_PAGE).is_file()
    # Classes and module-level functions have pages of their own; members live on their class.
    assert links.sym_path(kb.symbol("tf.keras.Model")) == "api/tf.keras.Model/"
    assert links.sym_path(kb.symbol("tf.nn.softmax")) == "api/tf.nn.softmax/"
    assert links.sym_path(kb.symbol("tf.keras.Model.fit")) == "api/tf.keras.Model/#tf.keras.Model.fit"
    assert not list(tmp_path.glob("api/**/part-*")), "no size-based parts any more"


def test_old_addresses_still_arrive(kb, tmp_path):
    """The older layout put every symbol on its module page (api/tf.keras/#tf.keras.Model.fit).
    The module page still has each class's and function's anchor, naming its page; for a class
    member the longest dotted prefix with such a row names the page (what tfdesk.js follows)."""
    generate(kb, tmp_path)
    for (name,) in kb.db.execute("SELECT name FROM symbols WHERE kind != 'module'"):
        sym = kb.symbol(name)
        module_ids = ids_in(page_file(tmp_path, links.module_page(sym["module"])))
        a = links.anchor(name)
        parts = a.split(".")
        owners = [".".join(parts[:n]) for n in range(len(parts), 1, -1)]
        owner = next((o for o in owners if o in module_ids), None)
        assert owner, f"{name}: the old address api/{sym['module']}/#{a} leads nowhere"
        moved = module_ids[owner].get("data-tfd-moved")
        if owner == a and not moved:
            continue  # documented on the module page itself (a constant)
        target = (page_file(tmp_path, links.module_page(sym["module"])).parent / moved).resolve()
        assert (target / "index.md").is_file(), f"{name}: forwarded to a missing page"
        if owner != a:
            assert a in ids_in(target / "index.md"), f"{name}: not on {target}"


def test_module_page_lists_classes_and_functions_with_summaries(kb, tmp_path):
    generate(kb, tmp_path)
    keras = page_file(tmp_path, links.module_page("tf.keras")).read_text()
    assert 'href="../tf.keras.Model/"' in keras
    assert "A model grouping layers into an object with training features." in keras
    assert "tf.keras.Model.fit" not in keras  # members are on the class page
    model = page_of(tmp_path, "tf.keras.Model", kb)
    for member in ("tf.keras.Model.fit", "tf.keras.Model.old_method"):
        assert f'id="{member}"' in model
    assert "Trains the model for a fixed number of epochs." in model
    # The removed member is marked and carries the releases that had it (the selector's data).
    old = model[model.index('id="tfd--methods"'):]
    row = re.search(r'<tr[^>]*data-tfd-r="([^"]+)"[^>]*><td><a[^>]*>tf\.keras\.Model\.old_method',
                    old)
    assert row and row.group(1) == "0-1"
    assert "removed in 2.6" in old
    assert 'class="tfd-release-select"' in model


def test_docstrings_are_rendered_not_dumped(kb, tmp_path):
    generate(kb, tmp_path)
    model = page_of(tmp_path, "tf.keras.Model", kb)
    fit = model[model.index('id="tf.keras.Model.fit"'):model.index('id="tf.keras.Model.old_method"')]
    args = re.search(r'<p class="tfd-section">Args</p><div class="tfd-args"><table>(.*?)</table>',
                     fit, re.S)
    assert args, "no Args table"
    names = re.findall(r"<tr><td><code>([^<]+)</code></td>", args.group(1))
    assert names == ["x", "y", "epochs"]
    assert '<p class="tfd-section">Returns</p>' in fit and "RuntimeError" in fit
    assert "Args:" not in fit and "<pre class=\"tfd-doc\"" not in fit
    # The >>> example is highlighted as a Python console session.
    assert '<code class="language-pycon"><span class="gp">&gt;&gt;&gt; </span>' in fit
    # `tf.data.Dataset` is a link to its page, relative to this page.
    assert '<a href="../tf.data.Dataset/"><code>tf.data.Dataset</code></a>' in fit
    assert "<code>History</code>" in fit  # not a tf name: stays code


def test_signature_by_release(kb, tmp_path):
    generate(kb, tmp_path)
    soft = page_of(tmp_path, "tf.nn.softmax", kb)
    table = soft[soft.index("Signature by release"):]
    assert re.search(r"2\.5–2\.6</td><td><code>softmax\(logits, axis=-1, name=None\)", table)
    assert re.search(r"2\.4</td><td><code>softmax\(logits, axis=None, name=None\)", table)
    relu = page_of(tmp_path, "tf.nn.relu", kb)
    assert "Signature by release" not in relu  # never changed: no table


def test_badges_deprecation_and_history(kb, tmp_path):
    generate(kb, tmp_path)
    entry = page_of(tmp_path, "tf.nn.old_fn", kb)
    assert "2.4–2.5" in entry and "deprecated in 2.5" in entry and "removed in 2.6" in entry
    assert "Scheduled for removal after 2021-01-01" in entry
    assert "<code>tf.nn.relu</code>" in entry  # instructions' `code` rendered as code
    soft = page_of(tmp_path, "tf.nn.softmax", kb)
    assert "softmax(logits, axis=-1, name=None)" in soft
    assert "signature changed" in soft and "../../changes/2.5/" in soft
    # Moves are followed both ways.
    exp = page_of(tmp_path, "tf.experimental.thing", kb)
    assert 'moved to <a href="../tf.thing/">tf.thing</a>' in exp


def test_odd_names_and_nasty_docstrings_are_escaped(kb, tmp_path):
    generate(kb, tmp_path)
    text = page_of(tmp_path, ODD_NAME, kb)
    body = text.split("---\n", 2)[-1]
    assert "<script>" not in body and "<b>bold" not in body
    assert "```" not in body  # no line could open a Markdown fence inside the raw HTML
    assert '<div class="oops">' not in body
    # Tags balance: every block the generator opened is closed.
    opened = re.findall(r"<(pre|details|div|table|h2|h3|ul)[ >]", body)
    closed = re.findall(r"</(pre|details|div|table|h2|h3|ul)>", body)
    assert sorted(opened) == sorted(closed)
    nn = ids_in(page_file(tmp_path, links.module_page("tf.nn")))
    assert links.anchor(ODD_NAME) in nn and "tf.nn.old_fn" in nn  # the row after it is intact


def test_search_entries_cover_members_and_never_dangle(kb, tmp_path):
    from knowledge_base.site.data import load
    from knowledge_base.site.search import entries
    index = entries(load(kb))
    by_title = {e["title"]: e for e in index}
    assert by_title["tf.keras.Model.fit"]["location"] == "api/tf.keras.Model/#tf.keras.Model.fit"
    assert by_title["tf.data.Dataset.map"]["location"].startswith("api/tf.data.Dataset/#")
    assert "tf.keras.Model.old_method" not in by_title  # not in the newest release
    pages = {e["location"] for e in index if "#" not in e["location"]}
    for e in index:
        assert e["location"].partition("#")[0] in pages, f"{e['location']}: page has no entry"
    # Members are boosted to stand level with pages (Material favours pages over sections).
    assert by_title["tf.keras.Model.fit"]["boost"] > by_title["tf.nn.relu"].get("boost", 1)


def test_release_pages_group_changes_by_module(kb, tmp_path):
    generate(kb, tmp_path)
    page = page_file(tmp_path, links.release_page("2.6")).read_text()
    for module in ("tf.estimator", "tf.experimental", "tf.nn", "tf"):
        assert f'id="{module}"' in page
    assert "Removed" in page and "Moved here" in page
    p25 = page_file(tmp_path, links.release_page("2.5")).read_text()
    assert "Signature changes" in p25 and "Deprecated" in p25
    mig = page_file(tmp_path, links.MIGRATION_PAGE).read_text()
    assert 'href="../api/tf.compat.v1.Session/"' in mig
    assert "no replacement" in mig
    rel = page_file(tmp_path, links.RELEASES_PAGE).read_text()
    assert rel.index(">2.6<") < rel.index(">2.4<")  # newest first
