import json
import sqlite3

import pytest

from knowledge_base.names import name_words
from knowledge_base.builder import (build_kb, merge, read_merged,
                                    signature_change, write_merged)
from knowledge_base.errors import KBError
from knowledge_base.store import KB
from tests.kbdata import history_releases


@pytest.fixture
def kb(tmp_path):
    build_kb(history_releases(), tmp_path / "kb.sqlite")
    return KB(tmp_path / "kb.sqlite")


def kinds(kb, name):
    return [(e["release"], e["kind"]) for e in kb.events(kb.symbol(name)["id"])]


def test_first_last_and_removal(kb):
    est = kb.symbol("tf.estimator.Estimator")
    assert (est["first"], est["last"], est["removed_in"]) == ("2.14", "2.15", "2.16")
    assert kinds(kb, "tf.estimator.Estimator") == [
        ("2.14", "added"), ("2.15", "deprecated"), ("2.16", "removed")]
    relu = kb.symbol("tf.nn.relu")
    assert (relu["first"], relu["removed_in"]) == ("2.16", None)
    assert kb.availability(relu) == "2.16"
    assert kb.availability(kb.symbol("tf.pad")) == "2.14–2.16"


def test_signature_change_names_the_default(kb):
    ev = [e for e in kb.events(kb.symbol("tf.nn.softmax")["id"]) if e["kind"] == "signature_changed"]
    assert len(ev) == 1 and ev[0]["release"] == "2.15"
    assert ev[0]["data"]["defaults"] == [["axis", "None", "-1"]]
    assert "`axis` None → -1" in ev[0]["detail"]


def test_move_when_alias_survives_object_change(kb):
    # experimental.SyncBatchNormalization became an alias of BatchNormalization in 2.16,
    # stays; the deprecation of Estimator gives its instructions
    est = kb.symbol("tf.estimator.Estimator")
    assert est["deprecated_in"] == "2.15" and "tf.keras" in est["deprecation"]
    assert kb.symbol("tf.keras.layers.experimental.SyncBatchNormalization")["canonical"] == \
        "tf.keras.layers.BatchNormalization"


def test_moved_out_of_experimental(tmp_path):
    from knowledge_base.records import CLASS, SymbolRecord
    from tests.kbdata import release, mod
    old = SymbolRecord("tf.keras.layers.experimental.preprocessing.RandomFlip", CLASS, "keras.a.RandomFlip")
    new = SymbolRecord("tf.keras.layers.RandomFlip", CLASS, "keras.a.RandomFlip")
    new3 = SymbolRecord("tf.keras.layers.RandomFlip", CLASS, "keras.src.b.RandomFlip")
    rels = [release("2.5", [mod("tf"), old]), release("2.6", [mod("tf"), old, new]),
            release("2.16", [mod("tf"), new3])]
    build_kb(rels, tmp_path / "kb.sqlite")
    kb = KB(tmp_path / "kb.sqlite")
    sym = kb.symbol("tf.keras.layers.experimental.preprocessing.RandomFlip")
    assert sym["removed_in"] == "2.16" and sym["replacement"] == "tf.keras.layers.RandomFlip"
    assert ("2.16", "moved") in kinds(kb, "tf.keras.layers.RandomFlip")


def test_members_are_documented_on_their_class_module(kb):
    fit = kb.symbol("tf.keras.Model.fit")
    assert fit["module"] == "tf.keras" and fit["parent"] == "tf.keras.Model"
    assert kb.site_path(fit) == "api/tf.keras.Model/#tf.keras.Model.fit"


def test_merged_roundtrip_gives_identical_kb(tmp_path):
    merged = merge(history_releases())
    write_merged(merged, tmp_path / "x.jsonl.xz")
    build_kb(read_merged(tmp_path / "x.jsonl.xz"), tmp_path / "a.sqlite")
    build_kb(history_releases(), tmp_path / "b.sqlite")
    q = "SELECT name, first, last, signature, doc, replacement FROM symbols ORDER BY name"
    a = sqlite3.connect(tmp_path / "a.sqlite").execute(q).fetchall()
    b = sqlite3.connect(tmp_path / "b.sqlite").execute(q).fetchall()
    assert a == b and len(a) > 10


def test_failed_build_leaves_old_kb(tmp_path):
    path = tmp_path / "kb.sqlite"
    build_kb(history_releases(), path)
    before = path.read_bytes()
    with pytest.raises(KBError):
        build_kb([], path)
    (tmp_path / "bad.jsonl.xz").write_bytes(b"not xz")
    with pytest.raises(KBError, match="bad.jsonl.xz"):
        read_merged(tmp_path / "bad.jsonl.xz")
    assert path.read_bytes() == before
    assert not list(tmp_path.glob("*.tmp"))


def test_signature_change_detects_rename_and_add():
    c = signature_change("(a, b=1, name=None)", "(a, c=1, name=None, d=2)")
    assert c["renamed"] == [["b", "c"]] and c["added"] == ["d"]


def test_name_words_split_camel_and_snake():
    assert name_words("tf.keras.callbacks.EarlyStopping") == "keras callbacks early stopping earlystopping"
    assert "from tensor slices" in name_words("tf.data.Dataset.from_tensor_slices")


def test_argument_deprecation_is_not_a_symbol_deprecation(tmp_path):
    from knowledge_base.records import FUNCTION, Deprecation, SymbolRecord
    from tests.kbdata import mod, release
    plain = SymbolRecord("tf.f", FUNCTION, "m.f", doc="F.")
    args = SymbolRecord("tf.f", FUNCTION, "m.f", doc="F.",
                        deprecation=Deprecation("decorator", "Use y.", args=["x"]))
    build_kb([release("2.4", [mod("tf"), plain]), release("2.5", [mod("tf"), args])],
             tmp_path / "kb.sqlite")
    kb = KB(tmp_path / "kb.sqlite")
    assert kinds(kb, "tf.f") == [("2.4", "added"), ("2.5", "arguments_deprecated")]
    assert kb.symbol("tf.f")["deprecated_in"] is None


def test_inherited_members_of_a_removed_class_do_not_move(tmp_path):
    from knowledge_base.records import CLASS, METHOD, SymbolRecord
    from tests.kbdata import mod, release
    base = [mod("tf"), SymbolRecord("tf.Model", CLASS, "k.Model"),
            SymbolRecord("tf.Model.fit", METHOD, "k.Model.fit")]
    sub = [SymbolRecord("tf.Wrapper", CLASS, "k.Wrapper"),
           SymbolRecord("tf.Wrapper.fit", METHOD, "k.Model.fit")]
    build_kb([release("2.4", base + sub), release("2.5", base)], tmp_path / "kb.sqlite")
    kb = KB(tmp_path / "kb.sqlite")
    assert kinds(kb, "tf.Wrapper.fit") == [("2.4", "added"), ("2.5", "removed")]
    assert kb.symbol("tf.Wrapper.fit")["replacement"] is None
