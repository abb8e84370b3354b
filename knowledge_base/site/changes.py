"""Per-release "What changed" pages, the release index and the TF1 -> TF2 migration table."""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from pathlib import Path

from knowledge_base import links
from knowledge_base.site.api import PageStat
from knowledge_base.site.compare import compare_url, release_notes
from knowledge_base.site.entries import event_detail, symbol_link
from knowledge_base.site.data import SiteData
from knowledge_base.site.markup import NOSEARCH, badge, esc, link, write_page

# Order of the kinds of change on a release page.
KIND_ORDER = ("added", "removed", "signature_changed", "deprecated", "undeprecated", "moved",
              "definition_moved")
KIND_TITLES = {"added": "Added", "removed": "Removed", "signature_changed": "Signature changes",
               "deprecated": "Deprecated", "undeprecated": "No longer deprecated",
               "moved": "Moved here", "definition_moved": "Definition moved"}


def _events_by_ord(data: SiteData) -> dict[int, list[tuple[dict, dict]]]:
    out: dict[int, list[tuple[dict, dict]]] = defaultdict(list)
    for s in data.symbols:
        for e in data.history.get(s["id"], []):
            out[e["ord"]].append((s, e))
    return out


def release_pages(data: SiteData, docs_dir: Path, budget: int) -> list[PageStat]:
    by_ord = _events_by_ord(data)
    stats = []
    for ord_, version in enumerate(data.versions):
        stats += _release(data, docs_dir, ord_, version, by_ord.get(ord_, []), budget)
    stats.append(_release_index(data, docs_dir, by_ord))
    return stats


def _counts(items) -> str:
    c = Counter(e["kind"] for _, e in items)
    return " ".join(badge(f"{KIND_TITLES.get(k, k)}: {c[k]}", "ev-" + k)
                    for k in list(KIND_ORDER) + sorted(set(c) - set(KIND_ORDER)) if c[k])


def _package(module: str) -> str:
    """The package a module belongs to for the totals: tf.keras for tf.keras.layers."""
    parts = module.split(".")
    return ".".join(parts[:3] if parts[1:2] in (["compat"], ["contrib"]) else parts[:2])


def _release(data: SiteData, docs_dir: Path, ord_: int, version: str,
             items: list[tuple[dict, dict]], budget: int) -> list[PageStat]:
    """Facts, notes (Keras 3 in 2.16), totals by package and by module; each row opens the
    compare view on this release and that package (the lists are there, filterable)."""
    page = links.release_page(version)
    title = f"What changed in TensorFlow {version}"
    info = data.releases[ord_]
    blocks = [_release_facts(data, ord_, info, page)]
    for note in release_notes(data).get(ord_, []):
        blocks.append(f'<div class="admonition note tfd-release-notes"><p class="admonition-title">'
                      f'Note</p><p>{esc(note)}</p></div>')
    if ord_ == 0:
        # Everything is "added" in the oldest release the KB has; listing it helps nobody.
        blocks.append(f'<p>The oldest release in the knowledge base: {info.get("symbols") or 0}'
                      f' public symbols. See the {link(page, "api/", "API reference")}.</p>')
        return [PageStat(page, write_page(docs_dir, page, title, blocks))]
    if not items:
        blocks.append("<p>No changes to the public API.</p>")
        return [PageStat(page, write_page(docs_dir, page, title, blocks))]
    prev = data.versions[ord_ - 1]
    blocks.append(f'<p class="tfd-counts">{_counts(items)}</p>')
    blocks.append(f'<p>Every change, filterable by package, kind and name: '
                  f'{link(page, compare_url(prev, version), f"compare {prev} → {version}")}.</p>')
    by_pkg: dict[str, list] = defaultdict(list)
    by_module: dict[str, list] = defaultdict(list)
    for s, e in items:
        by_pkg[_package(s["module"])].append((s, e))
        by_module[s["module"]].append((s, e))
    for heading, groups, anchor in (("By package", by_pkg, "tfd--pkg-"),
                                    ("By module", by_module, "")):
        rows = "".join(
            f'<tr id="{esc(anchor + links.anchor(m))}"><td>'
            f'{link(page, compare_url(prev, version, m), m)}</td>'
            f'<td>{_counts(groups[m])}</td></tr>' for m in sorted(groups))
        blocks.append(f'<h2 id="tfd--{heading.split()[1].lower()}">{esc(heading)}</h2>'
                      f'<table class="tfd-index"><thead><tr><th>{esc(heading.split()[1].title())}'
                      f'</th><th>Changes</th></tr></thead><tbody>{rows}</tbody></table>')
    return [PageStat(page, write_page(docs_dir, page, title, blocks))]


def _release_facts(data: SiteData, ord_: int, info: dict, page: str) -> str:
    facts = [("TensorFlow", info.get("tf_version")), ("Wheel", info.get("tf_wheel")),
             ("tf.keras from", " ".join(x for x in (info.get("keras_source"),
                                                     info.get("keras_version")) if x)),
             ("tf.estimator", info.get("estimator_version")), ("Python tag", info.get("python_tag")),
             ("Public symbols", info.get("symbols"))]
    nav = []
    if ord_ > 0:
        prev = data.versions[ord_ - 1]
        nav.append("previous: " + link(page, links.release_page(prev), prev))
    if ord_ + 1 < len(data.versions):
        nxt = data.versions[ord_ + 1]
        nav.append("next: " + link(page, links.release_page(nxt), nxt))
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts if v)
    return (f'<table class="tfd-facts"{NOSEARCH}><tbody>{rows}</tbody></table>\n\n'
            f'<p class="tfd-relnav">{" · ".join(nav)} · {link(page, links.RELEASES_PAGE, "all releases")}</p>')


def _release_index(data: SiteData, docs_dir: Path, by_ord) -> PageStat:
    page = links.RELEASES_PAGE
    rows = []
    for ord_ in reversed(range(len(data.versions))):
        info = data.releases[ord_]
        c = Counter(e["kind"] for _, e in by_ord.get(ord_, []))
        keras = " ".join(x for x in (info.get("keras_source"), info.get("keras_version")) if x)
        changes = "first release in the KB" if ord_ == 0 else ", ".join(
            f"{KIND_TITLES.get(k, k).lower()} {c[k]}" for k in KIND_ORDER if c[k]) or "none"
        rows.append(f'<tr><td>{link(page, links.release_page(info["version"]), info["version"])}'
                    f'</td><td>{esc(info.get("tf_version") or "")}</td><td>{esc(keras)}</td>'
                    f'<td>{esc(info.get("symbols") or "")}</td><td>{esc(changes)}</td></tr>')
    blocks = ["<p>Every TensorFlow release in the knowledge base, newest first, with what "
              "changed in its public API. "
              f'{link(page, compare_url(), "Compare any two releases")} by package and kind.</p>',
              f'<table class="tfd-index"{NOSEARCH}><thead><tr><th>Release</th><th>TensorFlow</th>'
              f'<th>tf.keras from</th><th>Symbols</th><th>Changes</th></tr></thead><tbody>'
              + "".join(rows) + "</tbody></table>"]
    return PageStat(page, write_page(docs_dir, page, "Releases", blocks))


MIGRATION_CATEGORIES = (("renamed", "renamed in TF2"), ("compat", "kept as tf.compat.v1"),
                        ("removed", "no TF2 name"))


def _migration_row(data: SiteData, r: dict, page: str) -> str:
    new = r["new"]
    cat = "removed" if not new else "compat" if new.startswith("tf.compat.v1.") else "renamed"
    if new:
        target = symbol_link(data, new, page)
        if new not in data.by_name:
            target += ' <span class="tfd-badge tfd-removed">not in the KB</span>'
    else:
        target = "<em>none: see the note</em>" if r["note"] else "<em>no replacement</em>"
    pkg = _package(r["old"].rsplit(".", 1)[0]) if r["old"].count(".") > 1 else "tf"
    label = dict(MIGRATION_CATEGORIES)[cat]
    return (f'<tr id="{esc(links.anchor(r["old"]))}" data-kind="{cat}" data-pkg="{esc(pkg)}">'
            f'<td>{symbol_link(data, r["old"], page)}</td><td>{target}</td>'
            f'<td>{badge(label, "ev-" + cat)}</td><td>{esc(r["note"] or "")}</td></tr>')


def migration_pages(data: SiteData, docs_dir: Path, budget: int) -> list[PageStat]:
    """The TF1 -> TF2 table with a filter (text, package, kind) and totals; each row's id is
    the TF1 name, which the search box finds."""
    page = links.MIGRATION_PAGE
    intro = ("<p>TF1 names and what TF2 calls them, from the upgrade tables that ship in the "
             "wheels (<code>tf_upgrade_v2</code>). Names link to their API entries when the "
             "knowledge base has them; a TF1 name typed into the search box finds its row.</p>")
    rows = [_migration_row(data, r, page) for r in data.renames]
    counts = Counter(re.search(r'data-kind="(\w+)"', row).group(1) for row in rows)
    totals = " · ".join(f"{label} {counts[k]}" for k, label in MIGRATION_CATEGORIES)
    if not rows:
        rows.append('<tr><td colspan="4">The knowledge base has no rename tables.</td></tr>')
    pkgs = sorted({re.search(r'data-pkg="([^"]*)"', row).group(1) for row in rows
                   if "data-pkg" in row})
    form = ('<form class="tfd-filter" data-table="tfd-migration"><p>'
            '<label>Name <input name="q" type="search" placeholder="tf.contrib.layers" size="18">'
            '</label> <label>Package <select name="pkg"><option value="">all</option>'
            + "".join(f'<option>{esc(p)}</option>' for p in pkgs) + '</select></label> '
            '<label>Kind <select name="kind"><option value="">all</option>'
            + "".join(f'<option value="{k}">{esc(t)}</option>' for k, t in MIGRATION_CATEGORIES)
            + f'</select></label></p><p class="tfd-filter-totals">{len(data.renames)} names: '
            f'{esc(totals)}</p></form>')
    head = ('<thead><tr><th>TF1 name</th><th>TF2 name</th><th>Kind</th><th>Note</th></tr>'
            '</thead>')
    table = (f'<table class="tfd-index tfd-migration" id="tfd-migration">{head}'
             f'<tbody>{"".join(rows)}</tbody></table>')
    return [PageStat(page, write_page(docs_dir, page, "TF1 → TF2 migration",
                                      [intro, form, table]))]
