"""Version facts of the real KB (the shipped extract, made from the real wheels by
`tfdesk kb build`), checked against what is known of TensorFlow's history."""
import pytest

from knowledge_base.pipeline import SHIPPED_EXTRACT

pytestmark = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")


@pytest.fixture
def kb(shipped_kb):
    return shipped_kb


def sym(kb, name):
    s = kb.kb.symbol(name)
    assert s is not None, name
    return s


def test_every_2x_release_from_2_2(kb):
    v = kb.kb.versions
    assert v[0] == "2.2" and len(v) >= 20
    assert all(r["symbols"] > 3000 for r in kb.kb.release_rows)


def test_keras_source_by_release(kb):
    rows = {r["version"]: r for r in kb.kb.release_rows}
    assert "in-tree" in rows["2.5"]["keras_source"]
    assert rows["2.10"]["keras_version"].startswith("2.10")
    assert rows["2.16"]["keras_version"].startswith("3.")


def test_estimator_removed_after_2_15(kb):
    est = sym(kb, "tf.estimator.Estimator")
    assert (est["first"], est["last"], est["removed_in"]) == ("2.2", "2.15", "2.16")


def test_model_fit_in_every_release(kb):
    fit = sym(kb, "tf.keras.Model.fit")
    assert fit["first"] == "2.2" and fit["removed_in"] is None
    assert kb.kb.availability(fit) == f"2.2–{kb.kb.newest}"


def test_dataset_members(kb):
    assert sym(kb, "tf.data.Dataset.from_tensor_slices")["first"] == "2.2"


def test_random_flip_moved_out_of_experimental(kb):
    assert sym(kb, "tf.keras.layers.RandomFlip")["first"] == "2.6"
    old = sym(kb, "tf.keras.layers.experimental.preprocessing.RandomFlip")
    assert old["removed_in"] is not None
    assert old["replacement"] == "tf.keras.layers.RandomFlip"


def test_softmax_signature(kb):
    s = sym(kb, "tf.nn.softmax")
    assert s["first"] == "2.2" and s["signature"].startswith("(logits, axis=None")


def test_tf1_names_resolve(kb):
    assert kb.ask("tf.Session")["results"][0]["name"] == "tf.compat.v1.Session"
    assert kb.ask("tf.placeholder")["results"][0]["name"] == "tf.compat.v1.placeholder"


def test_questions_and_typos(kb):
    assert kb.ask("pad a tensor with zeros")["results"][0]["name"] == "tf.pad"
    assert kb.ask("tf.nn.softmx")["results"][0]["name"] == "tf.nn.softmax"
    top = [r["name"] for r in kb.ask("stop training when validation loss stops improving")["results"]]
    assert top[0] == "tf.keras.callbacks.EarlyStopping"


def test_diff_215_216_keras(kb):
    d = kb.diff("2.15", "2.16", "tf.keras")
    assert d["counts"]["removed"] + d["counts"]["moved"] > 0 and d["counts"]["added"] > 0
    d = kb.diff("2.15", "2.16")
    assert "tf.estimator" in d["removed"]


def test_a_removed_module_moved_where_its_contents_went(kb):
    """Every removed module the KB says moved: at least half of the names it held when it
    went are now under that module (mixed_precision.experimental -> mixed_precision, never
    the dtensor.experimental a last name part alone would pick). Checked over all of them."""
    db = kb.kb.db
    mods = db.execute("SELECT s.name, s.removed_in, json_extract(e.data, '$.to') FROM symbols "
                      "s JOIN events e ON e.symbol_id = s.id AND e.kind = 'removed' AND "
                      "e.release = s.removed_in WHERE s.kind = 'module' AND e.data IS NOT "
                      "NULL").fetchall()
    assert len(mods) >= 8
    for name, removed, repl in mods:
        held = db.execute("SELECT name, replacement FROM symbols WHERE parent = ? AND "
                          "removed_in = ? AND kind NOT IN ('method', 'property')",
                          (name, removed)).fetchall()
        there = [n for n, r in held if r and r.rpartition(".")[0] == repl]
        assert 2 * len(there) >= len(held), (name, repl, len(there), len(held))
    assert sym(kb, "tf.keras.mixed_precision.experimental")["replacement"] == \
        "tf.keras.mixed_precision"
    assert sym(kb, "tf.keras.layers.experimental.preprocessing")["replacement"] == \
        "tf.keras.layers"
