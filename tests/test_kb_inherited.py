"""A member a TF2 class inherits from another public class (tf.keras.Model.set_weights is
tf.keras.layers.Layer's) is answered where it is defined, not as TF1 API: the KB lists TF2
members only where they are defined, while tf.compat.v1 classes list what they inherit too."""
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


@pytest.mark.parametrize("q, want", [
    ("tf.keras.Model.set_weights", "tf.keras.layers.Layer.set_weights"),
    ("tf.keras.layers.Dense.get_weights", "tf.keras.layers.Layer.get_weights"),
    ("tf.keras.Model.add_weight", "tf.keras.layers.Layer.add_weight"),
    ("tf.keras.Sequential.count_params", "tf.keras.layers.Layer.count_params"),
    ("tf.keras.Sequential.set_weights", "tf.keras.layers.Layer.set_weights"),
    ("keras.Model.count_params", "tf.keras.layers.Layer.count_params"),  # another spelling
])
def test_inherited_member_is_answered_where_it_is_defined(kb, q, want):
    out = kb.ask(q)
    first = out["results"][0]
    assert first["name"] == want and first["match"] == "inherited"
    parent = ("tf." + q if q.startswith("keras.") else q).rpartition(".")[0]
    # Defined there in every release the class has; for Keras 3 (2.16+) the KB shows it
    # through the tf.compat.v1 twin, which is tf_keras' class, and says so.
    assert first["note"].startswith(f"{parent}.{want.rpartition('.')[2]} is inherited: "
                                    f"defined on tf.keras.layers.Layer (2.2–{kb.kb.newest})")
    assert f"for 2.16–{kb.kb.newest} inferred from tf.compat.v1." in first["note"]
    for r in out["results"]:
        assert "TF1 API" not in r.get("note", ""), r
    assert "legacy" not in out


def test_inherited_member_in_an_older_release_and_in_history(kb):
    first = kb.ask("tf.keras.Model.set_weights", version="2.10")["results"][0]
    assert first["name"] == "tf.keras.layers.Layer.set_weights" and first["present_in_release"]
    h = kb.history("tf.keras.Model.set_weights")
    assert h["symbol"]["name"] == "tf.keras.layers.Layer.set_weights"
    assert h["resolved_from"] == "tf.keras.Model.set_weights" and "inherited" in h["note"]


def test_shown_exactly_where_the_twin_is_the_same_class(kb):
    # tf.linalg's operators are the same class under tf.compat.v1: nothing inferred.
    first = kb.ask("tf.linalg.LinearOperatorDiag.solve")["results"][0]
    assert first["name"] == "tf.linalg.LinearOperator.solve"
    assert first["note"] == ("tf.linalg.LinearOperatorDiag.solve is inherited: defined on "
                             f"tf.linalg.LinearOperator (2.2–{kb.kb.newest})")


def test_inherited_only_in_some_releases_says_where(kb):
    # Keras 2 layers were tf.Modules; Keras 3's are not, and the KB does not claim they are.
    out = kb.ask("tf.keras.Model.name_scope")
    first = out["results"][0]
    assert first["name"] == "tf.Module.name_scope" and first["match"] == "inherited"
    assert first["note"] == ("tf.keras.Model.name_scope is inherited: defined on tf.Module "
                             f"(2.2–2.15); not shown for 2.16–{kb.kb.newest}")
    out = kb.ask("tf.keras.Model.name_scope", version="2.18")
    assert out["absent"] == {"name": "tf.keras.Model.name_scope", "available": "2.2–2.15"}
    assert all(r["name"] != "tf.Module.name_scope" for r in out["results"])


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


def test_a_member_not_shown_to_be_inherited_is_only_a_candidate(kb):
    # tf.keras.layers.RandomGrayscale is new in Keras 3: no tf.compat.v1 twin says what it
    # derives from, so Layer's set_weights is offered as what it is, not as its member.
    out = kb.ask("tf.keras.layers.RandomGrayscale.set_weights")
    first = out["results"][0]
    assert first["name"] == "tf.keras.Layer.set_weights" and first["match"] == "defined"
    assert first["note"].startswith("tf.keras.layers.RandomGrayscale.set_weights is not listed "
                                    "under tf.keras.layers.RandomGrayscale; a member set_weights "
                                    "is defined on tf.keras.Layer (")
    assert "cannot show" in first["note"] and "inherited" not in first["note"]
    with pytest.raises(UnknownSymbol):  # history names one symbol exactly
        kb.history("tf.keras.layers.RandomGrayscale.set_weights")


def test_resolver_rules(kb):
    db = kb.kb.db
    assert inherited.resolve(db, "tf.keras.Model", "fit") is None  # listed: not inherited
    assert inherited.resolve(db, "tf.compat.v1.keras.Model", "set_weights") is None
    assert inherited.resolve(db, "tf.nn", "softmax") is None  # not a class
    r = inherited.resolve(db, "tf.data.TFRecordDataset", "options")
    # TFRecordDataset's twin is TFRecordDatasetV1, whose options is on a non-public class:
    # answered by the TF2 class that its public bases stand for.
    assert r.names() == ["tf.data.Dataset.options"] and {x.how for x in r.runs} == {"parallel"}
    r = inherited.resolve(db, "tf.keras.layers.Dense", "stateless_call")  # new in Keras 3
    assert r.names()[0].endswith("Layer.stateless_call") and r.runs[0].first == 14


def test_terminal_and_slack_show_the_note(kb):
    from bot.slack.blocks import render_reply
    ctx = Context(load_config({"TFDESK_HOME": str(kb.kb.path.parent)}))
    _, reply = run_line(ctx, "ask tf.keras.Model.set_weights")
    assert reply.ok
    lines = reply.text.splitlines()
    assert lines[2].startswith("1. tf.keras.layers.Layer.set_weights(weights)")
    assert any(line.strip().startswith("note: tf.keras.Model.set_weights is inherited: defined "
                                       "on tf.keras.layers.Layer") for line in lines[3:6])
    assert "TF1 API" not in reply.text
    slack = str(render_reply(reply)["blocks"])
    assert "tf.keras.Model.set_weights is inherited" in slack and "TF1 API" not in slack
    _, reply = run_line(ctx, "history tf.keras.Model.set_weights")
    assert reply.ok and "is inherited: defined on tf.keras.layers.Layer" in reply.text
