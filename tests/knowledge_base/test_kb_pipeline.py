"""From wheels on disk to answers: `kb build --no-download` over small wheels with the real
layout, then `kb load` from the compact extract it exports gives the same answers."""
import json

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from tests.wheelfactory import api_file, make_tf_wheel

NN_OPS_OLD = '''
def softmax_v2(logits, axis=None, name=None):
    """Computes softmax activations.

    Used for multi-class predictions.
    """
'''
NN_OPS_NEW = NN_OPS_OLD.replace("axis=None", "axis=-1")
ARRAY_OPS = '''
from tensorflow.python.util import deprecation

@deprecation.deprecated(None, "Use `tf.pad` instead.")
def pad_old(tensor, paddings):
    """Pads a tensor the old way."""

def pad_v2(tensor, paddings, mode="CONSTANT", constant_values=0, name=None):
    """Pads a tensor.

    This operation pads a `tensor` with zeros or a constant value.
    """
'''


def _wheel(dest, version, with_old=True, new_sig=False):
    style = "new" if int(version.split(".")[1]) >= 16 else "old"
    entries = [("tensorflow.python.ops.array_ops", "pad_v2", "pad")]
    if with_old:
        entries.append(("tensorflow.python.ops.array_ops", "pad_old", "pad_old"))
    root = api_file(entries, [], package="tensorflow", style=style)
    # The root imports its namespaces from ._api.v2 (old) / tensorflow._api.v2 (new).
    sub = "from ._api.v2 import nn" if style == "old" else "from tensorflow._api.v2 import nn"
    api = {"": root.replace("import sys as _sys\n", f"import sys as _sys\n{sub}\n"),
           "nn": api_file([("tensorflow.python.ops.nn_ops", "softmax_v2", "softmax")],
                          package="tensorflow._api.v2.nn", style=style)}
    return make_tf_wheel(dest, version, api, {
        "tensorflow/python/ops/nn_ops.py": NN_OPS_NEW if new_sig else NN_OPS_OLD,
        "tensorflow/python/ops/array_ops.py": ARRAY_OPS,
        "tensorflow/python/util/deprecation.py": "def deprecated(date, instructions):\n    pass\n"})


@pytest.fixture
def wheels(tmp_path):
    d = tmp_path / "wheels"
    _wheel(d, "2.3.4")
    _wheel(d, "2.4.4", new_sig=True)
    _wheel(d, "2.5.3", with_old=False, new_sig=True)
    return d


def _run(home, line):
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    cmd, reply = run_line(ctx, line)
    assert reply.ok, reply.text
    return reply


def test_build_from_wheels_then_answers(tmp_path, wheels):
    home = tmp_path / "home"
    export = tmp_path / "kb-extract.jsonl.xz"
    r = _run(home, f"kb build --no-download --wheel-dir {wheels} --export {export}")
    assert r.data["releases"] == 3 and export.is_file()
    assert [x["extracted"] for x in r.data["per_release"]] == ["now"] * 3

    hist = _run(home, "history tf.nn.softmax --json").data
    assert [(e["release"], e["kind"]) for e in hist["events"]] == [
        ("2.3", "added"), ("2.4", "signature_changed")]
    old = _run(home, "history tf.pad_old --json").data
    kinds = [(e["release"], e["kind"]) for e in old["events"]]
    assert ("2.5", "removed") in kinds and ("2.3", "deprecated") in kinds
    assert old["symbol"]["replacement"] == "tf.pad"
    ask = _run(home, "ask pad a tensor with zeros --json").data
    assert ask["results"][0]["name"] == "tf.pad"

    # A second build extracts nothing again.
    r = _run(home, f"kb build --no-download --wheel-dir {wheels}")
    assert all(x["extracted"] != "now" for x in r.data["per_release"])

    # The exported compact extract rebuilds the same KB elsewhere, its question-search
    # vectors written beside it and reused, not computed again.
    vectors = tmp_path / "kb-extract.vectors.npz"
    assert vectors.is_file()
    other = tmp_path / "other"
    loaded = _run(other, f"kb load --extract {export}").data
    assert loaded["vectors"] > 0 and loaded["vectors_embedded"] == 0
    assert _run(other, "history tf.nn.softmax --json").data["events"] == hist["events"]
    assert "up to date" in _run(other, f"kb load --extract {export}").text


def test_corrupt_wheel_is_named(tmp_path, wheels):
    bad = wheels / "tensorflow_cpu-2.6.5-cp38-cp38-manylinux2010_x86_64.whl"
    bad.write_bytes(b"PK\x03\x04 this is not a zip")
    ctx = Context(load_config({"TFDESK_HOME": str(tmp_path / "home")}))
    _, reply = run_line(ctx, f"kb build --no-download --wheel-dir {wheels} --versions 2.6")
    assert not reply.ok and bad.name in reply.text
    assert not (tmp_path / "home" / "kb.sqlite").exists()


def test_unknown_versions_are_clear(tmp_path, wheels):
    ctx = Context(load_config({"TFDESK_HOME": str(tmp_path / "home")}))
    _, reply = run_line(ctx, f"kb build --no-download --wheel-dir {wheels} --versions 2.9")
    assert not reply.ok and "2.9 is not available" in reply.text
    _, reply = run_line(ctx, f"kb build --no-download --wheel-dir {wheels} --versions banana")
    assert not reply.ok and "not a TensorFlow version" in reply.text
