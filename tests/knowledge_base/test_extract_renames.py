"""TF1 -> TF2 renames and notes from the upgrade tables, read statically."""
from __future__ import annotations

from knowledge_base.extract import extract_release
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import api_file, make_tf_wheel

COMPAT = "tensorflow/tools/compatibility"
RENAMES_V2 = '''
renames = {
    "tf.Session": "tf.compat.v1.Session",
    "tf.to_float": "tf.compat.v1.to_float",
    "tf.contrib.data.AUTOTUNE": "tf.data.experimental.AUTOTUNE",
}
'''
ALL_RENAMES_V2 = '''
from tensorflow.tools.compatibility import renames_v2

manual_symbol_renames = {
    "tf.contrib.data.AUTOTUNE": "tf.data.AUTOTUNE",
    "tf.batch_gather": "tf.compat.v1.batch_gather",
}

symbol_renames = renames_v2.renames
symbol_renames.update(manual_symbol_renames)

addons_symbol_mappings = {
    "tf.contrib.opt.AdamWOptimizer": "tfa.optimizers.AdamW",
}
'''
TF_UPGRADE_V2 = '''
import ast
from tensorflow.tools.compatibility import ast_edits


class TFAPIChangeSpec(ast_edits.NoUpdateSpec):
  def __init__(self):
    assert_return_type_comment = (
        ast_edits.INFO,
        "<function name> has been changed to return None, the "
        "data argument has been removed.")
    self.function_warnings = {
        "tf.assert_equal": assert_return_type_comment,
        "*.save": (ast_edits.INFO, "ignored: not a tf. name"),
        "tf.Session": (ast_edits.WARNING, "Session is gone in TF2; use tf.function."),
    }
    self.function_transformers = {
        "tf.contrib.layers.xavier_initializer":
            _contrib_layers_xavier_initializer_transformer,
        "slim.xavier_initializer": _contrib_layers_xavier_initializer_transformer,
    }


def _contrib_layers_xavier_initializer_transformer(parent, node, full_name, name, logs):
  """Updates references to contrib.layers.xavier_initializer.

  Transforms:
  tf.contrib.layers.xavier_initializer(uniform, seed, dtype) to
  tf.compat.v1.keras.initializers.VarianceScaling(
      scale=1.0, mode="fan_avg")

  Returns: The new node
  """
'''
MODULE_DEPRECATIONS = '''
from tensorflow.tools.compatibility import ast_edits

_CONTRIB_WARNING = (
    ast_edits.ERROR,
    "<function name> cannot be converted automatically. tf.contrib will not"
    " be distributed with TensorFlow 2.0.")

MODULE_DEPRECATIONS = {"tf.contrib": _CONTRIB_WARNING}
'''


def test_renames_and_notes(tmp_path):
    root = api_file([("tensorflow.python.ops.nn_ops", "relu")], package="tensorflow")
    make_tf_wheel(tmp_path, "2.12.1", {"": root, "nn": api_file([], package="x")}, {
        "tensorflow.python.ops.nn_ops": "def relu(x):\n    pass\n",
        f"{COMPAT}/renames_v2.py": RENAMES_V2,
        f"{COMPAT}/all_renames_v2.py": ALL_RENAMES_V2,
        f"{COMPAT}/tf_upgrade_v2.py": TF_UPGRADE_V2,
        f"{COMPAT}/module_deprecations_v2.py": MODULE_DEPRECATIONS})
    ex = extract_release(find_release_wheels("2.12", tmp_path))
    r = {x.old: x for x in ex.renames}
    assert r["tf.to_float"].new == "tf.compat.v1.to_float"
    assert r["tf.Session"].new == "tf.compat.v1.Session"
    assert "use tf.function" in r["tf.Session"].note
    # The manual table overrides the generated one.
    assert r["tf.contrib.data.AUTOTUNE"].new == "tf.data.AUTOTUNE"
    assert r["tf.batch_gather"].new == "tf.compat.v1.batch_gather"
    assert r["tf.contrib.opt.AdamWOptimizer"].new == "tfa.optimizers.AdamW"
    assert "Addons" in r["tf.contrib.opt.AdamWOptimizer"].note
    assert r["tf.assert_equal"].new is None
    assert r["tf.assert_equal"].note.startswith("tf.assert_equal has been changed to return None")
    x = r["tf.contrib.layers.xavier_initializer"]
    assert x.new == "tf.compat.v1.keras.initializers.VarianceScaling"
    assert "xavier_initializer" in x.note and "Returns" not in x.note
    assert r["tf.contrib"].new is None and "cannot be converted" in r["tf.contrib"].note
    assert not any(o.startswith(("*", "slim")) for o in r)


def test_wheel_without_tables_has_no_renames(tmp_path):
    root = api_file([("tensorflow.python.ops.nn_ops", "relu")], package="tensorflow")
    make_tf_wheel(tmp_path, "2.12.1", {"": root, "nn": api_file([], package="x")},
                  {"tensorflow.python.ops.nn_ops": "def relu(x):\n    pass\n"})
    assert extract_release(find_release_wheels("2.12", tmp_path)).renames == []
