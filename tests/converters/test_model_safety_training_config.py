"""A model tfdesk's Horovod conversion saved converts without --allow-code, and code stays
refused: the model gate reads only what the converter's loader builds (compile=False drops the
.keras ``compile_config``: the optimizer, loss and metrics). Real files saved by the runner
env's Keras with Horovod's DistributedOptimizer; generated configs with code anywhere."""
from __future__ import annotations

import json
import subprocess
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from converters.model import intake
from converters.model.errors import UnsafeModel

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / ".venv-runner" / "bin" / "python"

# As the converted script trains and saves (rank 0): Horovod's optimizer wrapper compiled in.
MAKE = """
import sys, tensorflow as tf, horovod.tensorflow.keras as hvd
hvd.init()
out = sys.argv[1]
def build(extra):
    inp = tf.keras.Input((4,))
    x = tf.keras.layers.Lambda(lambda t: t * 2, name="doubler")(inp) if extra else inp
    m = tf.keras.Model(inp, tf.keras.layers.Dense(2)(x))
    m.compile(hvd.DistributedOptimizer(tf.keras.optimizers.Adam(0.01)), "mse")
    m.fit(tf.zeros((8, 4)), tf.zeros((8, 2)), verbose=0)
    return m
build(False).save(f"{out}/hvd.keras")
build(True).save(f"{out}/hvd_lambda.keras")
back = tf.keras.models.load_model(f"{out}/hvd.keras", compile=False, safe_mode=True)
print("LOADED", back.count_params())
"""


@pytest.mark.slow
def test_a_horovod_trained_model_converts_and_lambda_still_refused(tmp_path):
    if not RUNNER.exists():
        pytest.skip("the runner environment (.venv-runner) is not built")
    done = subprocess.run([str(RUNNER), "-c", MAKE, str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "LOADED" in done.stdout, done.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / "hvd.keras") as zf:  # the case: the wrapper is saved
        assert "horovod._keras" in zf.read("config.json").decode()
    assert intake.identify(tmp_path / "hvd.keras").info.get("allow_code") is not True
    with pytest.raises(UnsafeModel, match="Lambda layer 'doubler'"):
        intake.identify(tmp_path / "hvd_lambda.keras")


CODE = st.sampled_from([
    {"class_name": "Lambda", "config": {"name": "f"}},
    {"class_name": "Evil", "module": "evil.mod", "config": {"name": "e"}},
    {"class_name": "Custom>Thing", "config": {"name": "c"}},
])
PLAIN = {"class_name": "Dense", "module": "keras.layers", "config": {"name": "d"}}


def keras_file(path: Path, config: dict) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", json.dumps(config))
        zf.writestr("metadata.json", "{}")
    return path


@settings(max_examples=60, deadline=None)
@given(layer_code=st.lists(CODE, max_size=2), compile_code=st.lists(CODE, max_size=2),
       elsewhere=st.sampled_from(["config", "build_config"]))
def test_code_is_refused_wherever_the_loader_builds_it(tmp_path_factory, layer_code,
                                                       compile_code, elsewhere):
    config = {"class_name": "Functional", "module": "keras.src.engine.functional",
              elsewhere: {"layers": [PLAIN, *layer_code]},
              "compile_config": {"optimizer": compile_code or PLAIN, "loss": "mse"}}
    path = keras_file(tmp_path_factory.mktemp("k") / "m.keras", config)
    if layer_code:
        with pytest.raises(UnsafeModel):
            intake.identify(path)
    else:
        intake.identify(path)  # code only in the training set-up, never built: passes
