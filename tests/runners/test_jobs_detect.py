"""One truth for "already distributed": train asks the script converter's analysis, so a
comment or a string naming a strategy does not make a script distributed."""
from __future__ import annotations

import pytest
from tests.jobs_helpers import write

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from runners.training import detect_target

FIT = """
import tensorflow as tf
{extra}
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), epochs=2)
"""


@pytest.mark.parametrize("extra, expected", [
    ("# TODO: try tf.distribute.MultiWorkerMirroredStrategy here", None),
    ('NOTE = "MultiWorkerMirroredStrategy or import horovod"', None),
    ("strategy = tf.distribute.MultiWorkerMirroredStrategy()", "tf-distribute"),
    ("strategy = tf.distribute.MirroredStrategy()  # one machine: not multi-worker", None),
    ("import horovod.tensorflow.keras as hvd\nhvd.init()", "horovod"),
])
def test_detect_target_reads_code_not_text(extra, expected):
    assert detect_target(FIT.format(extra=extra)) == expected


def test_a_comment_mentioning_a_strategy_does_not_stop_the_conversion(tmp_path):
    script = write(tmp_path / "train.py", FIT.format(
        extra="# later: tf.distribute.MultiWorkerMirroredStrategy"))
    ctx = Context(load_config({"TFDESK_HOME": str(tmp_path / "home")}))
    try:
        _, reply = run_line(ctx, f"train {script} --workers 2 --dry-run")
        assert reply.ok, reply.text
        spec = reply.data["spec"]
        assert spec["converted_to"] == "horovod" and spec["launcher"] == "horovod"
        assert "hvd.init()" in reply.text or "converted to horovod" in reply.text
        assert "-np 2" in reply.text
    finally:
        ctx.services.close()
