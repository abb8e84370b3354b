"""Models stay data: Keras files holding code (Lambda layers, custom objects) and SavedModels
using file-system or Python ops are refused, read without loading them; archives may not
smuggle thousands of folders past max_files. The models are real, saved by the runner env's
TensorFlow (tests/unsafe_models.py)."""
from __future__ import annotations

import io
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest

from converters.model import intake
from converters.model.errors import UnsafeArchive, UnsafeModel

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / ".venv-runner" / "bin" / "python"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    if not RUNNER.exists():
        pytest.skip("the runner environment (.venv-runner) is not built")
    out = tmp_path_factory.mktemp("unsafe-models")
    done = subprocess.run([str(RUNNER), str(REPO / "tests" / "unsafe_models.py"), str(out)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_h5_with_lambda_is_refused_unless_code_is_allowed(models):
    with pytest.raises(UnsafeModel, match=r"Lambda layer 'doubler'.*--allow-code"):
        intake.identify(models / "lambda.h5")
    allowed = intake.identify(models / "lambda.h5", allow_code=True)
    assert allowed.kind == "h5" and allowed.info["allow_code"] is True
    assert intake.identify(models / "plain.h5").info == {}  # an ordinary model passes


@pytest.mark.slow
def test_keras_v3_with_lambda_or_custom_object_is_refused(models):
    with pytest.raises(UnsafeModel, match="Lambda layer 'doubler'"):
        intake.identify(models / "lambda.keras")
    with pytest.raises(UnsafeModel, match=r"custom object Scale.*Acme>Scale"):
        intake.identify(models / "custom.keras")


@pytest.mark.slow
@pytest.mark.parametrize("name,op", [("readfile_sm", "ReadFile"), ("pyfunc_sm", "EagerPyFunc")])
def test_saved_model_with_file_or_python_ops_is_refused_with_their_names(models, name, op):
    with pytest.raises(UnsafeModel, match=op) as err:
        intake.identify(models / name)
    assert err.value.detail["ops"] == [op]
    assert intake.identify(models / name, allow_code=True).info["allow_code"] is True


@pytest.mark.slow
def test_checkpoint_ops_outside_serving_do_not_count(models):
    """Every SavedModel holds SaveV2/RestoreV2 in its save/restore functions."""
    meta = intake.identify(models / "plain_sm")
    assert {"SaveV2", "RestoreV2"} <= set(meta.info["ops"])
    assert "allow_code" not in meta.info


@pytest.mark.slow
def test_convert_model_command_refuses_lambda_before_any_job(models, tmp_path):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    home = tmp_path / "home"
    home.mkdir()
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, f"convert-model {models / 'lambda.h5'} --detach")
    assert not reply.ok
    assert "Lambda layer 'doubler'" in reply.text and "--allow-code" in reply.text
    _, jobs = run_line(ctx, "jobs --json")
    assert "lambda.h5" not in jobs.text


# -- archives: folders count -------------------------------------------------------------------
def _tar_of_dirs(path: Path, n: int, deep: bool = False) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        if deep:  # one file, n folders above it, none of them listed as entries
            info = tarfile.TarInfo("/".join(f"d{i}" for i in range(n)) + "/f.txt")
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
            return path
        for i in range(n):
            info = tarfile.TarInfo(f"dir{i}")
            info.type = tarfile.DIRTYPE
            tf.addfile(info)
    return path


def test_tar_with_many_directory_entries_is_refused(tmp_path):
    archive = _tar_of_dirs(tmp_path / "dirs.tar.gz", 50)
    with pytest.raises(UnsafeArchive, match="max_files"):
        intake.extract(archive, tmp_path / "out", intake.Limits(max_files=20))
    assert not (tmp_path / "out").exists()  # nothing left behind


def test_deep_paths_count_their_folders(tmp_path):
    archive = _tar_of_dirs(tmp_path / "deep.tar.gz", 40, deep=True)
    with pytest.raises(UnsafeArchive, match="max_files"):
        intake.extract(archive, tmp_path / "out", intake.Limits(max_files=20))


def test_zip_with_many_directory_entries_is_refused(tmp_path):
    archive = tmp_path / "dirs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for i in range(50):
            z.writestr(f"dir{i}/", b"")
    with pytest.raises(UnsafeArchive, match="max_files"):
        intake.extract(archive, tmp_path / "out", intake.Limits(max_files=20))


def test_an_ordinary_saved_model_archive_fits(tmp_path):
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("model/", b"")
        z.writestr("model/variables/", b"")
        z.writestr("model/saved_model.pb", b"x")
        z.writestr("model/variables/variables.index", b"x")
    out = intake.extract(archive, tmp_path / "out", intake.Limits(max_files=4))
    assert (out / "model" / "variables" / "variables.index").is_file()
