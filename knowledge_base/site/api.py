"""API reference pages: one page per module, every symbol with a stable anchor.

A module's page documents every symbol whose ``module`` it is, present or removed, so every
link :mod:`knowledge_base.links` hands out resolves. When a page would be too big (``tf.raw_ops``,
``tf.compat.v1``), the full entries move to numbered part pages and the module page keeps a
compact index whose rows still carry each symbol's anchor; ``tfdesk.js`` forwards a visitor
who arrives at such an anchor to the entry on its part page.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from knowledge_base import links
from knowledge_base.site.data import SiteData
from knowledge_base.site.markup import NOSEARCH, badge, esc, esc_code, link, rel, write_page

# Symbols under these prefixes mirror others (tf.compat.v2 is tf; tf.compat.v1 is TF1's API):
# their pages are built, but their entries stay out of the search index, which would
# otherwise double in size. The module pages themselves remain searchable by title.
SEARCH_SKIP_PREFIXES = ("tf.compat.v1.", "tf.compat.v2.")

EVENT_WORDS = {"added": "added", "removed": "removed", "signature_changed": "signature changed",
               "deprecated": "deprecated", "undeprecated": "no longer deprecated",
               "moved": "moved", "definition_moved": "definition moved"}


@dataclass
class PageStat:
    path: str
    bytes: int


def module_pages(data: SiteData, docs_dir: Path, budget: int,
                 locations: dict[str, str] | None = None) -> list[PageStat]:
    """Write every module page; ``locations`` gets the address of entries on part pages."""
    stats: list[PageStat] = []
    for module in sorted(data.by_module):
        stats += _module(data, docs_dir, module, data.by_module[module], budget,
                         locations if locations is not None else {})
    stats.append(_api_index(data, docs_dir))
    return stats


def _groups(module: str, syms: list[dict]) -> list[list[dict]]:
    """Top-level symbols, each followed by its members (depth-first, by name)."""
    on_page = {s["name"] for s in syms}
    children: dict[str, list[dict]] = {}
    tops: list[dict] = []
    for s in syms:
        if s["name"] == module:
            continue
        parent = s["parent"]
        if parent and parent != module and parent in on_page:
            children.setdefault(parent, []).append(s)
        else:
            tops.append(s)
    groups = []
    for t in tops:
        g = [t]
        stack = list(reversed(children.get(t["name"], [])))
        while stack:
            s = stack.pop()
            g.append(s)
            stack.extend(reversed(children.get(s["name"], [])))
        groups.append(g)
    return groups


def _module(data: SiteData, docs_dir: Path, module: str, syms: list[dict],
            budget: int, locations: dict[str, str]) -> list[PageStat]:
    page = links.module_page(module)
    self_sym = data.by_name.get(module)
    groups = _groups(module, syms)
    current = [g for g in groups if data.present(g[0])]
    gone = [g for g in groups if not data.present(g[0])]
    intro = _intro(data, module, self_sym, page)
    title = module

    def entries(target_page: str) -> list[str]:
        out = [_entry(data, s, target_page, top=(s is g[0])) for g in current for s in g]
        if gone:
            out.append(f'<h2 id="tfd--removed"{NOSEARCH}>No longer in TF {esc(data.newest)}</h2>')
            out += [_entry(data, s, target_page, top=(s is g[0])) for g in gone for s in g]
        return out

    full = intro + _summary_table(data, current, gone, page, None) + entries(page)
    size = sum(len(b.encode("utf-8")) + 2 for b in full)
    if size <= budget:
        return [PageStat(page, write_page(docs_dir, page, title, full))]

    # Too big for one page: entries go to part pages, the module page keeps an index.
    units = [(s, s is g[0]) for g in current for s in g] + \
        [(s, s is g[0]) for g in gone for s in g]
    runs: list[list[tuple[dict, bool]]] = [[]]
    used = 0
    for unit in units:
        n = len(_entry(data, unit[0], page, unit[1]).encode("utf-8")) + 2
        if runs[-1] and used + n > budget:
            runs.append([])
            used = 0
        runs[-1].append(unit)
        used += n
    part_of: dict[str, str] = {}
    stats = []
    for n, run in enumerate(runs, 1):
        part = f"{page}part-{n}/"
        blocks = [f'<p class="tfd-parts">{link(part, page, module)} · part {n} of '
                  f'{len(runs)}</p>']
        for s, top in run:
            part_of[s["name"]] = part
            locations[s["name"]] = f"{part}#{links.anchor(s['name'])}"
            if gone and s is gone[0][0]:
                blocks.append(f'<h2 id="tfd--removed"{NOSEARCH}>No longer in TF '
                              f'{esc(data.newest)}</h2>')
            blocks.append(_entry(data, s, part, top))
        stats.append(PageStat(part, write_page(docs_dir, part, f"{module} ({n}/{len(runs)})",
                                               blocks)))
    parts_nav = "".join(f'<li>{link(page, f"{page}part-{n}/", f"Part {n}")}: '
                        f'{esc(r[0][0]["name"])} … {esc(r[-1][0]["name"])}</li>'
                        for n, r in enumerate(runs, 1))
    main = intro + [f'<ul class="tfd-parts"{NOSEARCH}>{parts_nav}</ul>'] + \
        _summary_table(data, current, gone, page, part_of)
    stats.append(PageStat(page, write_page(docs_dir, page, title, main)))
    return stats


def _submodules(data: SiteData, module: str, page: str) -> list[str]:
    subs = [s for s in data.modules_under.get(module, ())]
    if not subs:
        return []
    items = "".join(
        f'<li>{link(page, links.module_page(s["name"]), s["name"])}'
        f'{"" if data.present(s) else " " + badge("removed in " + str(s["removed_in"]), "removed")}'
        f'</li>' for s in subs)
    return [f'<p class="tfd-kind"{NOSEARCH}>Modules</p><ul class="tfd-submodules"{NOSEARCH}>'
            f'{items}</ul>']


def _intro(data: SiteData, module: str, self_sym: dict | None, page: str) -> list[str]:
    blocks = []
    if self_sym:
        blocks.append(f'<p class="tfd-badges"{NOSEARCH}>{_badges(data, self_sym)}</p>')
        if self_sym["summary"]:
            blocks.append(f'<p class="tfd-summary">{esc_code(self_sym["summary"])}</p>')
        blocks += _deprecation(data, self_sym, page)
        body = _doc_body(self_sym)
        if body:
            blocks.append(f'<pre class="tfd-doc"{NOSEARCH}>{esc(body)}</pre>')
        hist = _history(data, self_sym, page)
        if hist:
            blocks.append(hist)
    else:
        blocks.append(f'<p class="tfd-summary">Symbols documented under <code>{esc(module)}'
                      f'</code>.</p>')
    return blocks + _submodules(data, module, page)


def _summary_table(data: SiteData, current: list[list[dict]], gone: list[list[dict]],
                   page: str, part_of: dict[str, str] | None) -> list[str]:
    """Table of symbols. With ``part_of`` (split pages) every symbol gets a row carrying its
    anchor; otherwise only top-level symbols, linking to their entries below."""
    groups = current + gone
    if not groups:
        return []
    rows = []
    for g in groups:
        for s in (g if part_of is not None else g[:1]):
            a = links.anchor(s["name"])
            if part_of is not None:
                target = f'{part_of[s["name"]]}#{a}'
                rid = f' id="{a}" data-tfd-moved="{esc(rel(page, target))}"'
            else:
                target = f"{page}#{a}"
                rid = ""
            state = "" if data.present(s) else f' {badge("removed in " + (s["removed_in"] or "?"), "removed")}'
            summary = esc_code(s["summary"] or "") if s["depth"] <= 2 or part_of is None else ""
            rows.append(f'<tr{rid}><td>{link(page, target, _label(s))}</td>'
                        f'<td>{esc(s["kind"])}{state}</td><td>{summary}</td></tr>')
    return [f'<table class="tfd-index"{NOSEARCH}><thead><tr><th>Symbol</th><th>Kind</th>'
            f'<th>Summary</th></tr></thead><tbody>' + "".join(rows) + "</tbody></table>"]


def _label(s: dict) -> str:
    return s["name"]


def _badges(data: SiteData, s: dict) -> str:
    out = [badge(s["kind"], "kind")]
    avail = data.availability.get(s["id"])
    if avail:
        out.append(badge(avail, "avail", "TensorFlow releases that have it"))
    if s["deprecated_in"]:
        out.append(badge(f'deprecated in {s["deprecated_in"]}', "dep"))
    if s["removed_in"]:
        out.append(badge(f'removed in {s["removed_in"]}', "removed"))
    return " ".join(out)


def _deprecation(data: SiteData, s: dict, page: str) -> list[str]:
    dep = dict(s["deprecation"] or {})
    if s["deprecated_in"]:
        # The symbol row keeps the instructions; the date and arguments are in the event.
        for e in data.history.get(s["id"], []):
            if e["kind"] == "deprecated" and isinstance(e["data"], dict):
                dep = {**e["data"], **dep}
    replacement = s["replacement"]
    instructions = (dep or {}).get("instructions") or ""
    use = ""
    if replacement and replacement not in instructions:
        use = f"<p>Use {symbol_link(data, replacement, page)} instead.</p>"
    if not (dep or s["deprecated_in"]):
        return [f'<p class="tfd-replacement"{NOSEARCH}>Replaced by '
                f'{symbol_link(data, replacement, page)}.</p>'] if replacement else []
    title = f'Deprecated in {esc(s["deprecated_in"])}' if s["deprecated_in"] else "Deprecated"
    body = [f"<p>{esc_code(instructions)}</p>"] if instructions else []
    if dep and dep.get("args"):
        body.append("<p>Deprecated arguments: " + ", ".join(
            f"<code>{esc(a)}</code>" for a in dep["args"]) + "</p>")
    if dep and dep.get("date"):
        body.append(f'<p>Scheduled for removal after {esc(dep["date"])}.</p>')
    body.append(use)
    return [f'<div class="admonition warning tfd-deprecation"{NOSEARCH}>'
            f'<p class="admonition-title">{title}</p>{"".join(body)}</div>']


def _doc_body(s: dict) -> str:
    doc = (s["doc"] or "").strip("\n")
    summary = (s["summary"] or "").strip()
    if summary and doc.lstrip().startswith(summary):
        doc = doc.lstrip()[len(summary):].lstrip("\n")
    return doc.rstrip()


def _history(data: SiteData, s: dict, page: str) -> str:
    events = data.history.get(s["id"], [])
    if not events:
        return ""
    items = []
    for e in events:
        word = EVENT_WORDS.get(e["kind"], e["kind"])
        detail = event_detail(data, e, page)
        items.append(f'<li><a href="{esc(rel(page, links.release_page(e["release"])))}">'
                     f'{esc(e["release"])}</a> {esc(word)}{detail}</li>')
    return (f'<details class="tfd-history"{NOSEARCH}><summary>Version history</summary>'
            f'<ul>{"".join(items)}</ul></details>')


def event_detail(data: SiteData, e: dict, page: str) -> str:
    """What an event adds to its one-word kind: where it moved, how the signature changed."""
    d = e.get("data") or {}
    if e["kind"] in ("removed", "moved") and (d.get("to") or d.get("from")):
        word = "moved to" if d.get("to") else "moved here from"
        if e["kind"] == "removed" and not d.get("to"):
            word = "replaced by"
        return f" ({word} {symbol_link(data, d.get('to') or d.get('from'), page)})"
    detail = e.get("detail") or ""
    if e["kind"] == "signature_changed":
        detail = detail.removeprefix("signature changed: ")
        sig = ""
        if d.get("from") is not None and d.get("to") is not None:
            sig = (f'<br><code>{esc(d["from"])}</code> → <code>{esc(d["to"])}</code>')
        return (f": {esc_code(detail)}" if detail else "") + sig
    if not detail or detail in ("added", "removed", "deprecated", "in the oldest release in the KB"):
        return ""
    return f": {esc_code(detail[:400])}"


def _entry(data: SiteData, s: dict, page: str, top: bool) -> str:
    a = links.anchor(s["name"])
    level = 2 if top else 3
    skip = any(s["name"].startswith(p) for p in SEARCH_SKIP_PREFIXES)
    parts = [f'<h{level} id="{a}" class="tfd-sym"{NOSEARCH if skip else ""}>{esc(s["name"])}'
             f'<a class="headerlink" href="#{a}" title="Permanent link">¶</a></h{level}>',
             f'<p class="tfd-badges"{NOSEARCH}>{_badges(data, s)}</p>']
    if s["signature"] is not None:
        parts.append(f'<pre class="tfd-sig"{NOSEARCH}><code>{esc(s["short"] + s["signature"])}'
                     f'</code></pre>')
    if s["summary"]:
        parts.append(f'<p class="tfd-summary">{esc_code(s["summary"])}</p>')
    parts += _deprecation(data, s, page)
    aliases = data.aliases.get(s["id"])
    if aliases:
        shown = aliases[:6]
        names = ", ".join(_symbol_link(data, n, page) for n in shown)
        more = f" and {len(aliases) - len(shown)} more" if len(aliases) > len(shown) else ""
        parts.append(f'<p class="tfd-aliases"{NOSEARCH}>Also: {names}{more}</p>')
    body = _doc_body(s)
    if body:
        parts.append(f'<pre class="tfd-doc"{NOSEARCH}>{esc(body)}</pre>')
    hist = _history(data, s, page)
    if hist:
        parts.append(hist)
    return "\n".join(parts)


def _symbol_link(data: SiteData, name: str, page: str) -> str:
    s = data.by_name.get(name)
    if not s:
        return f"<code>{esc(name)}</code>"
    return link(page, links.symbol_path(name, s["module"]), name)


def symbol_link(data: SiteData, name: str | None, page: str) -> str:
    """A link to ``name``'s entry if the KB has it, else the name as code."""
    if not name:
        return ""
    return _symbol_link(data, name, page)


def _api_index(data: SiteData, docs_dir: Path) -> PageStat:
    page = "api/"
    rows_now, rows_gone = [], []
    for module in sorted(data.by_module):
        syms = data.by_module[module]
        present = sum(1 for s in syms if data.present(s))
        self_sym = data.by_name.get(module)
        summary = esc_code(self_sym["summary"]) if self_sym and self_sym["summary"] else ""
        row = (f'<tr><td>{link(page, links.module_page(module), module)}</td>'
               f'<td>{present}</td><td>{summary}</td></tr>')
        (rows_now if present else rows_gone).append(row)
    head = '<thead><tr><th>Module</th><th>Symbols</th><th>Summary</th></tr></thead>'
    blocks = [f'<p>The public API of TensorFlow {esc(data.versions[0])} to '
              f'{esc(data.newest)}: one page per module, newest release first, with every '
              f'symbol that ever existed there.</p>',
              f'<table class="tfd-index"{NOSEARCH}>{head}<tbody>{"".join(rows_now)}'
              f'</tbody></table>']
    if rows_gone:
        blocks += [f'<h2 id="tfd--removed-modules">Modules no longer in TF {esc(data.newest)}</h2>',
                   f'<table class="tfd-index"{NOSEARCH}>{head}<tbody>{"".join(rows_gone)}'
                   f'</tbody></table>']
    return PageStat(page, write_page(docs_dir, page, "API reference", blocks))
