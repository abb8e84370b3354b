"""The site's search index, built once at site-build time and read by tfdesk-search.js.

One entry per object: every name that ever named the same object in the same releases
(``tf.nn.softmax``, ``tf.math.softmax``, ``tf.compat.v2.nn.softmax``) is folded into one
entry under the name people use most (the usage counts of public guides, then the shortest
name outside ``tf.compat``). The entry carries what a reader may type for it: its names, the
TF1 names the upgrade tables map onto it (``tf.Session``), its parameters over all releases
(``validation_split`` finds ``Model.fit``) and a one-line summary in plain text. Removed
symbols keep their entries (their pages exist) and say when they went. The browser loads the
file once, parses it once and ranks in memory (no index is built on a page load).

Format (``INDEX_FILE``, compact arrays; the script reads positions, see ``Entry``)::

    {"format": 1, "releases": [...], "params": ["x", "y", ...],
     "entries": [[name, kind, url, summary, aliases, params, state, prior, tf1], ...]}

``kind`` is a one-letter code (``KIND_CODES``); ``url`` is "" when the script can derive it
from the name and kind (``default_url``), which keeps the file small; an alias is a name,
``[name, url]`` when its address is not the derived one, or 1 / 2 for the entry's name under
tf.compat.v1 / v2 (``MIRROR_CODES``).
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from knowledge_base import links
from knowledge_base.site.data import SiteData
from knowledge_base.site.params import param_names

INDEX_FILE = "search/tfd-index.json"
FORMAT = 1
SUMMARY_CHARS = 100
# Kinds as one letter. Upper case: the symbol has a page of its own; lower case: a section
# of its class's or module's page. "t": a TF1 name the upgrade tables list without a TF2
# symbol; "g": a page or section that is not a symbol (guides, release pages).
KIND_CODES = {"module": "M", "class": "C", "function": "F", "method": "d", "property": "p"}
OWN_PAGE = frozenset("MCF")
# Namespaces that mirror others: their names are aliases, never the name an entry goes by.
MIRRORS = ("tf.compat.", "tf.raw_ops.")
# An alias that is the main name under tf.compat.v1 / v2 (a third of all names) is written as
# 1 or 2 (the script reads 1 as "tf.compat.v1." + the main name without "tf.").
MIRROR_CODES = {"tf.compat.v1.": 1, "tf.compat.v2.": 2}
# Parameters every other function has: not worth a row in the index.
SKIP_PARAMS = frozenset({"name"})
_ASCII_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


@dataclass
class Entry:
    """One search result; ``row()`` is its form in the index file."""
    name: str
    kind: str
    url: str
    summary: str
    aliases: list
    params: list[int]
    state: str            # "" (in the newest release), "removed in 2.16", "TF1 name"...
    prior: int            # 0..20: how much people use it
    tf1: list[str]

    def row(self) -> list:
        return [self.name, self.kind, self.url, self.summary, self.aliases, self.params,
                self.state, self.prior, self.tf1]


def kind_code(s: dict) -> str:
    code = KIND_CODES.get(s["kind"], "k")
    if code == "F" and not links.has_own_page(s["kind"], s["parent"], s["module"]):
        return "d"
    return code


def default_url(name: str, code: str) -> str | None:
    """The address tfdesk-search.js derives from a name and kind code (None: none derivable).
    Must match the script's ``urlOf`` and :func:`knowledge_base.links.sym_path`."""
    if not _ASCII_NAME.match(name) or "." not in name:
        return None
    if code in OWN_PAGE:
        return f"api/{name}/"
    return f"api/{name.rsplit('.', 1)[0]}/#{name}"


def _url_for(s: dict, code: str) -> str:
    url = links.sym_path(s)
    return "" if default_url(s["name"], code) == url else url


def plain(text: str | None, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence as plain text: no backticks, Markdown links as their words."""
    if not text:
        return ""
    text = _MD_LINK.sub(r"\1", " ".join(text.split())).replace("`", "")
    first = re.split(r"(?<=[a-z0-9)\]])\. ", text, maxsplit=1)[0].rstrip(".")
    if len(first) <= limit:
        return first
    return first[:limit].rsplit(" ", 1)[0] + "…"


def _primary(names: list[dict], usage: dict[str, int]) -> dict:
    """The name an entry goes by: most used in guides, then outside mirrors, then short."""
    return min(names, key=lambda s: (-usage.get(s["name"], 0), s["name"].startswith(MIRRORS),
                                      s["depth"], len(s["name"]), s["name"]))


def _prior(group: list[dict], data: SiteData) -> int:
    used = max(data.usage.get(s["name"], 0) for s in group)
    refs = max(data.popularity.get(s["id"], (0, 0))[0] for s in group)
    return min(20, round(2 * math.log2(1 + used + refs / 4)))


def _state(s: dict, data: SiteData) -> str:
    if data.present(s):
        return "deprecated" if s["deprecated_in"] else ""
    return f"removed in {s['removed_in']}" if s["removed_in"] else f"last in {s['last']}"


def groups(data: SiteData) -> list[list[dict]]:
    """Symbols folded by object (the same object in the same releases is one thing)."""
    by_obj: dict[tuple, list[dict]] = defaultdict(list)
    for s in data.symbols:
        key = (s["object"], s["last_ord"], s["kind"]) if s["object"] else (s["name"],)
        by_obj[key].append(s)
    return list(by_obj.values())


def symbol_entries(data: SiteData, params: dict[str, int]) -> tuple[list[Entry], dict[str, Entry]]:
    out, by_name = [], {}
    signatures = data.signatures
    for group in groups(data):
        main = _primary(group, data.usage)
        code = kind_code(main)
        aliases = []
        for s in sorted(group, key=lambda s: (s["name"].startswith(MIRRORS), s["depth"], s["name"])):
            if s is main:
                continue
            c = kind_code(s)
            url = links.sym_path(s)
            if default_url(s["name"], code) != url or c != code:
                aliases.append([s["name"], url])
            else:
                mirror = {p + main["name"][3:]: n for p, n in MIRROR_CODES.items()}
                aliases.append(mirror.get(s["name"], s["name"]))
        names: list[str] = []
        for s in group:
            for sig in signatures.get(s["id"], [s["signature"]]):
                names += [p for p in param_names(sig) if p not in SKIP_PARAMS]
        pids = sorted({params.setdefault(p, len(params)) for p in names})
        e = Entry(main["name"], code, _url_for(main, code), plain(main["summary"]), aliases,
                  pids, _state(main, data), _prior(group, data), [])
        out.append(e)
        for s in group:
            by_name[s["name"]] = e
    return out, by_name


def rename_entries(data: SiteData, by_name: dict[str, Entry]) -> list[Entry]:
    """TF1 names: folded into their TF2 symbol's entry, or an entry pointing at their row in
    the migration view when the tables name no symbol the KB has."""
    out = []
    for r in data.renames:
        target = by_name.get(r["new"] or "")
        if target is not None:
            target.tf1.append(r["old"])
            continue
        what = plain(r["note"]) or (f"TF1 name; TF2: {r['new']}" if r["new"]
                                    else "TF1 name with no TF2 equivalent")
        out.append(Entry(r["old"], "t", f"{links.MIGRATION_PAGE}#{links.anchor(r['old'])}",
                         what, [], [], "TF1 name", 0, []))
    return out


def page_entries(data: SiteData) -> list[Entry]:
    def page(title: str, url: str, summary: str = "") -> Entry:
        return Entry(title, "g", url, summary, [], [], "", 0, [])
    out = []
    for ord_, v in enumerate(data.versions):
        info = data.releases[ord_]
        keras = " ".join(x for x in (info.get("keras_source"), info.get("keras_version")) if x)
        out.append(page(f"What changed in TensorFlow {v}", links.release_page(v),
                        f"Release {v}: added, removed, changed; tf.keras from {keras}"
                        if keras else f"Release {v}: added, removed, changed"))
    out += [page("Releases", links.RELEASES_PAGE, "Every release; compare any two"),
            page("TF1 → TF2 migration", links.MIGRATION_PAGE,
                 "TF1 names and what TF2 calls them (tf_upgrade_v2 tables)"),
            page("API reference", "api/", "Every module, class and function")]
    return out


def build_index(data: SiteData) -> dict:
    params: dict[str, int] = {}
    entries, by_name = symbol_entries(data, params)
    entries += rename_entries(data, by_name)
    entries += page_entries(data)
    return {"format": FORMAT, "releases": data.versions,
            "params": sorted(params, key=params.get),
            "entries": [e.row() for e in entries]}


def write_index(data: SiteData, docs_dir: Path) -> tuple[int, int]:
    """Write the index into the docs folder (MkDocs copies it); (entries, bytes)."""
    index = build_index(data)
    path = Path(docs_dir) / INDEX_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(index, separators=(",", ":"), ensure_ascii=False)
    path.write_text(text, encoding="utf-8")
    return len(index["entries"]), len(text.encode("utf-8"))
