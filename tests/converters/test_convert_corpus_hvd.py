"""The public-pattern corpus (tests/scripts/ORIGINS.md) converted to Horovod: converted with
the expected styles and no errors, or refused for the expected reason (fast checks; the
two-worker runs are in test_convert_run_hvd.py and benchmarks/convert_corpus.py)."""
from pathlib import Path

import pytest

from converters.script import ConversionError, convert

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

# script -> styles after analysis (converted), or (rule id, words of the reason) (refused)
EXPECTED = {
    "structured_lookup_adapt.py": ["keras_fit"],
    "text_folder_vectorize.py": ["keras_fit"],
    "image_folder_checkpoint.py": ["keras_fit"],
    "dcgan_train_step.py": ["keras_fit"],
    "fit_train_step_numpy.py": ["keras_fit"],
    "timeseries_best_checkpoint.py": ["keras_fit"],
    "tf1_interactive_init_run.py": ["tf1_session"],
    "tf1_summaries_init_op.py": ["tf1_session"],
    "tensorboard_loop_writers.py": ["custom_loop"],
    "xla_jit_train_step.py": ["custom_loop"],
    "mnist_convnet_numpy.py": ["keras_fit"],
    "grads_inside_tape.py": ["custom_loop"],
    "csv_records_loop.py": ["custom_loop"],
    "numpy_permutation_fit.py": ["keras_fit"],
    # issue 29: files only rank 0 writes read back, losses on layers and objects, the batch
    # used outside the step, lookup layers in a loop, TFRecord files every rank would write
    "checkpoint_dir_listdir.py": ["keras_fit"],
    "logs_copied_after_loop.py": ["custom_loop"],
    "endpoint_layer_loss.py": ["keras_fit"],
    "loss_on_trainer_object.py": ["custom_loop"],
    "log_model_on_batch.py": ["custom_loop"],
    "tfrecord_shards_fit.py": ["keras_fit"],
    "lookup_layer_custom_loop.py": ["custom_loop"],
    "trainer_methods_loop.py": ["custom_loop"],
    "keras3_plain_import_fit.py": ("HVD002", "TF 2.15.1, Keras 2.15"),
    "mirrored_strategy_fit.py": ("HVD004", "MirroredStrategy"),
    "keras3_optimizer_apply.py": ("HVD002", "Keras 3"),
}


def test_every_pattern_has_its_origin():
    origins = (SCRIPTS / "ORIGINS.md").read_text()
    for name in EXPECTED:
        assert f"| {name} |" in origins, f"{name} is not in ORIGINS.md"
        assert (SCRIPTS / name).read_text().startswith("# Pattern"), f"{name}: origin comment first"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_horovod(name):
    expected = EXPECTED[name]
    source = (SCRIPTS / name).read_text()
    if isinstance(expected, tuple):
        with pytest.raises(ConversionError, match=expected[1]) as info:
            convert(source, "horovod", name)
        assert info.value.rule_id == expected[0]
        return
    result = convert(source, "horovod", name)
    assert result.analysis.styles == expected
    assert result.counts()["error"] == 0, result.report
    compile(result.code, name, "exec")
