"""The site's search index (knowledge_base/site/search.py): one entry per object, every name
of the KB findable exactly once, addresses that land on an element, plain-text summaries, and
parameters read from any signature. Ranking itself runs in the browser (test_site_browser)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_base import links
from knowledge_base.site import generate
from knowledge_base.site.data import load
from knowledge_base.site.markup import page_file
from knowledge_base.site.params import param_names, split_params
from knowledge_base.site.search import OWN_PAGE, build_index, default_url, plain
from knowledge_base.store import KB
from tests.site_kb import ODD_NAME, make_kb


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    return KB(make_kb(tmp_path_factory.mktemp("kb") / "kb.sqlite"))


@pytest.fixture(scope="module")
def index(kb):
    return build_index(load(kb))


def _alias(row, a) -> str:
    """An alias as tfdesk-search.js reads it (1 / 2: the name under tf.compat.v1 / v2)."""
    if isinstance(a, int):
        return f"tf.compat.v{a}.{row[0][3:]}"
    return a if isinstance(a, str) else a[0]


def _names(row) -> list[str]:
    return [row[0]] + [_alias(row, a) for a in row[4]]


def test_every_symbol_name_is_in_exactly_one_entry(kb, index):
    seen: dict[str, int] = {}
    for row in index["entries"]:
        if row[1] in ("t", "g"):
            continue
        for n in _names(row):
            seen[n] = seen.get(n, 0) + 1
    every = {r[0] for r in kb.db.execute("SELECT name FROM symbols")}
    assert set(seen) == every
    assert all(c == 1 for c in seen.values()), {n: c for n, c in seen.items() if c > 1}


def test_names_of_one_object_share_one_entry(kb, index):
    for (obj, last, names) in kb.db.execute(
            "SELECT object, last_ord, group_concat(name, '|') FROM symbols "
            "WHERE object IS NOT NULL GROUP BY object, last_ord, kind HAVING count(*) > 1"):
        rows = [r for r in index["entries"] if set(_names(r)) & set(names.split("|"))]
        assert len(rows) == 1 and set(names.split("|")) <= set(_names(rows[0])), (obj, names)


def test_every_address_lands_on_an_element(kb, index, tmp_path):
    """The address of each entry and alias (derived as tfdesk-search.js derives it) is a page
    the generator wrote, with the anchor it names."""
    generate(kb, tmp_path)
    for row in index["entries"]:
        if row[1] == "g":
            continue
        targets = [row[2] or default_url(row[0], row[1])]
        targets += [a[1] if isinstance(a, list) else default_url(_alias(row, a), row[1])
                    for a in row[4]]
        for t in targets:
            assert t, row
            path, _, frag = t.partition("#")
            f = page_file(tmp_path, path)
            assert f.is_file(), (row[0], t)
            if frag:
                assert f'id="{frag}"' in f.read_text(encoding="utf-8"), (row[0], t)


def test_tf1_removed_and_parameters_are_in_the_index(index):
    by_name = {r[0]: r for r in index["entries"]}
    assert "tf.Session" in by_name["tf.compat.v1.Session"][8]
    assert by_name["tf.nn.relu"][4] == [1]  # tf.compat.v1.nn.relu, written short
    assert by_name["tf.estimator.Estimator"][6] == "removed in 2.6"
    fit = by_name["tf.keras.Model.fit"]
    assert {"x", "epochs", "validation_split"} <= {index["params"][i] for i in fit[5]}
    # A TF1 name the tables map to nothing the KB has: an entry of its own, to its row.
    assert by_name["tf.contrib.foo"][2] == "migration/#tf.contrib.foo"
    assert ODD_NAME in by_name and by_name[ODD_NAME][2] == links.sym_path(
        {"name": ODD_NAME, "module": "tf.nn", "kind": "function", "parent": "tf.nn"})


def test_no_summary_shows_markdown(index):
    for row in index["entries"]:
        assert "`" not in row[3] and "](" not in row[3], row


@given(st.text(max_size=300))
def test_plain_text_has_no_backticks_and_stays_short(text):
    out = plain(text)
    assert "`" not in out and len(out) <= 101


_ident = st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: s not in ("self",))
_default = st.one_of(st.just("None"), st.integers().map(str),
                     st.text(alphabet="ab,()[]{}=:'", max_size=8).map(repr),
                     st.lists(st.integers(), max_size=3).map(str),
                     st.just("(1, 2)"), st.just("{'a': (1, 2)}"))


@settings(max_examples=200)
@given(st.lists(st.tuples(_ident, st.one_of(st.none(), _default)), max_size=6, unique_by=lambda p: p[0]),
       st.booleans())
def test_param_names_reads_any_signature(params, star):
    parts = [n if d is None else f"{n}={d}" for n, d in params]
    if star:
        parts.insert(len(parts) // 2, "*args" if len(parts) % 2 else "*")
        parts.append("**kwargs")
    sig = "(" + ", ".join(parts) + ")"
    assert param_names(sig) == [n for n, _ in params], sig
    assert [p.default for p in split_params(sig) if not p.stars] == [d for _, d in params]


_segment = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True)


@given(st.lists(_segment, min_size=1, max_size=4), st.sampled_from(sorted(OWN_PAGE) + ["d", "p", "k"]),
       st.text(max_size=3))
def test_derived_addresses_match_the_links_module(parts, code, odd):
    name = "tf." + ".".join(parts) + odd
    parent = name.rsplit(".", 1)[0]
    kind = {"M": "module", "C": "class", "F": "function", "d": "method", "p": "property",
            "k": "constant"}[code]
    module = parent if code in "FMk" else parent.rsplit(".", 1)[0] or "tf"
    if code == "M":
        module = name
    url = default_url(name, code)
    expected = links.symbol_path(name, module, kind, parent if code != "M" else None)
    if url is None:
        assert re.search(r"[^A-Za-z0-9_.\-]", name)
    else:
        assert url == expected
