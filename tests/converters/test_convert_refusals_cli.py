"""Issue 16 through the command layer: a conversion with error findings fails (non-zero, no
script written) unless --force; refusals fail with their reason; `tfdesk train --workers N`
shows the converter's findings, and stops on a refusal or an error before any job exists."""
from pathlib import Path

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line

CASES = Path(__file__).resolve().parents[1] / "convert_cases"
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
ERROR_CASE = CASES / "hvd_unknown_variables.py"  # HVD051: cannot tell which variables to broadcast


@pytest.fixture
def ctx(tmp_path):
    c = Context(config=load_config({"TFDESK_HOME": str(tmp_path / "home")}))
    yield c
    c.services.close()


def test_error_findings_fail_the_conversion_and_write_nothing(ctx, tmp_path):
    out = tmp_path / "out.py"
    _, reply = run_line(ctx, ["convert", str(ERROR_CASE), "-o", str(out)])
    assert not reply.ok and reply.status != 0
    assert not out.exists()
    assert reply.text.startswith("hvd_unknown_variables.py was not converted: 1 error")
    assert "hvd_unknown_variables.py:9:5: error: [HVD051]" in reply.text
    assert "--force" in reply.text
    assert "Other findings:" in reply.text and "[HVD001]" in reply.text
    assert [f["rule_id"] for f in reply.data["findings"] if f["severity"] == "error"] == ["HVD051"]


def test_force_writes_the_partial_conversion(ctx, tmp_path):
    out = tmp_path / "out.py"
    _, reply = run_line(ctx, ["convert", str(ERROR_CASE), "-o", str(out), "--force"])
    assert reply.ok, reply.text
    code = out.read_text()
    assert code.count("hvd.init()") == 1 and "optimizer.apply_gradients(pairs)" in code
    assert "1 not converted" in reply.text and "[HVD051]" in reply.text


def test_mirrored_strategy_is_refused_for_horovod_with_the_reason(ctx, tmp_path):
    out = tmp_path / "out.py"
    _, reply = run_line(ctx, ["convert", str(SCRIPTS / "mirrored_strategy_fit.py"), "-o", str(out)])
    assert not reply.ok and not out.exists()
    assert "already uses tf.distribute.MirroredStrategy (line 8)" in reply.text
    assert "--to tf-distribute" in reply.text and reply.data["rule_id"] == "HVD004"


def test_train_shows_the_findings_of_the_conversion(ctx):
    _, reply = run_line(ctx, ["train", str(SCRIPTS / "keras_fit_basic.py"), "--workers", "2",
                              "--dry-run"])
    assert reply.ok, reply.text
    assert reply.text.startswith("converted to horovod:\nkeras_fit_basic.py:")
    assert "info: [HVD011]" in reply.text and "horovodrun" in reply.text


@pytest.mark.parametrize("script, target, words", [
    (SCRIPTS / "mirrored_strategy_fit.py", "auto", "already uses tf.distribute.MirroredStrategy"),
    # (--convert auto makes a Keras 3 script tf.distribute; asked for Horovod, it is refused)
    (SCRIPTS / "keras3_optimizer_apply.py", "horovod", "Keras 3 APIs (optimizer.apply, line 25)"),
    (ERROR_CASE, "auto", "error: [HVD051]"),
])
def test_train_stops_on_a_refusal_or_an_error(ctx, script, target, words):
    _, reply = run_line(ctx, ["train", str(script), "--workers", "2", "--to", target, "--dry-run"])
    assert not reply.ok
    assert words in reply.text, reply.text
    _, jobs = run_line(ctx, ["jobs"])
    assert "no jobs" in jobs.text
