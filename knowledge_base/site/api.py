"""API reference pages, at the addresses :mod:`knowledge_base.links` hands out.

- a page per module: its docs, submodules, and tables of its classes, functions and constants
  (one-line summaries, links); constants are documented in full on it;
- a page per class: its docs and every member in full (signature, summary, availability,
  history), nested classes linked to their own pages;
- a page per module-level function.

Every symbol that ever existed has its address, removed ones included. A module page keeps an
anchor for each of its classes and functions that names the symbol's own page
(``data-tfd-moved``), so addresses of the older one-page-per-module layout still arrive: tfdesk.js
forwards them, class members included. Module and class pages carry a release selector.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from knowledge_base import links
from knowledge_base.site.data import SiteData
from knowledge_base.site.doc_versions import releases_block
from knowledge_base.site.docstrings import Renderer
from knowledge_base.site.entries import (badges, deprecation, doc_body, entry, history, intro,
                                         linker, releases_attr)
from knowledge_base.site.markup import badge, esc, link, rel, write_page

# Table sections of a module page, in order: (heading, kinds).
MODULE_SECTIONS = (("Classes", ("class",)), ("Functions", ("function",)),
                   ("Constants", None))
CLASS_SECTIONS = (("Nested classes", ("class",)), ("Methods", ("method", "function")),
                  ("Properties", ("property",)), ("Other members", None))


@dataclass
class PageStat:
    path: str
    bytes: int


def api_pages(data: SiteData, docs_dir: Path, renderer: Renderer | None = None) -> list[PageStat]:
    """Write every module, class and function page and the API index."""
    r = renderer or Renderer()
    stats: list[PageStat] = []
    for module in sorted(data.by_module):
        stats.append(_module_page(data, r, docs_dir, module, data.by_module[module]))
    for s in data.symbols:
        if s["kind"] == "module":
            continue
        if s["kind"] == "class":
            stats.append(_class_page(data, r, docs_dir, s))
        elif links.has_own_page(s["kind"], s["parent"], s["module"]):
            stats.append(_function_page(data, r, docs_dir, s))
    stats.append(_api_index(data, r, docs_dir))
    return stats


def release_select(data: SiteData) -> str:
    """The release selector: tfdesk.js dims every row and entry the chosen release lacks and
    shows each signature, its parameters and its description as that release had them."""
    opts = "".join(f'<option value="{i}">TensorFlow {esc(v)}</option>'
                   for i, v in reversed(list(enumerate(data.versions))))
    return (f'<p class="tfd-release"><label>Show as in <select class="tfd-release-select">'
            f'<option value="">every release</option>{opts}</select></label>'
            f'<span class="tfd-release-note" hidden> Signatures, parameters and descriptions as '
            f'in that release.</span></p>')


def _crumbs(data: SiteData, s: dict, page: str) -> str:
    """Links up the tree: module, then enclosing classes."""
    chain, name = [], s["parent"]
    while name and name in data.by_name:
        p = data.by_name[name]
        chain.append(link(page, links.sym_path(p), name))
        if p["kind"] == "module":
            break
        name = p["parent"]
    return f'<p class="tfd-crumbs">{" › ".join(reversed(chain))}</p>' if chain else ""


def _table(data: SiteData, r: Renderer, page: str, heading: str, syms: list[dict],
           forward: bool) -> str:
    """Rows: name (linked), availability / state, one-line summary. With ``forward``, a row of
    a symbol with its own page carries the symbol's old anchor and where it lives now."""
    rows, href = [], linker(data, page)
    for s in syms:
        target = links.sym_path(s)
        rid = ""
        if forward and links.has_own_page(s["kind"], s["parent"], s["module"]):
            rid = f' id="{links.anchor(s["name"])}" data-tfd-moved="{esc(rel(page, target))}"'
        state = "" if data.present(s) else " " + badge(f'removed in {s["removed_in"] or "?"}',
                                                       "removed")
        label = s["name"].rsplit(".", 1)[-1] if forward else s["name"]
        avail = esc(data.availability.get(s["id"], ""))
        rows.append(f'<tr{rid}{releases_attr(data, s)}><td>{link(page, target, label)}</td>'
                    f'<td class="tfd-rel">{avail}{state}</td>'
                    f'<td>{r.inline(s["summary"] or "", href)}</td></tr>')
    return (f'<h2 id="tfd--{esc(heading.lower().replace(" ", "-"))}">{esc(heading)}</h2>'
            f'<table class="tfd-index"><thead><tr><th>Name</th><th>Releases</th>'
            f'<th>Summary</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


def _sections(syms: list[dict], sections, data: SiteData) -> list[tuple[str, list[dict]]]:
    """Group by kind into ``sections``; present symbols first, each group by name."""
    taken: set[str] = set()
    out = []
    for heading, kinds in sections:
        group = [s for s in syms if s["name"] not in taken and (kinds is None or s["kind"] in kinds)]
        taken.update(s["name"] for s in group)
        group.sort(key=lambda s: (not data.present(s), s["name"]))
        if group:
            out.append((heading, group))
    return out


def _module_page(data: SiteData, r: Renderer, docs_dir: Path, module: str,
                 syms: list[dict]) -> PageStat:
    page = links.module_page(module)
    self_sym = data.by_name.get(module)
    blocks = [release_select(data)]
    if self_sym:
        blocks.append(_crumbs(data, self_sym, page))
        blocks.append(f'<p class="tfd-badges">{badges(data, self_sym)}</p>')
        if self_sym["summary"]:
            blocks.append(f'<p class="tfd-summary">'
                          f'{r.inline(self_sym["summary"], linker(data, page))}</p>')
        blocks += deprecation(data, r, self_sym, page)
        body = doc_body(self_sym)
        if body:
            blocks.append(r.docstring(body, linker(data, page)))
        hist = history(data, self_sym, page)
        if hist:
            blocks.append(hist)
    else:
        blocks.append(f'<p class="tfd-summary">Symbols documented under <code>{esc(module)}'
                      f'</code>.</p>')
    subs = data.modules_under.get(module, [])
    if subs:
        blocks.append(_table(data, r, page, "Modules", sorted(subs, key=lambda s: s["name"]), False))
    tops = [s for s in syms if s["name"] != module and s["parent"] in (module, None)
            and s["kind"] != "module"]
    constants = []
    for heading, group in _sections(tops, MODULE_SECTIONS, data):
        blocks.append(_table(data, r, page, heading, group, True))
        if heading == "Constants":
            constants = group
    blocks += [entry(data, r, s, page, 3) for s in constants]
    return _write(data, docs_dir, page, module, blocks)


def _class_page(data: SiteData, r: Renderer, docs_dir: Path, s: dict) -> PageStat:
    page = links.sym_path(s)
    blocks = [release_select(data), _crumbs(data, s, page),
              f'<div class="tfd-entry"{releases_attr(data, s)}>']
    blocks += intro(data, r, s, page)
    blocks.append("</div>")
    members = data.children.get(s["name"], [])
    sections = _sections(members, CLASS_SECTIONS, data)
    for heading, group in sections:
        blocks.append(_table(data, r, page, heading, group, False))
    for heading, group in sections:
        full = [m for m in group if not links.has_own_page(m["kind"], m["parent"], m["module"])]
        if full:
            blocks.append(f'<h2 id="tfd--{heading.lower().replace(" ", "-")}-docs">{heading}: '
                          f'details</h2>')
            blocks += [entry(data, r, m, page, 3) for m in full]
    return _write(data, docs_dir, page, s["name"], blocks)


def _function_page(data: SiteData, r: Renderer, docs_dir: Path, s: dict) -> PageStat:
    page = links.sym_path(s)
    blocks = [release_select(data), _crumbs(data, s, page),
              f'<div class="tfd-entry"{releases_attr(data, s)}>']
    blocks += intro(data, r, s, page)
    blocks.append("</div>")
    return _write(data, docs_dir, page, s["name"], blocks)


def _write(data: SiteData, docs_dir: Path, page: str, title: str,
           blocks: list[str]) -> PageStat:
    """The page, and beside it the older releases' texts its entries show on demand."""
    return PageStat(page, write_page(docs_dir, page, title,
                                     blocks + [releases_block(data, docs_dir, page)]))


def _api_index(data: SiteData, r: Renderer, docs_dir: Path) -> PageStat:
    page = "api/"
    rows_now, rows_gone = [], []
    for module in sorted(data.by_module):
        syms = data.by_module[module]
        present = sum(1 for s in syms if data.present(s))
        self_sym = data.by_name.get(module)
        summary = r.inline(self_sym["summary"]) if self_sym and self_sym["summary"] else ""
        row = (f'<tr><td>{link(page, links.module_page(module), module)}</td>'
               f'<td>{present}</td><td>{summary}</td></tr>')
        (rows_now if present else rows_gone).append(row)
    head = '<thead><tr><th>Module</th><th>Symbols</th><th>Summary</th></tr></thead>'
    blocks = [f'<p>The public API of TensorFlow {esc(data.versions[0])} to '
              f'{esc(data.newest)}: a page per module, class and function, with every '
              f'symbol that ever existed and the releases that have it.</p>',
              f'<table class="tfd-index">{head}<tbody>{"".join(rows_now)}'
              f'</tbody></table>']
    if rows_gone:
        blocks += [f'<h2 id="tfd--removed-modules">Modules no longer in TF {esc(data.newest)}</h2>',
                   f'<table class="tfd-index">{head}<tbody>{"".join(rows_gone)}'
                   f'</tbody></table>']
    return PageStat(page, write_page(docs_dir, page, "API reference", blocks))
