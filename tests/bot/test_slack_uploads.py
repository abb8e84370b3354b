"""Files shared with tfdesk: type and size checked before and while downloading, scripts
converted end to end with the converted file, report and buttons in the thread."""
from __future__ import annotations

import time

import pytest
from tests.slack_stub import message_text, slack  # noqa: F401

from bot.slack import uploads

SCRIPT = b'''import tensorflow as tf

def main():
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01), loss="mse")
    model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), epochs=2, batch_size=4)
    model.save("model.keras")

main()
'''


@pytest.mark.parametrize("name,kind", [("train.py", "script"), ("m.zip", "model"),
                                       ("m.tar.gz", "model"), ("M.TGZ", "model"),
                                       ("m.keras", "model"), ("m.h5", "model")])
def test_accepted_types(name, kind):
    assert uploads.classify(name).kind == kind


@pytest.mark.parametrize("name,words", [("nb.ipynb", "export it as a .py"),
                                        ("setup.exe", "accepted: .py"),
                                        ("frozen.pb", "not a SavedModel")])
def test_refused_types_say_why(name, words):
    with pytest.raises(uploads.UploadError, match=words.replace(".", r"\.")):
        uploads.classify(name)


def test_declared_size_limits():
    uploads.check_declared("a.py", 1024 * 1024, 10)
    with pytest.raises(uploads.UploadError, match="at most 1.0 MB"):
        uploads.check_declared("a.py", 1024 * 1024 + 1, 10 ** 9)
    with pytest.raises(uploads.UploadError, match="at most"):
        uploads.check_declared("m.keras", 2000, 1000)
    with pytest.raises(uploads.UploadError, match="empty"):
        uploads.check_declared("a.py", 0, 1000)


def test_instruction_words():
    assert uploads.script_target("convert to tf-distribute please") == "tf-distribute"
    assert uploads.script_target("") == "horovod"
    argv = uploads.model_argv(uploads.Path("/m.zip"), "tensorrt fp16")
    assert argv[-4:] == ["--to", "tensorrt", "--precision", "fp16"]


def mention(slack, file_obj, text="<@UBOT>", channel="C1", user="U1", ts=None):
    ts = ts or f"{time.time():.6f}"
    slack.event({"type": "app_mention", "user": user, "channel": channel, "ts": ts,
                 "text": text, "files": [file_obj]})
    return ts


def answer_in(slack, ts, words, timeout=30.0):
    def match(c):
        return c["args"].get("thread_ts") == ts and words in message_text(c["args"])
    calls = slack.stub.wait_for("chat.postMessage", match, timeout=1) if any(
        match(c) for c in slack.stub.calls_to("chat.postMessage")) else None
    if calls:
        return calls[0]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in slack.stub.calls:
            if c["method"] in ("chat.postMessage", "chat.update") and c["status"] == 200:
                if words in message_text(c["args"]) and (
                        c["args"].get("thread_ts") == ts or c["method"] == "chat.update"):
                    return c
        time.sleep(0.05)
    raise AssertionError(f"no answer with {words!r}: {[message_text(c['args'])[:120] for c in slack.stub.calls if 'args' in c]}")


def downloads(slack):
    return slack.stub.calls_to("file.download")


def test_wrong_type_is_refused_before_download(slack):
    f = slack.stub.add_file("setup.exe", b"MZ\x90\x00" * 10)
    ts = mention(slack, f)
    answer_in(slack, ts, "not a file tfdesk converts")
    assert not downloads(slack)


def test_oversize_script_is_refused_before_download(slack):
    f = slack.stub.add_file("big.py", b"x = 1\n", size=2 * 1024 * 1024)
    ts = mention(slack, f)
    answer_in(slack, ts, "may be at most 1.0 MB")
    assert not downloads(slack)


def test_file_bigger_than_declared_is_stopped_while_downloading(slack):
    content = b"x = 1\n" * 400_000  # 2.4 MB, declared as 100 bytes
    f = slack.stub.add_file("liar.py", content, size=100, chunked=True)
    ts = mention(slack, f)
    answer_in(slack, ts, "is over 1.0 MB")
    assert len(downloads(slack)) == 1
    left = list((slack.home / "slack" / "uploads").rglob("*.py*"))
    assert left == []  # nothing partial stays behind


def test_declared_content_length_over_the_limit_stops_at_once(slack):
    f = slack.stub.add_file("liar2.py", b"x = 1\n" * 400_000, size=100)
    ts = mention(slack, f)
    answer_in(slack, ts, "is 2.3 MB; a Python training script may be at most 1.0 MB")


def test_content_that_is_not_what_the_name_says_is_refused(slack):
    f = slack.stub.add_file("model.h5", b"this is plain text, not HDF5 at all")
    ts = mention(slack, f, user="UADMIN")  # a model: compute, so an allowed user
    answer_in(slack, ts, "does not look like a Keras HDF5 model")


def test_model_upload_by_unauthorised_user_is_refused_without_download(slack):
    f = slack.stub.add_file("model.keras", b"PK\x03\x04" + b"\x00" * 100)
    ts = mention(slack, f, user="UNOBODY")
    answer_in(slack, ts, "only for configured users")
    assert not downloads(slack)
    assert [r["command"] for r in slack.runtime.bot.store.audit_rows()] == ["convert-model"]


def test_script_upload_end_to_end_in_a_direct_message(slack):
    stub = slack.stub
    f = stub.add_file("train.py", SCRIPT, full=False)  # only the id, as Slack often sends
    ts = "1700000100.000001"
    slack.event({"type": "message", "channel_type": "im", "subtype": "file_share",
                 "user": "U1", "channel": "D1", "ts": ts, "text": "", "files": [f]})
    done = answer_in(slack, ts, "Train with 2 workers", timeout=60)
    text = message_text(done["args"])
    assert "train.py -> horovod" in text
    assert "Diff excerpt" in text and "hvd" in text
    assert "Convert to tf.distribute instead" in text and "Show full report" in text
    assert stub.calls_to("files.info")
    assert downloads(slack)[0]["auth"].startswith("Bearer xoxb-")
    stub.wait_for("files.completeUploadExternal", lambda c: c["args"].get("thread_ts") == ts)
    names = {u["filename"] for u in stub.uploads.values() if u.get("thread_ts") == ts}
    assert names == {"train.horovod.py", "train.horovod.report.txt"}
    converted = next(u for u in stub.uploads.values() if u["filename"] == "train.horovod.py")
    assert b"hvd.init()" in converted["content"]

    # The buttons: another target, and the full report.
    value = next(e["value"] for b in done["args"]["blocks"] if b["type"] == "actions"
                 for e in b["elements"] if e["action_id"] == "tf_convert_tfd")
    slack.action("tf_convert_tfd", value, user="U1", channel="D1", message_ts=ts)
    answer_in(slack, ts, "train.py -> tf-distribute", timeout=60)
    slack.action("tf_show_report", value, user="U1", channel="D1", message_ts=ts)
    answer_in(slack, ts, "tf-distribute")


def test_broken_script_gets_the_converters_error_in_the_thread(slack):
    f = slack.stub.add_file("broken.py", b"def f(:\n    pass\n")
    ts = mention(slack, f)
    answer_in(slack, ts, "line 1")
