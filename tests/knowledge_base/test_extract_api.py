"""Public API walking: generated-file formats, aliases, namespaces kept and skipped."""
from __future__ import annotations

import pytest

from knowledge_base.extract import extract_release
from knowledge_base.records import CLASS, CONSTANT, FUNCTION, MODULE
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import api_file, make_tf_wheel

NN_OPS = '''
from tensorflow.python.util.tf_export import tf_export


@tf_export("nn.softmax", v1=[])
def softmax_v2(logits, axis=None, name=None):
    """Computes softmax activations.

    Longer text.
    """


def softmax(logits, axis=None, name=None, dim=None):
    """Computes softmax activations (v1)."""


def _private_helper(x, /, y, *args, z=3, **kw):
    """Not public, but re-exported under a public alias below."""
'''

ARRAY_OPS = '''
from tensorflow.python.ops.gen_array_ops import *
from tensorflow.python.ops import nn_ops as _nn
from tensorflow.python.ops.nn_ops import softmax_v2 as renamed_softmax

pad_alias = renamed_softmax
via_module = _nn._private_helper
'''

GEN_ARRAY_OPS = '''
def identity(input, name=None):
    """Return a tensor with the same shape and contents as input."""

Identity = tf_export("raw_ops.Identity")(_ops.to_raw_op(identity))
'''

DTYPES = '''
class DType(object):
    """Represents the type of the elements in a `Tensor`."""

    def __init__(self, type_enum, handle_data=None):
        pass

float32 = DType(1)
'''


def _api(style: str) -> dict[str, str]:
    root_pkg = "tensorflow._api.v2" if style == "old" else "tensorflow._api.v2"
    root_subs = ["nn", "compat", "raw_ops", "__internal__"]
    root = api_file([("tensorflow.python.framework.dtypes", "float32"),
                     ("tensorflow.python.framework.dtypes", "DType"),
                     ("tensorflow.python.ops.array_ops", "pad_alias", "alias_hop", 7),
                     ("tensorflow.python.ops.array_ops", "via_module", "helper"),
                     ("tensorflow.python.ops.gen_array_ops", "identity"),
                     ("tensorflow.python.framework.versions", "VERSION", "__version__"),
                     ("tensorflow.python._pywrap_mystery", "MysteryOp", None, 42),
                     ("tensorflow.python.tools", "module_util", "_module_util")],
                    [], package="tensorflow", style=style)
    # The root imports its namespaces from ._api.v2 (old) / tensorflow._api.v2 (new).
    subs = "\n".join((f"from ._api.v2 import {s}" if style == "old"
                      else f"from tensorflow._api.v2 import {s}") for s in root_subs)
    root = root.replace("import sys as _sys\n", "import sys as _sys\n" + subs + "\n")
    return {
        "": root,
        "nn": api_file([("tensorflow.python.ops.nn_ops", "softmax_v2", "softmax", 4)],
                       package=f"{root_pkg}.nn", style=style, doc="Neural nets."),
        "raw_ops": api_file([("tensorflow.python.ops.gen_array_ops", "Identity")],
                            package=f"{root_pkg}.raw_ops", style=style),
        "__internal__": api_file([("tensorflow.python.ops.nn_ops", "softmax")],
                                 package=f"{root_pkg}.__internal__", style=style),
        "compat": api_file([], ["v1", "v2"], package=f"{root_pkg}.compat", style=style),
        "compat.v1": api_file([("tensorflow.python.ops.nn_ops", "softmax")], ["nn", "compat"],
                              package=f"{root_pkg}.compat.v1", style=style),
        "compat.v1.nn": api_file([("tensorflow.python.ops.nn_ops", "softmax")],
                                 package=f"{root_pkg}.compat.v1.nn", style=style),
        "compat.v1.compat": api_file([], ["v1"], package=f"{root_pkg}.compat.v1.compat",
                                     style=style),
        "compat.v2": api_file([("tensorflow.python.ops.nn_ops", "softmax_v2", "softmax")],
                              package=f"{root_pkg}.compat.v2", style=style),
    }


SOURCES = {
    "tensorflow.python.ops.nn_ops": NN_OPS,
    "tensorflow.python.ops.array_ops": ARRAY_OPS,
    "tensorflow.python.ops.gen_array_ops": GEN_ARRAY_OPS,
    "tensorflow.python.framework.dtypes": DTYPES,
    "tensorflow.python.framework.versions": 'VERSION = "2.16.1"\n',
}


@pytest.fixture(params=[("2.3.1", "old"), ("2.16.1", "new")], ids=["format-2.3", "format-2.16"])
def extract(request, tmp_path):
    version, style = request.param
    make_tf_wheel(tmp_path, version, _api(style), SOURCES)
    ex = extract_release(find_release_wheels(version[:4], tmp_path))
    return {s.name: s for s in ex.symbols}, ex


def test_functions_signature_docstring_and_defining_object(extract):
    by, _ = extract
    s = by["tf.nn.softmax"]
    assert s.kind == FUNCTION
    assert s.object == "tensorflow.python.ops.nn_ops.softmax_v2"
    assert s.signature == "(logits, axis=None, name=None)"
    assert s.doc.startswith("Computes softmax activations.\n\nLonger text.")
    assert s.line == 6
    assert by["tf.nn"].kind == MODULE and by["tf.nn"].doc.startswith("Neural nets.")


def test_aliases_followed_across_modules(extract):
    by, _ = extract
    # array_ops: `from nn_ops import softmax_v2 as renamed_softmax; pad_alias = renamed_softmax`
    assert by["tf.alias_hop"].object == "tensorflow.python.ops.nn_ops.softmax_v2"
    # `via_module = _nn._private_helper` through an `import ... as` module alias
    h = by["tf.helper"]
    assert h.object == "tensorflow.python.ops.nn_ops._private_helper"
    assert h.signature == "(x, /, y, *args, z=3, **kw)"
    # star import of a generated ops module
    assert by["tf.identity"].object == "tensorflow.python.ops.gen_array_ops.identity"
    # raw op: Identity = tf_export(...)(to_raw_op(identity)) keeps the op's signature
    assert by["tf.raw_ops.Identity"].kind == FUNCTION
    assert by["tf.raw_ops.Identity"].signature == "(input, name=None)"


def test_classes_constants_and_unresolvable_symbols(extract):
    by, _ = extract
    assert by["tf.DType"].kind == CLASS
    assert by["tf.DType"].signature == "(type_enum, handle_data=None)"
    assert by["tf.float32"].kind == CONSTANT
    assert by["tf.float32"].object == "tensorflow.python.framework.dtypes.float32"
    assert by["tf.__version__"].kind == CONSTANT
    # Defined in a .so only: still listed, with the generator's line hint in the new format.
    m = by["tf.MysteryOp"]
    assert m.kind == CLASS and m.object == "tensorflow.python._pywrap_mystery.MysteryOp"
    assert m.params is None


def test_compat_v1_kept_mirrors_and_private_skipped(extract):
    by, ex = extract
    assert by["tf.compat.v1.softmax"].object == "tensorflow.python.ops.nn_ops.softmax"
    assert by["tf.compat.v1.nn.softmax"].signature == "(logits, axis=None, name=None, dim=None)"
    assert "tf.compat.v1" in by and "tf.compat" in by
    names = set(by)
    assert not any(n.startswith("tf.compat.v2") for n in names)
    assert not any(n.startswith("tf.compat.v1.compat") for n in names)
    assert not any("__internal__" in n or "_module_util" in n for n in names)
    assert ex.info.tf_version in ("2.3.1", "2.16.1")
    assert ex.info.tf_wheel.startswith("tensorflow_cpu-")
