"""The shipped KB's pages against real wheels: for a sample of symbols, the docstring a symbol
page shows for TensorFlow 2.2 and for 2.3 (release selector) is the one in that release's
wheel, read here straight from the defining source with the standard library."""
from __future__ import annotations

import ast
import random
import zipfile

import pytest

from knowledge_base.builder import summary_of
from knowledge_base.site.data import load
from knowledge_base.site.docstrings import Renderer
from knowledge_base.site.entries import doc_body, intro, linker
from knowledge_base.site.params import split_params
from knowledge_base.wheels import download_release_wheels
from tests.knowledge_base.test_doc_releases import shown

RELEASES = ("2.2", "2.3")
SAMPLE = 40  # symbols whose text changed somewhere, and as many whose text did not


def _wheel_doc(z: zipfile.ZipFile, obj: str, kind: str) -> tuple[str, str | None] | None:
    """(docstring, own __init__ docstring) of ``obj`` in the wheel, or None where it is not
    a plain top-level definition (or a method of one) there."""
    parts = obj.split(".")
    for cut in (len(parts) - 1, len(parts) - 2):
        path = "/".join(parts[:cut]) + ".py"
        if path in z.namelist():
            break
    else:
        return None
    body = ast.parse(z.read(path)).body
    node = None
    for name in parts[cut:]:
        node = next((n for n in body if isinstance(n, (ast.FunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            return None
        body = node.body
    doc = ast.get_docstring(node) or ""
    if kind != "class":
        return doc, None
    init = next((n for n in node.body if isinstance(n, ast.FunctionDef)
                 and n.name == "__init__"), None)
    return (doc, ast.get_docstring(init) or None) if init is not None else None


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_pages_show_each_releases_docstring_from_the_wheel(request, shipped_kb):
    cache = request.config.cache.mkdir("tfdesk-wheels")
    wheels = {v: zipfile.ZipFile(download_release_wheels(v, cache).tf) for v in RELEASES}
    kb = shipped_kb.kb
    data = load(kb)
    ords = {v: data.versions.index(v) for v in RELEASES}
    spans = {}  # (symbol id, ord) -> defining object
    for sid, a, b, obj in kb.db.execute("SELECT symbol_id, first_ord, last_ord, object "
                                        "FROM spans WHERE first_ord <= ?", (max(ords.values()),)):
        for o in ords.values():
            if a <= o <= b and obj:
                spans[(sid, o)] = obj
    candidates = [s for s in data.symbols if s["kind"] in ("function", "method", "class")
                  and all((s["id"], o) in spans for o in ords.values())]
    changed = [s for s in candidates if s["id"] in data.doc_runs]
    rng = random.Random(30)
    sample = rng.sample(changed, SAMPLE) + rng.sample(
        [s for s in candidates if s["id"] not in data.doc_runs], SAMPLE)
    r, checked, differs = Renderer(), 0, 0
    for s in sample:
        page = f"api/{s['name']}/"
        html = "\n".join(intro(data, r, s, page))
        groups = data.page_variants.pop(page, {})
        texts = {}
        for v, o in ords.items():
            got = _wheel_doc(wheels[v], spans[(s["id"], o)], s["kind"])
            if got is None or not got[0]:
                continue
            doc, init = got
            texts[v] = doc
            sig = next((sig for a, b, sig in data.sig_runs.get(s["id"], ()) if a <= o <= b),
                       s["signature"])
            want = r.docstring(doc_body({"doc": doc, "summary": summary_of(doc)}),
                               linker(data, page), split_params(sig) if sig else None, init)
            page_text = shown(html, o, groups)
            assert want in page_text, f"{s['name']} in {v}: the page does not show the wheel's text"
            summary = summary_of(doc)
            if summary:
                assert r.inline(summary, linker(data, page)) in page_text, (s["name"], v)
            checked += 1
        differs += len(set(texts.values())) > 1 or any(t != s["doc"] for t in texts.values())
    print(f"\n{checked} (symbol, release) pairs checked; {differs} of {len(sample)} symbols "
          f"had another text in 2.2/2.3 than the newest")
    assert checked >= SAMPLE, f"only {checked} (symbol, release) pairs could be read"
    assert differs >= SAMPLE // 4, f"only {differs} sampled symbols had another text"
