"""A member's job cannot reach tfdesk's secrets: a real local job, run through the engine by a
tfdesk process that holds the bot token in its environment and its config, searches every
/proc/*/environ it can read and tfdesk's files for the token, and finds nothing.

The job runs in its sandbox with the system Python, in a home under /tmp."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from runners.isolation import clean_env, protect_files

REPO = Path(__file__).resolve().parents[2]
TOKEN = "xoxb-4242424242-secret-probe-token"
SIGNING = "0123456789abcdef-signing-secret-probe"
SYSTEM_PYTHON = "/usr/bin/python3"

PROBE = r'''
import json, os, sys
token = sys.argv[1].encode()
home = sys.argv[2]
report = {"uid": os.getuid(), "environ_read": 0, "environ_denied": 0, "found": [],
          "files_read": [], "files_denied": []}
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        report["environ_denied"] += 1
        continue
    report["environ_read"] += 1
    if token in data:
        report["found"].append(f"/proc/{pid}/environ")
for root, dirs, files in os.walk(home):
    for name in files:
        path = os.path.join(root, name)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            report["files_denied"].append(path)
            continue
        report["files_read"].append(path)
        if token in data:
            report["found"].append(path)
for name in ("state.sqlite", "tfdesk.toml"):
    path = os.path.join(home, name)
    try:
        open(path, "rb").close()
        report["files_read"].append(path)
    except OSError:
        report["files_denied"].append(path)
print("PROBE " + json.dumps(report), flush=True)
'''

# The tfdesk process: holds the token in its environment and config, runs the engine.
DRIVER = r'''
import json, sys
from pathlib import Path
from bot.config import load_config
from bot.services import make_engine
config = load_config()
engine = make_engine(config)
job = engine.submit("train", {"script_path": sys.argv[1], "args": [sys.argv[2], sys.argv[3]]},
                    owner="UMEMBER")
job = engine.wait(job.id, timeout=120)
log = engine.log_path(job.id).read_text()
print(json.dumps({"state": job.state, "log": log, "workdir": job.workdir,
                  "user": engine.local.user.name if engine.local.user else None}))
engine.close()
'''


@pytest.mark.skipif(os.geteuid() != 0, reason="tfdesk is not root here, so it cannot switch "
                    "users (documented in site_docs/admin/security.md)")
@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="needs a system Python")
def test_a_job_finds_no_token_anywhere():
    home = Path(tempfile.mkdtemp(prefix="tfdesk-secrets-", dir="/tmp"))
    try:
        os.chmod(home, 0o711)
        (home / "tfdesk.toml").write_text(textwrap.dedent(f"""\
            [slack]
            bot_token = "{TOKEN}"
            signing_secret = "{SIGNING}"
            [runner]
            python = "{SYSTEM_PYTHON}"
            user = "tfdesk-job"
            """))
        os.chmod(home / "tfdesk.toml", 0o644)  # as an operator might leave it
        probe = home / "probe.py"
        probe.write_text(PROBE)
        env = {**clean_env(home), "TFDESK_HOME": str(home), "PYTHONPATH": str(REPO),
               "SLACK_BOT_TOKEN": TOKEN, "SLACK_SIGNING_SECRET": SIGNING}
        done = subprocess.run([sys.executable, "-c", DRIVER, str(probe), TOKEN, str(home)],
                              env=env, capture_output=True, text=True, timeout=180, cwd=REPO)
        assert done.returncode == 0, done.stderr[-3000:]
        result = json.loads(done.stdout.strip().splitlines()[-1])
        assert result["user"] == "tfdesk-job"
        assert result["state"] == "succeeded", result["log"]
        line = next(x for x in result["log"].splitlines() if x.startswith("PROBE "))
        report = json.loads(line.removeprefix("PROBE "))
        assert report["uid"] != 0
        assert report["environ_read"] >= 1  # its own: its sandbox shows nothing else
        assert report["environ_denied"] >= 1  # tfdesk's own process, among others
        assert report["found"] == []
        for name in ("state.sqlite", "tfdesk.toml"):
            assert str(home / name) in report["files_denied"]
        # The same probe run by tfdesk's own user does find it: the search can fail.
        # (/proc/<driver>/environ is gone by now; the config file is enough.)
        mine = subprocess.run([sys.executable, str(probe), TOKEN, str(home)],
                              capture_output=True, text=True, timeout=60)
        seen = json.loads(mine.stdout.split("PROBE ", 1)[1])
        assert str(home / "tfdesk.toml") in seen["found"]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def test_clean_env_never_carries_tfdesk_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    env = clean_env(tmp_path, {"SLACK_BOT_TOKEN": TOKEN, "TF_CONFIG": "{}",
                               "TFDESK_HOME": "/x"})
    assert env["HOME"] == str(tmp_path) and env["LANG"] == "de_DE.UTF-8"
    assert env["TF_CONFIG"] == "{}"
    assert "SLACK_BOT_TOKEN" not in env and "TFDESK_HOME" not in env


def test_secret_files_become_private(tmp_path):
    db = tmp_path / "state.sqlite"
    for p in (db, tmp_path / "state.sqlite-wal", tmp_path / "tfdesk.toml"):
        p.write_text("x")
        os.chmod(p, 0o644)
    protect_files(db, tmp_path / "tfdesk.toml")
    for p in (db, tmp_path / "state.sqlite-wal", tmp_path / "tfdesk.toml"):
        assert oct(p.stat().st_mode & 0o777) == oct(0o600)


def _pods(plan):
    main = plan.main
    if main["kind"] == "MPIJob":
        return [r["template"]["spec"] for r in main["spec"]["mpiReplicaSpecs"].values()]
    return [main["spec"]["template"]["spec"]]


@pytest.mark.parametrize("launcher,workers", [("horovod", 2), ("python", 1), ("tf-distribute", 2)])
def test_pods_get_no_service_account_token_unless_configured(launcher, workers):
    from runners.kubernetes.manifests import training_plan
    from runners.stored import build
    spec = build("train", {"workers": workers, "launcher": launcher})
    settings = {"image": "registry.example/tf:2.15", "service_account": "runner"}
    for pod in _pods(training_plan("j1", spec, "print(1)\n", settings)):
        assert pod["automountServiceAccountToken"] is False
        assert pod["serviceAccountName"] == "runner"
    opted_in = training_plan("j1", spec, "print(1)\n",
                             {**settings, "automount_service_account_token": True})
    assert all(p["automountServiceAccountToken"] is True for p in _pods(opted_in))


def test_jobs_are_refused_without_a_sandbox_unless_the_operator_opts_in(tmp_path, caplog):
    """No root fallback: when bubblewrap cannot build a sandbox, local jobs are refused with
    the reason; ``[runner] unsandboxed = true`` runs them, and the start message says so."""
    import logging

    from runners.kinds import JobKind
    from runners.local import LocalBackend
    from runners.models import JobError
    kind = JobKind("k", prepare=None, local_plan=None)
    assert LocalBackend().refusal is None  # bubblewrap is installed here
    missing = {"bwrap": str(tmp_path / "no-bwrap")}
    backend = LocalBackend(settings=missing)
    assert backend.sandbox is None
    with pytest.raises(JobError, match="local jobs are refused: .*bubblewrap .* not installed"):
        backend.accepts(kind)
    caplog.set_level(logging.INFO, logger="runners.local")
    opted = LocalBackend(settings={**missing, "unsandboxed": True})
    opted.accepts(kind)
    opted.note_user()
    assert "UNSANDBOXED" in caplog.text and "[runner] unsandboxed = true" in caplog.text
    with pytest.raises(JobError, match="network must be one of"):
        LocalBackend(settings={"network": "bogus"})
