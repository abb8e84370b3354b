"""Each release's docstring, and a class's __init__ docstring, kept compactly from the wheels
to the page: the extract stores every text once and each release finds its own again; the
site shows the chosen release's description and constructor Args from ``__init__``."""
from __future__ import annotations

import lzma
import re
from html import unescape

from hypothesis import given, settings
from hypothesis import strategies as st

from knowledge_base.builder import build_kb, merge, read_merged, write_merged
from knowledge_base.extract import extract_release
from knowledge_base.records import FUNCTION, ReleaseExtract, ReleaseInfo, SymbolRecord
from knowledge_base.site.data import load
from knowledge_base.site.docstrings import Renderer
from knowledge_base.site.entries import intro
from knowledge_base.store import KB
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import api_file, make_tf_wheel

VERSIONS = ["2.2", "2.3", "2.4", "2.5", "2.6"]


def _release(i: int, symbols) -> ReleaseExtract:
    v = VERSIONS[i]
    return ReleaseExtract(ReleaseInfo(v, v + ".0", f"tensorflow_cpu-{v}.0-cp38.whl"), symbols)


# name -> per release: None (absent) or (docstring, __init__ docstring); few distinct texts,
# so runs, repeats after a change and texts shared between names all occur.
_TEXTS = st.sampled_from(["", "Computes a.", "Computes a.\n\nArgs:\n  x: the x.", "Other text.",
                          "Ünïcode \"quoted\"\n\n```python\nx = 1\n```"])
_HISTORY = st.dictionaries(
    st.sampled_from(["tf.a", "tf.b", "tf.C", "tf.C.m"]),
    st.lists(st.none() | st.tuples(_TEXTS, _TEXTS), min_size=len(VERSIONS),
             max_size=len(VERSIONS)), min_size=1)


@settings(max_examples=150, deadline=None)
@given(history=_HISTORY)
def test_every_releases_docstring_survives_the_compact_extract(tmp_path_factory, history):
    extracts = [_release(i, [SymbolRecord(n, FUNCTION, f"m.{n}", doc=h[i][0], init_doc=h[i][1])
                             for n, h in sorted(history.items()) if h[i] is not None])
                for i in range(len(VERSIONS))]
    path = tmp_path_factory.mktemp("x") / "kb-extract.jsonl.xz"
    write_merged(merge(extracts), path)
    back = read_merged(path)
    for name, h in history.items():
        for i, got in enumerate(h):
            if got is None or not got[0]:
                continue  # an empty docstring keeps no text of its own
            doc = next((t for a, b, t in back.doc_runs.get(name, ()) if a <= i <= b),
                       back.docs.get(name))
            assert doc == got[0], (name, i)
        inits = {i: t for a, b, t in back.init_runs.get(name, ()) for i in range(a, b + 1)}
        assert inits == {i: g[1] for i, g in enumerate(h) if g and g[1]}, name
    # Each text is stored once, however many releases and names use it.
    with lzma.open(path, "rt", encoding="utf-8") as f:
        stored = [line for line in f if line.startswith('{"type": "doc"')]
    assert len(stored) == len(set(stored))


GRAD = '''
class GradientTape:
    """Record operations for automatic differentiation.

    Operations are recorded if they are executed within this context manager.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        """Creates a new GradientTape.

        Args:
          persistent: {persistent}
          watch_accessed_variables: Boolean controlling whether the tape will
            automatically `watch` any (trainable) variables accessed.
        """
'''
NN = '''
def softmax_v2(logits, axis=-1, name=None):
    """{doc}"""
'''


OLD_ARG = "Boolean controlling whether a persistent gradient tape is created."
NEW_ARG = "Boolean: keep the tape for more than one gradient call."


def _wheel(dest, version: str, softmax_doc: str, persistent: str = OLD_ARG):
    style = "new" if int(version.split(".")[1]) >= 16 else "old"
    sub = "from ._api.v2 import nn" if style == "old" else "from tensorflow._api.v2 import nn"
    root = api_file([("tensorflow.python.eager.backprop", "GradientTape")], [],
                    package="tensorflow", style=style)
    api = {"": root.replace("import sys as _sys\n", f"import sys as _sys\n{sub}\n"),
           "nn": api_file([("tensorflow.python.ops.nn_ops", "softmax_v2", "softmax")],
                          package="tensorflow._api.v2.nn", style=style)}
    return make_tf_wheel(dest, version, api, {
        "tensorflow/python/eager/backprop.py": GRAD.replace("{persistent}", persistent),
        "tensorflow/python/ops/nn_ops.py": NN.format(doc=softmax_doc)})


OLD_DOC = "Computes softmax activations (the 2.14 text).\n\n    Used for multi-class predictions."
NEW_DOC = "Computes softmax activations.\n\n    Used for multi-class classification."


def _pages(tmp_path):
    wheels = tmp_path / "wheels"
    _wheel(wheels, "2.14.1", OLD_DOC)
    _wheel(wheels, "2.15.1", OLD_DOC)
    _wheel(wheels, "2.16.2", NEW_DOC, NEW_ARG)
    extracts = [extract_release(find_release_wheels(v, wheels)) for v in ("2.14", "2.15", "2.16")]
    by = {s.name: s for s in extracts[0].symbols}
    assert by["tf.GradientTape"].init_doc.startswith("Creates a new GradientTape.")
    shipped = tmp_path / "kb-extract.jsonl.xz"
    write_merged(merge(extracts), shipped)
    build_kb(read_merged(shipped), tmp_path / "kb.sqlite")
    data = load(KB(tmp_path / "kb.sqlite"))
    r = Renderer()

    def page(name: str) -> tuple[str, dict]:
        """The page's HTML for ``name``, and what its releases file would hold."""
        s, path = data.by_name[name], f"api/{name}/"
        html = "\n".join(intro(data, r, s, path))
        return html, data.page_variants.pop(path, {})
    return data, page


_DIV = re.compile(r"<div\b|</div>")


def _block(html: str, start: int) -> int:
    """The end of the <div> opening at ``start`` (its nested divs balanced)."""
    depth = 0
    for m in _DIV.finditer(html, start):
        depth += 1 if m.group() == "<div" else -1
        if depth == 0:
            return m.end()
    raise AssertionError("unbalanced <div>")


_GROUP = re.compile(r'<div class="tfd-docs" data-tfd-docs="([^"]*)">')
_NEWEST = '<div class="tfd-docv" data-tfd-doc-newest>'


def shown(html: str, ord_: int | None, groups: dict) -> str:
    """``html`` as tfdesk.js shows it for release ``ord_`` (None: every release): each
    .tfd-docs group shows the first of its variants in ``groups`` (the page's releases file)
    whose releases hold ``ord_``, else the newest text it carries."""
    out, pos = [], 0
    while (m := _GROUP.search(html, pos)):
        end = _block(html, m.start())
        assert html.startswith(_NEWEST, m.end()), "a group opens with the newest text"
        newest_end = _block(html, m.end())
        assert newest_end == end - len("</div>"), "a page's group holds the newest text only"
        pick = html[m.end() + len(_NEWEST):newest_end - len("</div>")]
        for runs, variant in groups.get(unescape(m.group(1)), ()):
            if ord_ is not None and any(int(a) <= ord_ <= int(z) for a, z in
                                        (r.split("-") for r in runs.split(","))):
                pick = variant
                break
        out += [html[pos:m.start()], pick]
        pos = end
    return "".join(out) + html[pos:]


def test_the_page_carries_each_releases_docstring_and_init_args(tmp_path):
    data, page = _pages(tmp_path)
    html, groups = page("tf.nn.softmax")
    assert "the 2.14 text" not in html  # the page itself carries the newest text only
    for ord_ in (None, 2):  # every release, or 2.16: the newest text
        assert "multi-class classification" in shown(html, ord_, groups)
        assert "the 2.14 text" not in shown(html, ord_, groups)
    for ord_ in (0, 1):     # 2.14, 2.15: their own text, said to be theirs
        text = shown(html, ord_, groups)
        assert "Computes softmax activations (the 2.14 text)." in text
        assert "multi-class predictions" in text and "multi-class classification" not in text
        assert "Description as in TensorFlow 2.14–2.15" in text
    # A docstring that never changed carries no copies.
    assert page("tf.nn")[1] == {}
    # tf.GradientTape documents its constructor in __init__: the Args table describes each
    # parameter, as each release's __init__ did.
    tape, groups = page("tf.GradientTape")
    for ord_, arg in ((None, NEW_ARG), (2, NEW_ARG), (0, OLD_ARG), (1, OLD_ARG)):
        text = shown(tape, ord_, groups)
        assert re.findall(r'<tr data-tfd-param="(\w+)">', text) == [
            "persistent", "watch_accessed_variables"]
        other = NEW_ARG if arg == OLD_ARG else OLD_ARG
        assert arg in text and other not in text, ord_
        assert "not described in the docstring" not in text
