"""A member a TF2 class inherits from another public class (tf.keras.Model.set_weights is
tf.keras.layers.Layer's) is in the KB under the class, says where it is defined, and is not
answered as TF1 API (the KB adds inherited members from the class bases the extract records;
knowledge_base/inherited.py is left for names the KB does not list)."""
import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from knowledge_base import inherited
from knowledge_base.qa.answers import UnknownSymbol
from knowledge_base.pipeline import SHIPPED_EXTRACT

pytestmark = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")


@pytest.fixture
def kb(shipped_kb):
    return shipped_kb


@pytest.mark.parametrize("q, definer", [
    ("tf.keras.Model.set_weights", "tf.keras.Layer"),
    ("tf.keras.layers.Dense.get_weights", "tf.keras.Layer"),
    ("tf.keras.Model.add_weight", "tf.keras.Layer"),
    ("tf.keras.Sequential.count_params", "tf.keras.Layer"),
    ("tf.keras.layers.RandomGrayscale.set_weights", "tf.keras.Layer"),  # new in Keras 3
    ("tf.linalg.LinearOperatorDiag.solve", "tf.linalg.LinearOperator"),
    ("tf.data.TFRecordDataset.options", "tf.data.Dataset"),
])
def test_inherited_member_is_listed_and_says_where_it_is_defined(kb, q, definer):
    """Since issue 27 the extract records each class's public bases and the KB lists what a
    class inherits (as the goldens and dir() do): answered exactly, not inferred."""
    first = kb.ask(q)["results"][0]
    assert first["name"] == q and first["match"] == "exact"
    assert first["inherited_from"] == definer
    assert first["canonical"] == f"{definer}.{q.rpartition('.')[2]}"
    assert "TF1 API" not in first.get("note", "")
    assert "removed" not in [e["kind"] for e in kb.history(q)["events"]]


def test_keras_spelling_and_older_releases(kb):
    first = kb.ask("keras.Model.count_params")["results"][0]
    assert first["name"] == "tf.keras.Model.count_params"
    first = kb.ask("tf.keras.Model.set_weights", version="2.10")["results"][0]
    assert first["name"] == "tf.keras.Model.set_weights" and first["present_in_release"]


def test_inherited_only_in_some_releases_says_where(kb):
    # Keras 2 layers were tf.Modules; Keras 3's are not.
    sym = kb.kb.symbol("tf.keras.Model.name_scope")
    assert kb.kb.availability(sym) == "2.2–2.15" and sym["removed_in"] == "2.16"
    out = kb.ask("tf.keras.Model.name_scope", version="2.18")
    assert out["absent"]["name"] == "tf.keras.Model.name_scope"


def test_tf1_names_and_tf1_only_members_still_say_so(kb):
    first = kb.ask("tf.Session")["results"][0]
    assert first["name"] == "tf.compat.v1.Session" and first["match"] == "legacy"
    assert first["note"] == "tf.Session is now tf.compat.v1.Session"
    # A member only the TF1 class has is TF1 API, even under a TF2 class's name.
    first = kb.ask("tf.data.Dataset.make_one_shot_iterator")["results"][0]
    assert first["name"] == "tf.compat.v1.data.Dataset.make_one_shot_iterator"
    assert first["note"] == ("tf.data.Dataset.make_one_shot_iterator is TF1 API, kept as "
                             "tf.compat.v1")
    assert kb.lookup.inherited("tf.data.Dataset.make_one_shot_iterator") is None


def test_unknown_member_of_a_real_class_is_not_found(kb):
    out = kb.ask("tf.keras.Model.no_such_member")
    assert out["match"] == "none" and out["results"] == []
    assert out["message"].startswith("no such symbol in TensorFlow")
    with pytest.raises(UnknownSymbol):
        kb.history("tf.keras.Model.no_such_member")


def test_resolver_leaves_listed_members_alone(kb):
    db = kb.kb.db
    assert inherited.resolve(db, "tf.keras.Model", "fit") is None  # listed: not inherited
    assert inherited.resolve(db, "tf.keras.Model", "set_weights") is None  # listed now too
    assert inherited.resolve(db, "tf.compat.v1.keras.Model", "set_weights") is None
    assert inherited.resolve(db, "tf.nn", "softmax") is None  # not a class


def test_terminal_and_slack_show_where_it_is_defined(kb):
    from bot.slack.blocks import render_reply
    ctx = Context(load_config({"TFDESK_HOME": str(kb.kb.path.parent)}))
    _, reply = run_line(ctx, "ask tf.keras.Model.set_weights")
    assert reply.ok
    lines = reply.text.splitlines()
    assert lines[2].startswith("1. tf.keras.Model.set_weights(weights)")
    assert any(line.strip() == "inherited from tf.keras.Layer" for line in lines[3:7]), lines
    assert "TF1 API" not in reply.text
    assert "inherited from tf.keras.Layer" in str(render_reply(reply)["blocks"])
