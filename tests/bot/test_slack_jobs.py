"""Jobs seen from Slack: the status message updated in place, the final message with a PNG
chart, buttons, App Home, and a final message owed across a restart of serve.

The engine is real but told to start nothing (no pool slots), so each test moves its job
through the real job store exactly as a backend does, at a pace the test controls."""
from __future__ import annotations

import time

import pytest
from tests.slack_stub import COMPUTE_TOML, SlackEnv, message_text

from bot.services import engine_config
from runners.engine import Engine

SCRIPT = '''import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(optimizer="adam", loss="mse")
model.fit(tf.zeros((8, 2)), tf.zeros((8, 1)), epochs=3)
'''


def idle_engine(config):
    cfg = engine_config(config)
    cfg.local_workers = 0
    cfg.kubernetes_workers = 0
    cfg.follow = False
    return Engine(cfg)


@pytest.fixture
def env(tmp_path):
    e = SlackEnv(tmp_path, COMPUTE_TOML, engine_factory=idle_engine)
    e.script = shared_script(e)
    yield e
    e.close()
    e.runtime.engine.close()


def shared_script(env):
    """A script UADMIN shared: Slack members name only their own uploads (bot.paths)."""
    path = env.home / "slack" / "uploads" / "F1" / "train.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SCRIPT, encoding="utf-8")
    (path.parent / "upload.json").write_text('{"name": "train.py", "user": "UADMIN"}')
    return path


def start_training(env):
    env.command(f"train {env.script} --workers 2", user="UADMIN", channel="C1")
    stub = env.stub
    root = stub.wait_for("chat.postMessage", lambda c: "thread_ts" not in c["args"])[0]
    answer = stub.wait_for("chat.postMessage", lambda c: "thread_ts" in c["args"])[0]
    jobs = env.runtime.jobs.list()
    assert len(jobs) == 1
    return jobs[0], root, answer


def test_train_from_slack_reports_progress_in_place_and_a_final_chart(env):
    job, root, answer = start_training(env)
    stub, store = env.stub, env.runtime.jobs
    thread = answer["args"]["thread_ts"]
    assert "working on it" in message_text(root["args"])
    assert job.reply_to == {"kind": "slack", "channel": "C1", "thread_ts": thread}
    assert job.owner == "UADMIN"
    text = message_text(answer["args"])
    assert f"started job {job.id}" in text and "Cancel job" in text
    status_ts = stub.wait_for("chat.postMessage",
                              lambda c: "thread_ts" in c["args"])[0]  # the answer itself
    store.transition(job.id, "starting")
    store.transition(job.id, "running")
    for epoch, loss in [(1, 0.9), (2, 0.5), (3, 0.25)]:
        store.add_metrics(job.id, epoch, {"loss": loss, "accuracy": 0.5 + epoch / 10})
    stub.wait_for("chat.update", lambda c: "epoch 3" in message_text(c["args"]))
    store.transition(job.id, "succeeded")
    final = stub.wait_for("chat.postMessage",
                          lambda c: "Final metrics" in message_text(c["args"]))[0]
    assert final["args"]["thread_ts"] == thread
    assert "succeeded" in message_text(final["args"])
    stub.wait_for("files.completeUploadExternal")
    pngs = [u for u in stub.uploads.values() if u.get("content", b"").startswith(b"\x89PNG")]
    assert len(pngs) == 1 and pngs[0]["thread_ts"] == thread
    updates = [c for c in stub.calls_to("chat.update") if c["status"] == 200]
    assert all(c["args"]["ts"] == status_ts["args"].get("ts", c["args"]["ts"]) for c in updates)
    assert {c["args"]["ts"] for c in updates} == {updates[0]["args"]["ts"]}  # one message
    assert "succeeded" in message_text(updates[-1]["args"])
    assert "Cancel job" not in message_text(updates[-1]["args"])
    time.sleep(0.5)  # the final goes out once
    assert len([c for c in stub.calls_to("chat.postMessage")
                if "Final metrics" in message_text(c["args"])]) == 1


def test_cancel_button_cancels_and_logs_button_answers(env):
    job, _, answer = start_training(env)
    thread = answer["args"]["thread_ts"]
    env.action("tf_job_cancel", job.id, user="UADMIN", channel="C1", message_ts=thread)
    env.stub.wait_for("chat.postMessage", lambda c: f"job {job.id}: cancelled"
                      in message_text(c["args"]))
    assert env.runtime.jobs.get(job.id).state == "cancelled"
    env.action("tf_job_logs", job.id, user="UADMIN", channel="C1", message_ts=thread)
    env.stub.wait_for("chat.postMessage", lambda c: "has written no output"
                      in message_text(c["args"]))


def test_app_home_lists_the_users_jobs(env):
    job, _, _ = start_training(env)
    env.event({"type": "app_home_opened", "user": "UADMIN", "channel": "D1", "tab": "home"})
    view = env.stub.wait_for("views.publish")[0]["args"]
    assert view["user_id"] == "UADMIN"
    assert job.id in message_text(view["view"])


def test_app_home_names_the_users_jobs_that_cannot_be_read(env):
    job, _, _ = start_training(env)
    env.runtime.jobs._db().execute("UPDATE jobs SET spec = 'oops' WHERE id = ?", (job.id,))
    env.event({"type": "app_home_opened", "user": "UADMIN", "channel": "D1", "tab": "home"})
    text = message_text(env.stub.wait_for("views.publish")[0]["args"]["view"])
    assert "cannot read 1 of your jobs" in text and job.id in text


def test_final_message_owed_across_a_restart_is_delivered(tmp_path):
    first = SlackEnv(tmp_path, COMPUTE_TOML, engine_factory=idle_engine)
    first.script = shared_script(first)
    try:
        job, _, answer = start_training(first)
        first.stub.fail("chat.postMessage", 500, times=1000)  # Slack down from here on
        first.runtime.jobs.transition(job.id, "starting")
        first.runtime.jobs.transition(job.id, "running")
        first.runtime.jobs.add_metrics(job.id, 1, {"loss": 0.5})
        first.runtime.jobs.transition(job.id, "succeeded")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not any(
                c["status"] == 500 and "Final metrics" in message_text(c["args"])
                for c in first.stub.calls_to("chat.postMessage")):
            time.sleep(0.1)
    finally:
        first.close(stop_stub=False)  # serve stops before the final message got out
        first.runtime.engine.close()
    assert first.runtime.bot.store.job_message(job.id)["final_sent"] == 0
    first.stub.failures.clear()
    second = SlackEnv(tmp_path, engine_factory=idle_engine, stub=first.stub)
    try:
        final = second.stub.wait_for("chat.postMessage",
                                     lambda c: "Final metrics" in message_text(c["args"]))[0]
        assert final["args"]["thread_ts"] == answer["args"]["thread_ts"]
        deadline = time.monotonic() + 10
        while (second.runtime.bot.store.job_message(job.id)["final_sent"] != 1
               and time.monotonic() < deadline):
            time.sleep(0.05)
        assert second.runtime.bot.store.job_message(job.id)["final_sent"] == 1
    finally:
        second.close()
        second.runtime.engine.close()
        first.stub.stop()


def test_jobs_of_a_command_still_running_in_a_thread_are_not_adopted_behind_its_back(env):
    """A command that waits for its job answers with the result itself: while it runs, the
    publisher leaves that thread's jobs alone, so the thread never gets a second status
    message or a second result."""
    from bot.reply import JobRef, Reply
    from bot.slack.service import Where

    service, publisher, store = env.runtime.bot.service, env.runtime.publisher, env.runtime.jobs
    where = Where("C1", "UADMIN", "1700000500.000001")
    with service._working(where):
        job, _ = store.create("train", {}, "UADMIN", where.reply_to(), "local", env.home / "j")
        publisher.adopt(min_age_s=0)
        assert env.runtime.bot.store.job_message(job.id) is None
        store.transition(job.id, "starting")
        store.transition(job.id, "running")
        store.transition(job.id, "succeeded")
        # The command's own answer names the finished job: its record is closed.
        service._answer(where, Reply(text=f"job {job.id} succeeded",
                                     data={"job": store.get(job.id).to_dict()},
                                     job=JobRef.of(store.get(job.id))), track=True)
    assert env.runtime.bot.store.job_message(job.id)["final_sent"] == 1
    publisher.adopt(min_age_s=0)
    publisher.poll_once()
    time.sleep(0.5)
    thread_posts = [c for c in env.stub.calls_to("chat.postMessage")
                    if c["args"].get("thread_ts") == where.thread_ts]
    assert [message_text(c["args"]).split("\n")[0] for c in thread_posts] == [
        f"job {job.id} succeeded"]
    assert not env.stub.calls_to("chat.update")


def test_a_running_job_tfdesk_cannot_read_ends_lost_in_its_thread(env):
    """Its stored spec is damaged while it runs: the engine's next look ends it lost, stops
    the process its handle names, and the thread is told why, in the store's words."""
    import json
    import os
    import signal
    import subprocess

    from runners.local import proc_start_time

    job, _, answer = start_training(env)
    store, engine = env.runtime.jobs, env.runtime.engine
    proc = subprocess.Popen(["sleep", "120"], process_group=0)
    try:
        store.transition(job.id, "starting")
        store.update_handle(job.id, pid=proc.pid, pgid=proc.pid, host=os.uname().nodename,
                            pid_start=proc_start_time(proc.pid))
        store.transition(job.id, "running")
        store._db().execute("UPDATE jobs SET spec = ? WHERE id = ?",
                            (json.dumps({"v": 2, "kind": "train", "workers": "two"}), job.id))
        engine.reconcile()  # what a restarted tfdesk does first
        assert proc.wait(10) == -signal.SIGTERM
        final = env.stub.wait_for("chat.postMessage", lambda c: "lost" in message_text(
            c["args"]) and "Show logs" in message_text(c["args"]))[0]
        assert final["args"]["thread_ts"] == answer["args"]["thread_ts"]
        text = message_text(final["args"])
        assert f"job {job.id}: its stored spec is not valid: workers" in text
        assert f"its process (pid {proc.pid}) was told to stop" in text
    finally:
        proc.kill()
        proc.wait()
