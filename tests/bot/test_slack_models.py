"""Models shared in Slack, end to end with real TensorFlow, tf2onnx and ONNX Runtime: a
SavedModel as .zip and as .tar.gz, a .keras and a .h5 file, each downloaded, converted,
validated and benchmarked as a job, with one status message updated in place and one final
result (validation and benchmark summary, the chart and the report) in the upload's thread."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest
from tests.slack_stub import SlackEnv, message_text

REPO = Path(__file__).resolve().parents[2]
RUNNER = os.environ.get("TFDESK_RUNNER_PYTHON") or str(REPO / ".venv-runner" / "bin" / "python")
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

# Few iterations: these tests check the plumbing; benchmarks/models.py measures speed.
TOML = ('[slack]\ncompute_users = ["UADMIN"]\nmax_running_jobs_per_user = 4\n'
        'retry_backoff_s = 0.01\n'
        '[jobs]\nlocal_workers = 4\nper_owner = 4\n'
        '[models]\niterations = 3\nwarmup = 1\nbudget_s = 0.5\n'
        f'[runner]\npython = "{RUNNER}"\n')


@pytest.fixture(scope="session")
def dense_files(tmp_path_factory):
    """One tiny real Keras model, saved by TensorFlow as each file type users share."""
    out = tmp_path_factory.mktemp("slack_zoo")
    proc = subprocess.run([RUNNER, str(REPO / "tests" / "model_zoo.py"), str(out), "dense"],
                          capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    shutil.make_archive(str(out / "dense"), "zip", out / "dense")
    shutil.make_archive(str(out / "dense"), "gztar", out, "dense")  # a top folder inside
    return {"zip": out / "dense.zip", "tar.gz": out / "dense.tar.gz",
            "keras": out / "dense.keras", "h5": out / "dense.h5"}


@pytest.fixture
def env(tmp_path):
    e = SlackEnv(tmp_path, TOML)
    yield e
    e.close()


def in_thread(stub, method, ts):
    return [c for c in stub.calls_to(method)
            if c["status"] == 200 and c["args"].get("thread_ts") == ts]


def test_each_model_file_type_converted_in_its_thread(env, dense_files):
    stub = env.stub
    threads = {}
    for i, (ext, path) in enumerate(dense_files.items()):
        f = stub.add_file(f"my_model.{ext}", path.read_bytes())
        ts = f"17000002{i:02d}.000001"
        threads[ext] = ts
        words = "<@UBOT> convert to onnx" if ext == "zip" else "<@UBOT>"
        # Sent side by side, as users would: the conversions run as concurrent jobs.
        threading.Thread(target=env.event, args=({
            "type": "app_mention", "user": "UADMIN", "channel": "C1", "ts": ts,
            "text": words, "files": [f]},)).start()

    for ext, ts in threads.items():
        final = stub.wait_for(
            "chat.postMessage",
            lambda c, ts=ts: c["args"].get("thread_ts") == ts and "Validation" in message_text(
                c["args"]), timeout=400)[0]
        text = message_text(final["args"])
        assert f"Converted my_model.{ext} -> onnx (fp32, opset 17)" in text, text
        assert "Validation: PASS" in text and "p50" in text and "samples/s" in text
        assert "report: /" not in text  # no server paths; the report itself is uploaded
        stub.wait_for("files.completeUploadExternal",
                      lambda c, ts=ts: c["args"].get("thread_ts") == ts, timeout=60)

    time.sleep(1.0)  # anything said twice would arrive by now
    for ext, ts in threads.items():
        posts = in_thread(stub, "chat.postMessage", ts)
        # One status message (the receipt, then the job's state, updated in place) and one
        # final result: nothing else, nothing twice.
        assert len(posts) == 2, [message_text(p["args"])[:80] for p in posts]
        received, final = posts
        assert "Received `my_model." in message_text(received["args"])
        updates = [c for c in stub.calls_to("chat.update") if c["status"] == 200
                   and c["args"]["ts"] == received["result"]["ts"]]
        assert len(updates) >= 2
        texts = [message_text(u["args"]) for u in updates]
        assert "started job" in texts[0] and "succeeded" in texts[-1]
        assert all(a != b for a, b in zip(texts, texts[1:])), "an unchanged status was resent"
        assert "Cancel job" not in texts[-1]

        files = {u["filename"]: u for u in stub.uploads.values() if u.get("thread_ts") == ts}
        assert set(files) == {"chart.png", "report.json"}, set(files)
        assert files["chart.png"]["content"][:8] == b"\x89PNG\r\n\x1a\n"
        report = json.loads(files["report.json"]["content"])
        assert report["validation"]["passed"] and report["model"]["name"] == f"my_model.{ext}"
        assert report["model"]["kind"] == {"keras": "keras", "h5": "h5"}.get(ext, "saved_model")

