"""Class members as symbols, including those inherited from private (non-public) bases."""
from __future__ import annotations

from knowledge_base.extract import extract_release
from knowledge_base.records import METHOD, PROPERTY
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import api_file, make_keras_wheel, make_tf_wheel

# Keras 3 style: Model's `fit` lives in a backend trainer chosen by an if/elif at import.
MODEL = '''
from keras.src import backend
from keras.src.layers.layer import Layer

if backend.backend() == "tensorflow":
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer as Trainer
elif backend.backend() == "jax":
    from keras.src.backend.jax.trainer import JAXTrainer as Trainer


class Model(Trainer, Layer):
    """A model."""

    def __init__(self, *args, **kwargs):
        pass

    def summary(self, line_length=None):
        """Prints a string summary of the network."""

    def call(self, inputs):
        pass

    def _private(self):
        pass
'''
TRAINER = '''
from keras.src.trainers import trainer as base_trainer


class TensorFlowTrainer(base_trainer.Trainer):
    def fit(self, x=None, y=None, epochs=1):
        pass

    @property
    def distribute_strategy(self):
        """The strategy."""

    @distribute_strategy.setter
    def distribute_strategy(self, value):
        pass

    @staticmethod
    def helper(a, b=2):
        """Static."""
'''
JAX_TRAINER = '''
class JAXTrainer:
    def fit(self, jax_only):
        """Never the one tf.keras uses."""
'''
BASE_TRAINER = '''
class Trainer:
    def fit(self, x=None, y=None, epochs=1):
        """Trains the model for a fixed number of epochs."""

    def compile(self, optimizer="rmsprop", loss=None):
        """Configures the model for training."""

    metrics = property(lambda self: [])
'''
LAYER = '''
class Layer:
    """Base layer."""

    def __init__(self, trainable=True, name=None):
        pass

    def add_weight(self, shape=None):
        """Adds a weight."""

    def call(self, inputs):
        """The layer's logic."""
'''


def _release(tmp_path):
    tf_api = {"": api_file([], ["data"], package="tensorflow._api.v2", style="new"),
              "data": api_file([("tensorflow.python.data.ops.dataset_ops", "DatasetV2",
                                 "Dataset")], package="tensorflow._api.v2.data"),
              "compat.v1": api_file([("tensorflow.python.data.ops.dataset_ops", "DatasetV2",
                                      "Dataset")], package="tensorflow._api.v2.compat.v1")}
    tf_api[""] = tf_api[""].replace("import sys as _sys\n",
                                    "import sys as _sys\nfrom tensorflow._api.v2 import compat\n")
    tf_api["compat"] = api_file([], ["v1"], package="tensorflow._api.v2.compat")
    dataset = '''
class DatasetV2(object):
    """Represents a potentially large set of elements."""

    @staticmethod
    def from_tensor_slices(tensors, name=None):
        """Creates a `Dataset` whose elements are slices of the given tensors."""

    def map(self, map_func, num_parallel_calls=None):
        """Maps `map_func` across the elements of this dataset."""
'''
    make_tf_wheel(tmp_path, "2.16.1", tf_api,
                  {"tensorflow.python.data.ops.dataset_ops": dataset},
                  requires=["keras>=3.0.0"])
    root = "keras._tf_keras.keras"
    make_keras_wheel(tmp_path, "3.0.5", {
        "": api_file([("keras.src.models.model", "Model"), ("keras.src.layers.layer", "Layer")],
                     ["layers"], package=root, style="keras3"),
        "layers": api_file([("keras.src.layers.layer", "Layer")], package=f"{root}.layers",
                           style="keras3"),
    }, {"keras/src/models/model.py": MODEL,
        "keras/src/backend/tensorflow/trainer.py": TRAINER,
        "keras/src/backend/jax/trainer.py": JAX_TRAINER,
        "keras/src/trainers/trainer.py": BASE_TRAINER,
        "keras/src/layers/layer.py": LAYER})
    ex = extract_release(find_release_wheels("2.16", tmp_path))
    return {s.name: s for s in ex.symbols}


def test_members_from_private_bases(tmp_path):
    by = _release(tmp_path)
    fit = by["tf.keras.Model.fit"]
    assert fit.kind == METHOD
    assert fit.object == "keras.src.backend.tensorflow.trainer.TensorFlowTrainer.fit"
    assert fit.signature == "(x=None, y=None, epochs=1)"  # self dropped
    # The override has no docstring: it inherits the base method's.
    assert fit.doc == "Trains the model for a fixed number of epochs."
    assert by["tf.keras.Model.compile"].object == "keras.src.trainers.trainer.Trainer.compile"
    assert by["tf.keras.Model.summary"].signature == "(line_length=None)"
    assert by["tf.keras.Model.distribute_strategy"].kind == PROPERTY
    assert by["tf.keras.Model.distribute_strategy"].doc == "The strategy."
    assert by["tf.keras.Model.metrics"].kind == PROPERTY
    assert by["tf.keras.Model.helper"].signature == "(a, b=2)"  # staticmethod keeps its first arg
    assert "tf.keras.Model._private" not in by


def test_members_of_public_bases_stay_with_the_base(tmp_path):
    by = _release(tmp_path)
    # Layer is public, so its own members are documented under tf.keras.Layer only...
    assert "tf.keras.Model.add_weight" not in by
    assert by["tf.keras.Layer.add_weight"].kind == METHOD
    assert by["tf.keras.layers.Layer.add_weight"].kind == METHOD
    # ...but what Model defines itself (here `call`) is Model's.
    assert by["tf.keras.Model.call"].object == "keras.src.models.model.Model.call"
    assert by["tf.keras.Model"].signature == "(*args, **kwargs)"


def test_tf_class_members_and_compat_v1_members(tmp_path):
    by = _release(tmp_path)
    s = by["tf.data.Dataset.from_tensor_slices"]
    assert s.kind == METHOD and s.signature == "(tensors, name=None)"
    assert by["tf.data.Dataset.map"].signature == "(map_func, num_parallel_calls=None)"
    assert by["tf.compat.v1.Dataset"].kind == "class"
    # The goldens list tf.compat.v1 classes' members too (tf.compat.v1.Session.run).
    assert by["tf.compat.v1.Dataset.map"].signature == "(map_func, num_parallel_calls=None)"
