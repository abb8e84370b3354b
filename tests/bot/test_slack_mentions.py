"""Every text tfdesk sends to Slack passes one place (Messenger, bot/slack/messenger.quiet),
which makes mentions written in text inert. Property-tested on generated messages: whatever
text a reply holds, in whichever field, nothing that reaches the Web API client can notify
anyone, the asker named by tfdesk stays a structural mention, and text without mentions is
sent as it was."""
from __future__ import annotations

import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.reply import Reply
from bot.slack import blocks as bk
from bot.slack.messenger import Messenger, quiet

SHOWN = {"text", "alt_text", "title", "initial_comment", "fallback", "pretext"}
# What Slack parses as a notification: any control sequence, or a bare broadcast word.
LIVE = re.compile(r"<[!@#]|(?<![\w@])@(channel|here|everyone)\b", re.I)
MENTIONS = ["<!channel>", "<!here>", "<!everyone>", "<@U0123ABC>", "<@W99|bob>",
            "<!subteam^S123|@team>", "<#C1|general>", "<!date^1|x>", "<https://x.example|y>",
            "@channel", "@HERE", "@everyone", "<", "<!", "<@", "&lt;!channel&gt;", "@\u2060here"]
TEXTS = st.lists(st.one_of(st.sampled_from(MENTIONS), st.text(max_size=12)),
                 max_size=6).map("".join)


class RecordingClient:
    """Stands in for slack_sdk's WebClient: records what would have gone to Slack."""

    def __init__(self):
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, method):
        def call(**kwargs):
            self.sent.append((method, kwargs))
            return {"ok": True, "ts": "1.000001"}
        return call


class NoStore:
    def enqueue(self, *a):  # pragma: no cover - the recording client never fails
        raise AssertionError("nothing should be queued")


def shown(node, key=None):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from shown(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from shown(v, key)
    elif isinstance(node, str) and key in SHOWN:
        yield node


@st.composite
def messages(draw):
    """A rendered reply (as the service sends it), or any hand-made message shape."""
    text = draw(TEXTS)
    if draw(st.booleans()):
        reply = Reply(text=text, data={"diff": draw(TEXTS)}) if draw(st.booleans()) else \
            Reply.error(text)
        return bk.render_reply(reply, user="UASKER", line=draw(TEXTS))
    block = {"type": "section", "text": {"type": "mrkdwn", "text": draw(TEXTS)},
             "accessory": {"type": "image", "alt_text": draw(TEXTS), "image_url": "x"}}
    return {"text": text, "blocks": [block, bk.context(draw(TEXTS))],
            "attachments": [{"fallback": draw(TEXTS), "pretext": draw(TEXTS)}]}


@settings(max_examples=300, deadline=None)
@given(message=messages(), how=st.sampled_from(["post", "update", "ephemeral"]))
def test_nothing_sent_to_slack_can_notify_anyone(message, how):
    client = RecordingClient()
    m = Messenger(client, NoStore())
    if how == "post":
        m.post("C1", message, thread_ts="1.0")
    elif how == "update":
        m.update("C1", "1.0", message)
    else:
        m.ephemeral("C1", "UASKER", message)
    (method, payload), = client.sent
    for s in shown(payload):
        assert not LIVE.search(s), (method, s)
    users = [e for e in _walk(payload) if isinstance(e, dict) and e.get("type") == "user"]
    assert all(u["user_id"] == "UASKER" for u in users)  # only tfdesk's own, structural


@given(text=TEXTS)
def test_quieting_is_idempotent_and_leaves_plain_text_alone(text):
    once = quiet(text)
    assert quiet(once) == once
    assert not LIVE.search(once)
    if "<" not in text and not re.search(r"@(channel|here|everyone)", text, re.I):
        assert once == text


@given(comment=TEXTS)
def test_upload_comments_and_titles_are_quiet_too(comment, tmp_path_factory):
    f = tmp_path_factory.mktemp("up") / "r.py"
    f.write_text("x = 1\n")
    client = RecordingClient()
    Messenger(client, NoStore()).upload("C1", None, [f], comment=comment)
    (_, payload), = client.sent
    assert not LIVE.search(payload.get("initial_comment", ""))


def _walk(node):
    yield node
    if isinstance(node, dict):
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)
