"""Builds models that hold code or reach outside themselves, for tests/converters/test_model_safety.py.
Runs in the runner env (TensorFlow):

    .venv-runner/bin/python tests/unsafe_models.py OUT_DIR

Not a test module; each model is tiny and real, saved by TensorFlow itself.
"""
import sys
from pathlib import Path

import tensorflow as tf


def keras_model(with_lambda: bool):
    inp = tf.keras.Input((4,), name="x")
    x = tf.keras.layers.Dense(3, name="hidden")(inp)
    if with_lambda:
        x = tf.keras.layers.Lambda(lambda t: t * 2.0, name="doubler")(x)
    return tf.keras.Model(inp, tf.keras.layers.Dense(1, name="y")(x))


@tf.keras.utils.register_keras_serializable(package="Acme")
class Scale(tf.keras.layers.Layer):
    def call(self, x):
        return x * 3.0


class ReadsFiles(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec((), tf.string, name="path")])
    def __call__(self, path):
        return {"content": tf.io.read_file(path)}


class CallsPython(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec((None,), tf.float32, name="x")])
    def __call__(self, x):
        return {"y": tf.py_function(lambda v: v * 2, [x], tf.float32)}


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    keras_model(True).save(out / "lambda.h5")
    keras_model(False).save(out / "plain.h5")
    keras_model(True).save(out / "lambda.keras")
    inp = tf.keras.Input((4,), name="x")
    tf.keras.Model(inp, Scale()(inp)).save(out / "custom.keras")
    plain = keras_model(False)
    tf.saved_model.save(plain, str(out / "plain_sm"))
    reads = ReadsFiles()
    tf.saved_model.save(reads, str(out / "readfile_sm"), signatures={"serving_default": reads.__call__})
    calls = CallsPython()
    tf.saved_model.save(calls, str(out / "pyfunc_sm"), signatures={"serving_default": calls.__call__})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
