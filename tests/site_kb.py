"""A small, hand-made KB for the site tests, built by the real builder from ReleaseExtracts.

It holds what the site must handle: a signature change, a deprecation, a removal, a move out
of ``experimental``, class members (one removed in 2.6), a TF1 rename, a symbol whose name has
odd characters, a docstring with unbalanced Markdown and HTML, and Google-style docstrings with
Args/Returns/Raises sections, ``>>>`` examples and ``tf.…`` mentions to link.
"""
from __future__ import annotations

from pathlib import Path

from knowledge_base.builder import build_kb
from knowledge_base.records import (Deprecation, Param, ReleaseExtract, ReleaseInfo, Rename,
                                    SymbolRecord)

ODD_NAME = "tf.nn.we<ird>`na me`[0]&{x}"
NASTY_DOC = """Computes something odd. <b>bold never closed

```python
x = 1  # a fence that never closes
<div class="oops"><details><summary>open
</pre></table></div></div></div>
<script>document.title = "pwned"</script>
{{ jinja }} {% raw %} --8<-- "missing.md"
[link](nowhere.md) ![img](missing.png) *emphasis _under
    indented code?
| a | b
"""


FIT_DOC = """Trains the model for a fixed number of epochs.

Accepts NumPy arrays or a `tf.data.Dataset` of `(inputs, targets)`.

Args:
  x: Input data. A NumPy array or a `tf.data.Dataset`.
  y: Target data.
  epochs: Integer. Number of epochs to train the model.

Returns:
  A `History` object.

Raises:
  RuntimeError: If the model was never compiled.

Example:

>>> model.fit(x, y, epochs=2)
<keras.callbacks.History object>
"""


def _p(*names, **defaults):
    return [Param(n) for n in names] + [Param(k, default=v) for k, v in defaults.items()]


def extracts() -> list[ReleaseExtract]:
    def release(v: str, patch: str) -> ReleaseInfo:
        return ReleaseInfo(version=v, tf_version=patch, tf_wheel=f"tensorflow-{patch}-cp39.whl",
                           keras_version=patch, keras_source="keras 2 wheel", python_tag="cp39")

    def common(ord_: int) -> list[SymbolRecord]:
        softmax_axis = "None" if ord_ == 0 else "-1"
        syms = [
            SymbolRecord("tf", "module", doc="TensorFlow."),
            SymbolRecord("tf.nn", "module", doc="Neural network ops."),
            SymbolRecord("tf.nn.softmax", "function", "tensorflow.python.ops.nn_ops.softmax_v2",
                         _p("logits", axis=softmax_axis, name="None"),
                         doc="Computes softmax activations.\n\nUsed for multi-class "
                             "classification.\n\n```python\ntf.nn.softmax([1., 2.])\n```"),
            SymbolRecord("tf.nn.relu", "function", "tensorflow.python.ops.nn_ops.relu",
                         _p("features", name="None"), doc="Computes rectified linear."),
            SymbolRecord(ODD_NAME, "function", "tensorflow.python.ops.odd.weird",
                         _p("x"), doc=NASTY_DOC),
            SymbolRecord("tf.keras", "module", doc="Keras API."),
            SymbolRecord("tf.keras.Model", "class", "keras.engine.training.Model",
                         _p("self", "inputs", "outputs"),
                         doc="A model grouping layers into an object with training features."),
            SymbolRecord("tf.keras.Model.fit", "method", "keras.engine.training.Model.fit",
                         _p("self", x="None", y="None", epochs="1"), doc=FIT_DOC),
            SymbolRecord("tf.keras.layers", "module", doc="Keras layers API."),
            SymbolRecord("tf.keras.layers.RandomFlip", "class",
                         "keras.layers.preprocessing.random_flip.RandomFlip",
                         _p("self", mode="'horizontal_and_vertical'", seed="None"),
                         doc="A preprocessing layer which randomly flips images during training."),
            SymbolRecord("tf.data", "module", doc="`tf.data.Dataset` API for input pipelines."),
            SymbolRecord("tf.data.Dataset", "class", "tensorflow.python.data.ops.dataset_ops.DatasetV2",
                         _p("self", "variant_tensor"),
                         doc="Represents a potentially large set of elements."),
            SymbolRecord("tf.data.Dataset.map", "method",
                         "tensorflow.python.data.ops.dataset_ops.DatasetV2.map",
                         _p("self", "map_func", num_parallel_calls="None"),
                         doc="Maps `map_func` across the elements of this dataset.\n\n"
                             "Args:\n  map_func: A function mapping a dataset element to "
                             "another.\n\nReturns:\n  Dataset: A `tf.data.Dataset`."),
            SymbolRecord("tf.compat", "module", doc="Compatibility."),
            SymbolRecord("tf.compat.v1", "module", doc="TF1 API."),
            SymbolRecord("tf.compat.v1.Session", "class", "tensorflow.python.client.session.Session",
                         _p("self", target="''"), doc="A class for running TensorFlow operations."),
        ]
        if ord_ < 2:
            syms += [
                SymbolRecord("tf.keras.Model.old_method", "method",
                             "keras.engine.training.Model.old_method", _p("self"),
                             doc="A method Keras dropped in 2.6."),
                SymbolRecord("tf.estimator", "module", doc="Estimator: high level tools."),
                SymbolRecord("tf.estimator.Estimator", "class",
                             "tensorflow_estimator.python.estimator.estimator.Estimator",
                             _p("self", "model_fn"), doc="Estimator class to train models."),
                SymbolRecord("tf.nn.old_fn", "function", "tensorflow.python.ops.nn_ops.old_fn",
                             _p("x"), doc="An old function.",
                             deprecation=Deprecation("decorator", "Use `tf.nn.relu` instead.",
                                                     "2021-01-01") if ord_ == 1 else None),
                SymbolRecord("tf.experimental", "module", doc="Experimental."),
                SymbolRecord("tf.experimental.thing", "function", "tensorflow.python.thing.thing",
                             _p("a"), doc="Does the thing."),
            ]
        else:
            syms += [SymbolRecord("tf.thing", "function", "tensorflow.python.thing.thing",
                                  _p("a"), doc="Does the thing.")]
        return syms

    versions = [("2.4", "2.4.4"), ("2.5", "2.5.3"), ("2.6", "2.6.5")]
    out = []
    for i, (v, patch) in enumerate(versions):
        renames = [Rename("tf.Session", "tf.compat.v1.Session", "TF1 sessions live on in compat."),
                   Rename("tf.contrib.foo", None, "tf.contrib is gone.")]
        out.append(ReleaseExtract(release(v, patch), common(i), renames))
    return out


def make_kb(path: Path) -> Path:
    build_kb(extracts(), path)
    return path
