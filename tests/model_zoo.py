"""Builds the small real models the model-conversion tests use. Runs in the runner env:

    .venv-runner/bin/python tests/model_zoo.py OUT_DIR [NAME ...]

Each model is tiny (seconds to build) but real: Keras layers with random weights, saved by
TensorFlow itself. Not a test module (no test_ prefix); tests call it in a subprocess.
"""
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(7)


def dense():
    inp = tf.keras.Input((16,), name="features")
    x = tf.keras.layers.Dense(64, activation="relu")(inp)
    x = tf.keras.layers.Dense(64, activation="relu")(x)
    out = tf.keras.layers.Dense(10, activation="softmax", name="probs")(x)
    return tf.keras.Model(inp, out, name="dense")


def cnn():
    inp = tf.keras.Input((28, 28, 1), name="image")
    x = tf.keras.layers.Conv2D(8, 3, activation="relu")(inp)
    x = tf.keras.layers.MaxPooling2D()(x)
    x = tf.keras.layers.Conv2D(16, 3, activation="relu")(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    out = tf.keras.layers.Dense(10, name="logits")(x)
    return tf.keras.Model(inp, out, name="cnn")


def lstm():
    inp = tf.keras.Input((None, 8), name="sequence")
    x = tf.keras.layers.LSTM(16)(inp)
    out = tf.keras.layers.Dense(1, name="score")(x)
    return tf.keras.Model(inp, out, name="lstm")


def multi_io():
    a = tf.keras.Input((8,), name="numeric")
    b = tf.keras.Input((4,), name="ids", dtype="int32")
    emb = tf.keras.layers.Flatten()(tf.keras.layers.Embedding(10, 3)(b))
    x = tf.keras.layers.Concatenate()([tf.keras.layers.Dense(8)(a), emb])
    cls = tf.keras.layers.Dense(3, activation="softmax", name="cls")(x)
    reg = tf.keras.layers.Dense(1, name="reg")(x)
    return tf.keras.Model([a, b], {"cls": cls, "reg": reg}, name="multi_io")


class Scaler(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.random.normal((6, 2)), name="w")
        self.b = tf.Variable(tf.zeros((2,)), name="b")

    @tf.function(input_signature=[tf.TensorSpec((None, 6), tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.nn.tanh(tf.matmul(x, self.w) + self.b)}


def text():
    # String preprocessing inside the model: ONNX has no standard string ops for this.
    vec = tf.keras.layers.TextVectorization(max_tokens=50, output_sequence_length=6)
    vec.adapt(tf.constant(["the cat sat", "a dog ran far", "the bird flew away"]))
    inp = tf.keras.Input((1,), dtype=tf.string, name="text")
    x = tf.keras.layers.Embedding(51, 4)(vec(inp))
    out = tf.keras.layers.Dense(2, name="out")(tf.keras.layers.GlobalAveragePooling1D()(x))
    return tf.keras.Model(inp, out, name="text")


KERAS = {"dense": dense, "cnn": cnn, "lstm": lstm, "multi_io": multi_io, "text": text}


def with_custom_op(folder: Path) -> None:
    """Pretend a model was built with a custom op library: rename MatMul to an op this
    TensorFlow does not register, in the graph's functions and its op list."""
    from tensorflow.core.protobuf import saved_model_pb2
    pb = folder / "saved_model.pb"
    sm = saved_model_pb2.SavedModel.FromString(pb.read_bytes())
    meta = sm.meta_graphs[0]
    for fn in meta.graph_def.library.function:
        for node in fn.node_def:
            if node.op == "MatMul":
                node.op = "TfdeskCustomOp"
    for op in meta.meta_info_def.stripped_op_list.op:
        if op.name == "MatMul":
            op.name = "TfdeskCustomOp"
    pb.write_bytes(sm.SerializeToString())


def main(out: Path, names: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    built = {}
    for name in names:
        if name == "custom":
            tf.saved_model.save(dense(), str(out / "custom"))
            with_custom_op(out / "custom")
        elif name == "module":
            m = Scaler()
            tf.saved_model.save(m, str(out / "module"), signatures={"serving_default": m.__call__})
        else:
            model = KERAS[name]()
            tf.saved_model.save(model, str(out / name))
            if name == "dense":
                model.save(out / "dense.keras")
                model.save(out / "dense.h5")
        built[name] = str(out / name)
    print(json.dumps({"built": built, "tf": tf.__version__}))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] or ["dense", "cnn", "lstm", "multi_io", "module", "text",
                                          "custom"])
