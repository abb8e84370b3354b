"""The tf-distribute corpus scripts of issue 16 (tests/scripts/ORIGINS.md): each converts to
tf-distribute with the rules its pattern needs, or is refused with the reason (fast checks; the
two-worker runs are benchmarks/convert_corpus.py and tests/converters/test_convert_equivalence.py)."""
from pathlib import Path

import pytest

from converters.script import ConversionError, convert

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

# script -> the rule ids its conversion must report (the pattern it reproduces)
CONVERTS = {
    "train_step_compiled_loss.py": {"TFD046", "TFD023", "TFD010"},
    "numpy_permutation_fit.py": {"TFD024"},
    "train_step_loss_object.py": {"TFD046", "TFD047"},
    "mirrored_custom_loop.py": {"TFD005", "TFD030"},
    "mirrored_fit_checkpoint.py": {"TFD005", "TFD021", "TFD032"},
    "tf_function_steps_enumerate.py": {"TFD051", "TFD045", "TFD050"},
    "checkpoint_best_then_load.py": {"TFD021", "TFD032"},
    "summary_writer_rmtree.py": {"TFD031"},
    "image_dir_classifier.py": {"TFD023"},
    "xla_jit_train_step.py": {"TFD012"},
    "vendor_nested_steps.py": {"TFD051", "TFD030"},
    # issue 29
    "checkpoint_dir_listdir.py": {"TFD035", "TFD021"},
    "logs_copied_after_loop.py": {"TFD035", "TFD031"},
    "endpoint_layer_loss.py": {"TFD048"},
    "loss_on_trainer_object.py": {"TFD048", "TFD050"},
    "log_model_on_batch.py": {"TFD051"},
    "tfrecord_shards_fit.py": {"TFD035"},
    "lookup_layer_custom_loop.py": {"TFD050", "TFD051"},
    "trainer_methods_loop.py": {"TFD048", "TFD050", "TFD051"},
}
# script -> (rule, words of the reason)
REFUSED = {"eager_inline_loop.py": ("TFD053", "strategy.run"),
           "keras3_optimizer_apply.py": ("TFD053", "strategy.run"),
           "keras3_plain_import_fit.py": ("TFD006", "keras-team/keras#20585")}


@pytest.mark.parametrize("name", sorted(CONVERTS))
def test_converts_with_the_rules_its_pattern_needs(name):
    result = convert((SCRIPTS / name).read_text(), "tf-distribute", name)
    assert CONVERTS[name] <= {f.rule_id for f in result.findings}, result.report
    assert not [f for f in result.findings if f.severity == "error"], result.report
    assert result.code.count("MultiWorkerMirroredStrategy()") == 1
    assert "MirroredStrategy()" not in result.code.replace("MultiWorkerMirroredStrategy()", "")
    compile(result.code, name, "exec")
    assert not convert(result.code, "tf-distribute", name).changed  # idempotent


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_the_reason(name):
    with pytest.raises(ConversionError) as e:
        convert((SCRIPTS / name).read_text(), "tf-distribute", name)
    rule, words = REFUSED[name]
    assert e.value.rule_id == rule and words in str(e.value)
