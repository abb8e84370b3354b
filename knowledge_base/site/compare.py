"""The "compare releases" view: what changed between ANY two releases, filtered by package,
kind of change and name, with totals; and the notes a release's facts call for.

The page is small; its data (``COMPARE_DATA``) holds, for every symbol, the runs of releases
that have it, the releases where its signature changed and where it became deprecated.
tfdesk-changes.js computes the difference of two releases from that in the browser, so any
pair works without a page per pair: added (in the second, not the first), removed (the
reverse), signature changed (a different signature run), deprecated (deprecated after the
first release, by the second). The view's address carries its filters
(``releases/compare/?from=2.15&to=2.16&pkg=tf.keras&kind=removed``), so release pages and
commands can link to a filtered view.
"""
from __future__ import annotations

import json
import urllib.parse
from pathlib import Path

from knowledge_base import links
from knowledge_base.site.api import PageStat
from knowledge_base.site.data import SiteData
from knowledge_base.site.markup import esc, write_page
from knowledge_base.site.search import default_url, kind_code

COMPARE_PAGE = "releases/compare/"
COMPARE_DATA = "releases/tfd-changes.json"
KINDS = (("added", "Added"), ("removed", "Removed"), ("signature", "Signature changed"),
         ("deprecated", "Deprecated"))


def compare_url(old: str | None = None, new: str | None = None, pkg: str = "",
                kind: str = "") -> str:
    """Site address of the view with these filters."""
    q = {k: v for k, v in (("from", old), ("to", new), ("pkg", pkg), ("kind", kind)) if v}
    return COMPARE_PAGE + ("?" + urllib.parse.urlencode(q) if q else "")


def _major(version: str | None) -> str:
    return (version or "").split(".", 1)[0]


def release_notes(data: SiteData) -> dict[int, list[str]]:
    """Notes a release's facts call for, by release ordinal: tf.keras switching to another
    major Keras (2.16: Keras 3), a companion package no longer shipped (tf.estimator)."""
    notes: dict[int, list[str]] = {}
    rel = data.releases
    for i in range(1, len(rel)):
        prev, cur = rel[i - 1], rel[i]
        if _major(cur.get("keras_version")) != _major(prev.get("keras_version")) and \
                cur.get("keras_version") and prev.get("keras_version"):
            notes.setdefault(i, []).append(
                f"TensorFlow {cur['version']} moved tf.keras to Keras "
                f"{_major(cur['keras_version'])} ({cur.get('keras_source') or 'keras'} "
                f"{cur['keras_version']}; {prev['version']} had {prev['keras_version']}): "
                f"most tf.keras changes in this release come from that switch. Keras "
                f"{_major(prev['keras_version'])} code keeps working through the tf_keras "
                f"package (TF_USE_LEGACY_KERAS=1).")
        if prev.get("estimator_version") and not cur.get("estimator_version"):
            notes.setdefault(i, []).append(
                f"TensorFlow {cur['version']} no longer ships tf.estimator "
                f"(tensorflow-estimator {prev['estimator_version']} was the last).")
    return notes


def _compare_data(data: SiteData) -> dict:
    syms = []
    for s in data.symbols:
        code = kind_code(s)
        url = links.sym_path(s)
        runs = data.runs.get(s["id"]) or [[s["first_ord"], s["last_ord"]]]
        sig_changes = [r[0] for r in (data.sig_runs.get(s["id"]) or [])[1:]
                       if r[0] > runs[0][0]]
        dep = next((e["ord"] for e in data.history.get(s["id"], [])
                    if e["kind"] == "deprecated"), -1)
        syms.append([s["name"], code, "" if default_url(s["name"], code) == url else url,
                     ",".join(f"{a}-{b}" for a, b in runs), sig_changes, dep])
    notes = release_notes(data)
    return {"releases": data.versions,
            "notes": [notes.get(i, []) for i in range(len(data.versions))],
            "symbols": syms}


def compare_page(data: SiteData, docs_dir: Path) -> list[PageStat]:
    path = Path(docs_dir) / COMPARE_DATA
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_compare_data(data), separators=(",", ":"), ensure_ascii=False),
                    encoding="utf-8")
    v = data.versions
    opts = "".join(f'<option value="{esc(x)}">{esc(x)}</option>' for x in reversed(v))
    kinds = "".join(f'<label><input type="checkbox" name="kind" value="{k}" checked> '
                    f'{esc(t)}</label> ' for k, t in KINDS)
    form = (
        f'<form class="tfd-compare" id="tfd-compare" data-src="../tfd-changes.json">'
        f'<p><label>From <select name="from">{opts}</select></label> '
        f'<label>to <select name="to">{opts}</select></label></p>'
        f'<p><label>Package <input name="pkg" list="tfd-pkgs" placeholder="tf.keras" '
        f'size="18"></label> <label>Name <input name="q" type="search" '
        f'placeholder="part of a name" size="18"></label></p>'
        f'<p class="tfd-compare-kinds">{kinds}</p></form>'
        f'<datalist id="tfd-pkgs">{_packages(data)}</datalist>'
        f'<div class="tfd-compare-notes"></div>'
        f'<p class="tfd-compare-totals" aria-live="polite">Loading the releases…</p>'
        f'<div class="tfd-compare-list"></div>')
    intro = (f"<p>What changed in the public API between any two releases "
             f"(TensorFlow {esc(v[0])} to {esc(v[-1])}): pick the releases, narrow to a package "
             f"(<code>tf.keras</code> includes its submodules), a kind of change or a name. "
             f"Each release's own page lists its changes by module.</p>")
    return [PageStat(COMPARE_PAGE, write_page(docs_dir, COMPARE_PAGE, "Compare releases",
                                              [intro, form]))]


def _packages(data: SiteData) -> str:
    mods = sorted({s["name"] for s in data.symbols if s["kind"] == "module"})
    return "".join(f'<option value="{esc(m)}">' for m in mods)
