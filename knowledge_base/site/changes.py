"""Per-release "What changed" pages, the release index and the TF1 -> TF2 migration table."""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from knowledge_base import links
from knowledge_base.site.api import PageStat
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


def _module_block(data: SiteData, module: str, items: list[tuple[dict, dict]],
                  page: str) -> str:
    by_kind: dict[str, list] = defaultdict(list)
    for s, e in items:
        by_kind[e["kind"]].append((s, e))
    parts = [f'<h2 id="{esc(links.anchor(module))}"{NOSEARCH}>'
             f'{link(page, links.module_page(module), module)}</h2>']
    for kind in list(KIND_ORDER) + sorted(set(by_kind) - set(KIND_ORDER)):
        if kind not in by_kind:
            continue
        lis = "".join(
            f'<li>{symbol_link(data, s["name"], page)}{event_detail(data, e, page)}</li>'
            for s, e in by_kind[kind])
        parts.append(f'<p class="tfd-kind"{NOSEARCH}>{badge(KIND_TITLES.get(kind, kind), "ev-" + kind)}'
                     f' {len(by_kind[kind])}</p><ul class="tfd-changes"{NOSEARCH}>{lis}</ul>')
    return "\n".join(parts)


def _release(data: SiteData, docs_dir: Path, ord_: int, version: str,
             items: list[tuple[dict, dict]], budget: int) -> list[PageStat]:
    page = links.release_page(version)
    title = f"What changed in TensorFlow {version}"
    info = data.releases[ord_]
    blocks = [_release_facts(data, ord_, info, page)]
    if ord_ == 0:
        # Everything is "added" in the oldest release the KB has; listing it helps nobody.
        blocks.append(f'<p>The oldest release in the knowledge base: {info.get("symbols") or 0}'
                      f' public symbols. See the {link(page, "api/", "API reference")}.</p>')
        return [PageStat(page, write_page(docs_dir, page, title, blocks))]
    counts = Counter(e["kind"] for _, e in items)
    if not items:
        blocks.append("<p>No changes to the public API.</p>")
        return [PageStat(page, write_page(docs_dir, page, title, blocks))]
    blocks.append('<p class="tfd-counts">' + " ".join(
        badge(f"{KIND_TITLES.get(k, k)}: {counts[k]}", "ev-" + k)
        for k in KIND_ORDER if counts[k]) + "</p>")
    by_module: dict[str, list] = defaultdict(list)
    for s, e in items:
        by_module[s["module"]].append((s, e))
    modules = sorted(by_module)
    module_blocks = [_module_block(data, m, by_module[m], page) for m in modules]
    if sum(len(b.encode()) for b in module_blocks) + 4096 <= budget:
        blocks += module_blocks
        return [PageStat(page, write_page(docs_dir, page, title, blocks))]
    # A release that changed a lot (Keras 3 in 2.16): one page per run of modules.
    stats, rows = [], []
    runs, size = [[]], 0
    for i, b in enumerate(module_blocks):
        n = len(b.encode())
        if runs[-1] and size + n > budget:
            runs.append([])
            size = 0
        runs[-1].append(i)
        size += n
    for n, run in enumerate(runs, 1):
        part = f"{page}part-{n}/"
        part_blocks = [f'<p class="tfd-parts">{link(part, page, title)} · part {n} of '
                       f'{len(runs)}</p>'] + [_module_block(data, modules[i], by_module[modules[i]], part)
                                            for i in run]
        stats.append(PageStat(part, write_page(docs_dir, part, f"{title} ({n}/{len(runs)})",
                                               part_blocks)))
        for i in run:
            c = Counter(e["kind"] for _, e in by_module[modules[i]])
            rows.append(f'<tr><td>{link(page, part + "#" + links.anchor(modules[i]), modules[i])}'
                        f'</td><td>' + ", ".join(f"{KIND_TITLES.get(k, k).lower()} {c[k]}"
                                                 for k in KIND_ORDER if c[k]) + "</td></tr>")
    blocks.append(f'<table class="tfd-index"{NOSEARCH}><thead><tr><th>Module</th><th>Changes'
                  f'</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    stats.append(PageStat(page, write_page(docs_dir, page, title, blocks)))
    return stats


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
              "changed in its public API.</p>",
              f'<table class="tfd-index"{NOSEARCH}><thead><tr><th>Release</th><th>TensorFlow</th>'
              f'<th>tf.keras from</th><th>Symbols</th><th>Changes</th></tr></thead><tbody>'
              + "".join(rows) + "</tbody></table>"]
    return PageStat(page, write_page(docs_dir, page, "Releases", blocks))


def migration_pages(data: SiteData, docs_dir: Path, budget: int) -> list[PageStat]:
    page = links.MIGRATION_PAGE
    intro = ("<p>TF1 names and what TF2 calls them, from the upgrade tables that ship in the "
             "wheels (<code>tf_upgrade_v2</code>). Names link to their API entries when the "
             "knowledge base has them.</p>")
    rows = []
    for r in data.renames:
        new = symbol_link(data, r["new"], page) if r["new"] else "<em>no replacement</em>"
        rows.append(f'<tr id="{esc(links.anchor(r["old"]))}"><td>{symbol_link(data, r["old"], page)}'
                    f'</td><td>{new}</td><td>{esc(r["note"] or "")}</td></tr>')
    if not rows:
        rows.append('<tr><td colspan="3">The knowledge base has no rename tables.</td></tr>')
    head = ('<thead><tr><th>TF1 name</th><th>TF2 name</th><th>Note</th></tr></thead>')
    table = f'<table class="tfd-index"{NOSEARCH}>{head}<tbody>{"".join(rows)}</tbody></table>'
    return [PageStat(page, write_page(docs_dir, page, "TF1 → TF2 migration", [intro, table]))]
