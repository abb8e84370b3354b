"""A built-in runtime's versions follow its interpreter: probed again when what they were
probed from changes (a build that finished installing Horovod after a first command ran),
never stuck at the first answer. The probe is keyed to the interpreter and its
site-packages state; nothing is re-asked while those stay the same."""
import json
import os
import sys

from catalog import environments as envs
from catalog import open_db


def fake_runtime(root):
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "python3.11" / "site-packages").mkdir(parents=True)
    (root / "bin" / "python").symlink_to(sys.executable)
    return root / "bin" / "python"


def builtin(python):
    return [{"name": envs.DEFAULT_NAME, "python": str(python), "versions": envs.RUNNER_VERSIONS,
             "description": "test"}]


def test_a_runtime_finished_after_the_first_probe_is_seen(tmp_path):
    python = fake_runtime(tmp_path / "venv")
    # A command ran while the build was still installing: TensorFlow there, Horovod not yet.
    (tmp_path / "venv" / "versions.json").write_text(json.dumps(
        {"tf_version": "2.15.1", "keras_version": "2.15.0", "horovod_version": ""}))
    conn = open_db(tmp_path / "state.sqlite")
    try:
        envs.ensure_builtin(conn, builtin(python))
        assert envs.get(conn, envs.DEFAULT_NAME)["horovod_version"] == ""
        envs.ensure_builtin(conn, builtin(python))  # nothing changed: same answer
        assert envs.get(conn, envs.DEFAULT_NAME)["horovod_version"] == ""
        # The build finishes: Horovod lands in site-packages, versions.json is rewritten.
        (tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "horovod").mkdir()
        (tmp_path / "venv" / "versions.json").write_text(json.dumps(
            {"tf_version": "2.15.1", "keras_version": "2.15.0", "horovod_version": "0.28.1"}))
        os.utime(tmp_path / "venv" / "versions.json", ns=(1, 10**18))  # a distinct mtime
        envs.ensure_builtin(conn, builtin(python))
        assert envs.get(conn, envs.DEFAULT_NAME)["horovod_version"] == "0.28.1"
    finally:
        conn.close()


def test_the_fingerprint_moves_with_site_packages_and_only_then(tmp_path):
    python = fake_runtime(tmp_path / "venv")
    first = envs.fingerprint(str(python))
    assert first and envs.fingerprint(str(python)) == first
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "pkg-1.0.dist-info").mkdir()
    os.utime(site, ns=(1, 10**18))
    assert envs.fingerprint(str(python)) != first
    assert envs.fingerprint(str(tmp_path / "nowhere" / "bin" / "python")) == ""
