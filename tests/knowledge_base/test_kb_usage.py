"""The shipped usage counts (knowledge_base/data/usage.tsv) parse, name only symbols the KB has,
say where they came from, and reach the KB's popularity table. Facts only: no search results."""
import importlib.util
import re
import sqlite3
from pathlib import Path

import pytest

from knowledge_base import popularity
from knowledge_base.errors import KBError

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    path = ROOT / "tools" / "usage_counts.py"
    spec = importlib.util.spec_from_file_location("usage_counts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_usage_file_parses_and_names_its_sources():
    usage = popularity.read_usage()
    assert len(usage) > 500
    assert all(c >= 1 for c in usage.values())
    header = [l for l in popularity.USAGE.read_text().splitlines() if l.startswith("#")]
    sources = [l for l in header if l.startswith("# source:")]
    assert {s.split()[2] for s in sources} == {"tensorflow/docs", "keras-team/keras-io"}
    assert all(re.search(r"@ [0-9a-f]{40} \(\d{4}-\d\d-\d\d\)", s) for s in sources)


def test_usage_names_are_in_the_kb_and_follow_what_people_use(shipped_kb):
    usage = popularity.read_usage()
    assert [n for n in usage if shipped_kb.kb.symbol(n) is None] == []
    assert usage["tf.concat"] > usage.get("tf.keras.ops.concatenate", 0)
    assert usage["tf.cast"] > usage.get("tf.keras.ops.cast", 0)
    assert usage["tf.keras.Model.fit"] > 100 and usage["tf.data.Dataset.batch"] > 50


def test_kb_stores_usage_per_object_shared_by_aliases(shipped_kb):
    db = shipped_kb.kb.db
    files = dict(db.execute("SELECT s.name, p.files FROM popularity p JOIN symbols s USING (id) "
                            "WHERE s.name IN ('tf.concat', 'tf.compat.v1.concat')"))
    shipped = popularity.read_usage()["tf.concat"]
    assert files["tf.concat"] == files["tf.compat.v1.concat"] == shipped
    ev = popularity.load(db)
    sid = {n: i for i, n in db.execute("SELECT id, name FROM symbols WHERE name IN "
                                       "('tf.concat', 'tf.keras.ops.concatenate')")}
    assert popularity.prior(ev[sid["tf.concat"]]) > popularity.prior(
        ev.get(sid["tf.keras.ops.concatenate"], popularity.Evidence()))


def test_prior_grows_with_usage_and_is_capped():
    p = popularity.prior
    assert p(popularity.Evidence()) == 0
    assert p(popularity.Evidence(0, 1)) < p(popularity.Evidence(0, 50)) <= 0.15
    assert p(popularity.Evidence(10**6, 10**6)) == pytest.approx(0.3)
    assert p(3) == p(popularity.Evidence(3, 0))  # a bare docstring count still works


def test_older_kb_without_usage_column_still_loads():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE popularity (id INTEGER PRIMARY KEY, refs INTEGER)")
    db.execute("INSERT INTO popularity VALUES (1, 7)")
    assert popularity.load(db) == {1: popularity.Evidence(7, 0)}
    assert popularity.load(sqlite3.connect(":memory:")) == {}


def test_malformed_usage_line_is_reported_with_its_place(tmp_path):
    bad = tmp_path / "usage.tsv"
    bad.write_text("# header\ntf.concat\t12\ntf.cast twelve\n")
    with pytest.raises(KBError, match=r"usage.tsv:3: expected"):
        popularity.read_usage(bad)


def test_counter_resolves_imports_aliases_and_known_methods():
    tool = _tool()
    known = {"tf.keras.layers.Dense", "tf.keras.layers", "tf.keras.ops.concatenate", "tf.concat",
             "tf.keras.Model.fit", "tf.data.Dataset.batch", "tf.data.Dataset.shuffle",
             "tf.compat.v1.placeholder", "tf.keras.layers.Conv2D", "tf.nn.relu"}
    text = ("import tensorflow as t\nfrom keras import layers, ops\n"
            "from tensorflow.keras.layers import Conv2D as C\n"
            "x = t.concat([a, b], 0)\nh = layers.Dense(3)(C(4, 3)(x))\ny = ops.concatenate([x])\n"
            "model.fit(x)\nds = (ds.shuffle(8)\n      .batch(2))\nnp.random.shuffle(arr)\n"
            "tensorflow.nn.relu(x)\n")
    assert tool.references(text, known) == {
        "tf.concat", "tf.keras.layers", "tf.keras.layers.Dense", "tf.keras.layers.Conv2D",
        "tf.keras.ops.concatenate", "tf.keras.Model.fit", "tf.data.Dataset.shuffle",
        "tf.data.Dataset.batch", "tf.nn.relu"}
    v1 = "import tensorflow.compat.v1 as tf\nx = tf.placeholder(tf.float32)\n"
    assert tool.references(v1, known) == {"tf.compat.v1.placeholder"}
    assert tool.references("rng.shuffle(a)\nnumbers.sort()\n", known) == set()
