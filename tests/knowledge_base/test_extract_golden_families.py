"""The symbol families TensorFlow's API goldens list and the extractor used to miss (issue 17):
members of tf.compat.v1 classes, members typed only in a compiled module's .pyi stub, nested
classes, class constants, operator methods, functions made by a factory (tf.signal.rfft),
protobuf message classes, the Keras-backed alias modules (tf.losses...), tf.compat.v1.layers
from tf_keras, tf.summary completed by tensorboard, and real module docs."""
from __future__ import annotations

import pytest

from knowledge_base.extract import extract_release
from knowledge_base.extract.companions import provider_of
from knowledge_base.records import CLASS, CONSTANT, FUNCTION, METHOD, MODULE, PROPERTY
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import api_file, make_keras_wheel, make_tf_wheel, make_wheel

TF2 = "tensorflow._api.v2"

VARIABLES = '''
from tensorflow.python.framework import _dtypes


class Variable(object):
    """A variable."""
    OVERLOADABLE_OPERATORS = {"__add__"}
    _private_constant = 1

    def __init__(self, initial_value=None, trainable=None):
        pass

    def assign(self, value, use_locking=False):
        """Assigns a new value."""

    def __getitem__(self, slice_spec):
        """Slices."""

    def __repr__(self):
        pass

    class SaveSliceInfo:
        """Information on how to save this Variable as a slice."""

        def __init__(self, full_name=None, full_shape=None):
            pass

        @property
        def spec(self):
            """The spec."""


class DType(_dtypes.DType):
    """Represents the type of the elements in a `Tensor`."""

    def is_compatible_with(self, other):
        """Compatible?"""
'''
DTYPES_PYI = '''
class DType:
    def __init__(self, arg0: object) -> None: ...
    def __hash__(self) -> int: ...
    @property
    def is_floating(self) -> bool: ...
    @property
    def name(self) -> str: ...
'''
FFT = '''
def _rfft_wrapper(fft_fn, fft_rank, default_name):
  def _rfft(input_tensor, fft_length=None, name=None):
    """Wrapper around gen_spectral_ops.rfft* that infers fft_length."""
    return fft_fn(input_tensor, fft_length, name=name)
  return _rfft

rfft = _rfft_wrapper(None, 1, "rfft")
'''
PROTO_EXPORTS = '''
from tensorflow.core.protobuf import config_pb2
from tensorflow.python.util.tf_export import tf_export

ConfigProto = tf_export(v1=["ConfigProto"])(config_pb2.ConfigProto)
'''
CONFIG_PB2 = '''
from google.protobuf import descriptor as _descriptor
_builder.BuildTopDescriptorsAndMessages(DESCRIPTOR, 'config_pb2', _globals)
'''
ROOT_TAIL = '''
_losses = _KerasLazyLoader(globals(), submodule="losses", name="losses")
setattr(_current_module, "losses", _losses)
'''
COMPAT_V1_TAIL = '''
_current_module.layers = _KerasLazyLoader(
    globals(),
    submodule="__internal__.legacy.layers",
    name="layers",
    mode="v1")
_module_dir = _module_util.get_parent_dir_for_name(
      "tf_keras.api._v1.keras.__internal__.legacy.layers")
'''
LEGACY_DENSE = '''
class Dense(object):
    """Densely-connected layer class."""

    def __init__(self, units, activation=None):
        pass

    def apply(self, *args, **kwargs):
        """Apply the layer on a input."""
'''


def _release_216(tmp_path):
    api = {
        "": api_file([], ["compat", "signal", "dtypes"], package=TF2, style="new"),
        "dtypes": api_file([("tensorflow.python.ops.variables", "DType")],
                           package=f"{TF2}.dtypes"),
        "signal": api_file([("tensorflow.python.ops.signal.fft_ops", "rfft")],
                           package=f"{TF2}.signal"),
        "compat": api_file([], ["v1"], package=f"{TF2}.compat"),
        "compat.v1": api_file([("tensorflow.python.ops.variables", "Variable"),
                               ("tensorflow.python.proto_exports", "ConfigProto")],
                              ["layers"], package=f"{TF2}.compat.v1"),
        "compat.v1.layers": api_file([], package=f"{TF2}.compat.v1.layers"),
    }
    api[""] = api[""].replace("import sys as _sys\n", "import sys as _sys\n") + \
        f"from {TF2}.dtypes import DType\nfrom tensorflow.python.ops.variables import Variable\n" \
        + ROOT_TAIL
    api["compat.v1"] += COMPAT_V1_TAIL
    make_tf_wheel(tmp_path, "2.16.1", api, {
        "tensorflow.python.ops.variables": VARIABLES,
        "tensorflow.python.ops.signal.fft_ops": FFT,
        "tensorflow.python.proto_exports": PROTO_EXPORTS,
        "tensorflow.core.protobuf.config_pb2": CONFIG_PB2,
    }, extra={"tensorflow/python/framework/_dtypes.pyi": DTYPES_PYI},
        requires=["keras>=3.0.0"])
    root = "keras._tf_keras.keras"
    make_keras_wheel(tmp_path, "3.0.5", {
        "": api_file([], ["losses"], package=root, style="keras3"),
        "losses": api_file([("keras.src.losses.losses", "Huber")], package=f"{root}.losses",
                           style="keras3", doc="DO NOT EDIT."),
    }, {"keras/src/losses/losses.py": 'class Huber:\n    """Computes the Huber loss."""\n'
                                      "    def __init__(self, delta=1.0):\n        pass\n"})
    legacy = "tf_keras/api/_v1/keras/__internal__/legacy/layers/__init__.py"
    make_wheel(tmp_path, "tf_keras", "2.16.0", "py3-none-any", {
        "tf_keras/__init__.py": "",
        legacy: api_file([("tf_keras.src.legacy_tf_layers.core", "Dense")],
                         package="tf_keras.api._v1.keras.__internal__.legacy.layers"),
        "tf_keras/src/legacy_tf_layers/core.py": LEGACY_DENSE,
    })
    ex = extract_release(find_release_wheels("2.16", tmp_path))
    return {s.name: s for s in ex.symbols}


@pytest.fixture
def by(tmp_path):
    return _release_216(tmp_path)


def test_compat_v1_classes_have_members(by):
    assign = by["tf.compat.v1.Variable.assign"]
    assert assign.kind == METHOD and assign.signature == "(value, use_locking=False)"


def test_nested_classes_constants_and_operators(by):
    nested = by["tf.Variable.SaveSliceInfo"]
    assert nested.kind == CLASS and nested.signature == "(full_name=None, full_shape=None)"
    assert by["tf.Variable.SaveSliceInfo.spec"].kind == PROPERTY
    assert by["tf.Variable.OVERLOADABLE_OPERATORS"].kind == CONSTANT
    assert by["tf.Variable.__getitem__"].kind == METHOD
    assert "tf.Variable.__repr__" not in by and "tf.Variable._private_constant" not in by


def test_members_of_compiled_bases_come_from_pyi_stubs(by):
    assert by["tf.dtypes.DType.is_floating"].kind == PROPERTY
    assert by["tf.dtypes.DType.name"].kind == PROPERTY
    assert by["tf.dtypes.DType.is_compatible_with"].kind == METHOD
    assert "tf.dtypes.DType.__hash__" not in by  # stubs give named members only


def test_factory_made_function_and_protobuf_class(by):
    rfft = by["tf.signal.rfft"]
    assert rfft.kind == FUNCTION and rfft.signature == "(input_tensor, fft_length=None, name=None)"
    assert by["tf.compat.v1.ConfigProto"].kind == CLASS


def test_keras_alias_modules_and_generated_docs(by):
    assert by["tf.losses"].kind == MODULE
    assert by["tf.losses.Huber"].object == "keras.src.losses.losses.Huber"
    assert by["tf.losses"].doc == ""  # the generator's "DO NOT EDIT" is not documentation
    assert provider_of(by["tf.losses.Huber"].object) == "keras"


def test_compat_v1_layers_from_tf_keras(by):
    dense = by["tf.compat.v1.layers.Dense"]
    assert dense.object == "tf_keras.src.legacy_tf_layers.core.Dense"
    assert provider_of(dense.object) == "tf_keras"
    assert by["tf.compat.v1.layers.Dense.apply"].kind == METHOD


def test_summary_completed_by_tensorboard(tmp_path):
    api = {"": api_file([], ["summary"], package="tensorflow._api.v2", style="new"),
           "summary": api_file([("tensorflow.python.ops.summary_ops_v2", "create_file_writer")],
                               package="tensorflow._api.v2.summary", style="old")}
    # As in TF's root __init__: inside a try, so not an API entry of the generated file.
    api[""] += "\ntry:\n  from tensorboard.summary._tf import summary\nexcept ImportError:\n  pass\n"
    make_tf_wheel(tmp_path, "2.12.0", api, {
        "tensorflow.python.ops.summary_ops_v2": "def create_file_writer(logdir):\n    pass\n"})
    make_wheel(tmp_path, "tensorboard", "2.12.3", "py3-none-any", {
        "tensorboard/__init__.py": "",
        "tensorboard/summary/_tf/summary/__init__.py":
            "from tensorboard.summary.v2 import scalar  # noqa: F401\n",
        "tensorboard/summary/v2.py":
            "def scalar(name, data, step=None, description=None):\n"
            '    """Write a scalar summary."""\n',
    })
    rw = find_release_wheels("2.12", tmp_path)
    assert rw.tensorboard is not None
    syms = {s.name: s for s in extract_release(rw).symbols}
    assert syms["tf.summary.scalar"].signature == "(name, data, step=None, description=None)"
    assert provider_of(syms["tf.summary.scalar"].object) == "tensorboard"
    assert "tf.summary.create_file_writer" in syms  # TF's own entries stay
