"""Deprecation from decorators (with their instructions) and from docstring markers."""
from __future__ import annotations

from knowledge_base.extract import extract_release
from knowledge_base.extract.deprecation import from_docstring
from knowledge_base.wheels import find_release_wheels
from tests.wheelfactory import api_file, make_tf_wheel

MATH_OPS = '''
from tensorflow.python.util import deprecation
from tensorflow.python.util.deprecation import deprecated_endpoints


@deprecation.deprecated(date=None, instructions="Use `tf.cast` instead.")
def to_float(x, name="ToFloat"):
    """Casts a tensor to type `float32`."""


@deprecation.deprecated_args(None, "keep_dims is deprecated, use keepdims instead",
                             "keep_dims")
def reduce_sum_v1(input_tensor, axis=None, keep_dims=None):
    """Computes the sum."""


@deprecated_endpoints("math.old_name")
@deprecation.deprecated("2030-01-01", "Use " + "`tf.new` instead.")
def both(x):
    """Deprecated at every endpoint; additionally `math.old_name` as a path."""


@deprecated_endpoints("legacy_name")
def endpoint_only(x):
    """Only the legacy path is deprecated."""


def plain(x):
    """Nothing to see.

    Warning: THIS FUNCTION IS DEPRECATED. It will be removed in a future version.
    Instructions for updating:
    Use `tf.plain2` instead.
    """


old_alias = deprecation.deprecated(None, "Use `tf.math.plain` instead.")(plain)


class OldThing(object):
    """An old thing."""

    @deprecation.deprecated(None, "Use `tf.NewThing`.")
    def __init__(self, a):
        pass
'''


def test_decorators_endpoints_and_docstrings(tmp_path):
    entries = [("tensorflow.python.ops.math_ops", n) for n in
               ("to_float", "both", "endpoint_only", "plain", "old_alias", "OldThing")]
    entries += [("tensorflow.python.ops.math_ops", "reduce_sum_v1", "reduce_sum"),
                ("tensorflow.python.ops.math_ops", "endpoint_only", "legacy_name")]
    api = {"": api_file([], ["math"], package="tensorflow._api.v2", style="old"),
           "math": api_file(entries + [("tensorflow.python.ops.math_ops", "both", "old_name")],
                            package="tensorflow._api.v2.math", style="old")}
    api[""] = api[""].replace("from . import math", "from ._api.v2 import math")
    # legacy_name must be tf.legacy_name for the endpoint to match: put it at the root too.
    api[""] = api[""].replace("\n\ndel", "\nfrom tensorflow.python.ops.math_ops import "
                                         "endpoint_only as legacy_name\n\ndel")
    make_tf_wheel(tmp_path, "2.5.0", api, {"tensorflow.python.ops.math_ops": MATH_OPS})
    by = {s.name: s for s in extract_release(find_release_wheels("2.5", tmp_path)).symbols}

    d = by["tf.math.to_float"].deprecation
    assert d.how == "decorator" and d.instructions == "Use `tf.cast` instead." and d.date is None
    d = by["tf.math.reduce_sum"].deprecation
    assert d.args == ["keep_dims"] and "keepdims" in d.instructions
    # `both`: the endpoint decorator names another path, the @deprecated applies everywhere.
    assert by["tf.math.both"].deprecation.instructions == "Use `tf.new` instead."
    assert by["tf.math.both"].deprecation.date == "2030-01-01"
    assert by["tf.math.old_name"].deprecation.how == "endpoint"
    assert by["tf.math.endpoint_only"].deprecation is None
    assert by["tf.legacy_name"].deprecation.how == "endpoint"
    d = by["tf.math.plain"].deprecation
    assert d.how == "docstring" and d.instructions == "Use `tf.plain2` instead."
    # x = deprecated(...)(f): the alias is deprecated, the function it wraps is not.
    assert by["tf.math.old_alias"].deprecation.instructions == "Use `tf.math.plain` instead."
    assert by["tf.math.old_alias"].object == "tensorflow.python.ops.math_ops.plain"
    assert by["tf.math.OldThing"].deprecation.instructions == "Use `tf.NewThing`."


def test_docstring_markers():
    assert from_docstring("Does x. (deprecated)\n\nMore.").how == "docstring"
    assert from_docstring("Layer.\n\nDEPRECATED: use `tf.keras.layers.Foo`.") is not None
    assert from_docstring("Computes things.\n\nNot deprecated at all.") is None
    assert from_docstring("") is None


# -- stubs that raise, and arguments the code's messages deprecate (issue 27) ---------------
import ast as _ast  # noqa: E402

from hypothesis import given as _given  # noqa: E402
from hypothesis import strategies as _st  # noqa: E402

from knowledge_base.extract.deprecation import argument_messages, stub_raise  # noqa: E402

_IDENT = _st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)


def _fn(src: str):
    return _ast.parse(src).body[0]


def test_a_body_that_raises_first_is_an_unusable_stub():
    stub = stub_raise(_fn('def __init__(self, *a, **k):\n    """Doc."""\n    raise ImportError(\n'
                          '        "`keras.optimizers.legacy` is not supported in Keras 3. "\n'
                          '        "Install tf_keras.")\n'))
    assert stub.how == "raises"
    assert stub.instructions == ("ImportError: `keras.optimizers.legacy` is not supported in "
                                 "Keras 3. Install tf_keras.")
    # Abstract methods, conditional raises and ordinary bodies are not stubs.
    assert stub_raise(_fn("def call(self):\n    raise NotImplementedError('subclass')")) is None
    assert stub_raise(_fn("def f(x):\n    if x:\n        raise ValueError('x')")) is None
    assert stub_raise(_fn("def f(x):\n    return x")) is None
    assert stub_raise(None) is None


@_given(_IDENT, _IDENT, _st.sampled_from([
    "The `{a}` argument is deprecated, use `{b}` instead.",
    "Argument `{a}` is deprecated. Use `{b}` instead.",
    "`{a}` argument is deprecated. Please use `{b}`",
    "Argument `{a}` is no longer supported and will be ignored.",
]))
def test_argument_messages_name_the_argument(a, b, template):
    text = template.format(a=a, b=b)
    dep = argument_messages([_fn(f"def f(**kwargs):\n    warnings.warn({text!r})")])
    assert dep is not None and dep.args == [a] and dep.how == "argument"
    assert dep.instructions == text


@_given(_st.text(max_size=200))
def test_argument_messages_never_fail_on_any_string(text):
    dep = argument_messages([_fn(f"def f():\n    x = {text!r}\n    y = f'{{x}}' + {text!r}")])
    assert dep is None or dep.args
