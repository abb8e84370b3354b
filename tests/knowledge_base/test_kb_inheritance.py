"""Inherited members (knowledge_base.inheritance) against Python's own method resolution.

Random class hierarchies are generated, built as real Python classes (``type()``), and
described the way the extractor does: each public class lists the members defined by itself
and by its non-public bases, plus ``bases`` (its public ancestors in MRO order). The KB built
from that must hold, for every public class and release, exactly the public members Python
finds on the class, each defined where Python's MRO finds it."""
from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowledge_base.builder import Merged, build_kb, merge, read_merged, write_merged
from knowledge_base.records import (CLASS, METHOD, Deprecation, ReleaseExtract, ReleaseInfo,
                                    SymbolRecord)
from knowledge_base.store import KB

MEMBERS = ["fit", "build", "call", "get_weights", "save", "summary"]


@st.composite
def hierarchies(draw):
    """Classes 0..n-1, each with bases among the earlier ones, some public, own members."""
    n = draw(st.integers(2, 7))
    classes = []
    for i in range(n):
        bases = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=2)) if i else []
        own = draw(st.lists(st.sampled_from(MEMBERS), unique=True, max_size=3))
        public = draw(st.booleans()) or i == n - 1
        classes.append((bases, own, public))
    return classes


def python_classes(spec):
    made = []
    for i, (bases, own, _) in enumerate(spec):
        body = {m: (lambda self, _i=i, _m=m: (_i, _m)) for m in own}
        try:
            made.append(type(f"C{i}", tuple(made[b] for b in bases) or (object,), body))
        except TypeError:  # no consistent MRO: Python refuses it, so do we
            return None
    return made


def extract_of(spec, made, version="2.16"):
    """What the extractor writes for this hierarchy (see the module docstring)."""
    obj = {id(c): f"pkg.m.C{i}" for i, c in enumerate(made)}
    public = {i for i, (_, _, p) in enumerate(spec) if p}
    records = []
    for i, c in enumerate(made):
        if i not in public:
            continue
        name = f"tf.C{i}"
        mro = c.__mro__[1:-1]
        bases = [obj[id(b)] for b in mro if int(b.__name__[1:]) in public]
        records.append(SymbolRecord(name, CLASS, obj[id(c)], bases=bases or None))
        for m in MEMBERS:
            definer = next((k for k in c.__mro__ if m in k.__dict__), None)
            # A public base documents its own members; the rest are listed here.
            if definer is not None and (definer is c or int(definer.__name__[1:]) not in public):
                records.append(SymbolRecord(f"{name}.{m}", METHOD, f"{obj[id(definer)]}.{m}"))
    return ReleaseExtract(ReleaseInfo(version, version + ".0", "w.whl"), records)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hierarchies())
def test_members_are_what_python_finds(tmp_path_factory, spec):
    made = python_classes(spec)
    if made is None:
        return
    path = tmp_path_factory.mktemp("kb") / "kb.sqlite"
    build_kb([extract_of(spec, made)], path)
    kb = KB(path)
    for i, c in enumerate(made):
        if not spec[i][2]:
            continue
        have = {r[0].rpartition(".")[2]: r[1] for r in kb.db.execute(
            "SELECT name, object FROM symbols WHERE parent = ? AND kind = 'method'", (f"tf.C{i}",))}
        expect = {}
        for m in MEMBERS:
            definer = next((k for k in c.__mro__ if m in k.__dict__), None)
            if definer is not None:
                expect[m] = f"pkg.m.{definer.__name__}.{m}"
        assert have == expect, (spec, i)


def test_a_member_moved_to_a_public_base_is_not_removed(tmp_path):
    """Keras 3 moved Model.get_weights to Layer: Model keeps it, defined on Layer."""
    old = ReleaseExtract(ReleaseInfo("2.15", "2.15.1", "a.whl"), [
        SymbolRecord("tf.keras.layers.Layer", CLASS, "k.Layer"),
        SymbolRecord("tf.keras.Model", CLASS, "k.Model", bases=["k.Layer"]),
        SymbolRecord("tf.keras.Model.get_weights", METHOD, "k.Model.get_weights")])
    new = ReleaseExtract(ReleaseInfo("2.16", "2.16.2", "b.whl"), [
        SymbolRecord("tf.keras.layers.Layer", CLASS, "k3.Layer"),
        SymbolRecord("tf.keras.layers.Layer.get_weights", METHOD, "k3.Layer.get_weights"),
        SymbolRecord("tf.keras.Model", CLASS, "k3.Model", bases=["k3.Layer"])])
    build_kb([old, new], tmp_path / "kb.sqlite")
    kb = KB(tmp_path / "kb.sqlite")
    sym = kb.symbol("tf.keras.Model.get_weights")
    assert sym["removed_in"] is None and sym["last"] == "2.16"
    assert sym["canonical"] == "tf.keras.layers.Layer.get_weights"
    assert "removed" not in [e["kind"] for e in kb.events(sym["id"])]


def test_bases_and_stubs_survive_the_shipped_format(tmp_path):
    stub = Deprecation("raises", "ImportError: `keras.optimizers.legacy` is not supported")
    ex = ReleaseExtract(ReleaseInfo("2.21", "2.21.0", "c.whl"), [
        SymbolRecord("tf.A", CLASS, "m.A"),
        SymbolRecord("tf.B", CLASS, "m.B", bases=["m.A"]),
        SymbolRecord("tf.keras.optimizers.legacy.Adam", CLASS, "m.Stub", deprecation=stub),
        SymbolRecord("tf.keras.optimizers.legacy.SGD", CLASS, "m.Stub", deprecation=stub)])
    merged = merge([ex])
    write_merged(merged, tmp_path / "x.jsonl.xz")
    again = read_merged(tmp_path / "x.jsonl.xz")
    assert isinstance(again, Merged) and again.spans == merged.spans
    assert again.spans["tf.B"][0].bases == ("m.A",)
    build_kb(again, tmp_path / "kb.sqlite")
    kb = KB(tmp_path / "kb.sqlite")
    adam = kb.symbol("tf.keras.optimizers.legacy.Adam")
    assert kb.unusable(adam).startswith("ImportError: `keras.optimizers.legacy`")
    assert adam["canonical"] == adam["name"] and kb.unusable(kb.symbol("tf.A")) is None
    kinds = [e["kind"] for e in kb.events(adam["id"])]
    assert "unusable" in kinds, kinds
    assert json.loads(kb.spans(adam["id"])[0]["deprecation"])["how"] == "raises"
