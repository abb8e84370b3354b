"""The corpus: realistic scripts of every style, converted to both targets (fast checks).

The slow proof that the converted scripts really train on two workers is test_convert_run.py.
"""
from pathlib import Path

import pytest

from converters.script import ConversionError, convert

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"

# script -> (styles, keras flavour, targets it converts to)
CONVERTIBLE = {
    "keras_fit_basic.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "keras_argparse_main.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "keras_two_fits.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "keras_schedule.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "keras_subclassed.py": (["keras_fit"], "keras", ("horovod", "tf-distribute")),
    "custom_loop.py": (["custom_loop"], "tf.keras", ("horovod", "tf-distribute")),
    "custom_loop_main.py": (["custom_loop"], "tf.keras", ("horovod", "tf-distribute")),
    "tf1_monitored.py": (["tf1_session"], None, ("horovod",)),
    "estimator_linear.py": (["estimator"], None, ("horovod",)),
    "keras3_ops.py": (["keras_fit"], "keras3", ()),
    # unseen-script QA (issue 4): two-input tf.data pipeline, metrics + CheckpointManager loop,
    # config dict, YAML config in main(), rate assigned between fits, .keras + SavedModel export
    "functional_two_inputs.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "custom_loop_metrics.py": (["custom_loop"], "tf.keras", ("horovod", "tf-distribute")),
    "keras2_config_dict.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "yaml_config_main.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "finetune_assign_lr.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    "export_saved_model.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    # second QA round: a GAN step with two tapes, an optimizer class picked from a dict by a flag
    "gan_two_tapes.py": (["custom_loop"], "tf.keras", ("horovod", "tf-distribute")),
    "optimizer_from_flag_dict.py": (["keras_fit"], "tf.keras", ("horovod", "tf-distribute")),
    # the checkpoint guide's loop: Checkpoint(step=tf.Variable), restore, save, int(ckpt.step)
    "checkpoint_guide_loop.py": (["custom_loop"], "tf.keras", ("horovod", "tf-distribute")),
}
UNCHANGED = {"already_horovod.py": "already distributed", "inference_only.py": "no training"}
REFUSED = {("tf1_monitored.py", "tf-distribute"): "TF1 session code",
           ("estimator_linear.py", "tf-distribute"): "Estimator",
           ("keras3_ops.py", "horovod"): "Keras 3",
           # Keras 3 fit() under MultiWorkerMirroredStrategy fails upstream (issue 29)
           ("keras3_ops.py", "tf-distribute"): "keras-team/keras#20585"}


def test_corpus_is_complete():
    assert len(list(SCRIPTS.glob("*.py"))) >= 10
    assert set(CONVERTIBLE) | set(UNCHANGED) <= {p.name for p in SCRIPTS.iterdir()}


@pytest.mark.parametrize("name", sorted(CONVERTIBLE))
@pytest.mark.parametrize("target", ["horovod", "tf-distribute"])
def test_convert_corpus_script(name, target):
    styles, keras, targets = CONVERTIBLE[name]
    src = (SCRIPTS / name).read_text()
    if target not in targets:
        with pytest.raises(ConversionError, match=REFUSED[(name, target)]):
            convert(src, target, name)
        return
    result = convert(src, target, name)
    assert result.analysis.styles == styles
    assert result.analysis.keras == keras
    assert result.analysis.has_training and not result.analysis.already_distributed
    assert result.changed and result.diff.startswith(f"--- a/{name}\n+++ b/{name}\n")
    compile(result.code, name, "exec")
    assert not convert(result.code, target, name).changed  # idempotent
    assert all(f.line >= 1 for f in result.findings)
    assert not [f for f in result.findings if f.severity == "error"], result.report
    marker = "hvd.init()" if target == "horovod" else "MultiWorkerMirroredStrategy()"
    assert result.code.count(marker) == 1


@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_corpus_unchanged(name):
    for target in ("horovod", "tf-distribute"):
        result = convert((SCRIPTS / name).read_text(), target, name)
        assert not result.changed
        assert UNCHANGED[name] in result.findings[0].message
