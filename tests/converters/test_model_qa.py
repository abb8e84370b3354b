"""Models unlike the zoo's, as a new user brings them: integer token inputs, a custom Keras
layer, a tf.Module with a named-input serving signature and an op ONNX lacks. Real
TensorFlow, tf2onnx and ONNX Runtime in the runner env."""
import os
import subprocess

import pytest

from bot.dispatch import run_line
from tests.model_context import RUNNER, model_context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

BUILD = r'''
import shutil, sys
from pathlib import Path
import tensorflow as tf
keras = tf.keras
tf.keras.utils.set_random_seed(3)
out = Path(sys.argv[1])

@keras.saving.register_keras_serializable(package="qa")
class Gated(keras.layers.Layer):
    def __init__(self, units, **kw):
        super().__init__(**kw); self.units = units
    def build(self, shape):
        self.w = self.add_weight(name="w", shape=(shape[-1], self.units))
        self.g = self.add_weight(name="g", shape=(shape[-1], self.units))
    def call(self, x):
        return tf.matmul(x, self.w) * tf.sigmoid(tf.matmul(x, self.g))
    def get_config(self):
        return {**super().get_config(), "units": self.units}

inp = keras.Input((20,), dtype="int32", name="tokens")
x = keras.layers.Embedding(100, 8)(inp)
x = Gated(6)(keras.layers.GlobalMaxPooling1D()(keras.layers.Conv1D(8, 3)(x)))
model = keras.Model(inp, keras.layers.Dense(4, name="label")(x))
model.save(out / "gated.keras")
tf.saved_model.save(model, str(out / "gated"))
shutil.make_archive(str(out / "gated"), "zip", out / "gated")

class Regressor(tf.Module):
    def __init__(self):
        super().__init__()
        self.w = tf.Variable(tf.random.normal((3, 1)))
    @tf.function(input_signature=[tf.TensorSpec((None, 3), tf.float32, name="features")])
    def serve(self, features):
        y = tf.matmul(features, self.w)
        return {"price": y, "log_price": tf.math.log1p(tf.abs(y))}

r = Regressor()
tf.saved_model.save(r, str(out / "log1p"), signatures={"serving_default": r.serve})
'''


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = tmp_path_factory.mktemp("qa_models")
    proc = subprocess.run([RUNNER, "-c", BUILD, str(out)], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture
def ctx(tmp_path):
    return model_context(tmp_path)


def convert(ctx, path):
    return run_line(ctx, ["convert-model", str(path), "--batch", "1,8"])[1]


def test_custom_layer_keras_file_says_to_send_a_savedmodel(ctx, models):
    reply = convert(ctx, models / "gated.keras")
    assert not reply.ok
    assert "Gated" in reply.text and "tf.saved_model.save" in reply.text, reply.text


def test_custom_layer_savedmodel_zip_with_int_tokens_converts(ctx, models):
    reply = convert(ctx, models / "gated.zip")
    assert reply.ok, reply.text
    assert reply.data["validation"]["passed"]
    tokens = reply.data["model"]["signature"]["inputs"][0]
    assert tokens["name"] == "tokens" and tokens["dtype"] == "int32"


def test_op_without_onnx_equivalent_names_it_and_a_way_out(ctx, models):
    reply = convert(ctx, models / "log1p")
    assert not reply.ok
    assert "Log1p" in reply.text and "tfdesk infer" in reply.text, reply.text
