"""One symbol's documentation block: badges, signature, rendered docstring, deprecation,
signature by release and version history. Shared by module, class and function pages and by
the release pages, which link to symbols the same way.
"""
from __future__ import annotations

import json
import re

from knowledge_base import links, tf2_notes
from knowledge_base.builder import summary_of
from knowledge_base.site.data import VARIANT_CACHE, SiteData
from knowledge_base.site.doc_versions import content_key, newest_init, variants
from knowledge_base.site.docstrings import Renderer
from knowledge_base.site.markup import badge, esc, esc_code, link, rel
from knowledge_base.site.params import param_names, split_params

_INLINE = Renderer()  # event details are one line of Markdown each
_OPEN_LINK = re.compile(r"\[[^\]]*(\]\([^)]*)?$")  # a link (or its text) cut at the end
EVENT_WORDS = {"added": "added", "removed": "removed", "signature_changed": "signature changed",
               "deprecated": "deprecated", "undeprecated": "no longer deprecated",
               "moved": "moved", "definition_moved": "definition moved"}


def releases_attr(data: SiteData, s: dict) -> str:
    """``data-tfd-r`` with the runs of release ordinals that have ``s``: the release selector
    (tfdesk.js) dims what the chosen release does not have."""
    runs = data.runs.get(s["id"]) or [[s["first_ord"], s["last_ord"]]]
    return f' data-tfd-r="{",".join(f"{a}-{b}" for a, b in runs)}"'


def sigs_attr(data: SiteData, s: dict) -> str:
    """``data-tfd-sigs``: each run of releases with its signature and parameter names, for the
    release selector (tfdesk.js) to show the chosen release's; only where it ever changed."""
    runs = data.sig_runs.get(s["id"]) or []
    if len({sig for _, _, sig in runs}) < 2:
        return ""
    payload = [[a, b, None if sig is None else s["short"] + sig, param_names(sig)]
               for a, b, sig in runs]
    return f' data-tfd-sigs="{esc(json.dumps(payload, separators=(",", ":")))}"'


def badges(data: SiteData, s: dict) -> str:
    out = [badge(s["kind"], "kind")]
    avail = data.availability.get(s["id"])
    if avail:
        out.append(badge(avail, "avail", "TensorFlow releases that have it"))
    provider = data.providers.get(s["id"])
    if provider:
        out.append(badge(f"provided by {provider}", "avail",
                         "installed with this companion package, not TensorFlow itself"))
    if s["deprecated_in"]:
        out.append(badge(f'deprecated in {s["deprecated_in"]}', "dep"))
    if s["removed_in"]:
        out.append(badge(f'removed in {s["removed_in"]}', "removed"))
    return " ".join(out)


def symbol_link(data: SiteData, name: str | None, page: str) -> str:
    """A link to ``name``'s documentation if the KB has it, else the name as code."""
    if not name:
        return ""
    s = data.by_name.get(name)
    if not s:
        return f"<code>{esc(name)}</code>"
    return link(page, links.sym_path(s), name)


def linker(data: SiteData, page: str):
    """For the docstring renderer: ``tf.…`` names the KB knows -> relative href."""
    def href(name: str) -> str | None:
        s = data.by_name.get(name)
        return rel(page, links.sym_path(s)) if s else None
    return href


def deprecation(data: SiteData, r: Renderer, s: dict, page: str) -> list[str]:
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
        if replacement:
            return [f'<p class="tfd-replacement">Replaced by '
                    f'{symbol_link(data, replacement, page)}.</p>']
        way = tf2_way(data, s)
        return [f'<p class="tfd-replacement">Native TF 2 way (TensorFlow\'s migration note): '
                f'{symbol_link(data, way, page)}.</p>'] if way else []
    title = f'Deprecated in {esc(s["deprecated_in"])}' if s["deprecated_in"] else "Deprecated"
    body = [f"<p>{r.inline(instructions, linker(data, page))}</p>"] if instructions else []
    if dep and dep.get("args"):
        body.append("<p>Deprecated arguments: " + ", ".join(
            f"<code>{esc(a)}</code>" for a in dep["args"]) + "</p>")
    if dep and dep.get("date"):
        body.append(f'<p>Scheduled for removal after {esc(dep["date"])}.</p>')
    body.append(use)
    return [f'<div class="admonition warning tfd-deprecation">'
            f'<p class="admonition-title">{title}</p>{"".join(body)}</div>']


def tf2_way(data: SiteData, s: dict) -> str | None:
    """A tf.compat.v1 symbol's native TF2 way, as its docstring's migration note gives it."""
    if not s["name"].startswith("tf.compat.v1."):
        return None

    def present(n: str) -> bool:
        t = data.by_name.get(n)
        return t is not None and t["removed_in"] is None
    return tf2_notes.tf2_way(s["doc"], s["name"], present)


def doc_body(s: dict) -> str:
    """The docstring without its first line when that is the summary shown above it."""
    doc = (s["doc"] or "").strip("\n")
    summary = (s["summary"] or "").strip()
    if summary and doc.lstrip().startswith(summary):
        doc = doc.lstrip()[len(summary):].lstrip("\n")
    return doc.rstrip()


def history(data: SiteData, s: dict, page: str) -> str:
    events = data.history.get(s["id"], [])
    if not events:
        return ""
    items = []
    for e in events:
        word = EVENT_WORDS.get(e["kind"], e["kind"])
        detail = event_detail(data, e, page)
        items.append(f'<li><a href="{esc(rel(page, links.release_page(e["release"])))}">'
                     f'{esc(e["release"])}</a> {esc(word)}{detail}</li>')
    return (f'<details class="tfd-history"><summary>Version history</summary>'
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
    # Deprecation texts are Markdown ([Distribution Strategies](https://...)): render them.
    return f": {_INLINE.inline(_clip(detail), linker(data, page))}"


def _clip(text: str, limit: int = 400) -> str:
    """At most ``limit`` characters, cut before a Markdown link rather than through it."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    while (m := _OPEN_LINK.search(cut)):
        cut = cut[:m.start()]
    return cut.rstrip() + "…"


def signature_by_release(data: SiteData, s: dict) -> str:
    """A table of the signature as each run of releases had it, where it ever changed."""
    changes = [e for e in data.history.get(s["id"], [])
               if e["kind"] == "signature_changed" and e["data"].get("from") is not None
               and e["data"].get("to") is not None]
    if not changes:
        return ""
    v = data.versions
    rows, start = [], s["first_ord"]
    for e in changes:
        rows.append((start, e["ord"] - 1, e["data"]["from"]))
        start = e["ord"]
    rows.append((start, s["last_ord"], changes[-1]["data"]["to"]))
    body = "".join(
        f'<tr data-tfd-r="{a}-{b}"><td>{esc(v[a] if a == b else f"{v[a]}–{v[b]}")}</td>'
        f'<td><code>{esc(s["short"] + sig)}</code></td></tr>'
        for a, b, sig in reversed(rows) if a <= b)
    return ('<details class="tfd-sigs" open><summary>Signature by release</summary>'
            '<table class="tfd-index"><thead><tr><th>Releases</th><th>Signature</th></tr></thead>'
            f'<tbody>{body}</tbody></table></details>')


def entry(data: SiteData, r: Renderer, s: dict, page: str, level: int) -> str:
    """The full documentation of ``s`` with a heading of ``level`` carrying its anchor."""
    a = links.anchor(s["name"])
    parts = [f'<div class="tfd-entry"{releases_attr(data, s)}>',
             f'<h{level} id="{a}" class="tfd-sym">{esc(s["name"])}'
             f'<a class="headerlink" href="#{a}" title="Permanent link">¶</a></h{level}>']
    parts += intro(data, r, s, page)
    parts.append("</div>")
    return "\n".join(parts)


def _docstring(data: SiteData, r: Renderer, s: dict, page: str) -> str:
    """The rendered docstring; symbols sharing docstring and signature (aliases, inherited
    members: most of the KB) render it once. Links in it are relative, the same from every
    page at one depth; a rendering is dropped when its last symbol has it."""
    base = (s["doc"], s["summary"], s["signature"])
    init_doc = newest_init(data, s) if s["kind"] == "class" else None
    key = base + (page.count("/"), init_doc)
    html = data.rendered.get(key)
    if html is None:
        params = split_params(s["signature"]) if s["signature"] is not None else None
        html = r.docstring(doc_body(s), linker(data, page), params, init_doc)
    left = data.doc_uses.get(base, 1) - 1
    data.doc_uses[base] = left
    if left > 0:
        data.rendered[key] = html
    else:
        data.rendered.pop(key, None)
    return html


def _summary(r: Renderer, summary: str | None, href) -> str:
    return f'<p class="tfd-summary">{r.inline(summary, href)}</p>' if summary else ""


def _by_release(data: SiteData, page: str, newest: str,
                older: list[tuple[str, str, str]]) -> str:
    """``newest`` in a group that tfdesk.js fills, when a release is chosen, with the variants
    ``older`` ([(runs, note, html)]) from the page's releases file (see doc_versions): most
    readers never choose one, so the page does not carry them. The group's key is its
    content's hash, so alias pages (same texts) share one file."""
    if not older:
        return newest
    variants = [[runs, note + html] for runs, note, html in older]
    key = content_key(variants)
    data.page_variants.setdefault(page, {})[key] = variants
    return (f'<div class="tfd-docs" data-tfd-docs="{esc(key)}"><div class="tfd-docv" '
            f'data-tfd-doc-newest>{newest}</div></div>')


def _described(data: SiteData, r: Renderer, s: dict, page: str) -> tuple[str, str]:
    """(summary, docstring) HTML: the newest release's, with older releases' where they
    differ (docstring or __init__ Args)."""
    href = linker(data, page)
    summary, doc = _summary(r, s["summary"], href), _docstring(data, r, s, page)
    summaries, docs = [], []
    for v in variants(data, s):
        vsum = summary_of(v.doc)
        vs = {**s, "doc": v.doc, "summary": vsum}
        key = (v.doc, v.signature, v.init_doc, page.count("/"))
        vdoc = data.variant_rendered.get(key)
        if vdoc is None:
            if len(data.variant_rendered) >= VARIANT_CACHE:
                data.variant_rendered.clear()
            params = split_params(v.signature) if v.signature is not None else None
            vdoc = data.variant_rendered[key] = r.docstring(doc_body(vs), href, params,
                                                            v.init_doc)
        vsum_html = _summary(r, vsum, href)
        shown = ", ".join(data.versions[a] if a == b else
                          f"{data.versions[a]}–{data.versions[b]}" for a, b in v.runs)
        note = (f'<p class="tfd-doc-note">Description as in TensorFlow {esc(shown)} '
                f'(TensorFlow {esc(data.versions[s["last_ord"]])} says otherwise).</p>')
        if vsum_html != summary:  # the note goes with the first part that differs
            summaries.append((v.releases, note, vsum_html))
            note = ""
        if vdoc != doc:
            docs.append((v.releases, note, vdoc))
    return (_by_release(data, page, summary, summaries), _by_release(data, page, doc, docs))


def intro(data: SiteData, r: Renderer, s: dict, page: str) -> list[str]:
    """Everything about ``s`` but its heading: badges, signature, summary, docs, history."""
    parts = [f'<p class="tfd-badges">{badges(data, s)}</p>']
    if s["signature"] is not None:
        parts.append(f'<pre class="tfd-sig"{sigs_attr(data, s)}><code>'
                     f'{esc(s["short"] + s["signature"])}</code></pre>')
    summary, doc = _described(data, r, s, page)
    if summary:
        parts.append(summary)
    parts += deprecation(data, r, s, page)
    aliases = data.aliases.get(s["id"])
    if aliases:
        shown = aliases[:6]
        names = ", ".join(symbol_link(data, n, page) for n in shown)
        more = f" and {len(aliases) - len(shown)} more" if len(aliases) > len(shown) else ""
        parts.append(f'<p class="tfd-aliases">Also: {names}{more}</p>')
    if doc:
        parts.append(doc)
    sigs = signature_by_release(data, s)
    if sigs:
        parts.append(sigs)
    hist = history(data, s, page)
    if hist:
        parts.append(hist)
    return parts
