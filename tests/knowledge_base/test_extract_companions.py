"""tf.keras and tf.estimator come from the right wheel for each release."""
from __future__ import annotations

from knowledge_base.extract import extract_release
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import (KERAS_INTREE_ROOT, api_file, api_tree, make_estimator_wheel,
                                make_keras_wheel, make_tf_wheel)

TRAINING = '''
class Model(object):
    """{who} Model."""

    def __init__(self, *args, **kwargs):
        pass

    def fit(self, x=None, y=None, {arg}=None):
        """Trains the model."""
'''
PREPROCESSING = '''
class RandomFlip(object):
    def __init__(self, mode="horizontal_and_vertical", seed=None):
        pass
'''


def _tf_root(style: str, subs=()) -> dict[str, str]:
    root = api_file([("tensorflow.python.ops.nn_ops", "relu")], [], package="tensorflow",
                    style=style)
    lines = "".join((f"from ._api.v2 import {s}\n" if style == "old"
                     else f"from tensorflow._api.v2 import {s}\n") for s in ("nn", *subs))
    root = root.replace("import sys as _sys\n", "import sys as _sys\n" + lines)
    return {"": root, "nn": api_file([("tensorflow.python.ops.nn_ops", "relu")],
                                     package="tensorflow._api.v2.nn", style=style)}


def _keras_api(root: str, model_module: str, style: str) -> dict[str, str]:
    return {"": api_file([(model_module, "Model")], ["layers"], package=root, style=style),
            "layers": api_file([("keras.layers.preprocessing.random_flip", "RandomFlip")],
                               package=f"{root}.layers", style=style)}


NN_OPS = {"tensorflow.python.ops.nn_ops": "def relu(features, name=None):\n    pass\n"}


def test_in_tree_keras_up_to_2_5(tmp_path):
    root = "tensorflow.python.keras.api._v2.keras"
    api = {"": api_file([("tensorflow.python.keras.engine.training", "Model")], [],
                        package=root, style="old")}
    make_tf_wheel(tmp_path, "2.5.3", _tf_root("old"), {
        **NN_OPS,
        "tensorflow/python/keras/__init__.py": "__version__ = '2.5.0'\n",
        "tensorflow.python.keras.engine.training": TRAINING.format(who="in-tree", arg="tf25")},
        extra=api_tree(KERAS_INTREE_ROOT, api))
    ex = extract_release(find_release_wheels("2.5", tmp_path))
    by = {s.name: s for s in ex.symbols}
    assert by["tf.keras.Model"].object == "tensorflow.python.keras.engine.training.Model"
    assert "tf25" in by["tf.keras.Model.fit"].signature
    assert ex.info.keras_source == "tensorflow (in-tree)" and ex.info.keras_version == "2.5.0"


def test_keras2_wheel_wins_over_the_stale_in_tree_copy(tmp_path):
    stale_root = "tensorflow.python.keras.api._v2.keras"
    tf_api = _tf_root("old", subs=("keras",))
    # 2.6/2.7 wheels also generate a stale tf.keras namespace of their own.
    tf_api["keras"] = api_file([("tensorflow.python.keras.engine.training", "Model"),
                                ("tensorflow.python.keras.engine.training", "Model", "StaleOnly")],
                               package="tensorflow._api.v2.keras", style="old")
    make_tf_wheel(tmp_path, "2.7.4", tf_api, {
        **NN_OPS,
        "tensorflow.python.keras.engine.training": TRAINING.format(who="stale", arg="stale")},
        extra=api_tree(KERAS_INTREE_ROOT, {"": api_file(
            [("tensorflow.python.keras.engine.training", "Model")], package=stale_root,
            style="old")}))
    make_keras_wheel(tmp_path, "2.7.0", _keras_api("keras.api._v2.keras", "keras.engine.training",
                                                    "old"),
                     {"keras.engine.training": TRAINING.format(who="keras 2", arg="k2"),
                      "keras.layers.preprocessing.random_flip": PREPROCESSING})
    make_keras_wheel(tmp_path, "2.6.0", {"": "raise SystemExit('wrong keras')\n"})
    make_estimator_wheel(tmp_path, "2.7.0", {
        "": api_file([("tensorflow_estimator.python.estimator.estimator", "EstimatorV2",
                       "Estimator")], package="tensorflow_estimator._api.v2.estimator",
                     style="old")},
        {"tensorflow_estimator.python.estimator.estimator":
         "class EstimatorV2(object):\n    def __init__(self, model_fn, model_dir=None):\n"
         "        pass\n\n    def train(self, input_fn, steps=None):\n        pass\n"})
    ex = extract_release(find_release_wheels("2.7", tmp_path))
    by = {s.name: s for s in ex.symbols}
    assert by["tf.keras.Model"].object == "keras.engine.training.Model"
    assert "k2" in by["tf.keras.Model.fit"].signature
    assert by["tf.keras.layers.RandomFlip"].signature == (
        "(mode='horizontal_and_vertical', seed=None)")
    assert "tf.keras.StaleOnly" not in by
    assert not any("stale" in (s.signature or "") for s in ex.symbols)
    assert ex.info.keras_source == "keras 2 wheel" and ex.info.keras_version == "2.7.0"
    assert by["tf.estimator.Estimator"].signature == "(model_fn, model_dir=None)"
    assert by["tf.estimator.Estimator.train"].signature == "(input_fn, steps=None)"
    assert ex.info.estimator_version == "2.7.0"


def test_keras3_as_declared_by_tf_and_no_estimator(tmp_path):
    root = "keras._tf_keras.keras"
    make_tf_wheel(tmp_path, "2.17.1", _tf_root("new"), NN_OPS, requires=["keras>=3.2.0"])
    sources = {"keras.src.models.model": TRAINING.format(who="keras 3", arg="k3"),
               "keras.layers.preprocessing.random_flip": PREPROCESSING}
    for v in ("3.2.0", "3.2.1", "3.1.1"):
        make_keras_wheel(tmp_path, v, _keras_api(root, "keras.src.models.model", "keras3"),
                         sources)
    # An estimator wheel lying around is not used after 2.15.
    make_estimator_wheel(tmp_path, "2.15.0", {"": api_file([], package="x")})
    wheels = find_release_wheels("2.17", tmp_path)
    assert wheels.keras.name == "keras-3.2.1-py3-none-any.whl" and wheels.estimator is None
    ex = extract_release(wheels)
    by = {s.name: s for s in ex.symbols}
    assert by["tf.keras.Model"].object == "keras.src.models.model.Model"
    assert "k3" in by["tf.keras.Model.fit"].signature
    assert "tf.keras.layers.RandomFlip" in by
    assert ex.info.keras_source == "keras 3 wheel" and ex.info.keras_version == "3.2.1"
    assert not any(n.startswith("tf.estimator") for n in by)
    assert ex.info.estimator_version is None


def test_missing_companion_still_extracts_tf(tmp_path):
    make_tf_wheel(tmp_path, "2.10.1", _tf_root("old"), NN_OPS)
    ex = extract_release(find_release_wheels("2.10", tmp_path))
    assert "tf.nn.relu" in {s.name for s in ex.symbols}
    assert ex.info.keras_source is None and ex.info.keras_version is None


def test_generated_namespace_the_root_does_not_import_is_public(tmp_path):
    # Keras 3's tf.keras root file has no `from ... import saving`, yet the generated
    # keras/_tf_keras/keras/saving/ namespace is part of its API.
    root = "keras._tf_keras.keras"
    make_tf_wheel(tmp_path, "2.17.1", _tf_root("new"), NN_OPS, requires=["keras>=3.2.0"])
    api = _keras_api(root, "keras.src.models.model", "keras3")
    api["saving"] = api_file([("keras.src.saving.registration", "register_keras_serializable")],
                             package=f"{root}.saving", style="keras3")
    api["_private"] = api_file([("keras.src.saving.registration", "hidden")],
                               package=f"{root}._private", style="keras3")
    make_keras_wheel(tmp_path, "3.2.1", api, {
        "keras.src.models.model": TRAINING.format(who="keras 3", arg="k3"),
        "keras.layers.preprocessing.random_flip": PREPROCESSING,
        "keras.src.saving.registration":
            "def register_keras_serializable(package='Custom', name=None):\n"
            "    '''Registers an object with the Keras serialization framework.'''\n"
            "def hidden():\n    pass\n"})
    by = {s.name: s for s in extract_release(find_release_wheels("2.17", tmp_path)).symbols}
    assert by["tf.keras.saving"].kind == "module"
    assert by["tf.keras.saving.register_keras_serializable"].signature == "(package='Custom', name=None)"
    assert not any("_private" in n or "hidden" in n for n in by)
