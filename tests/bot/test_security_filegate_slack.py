"""The file gate and the Slack-visible invariants, attacked over the real HTTP endpoint
(signed as Slack signs) with the Slack stand-in answering.

The attack that worked: ``/tf convert ~/…/x://../../../../tfdesk.toml -o t.py`` uploaded the
config (bot token) to a member without rights. Here it and its family — other schemes, any
case, links planted in the member's own upload and job folders, other members' files — are
sent by members with and without rights; every answer is a refusal and nothing any call to
Slack carries (messages, uploaded files) holds the config, the token or another member's file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
import re
import time

import pytest
from tests.slack_stub import BOT_TOKEN, message_text
from tests.bot.test_security_slack import World

from bot.context import Context
from bot.dispatch import run_line

SECRET = "CONFIG-SECRET-5b1e"
THEIRS = "UOWNER-ONLY-c0ffee"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(tmp_path_factory.mktemp("gate-slack"))
    config = w.home / "tfdesk.toml"
    config.write_text(config.read_text() + f"# {SECRET} {BOT_TOKEN}\n")
    w.uploads["UOWNER"].write_text(f"# {THEIRS}\nprint('x')\n")
    for user in ("UNONE", "UCOMP"):  # what a job or a race could leave in their own folders
        folder = w.uploads[user].parent
        (folder / "link.py").symlink_to(config)
        (folder / "theirs.py").symlink_to(w.uploads["UOWNER"])
    job = w.env.runtime.engine.submit("train", {"script_path": str(w.uploads["UCOMP"]),
                                                "workers": 1}, owner="UCOMP",
                                      reply_to={"kind": "terminal"}).id
    (w.jobs_dir / job / "out").mkdir(parents=True, exist_ok=True)
    (w.jobs_dir / job / "out" / "x.py").symlink_to(config)
    (w.jobs_dir / job / "up").symlink_to(w.home)
    w.ucomp_job = job
    yield w
    w.env.close()
    w.env.runtime.engine.close()


def everything_sent(world) -> str:
    """Every message and every uploaded file's content the stand-in received."""
    texts = [json.dumps(c.get("args") or {}) for c in world.env.stub.calls]
    files = [u.get("content", b"").decode("utf-8", "replace")
             for u in world.env.stub.uploads.values()]
    return "\n".join(texts + files)


ATTACKS = [
    "convert ~/…/x://../../../../tfdesk.toml -o t.py",
    "convert x://../../../../tfdesk.toml -o t.py",
    "convert X://..%2f..%2ftfdesk.toml",
    "convert FILE://{home}/tfdesk.toml -o t.py",
    "convert file://{home}/tfdesk.toml",
    "convert fIlE:///{home}/tfdesk.toml",
    "convert {home}/tfdesk.toml -o t.py",
    "convert ../../tfdesk.toml", "convert ../../../../../{home}/tfdesk.toml",
    "convert outputs/../../../tfdesk.toml",
    "convert {home}/slack/uploads/FUOWNER/train.py", "convert FUOWNER/train.py",
    "convert F{me}/link.py -o t.py", "convert F{me}/theirs.py",
    "convert {home}/slack/uploads/F{me}/link.py",
    "convert {job}/out/x.py -o t.py", "convert {job}/up/tfdesk.toml",
    "convert s3://bucket/tfdesk.toml",
    "datasets add d-{n} FILE:///etc/shadow", "datasets add d-{n} file:///etc/passwd",
    "datasets add d-{n} x://../../tfdesk.toml", "datasets add d-{n} {home}/tfdesk.toml",
    "datasets add d-{n} F{me}/link.py",
    "models add m-{n} FILE://{home}/tfdesk.toml --in-place",
    "pipelines add p-{n} x://../../../tfdesk.toml",
    "components add c-{n} --kind train --file F{me}/link.py",
    "convert-model x://../../../tfdesk.toml --detach",
    "evaluate F{me}/train.py --data ~/…/x://../../tfdesk.toml --detach",
]
REFUSALS = ("not a file shared with tfdesk", "only for configured users", "belongs to UOWNER")


@pytest.mark.parametrize("user", ["UNONE", "UCOMP"])
@pytest.mark.parametrize("attack", ATTACKS)
def test_the_config_and_others_files_never_reach_a_member(world, user, attack):
    line = attack.format(home=world.home, me=user, job=world.ucomp_job, n=abs(hash(attack)))
    before = world.snapshot()
    text, _ = world.ask(user, line)
    assert any(r in text for r in REFUSALS), (line, text)
    sent = everything_sent(world)
    assert SECRET not in sent and BOT_TOKEN not in sent and THEIRS not in sent, line
    after = world.snapshot()
    assert after["tables"] == before["tables"], f"{line} registered something"
    outputs = world.home / "slack" / "outputs"
    for f in outputs.rglob("*") if outputs.exists() else []:
        assert f.is_dir() or SECRET not in f.read_text(errors="replace"), f


def test_a_members_own_file_still_converts_and_an_allowed_uri_registers(world):
    text, _ = world.ask("UCOMP", "convert FUCOMP/train.py -o mine.py")
    assert "train.py -> horovod" in text or "train.py -&gt; horovod" in text, text
    text, _ = world.ask("UCOMP", "datasets add remote-ok S3://bucket-1/data/x.csv --format csv")
    assert "added dataset remote-ok" in text, text
    conn = world.db()
    uri = conn.execute("SELECT uri FROM catalog_datasets WHERE name = 'remote-ok'").fetchone()[0]
    conn.close()
    assert uri == "s3://bucket-1/data/x.csv"


def test_the_terminal_cannot_register_file_uris_either(world):
    ctx = Context(world.env.config, services=world.env.runtime.services)
    for line in ("datasets add t1 FILE:///etc/shadow", "datasets add t2 file:///etc/passwd"):
        _, reply = run_line(ctx, line)
        assert not reply.ok and "file:// URI is never a local path" in reply.text, reply.text


# -- every Slack-visible text: mentions are inert ------------------------------------------------
SHOWN = ("text", "alt_text", "title", "initial_comment")
LIVE_MENTION = re.compile(r"<[!@#]")


def shown_strings(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from shown_strings(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from shown_strings(v, key)
    elif isinstance(node, str) and key in SHOWN:
        yield node


def test_mentions_typed_by_a_member_notify_no_one(world):
    seen = len(world.env.stub.calls)
    hostile = "<!channel> <!here> <!everyone> <@U0TARGET> <!subteam^S1|@team> @channel"
    world.ask("UNONE", f"ask {hostile}")
    world.ask("UNONE", f"convert {hostile}")  # refused: the refusal quotes the name
    calls = [c for c in world.env.stub.calls[seen:] if c["method"].startswith("chat.")]
    assert calls
    for c in calls:
        for s in shown_strings(c["args"]):
            assert not LIVE_MENTION.search(s), (c["method"], s)
            assert not re.search(r"(?<![\w@])@channel\b", s), s
    # The asker is still named: as a rich-text user element, which text cannot forge.
    users = re.findall(r'"user_id": "(\w+)"', json.dumps([c["args"] for c in calls]))
    assert set(users) <= {"UNONE"}


# -- buttons re-check whose upload it is --------------------------------------------------------
@pytest.mark.parametrize("action_id", ["tf_show_report", "tf_train2", "tf_convert_tfd"])
def test_buttons_on_someone_elses_upload_are_refused(world, action_id):
    (world.uploads["UOWNER"].parent / "report.txt").write_text(f"report {THEIRS}\n")
    before = world.snapshot()
    seen = len(world.env.stub.calls)
    world.env.action(action_id, json.dumps({"u": "FUOWNER", "to": "horovod"}), user="UCOMP",
                     channel="CBTN")
    world.env.stub.wait_for("chat.postEphemeral", lambda c: "belongs to someone else" in
                            message_text(c["args"]) and c["args"].get("user") == "UCOMP")
    assert THEIRS not in json.dumps([c.get("args") for c in world.env.stub.calls[seen:]])
    assert world.snapshot()["jobs"] == before["jobs"]


def test_the_owner_still_gets_their_report(world):
    (world.uploads["UCOMP"].parent / "report.txt").write_text("report of UCOMP's script\n")
    world.env.action("tf_show_report", json.dumps({"u": "FUCOMP"}), user="UCOMP",
                     channel="CBTN2")
    world.env.stub.wait_for("chat.postMessage", lambda c: "report of UCOMP" in
                            message_text(c["args"]))


# -- pipelines: kubernetes settings are the operator's -------------------------------------------
def test_slack_cannot_set_a_steps_kubernetes_settings(world):
    yaml = ("steps:\n  - name: s\n    kind: convert-model\n    with: {model: m, kubernetes: "
            "{tensorrt_image: attacker/image, environment: x}}\n")
    world.upload("UCOMP", "FK8S", "k.yaml", yaml)
    before = world.snapshot()
    text, _ = world.ask("UCOMP", "pipelines add k8s-steer FK8S/k.yaml")
    assert "`kubernetes`" in text and "cannot come from Slack" in text, text
    assert world.snapshot()["tables"] == before["tables"]
    text, _ = world.ask("UCOMP", "components add k8s-c --kind convert-model "
                        "--param kubernetes={tensorrt_image:x}")
    assert "cannot come from Slack" in text, text
    ctx = Context(world.env.config, services=world.env.runtime.services)
    path = world.home.parent / "k.yaml"
    path.write_text(yaml)
    _, reply = run_line(ctx, f"pipelines add k8s-op {path}")
    assert reply.ok, reply.text  # the operator's to set


# -- acks never wait for what a shared file sets off ---------------------------------------------
PROBE = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from tests.slack_stub import send_command, send_event
endpoint, stop = sys.argv[1], Path(sys.argv[3])
while not stop.exists():
    for send in (lambda: send_command(endpoint, "help", user="UPROBE", channel="CPROBE"),
                 lambda: send_event(endpoint, {"type": "app_home_opened", "user": "UPROBE",
                                               "channel": "DPROBE", "tab": "home"})):
        started = time.monotonic()
        assert send().status_code == 200
        print(f"{time.monotonic() - started:.3f}", flush=True)
    time.sleep(0.1)
"""


@pytest.mark.slow
def test_a_burst_of_large_shared_scripts_never_delays_acks(world, tmp_path):
    """Parsing a large script holds the GIL for seconds (LibCST's native parser; see
    benchmarks/convert_stall.py). Conversions run in a child process, so acks, probed from
    another process while three 500 KB scripts are processed, stay under Slack's 3 s."""
    import subprocess
    import sys
    body = "import tensorflow as tf\n" + "".join(
        f"x{i} = tf.keras.layers.Dense({i % 97 + 1})(tf.zeros([1, 4]))\n" for i in range(9000))
    stop = tmp_path / "stop"
    prober = subprocess.Popen([sys.executable, "-c", PROBE, world.env.endpoint,
                               str(Path(__file__).resolve().parents[2]), str(stop)], stdout=subprocess.PIPE,
                              text=True)
    seen = len(world.env.stub.calls)
    for i in range(3):
        f = world.env.stub.add_file(f"big{i}.py", body.encode())
        resp = world.env.event({"type": "app_mention", "user": "UCOMP", "channel": "CBURST",
                                "ts": f"17000050{i}0.000001", "text": "<@UBOT>", "files": [f]})
        assert resp.status_code == 200
    deadline = time.monotonic() + 240
    try:
        while time.monotonic() < deadline and not any(
                c["method"] == "chat.update" and "big" in message_text(c["args"])
                and "-&gt;" in message_text(c["args"]) for c in world.env.stub.calls[seen:]):
            time.sleep(0.2)
    finally:
        stop.touch()
        out, _ = prober.communicate(timeout=60)
    acks = [float(x) for x in out.split()]
    assert time.monotonic() < deadline, "no shared script was converted"
    assert acks and max(acks) < 3.0, f"slowest ack {max(acks):.2f} s of {len(acks)}"
