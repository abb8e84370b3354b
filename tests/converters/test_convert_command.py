"""`tfdesk convert` through the real command layer (parser, dispatch, handler, CLI)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.fixture
def ctx(tmp_path):
    return Context(config=load_config({"TFDESK_HOME": str(tmp_path / "home")}))


def test_convert_writes_output_and_reports(ctx, tmp_path):
    out = tmp_path / "out" / "train_hvd.py"
    cmd, reply = run_line(ctx, ["convert", str(SCRIPTS / "keras_fit_basic.py"), "-o", str(out)])
    assert reply.ok, reply.text
    assert out.read_text().count("hvd.init()") == 1
    assert reply.files == [out]
    assert "keras_fit_basic.py -> horovod: keras_fit" in reply.text
    assert "[HVD011]" in reply.text and f"wrote {out}" in reply.text
    assert "--- a/" not in reply.text  # no diff unless asked when writing a file


def test_convert_diff_json_and_target(ctx):
    cmd, reply = run_line(ctx, f"convert {SCRIPTS / 'custom_loop.py'} --to tf-distribute --diff --json")
    assert cmd.json and reply.ok
    data = json.loads(reply.to_json())
    assert data["target"] == "tf-distribute" and data["changed"] is True
    assert data["diff"].startswith("--- a/custom_loop.py")
    assert "strategy.run(train_step" in data["code"]
    assert data["analysis"]["styles"] == ["custom_loop"]


def test_convert_refuses_clearly(ctx, tmp_path):
    _, reply = run_line(ctx, ["convert", str(SCRIPTS / "broken_syntax.py")])
    assert not reply.ok and "syntax error at line 3" in reply.text
    _, reply = run_line(ctx, ["convert", str(tmp_path / "missing.py")])
    assert not reply.ok and "no such file" in reply.text
    _, reply = run_line(ctx, ["convert", str(SCRIPTS / "keras3_ops.py")])
    assert not reply.ok and "Keras 3" in reply.text and reply.data["rule_id"] == "HVD002"
    _, reply = run_line(ctx, ["convert", str(SCRIPTS / "custom_loop.py"), "--to", "deepspeed"])
    assert not reply.ok and reply.status == 2  # usage error names the choices
    assert "tf-distribute" in reply.text


def test_convert_never_overwrites_the_input(ctx, tmp_path):
    script = tmp_path / "train.py"
    original = (SCRIPTS / "keras_two_fits.py").read_text()
    script.write_text(original)
    _, reply = run_line(ctx, ["convert", str(script), "-o", str(script)])
    assert not reply.ok and "original is kept" in reply.text
    assert script.read_text() == original


def test_cli_exit_codes(tmp_path):
    env = {"TFDESK_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    ok = subprocess.run([sys.executable, "-m", "bot.cli", "convert", str(SCRIPTS / "keras_schedule.py"),
                         "--diff"], capture_output=True, text=True, env=env,
                        cwd=Path(__file__).resolve().parents[2])
    assert ok.returncode == 0, ok.stderr
    assert "+import horovod.tensorflow.keras as hvd" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "bot.cli", "convert", str(SCRIPTS / "empty.py")],
                         capture_output=True, text=True, env=env, cwd=Path(__file__).resolve().parents[2])
    assert bad.returncode == 1 and "is empty" in bad.stderr


def test_convert_warmup_flag(ctx):
    cmd, reply = run_line(ctx, f"convert {SCRIPTS / 'keras_fit_basic.py'} --warmup-epochs 2")
    assert reply.ok, reply.text
    assert "LearningRateWarmupCallback(" in reply.text and "[HVD024]" in reply.text
    cmd, reply = run_line(ctx, f"convert {SCRIPTS / 'keras_fit_basic.py'} --warmup-epochs 2 --to tf-distribute")
    assert not reply.ok and "--to horovod" in reply.text
