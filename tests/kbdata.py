"""Small hand-made releases for KB tests: shaped like real TensorFlow history."""
from __future__ import annotations

from knowledge_base.records import (CLASS, FUNCTION, METHOD, MODULE, Deprecation, Param,
                                    ReleaseExtract, ReleaseInfo, Rename, SymbolRecord)


def P(name, default=None, kind="positional_or_keyword"):
    return Param(name, kind, default)


def release(version, symbols, renames=()):
    info = ReleaseInfo(version=version, tf_version=version + ".0",
                       tf_wheel=f"tensorflow_cpu-{version}.0-cp311-none-any.whl",
                       keras_version="3.0.5" if version >= "2.16" else version + ".0",
                       keras_source="keras 3 wheel" if version >= "2.16" else "keras 2 wheel")
    return ReleaseExtract(info, list(symbols), list(renames))


def mod(name):
    return SymbolRecord(name, MODULE, doc=f"Public API for {name} namespace.")


SOFTMAX_DOC = "Computes softmax activations.\n\nUsed for multi-class predictions."
PAD_DOC = "Pads a tensor.\n\nThis operation pads a `tensor` with zeros or a constant value."
ES_DOC = ("Stop training when a monitored metric has stopped improving.\n\n"
          "Assuming the goal of a training is to minimize the loss.")


def history_releases():
    """2.14, 2.15, 2.16 with an addition, a removal, a signature change, a deprecation, a
    move out of experimental, and tf.estimator going away."""
    common = [
        mod("tf"), mod("tf.nn"), mod("tf.keras"), mod("tf.keras.callbacks"), mod("tf.keras.layers"),
        SymbolRecord("tf.pad", FUNCTION, "tensorflow.python.ops.array_ops.pad_v2",
                     [P("tensor"), P("paddings"), P("mode", "'CONSTANT'"), P("constant_values", "0"),
                      P("name", "None")], PAD_DOC),
        SymbolRecord("tf.keras.callbacks.EarlyStopping", CLASS,
                     "keras.callbacks.EarlyStopping", [P("monitor", "'val_loss'"),
                                                        P("patience", "0")], ES_DOC),
        SymbolRecord("tf.keras.Model", CLASS, "keras.engine.training.Model", [P("args", kind="var_positional"), P("kwargs", kind="var_keyword")], "A model grouping layers."),
        SymbolRecord("tf.keras.Model.fit", METHOD, "keras.engine.training.Model.fit",
                     [P("x", "None"), P("y", "None"), P("epochs", "1")], "Trains the model for a fixed number of epochs."),
    ]
    r14 = release("2.14", common + [
        SymbolRecord("tf.nn.softmax", FUNCTION, "tensorflow.python.ops.nn_ops.softmax_v2",
                     [P("logits"), P("axis", "None"), P("name", "None")], SOFTMAX_DOC),
        mod("tf.estimator"),
        SymbolRecord("tf.estimator.Estimator", CLASS, "tensorflow_estimator.python.estimator.estimator.EstimatorV2",
                     [P("model_fn")], "Estimator class to train and evaluate TensorFlow models."),
        mod("tf.keras.layers.experimental"),
        SymbolRecord("tf.keras.layers.experimental.SyncBatchNormalization", CLASS,
                     "keras.layers.normalization.batch_normalization.SyncBatchNormalization",
                     [P("axis", "-1")], "Normalize and scale inputs or activations synchronously across replicas."),
    ], [Rename("tf.Session", "tf.compat.v1.Session", ""),
        Rename("tf.contrib.layers.xavier_initializer", "tf.compat.v1.keras.initializers.glorot_uniform",
               "tf.contrib.layers.xavier_initializer has been replaced by tf.keras.initializers.GlorotUniform")])
    r15 = release("2.15", common + [
        SymbolRecord("tf.nn.softmax", FUNCTION, "tensorflow.python.ops.nn_ops.softmax_v2",
                     [P("logits"), P("axis", "-1"), P("name", "None")], SOFTMAX_DOC),
        mod("tf.estimator"),
        SymbolRecord("tf.estimator.Estimator", CLASS, "tensorflow_estimator.python.estimator.estimator.EstimatorV2",
                     [P("model_fn")], "Estimator class to train and evaluate TensorFlow models.",
                     Deprecation("decorator", "Use tf.keras instead.")),
        mod("tf.keras.layers.experimental"),
        SymbolRecord("tf.keras.layers.experimental.SyncBatchNormalization", CLASS,
                     "keras.layers.normalization.batch_normalization.SyncBatchNormalization",
                     [P("axis", "-1")], "Normalize and scale inputs or activations synchronously across replicas."),
        SymbolRecord("tf.keras.layers.BatchNormalization", CLASS,
                     "keras.layers.normalization.batch_normalization.BatchNormalization",
                     [P("axis", "-1"), P("synchronized", "False")], "Layer that normalizes its inputs."),
    ])
    r16 = release("2.16", common + [
        SymbolRecord("tf.nn.softmax", FUNCTION, "tensorflow.python.ops.nn_ops.softmax_v2",
                     [P("logits"), P("axis", "-1"), P("name", "None")], SOFTMAX_DOC),
        SymbolRecord("tf.keras.layers.BatchNormalization", CLASS,
                     "keras.src.layers.normalization.batch_normalization.BatchNormalization",
                     [P("axis", "-1"), P("synchronized", "False")], "Layer that normalizes its inputs."),
        SymbolRecord("tf.keras.layers.experimental.SyncBatchNormalization", CLASS,
                     "keras.src.layers.normalization.batch_normalization.BatchNormalization",
                     [P("axis", "-1")], "Normalize and scale inputs."),
        SymbolRecord("tf.nn.relu", FUNCTION, "tensorflow.python.ops.gen_nn_ops.relu",
                     [P("features"), P("name", "None")], "Computes rectified linear: `max(features, 0)`."),
    ])
    return [r14, r15, r16]
