"""Render a transport-neutral Reply as Slack Block Kit.

Slack limits a section's text to 3,000 characters and a message to 50 blocks; long answers
are split into several code blocks and, past the block limit, cut with a note (the full text
then travels as a file).
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from bot.reply import Reply
from core.vocabulary import ACTIVE as RUNNING_STATES

SECTION_LIMIT = 2900      # under Slack's 3,000 so the ``` fences fit
MAX_BLOCKS = 45           # under Slack's 50, leaving room for buttons and context
FALLBACK_LIMIT = 300      # notification text
DIFF_EXCERPT_LINES = 40


def escape(text: str) -> str:
    """Slack's three control characters; everything else is literal."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def chunks(text: str, size: int = SECTION_LIMIT) -> list[str]:
    """Split on line boundaries where possible, never over ``size`` characters."""
    out: list[str] = []
    current = ""
    for line in text.splitlines(keepends=True):
        while len(line) > size:
            if current:
                out.append(current)
                current = ""
            out.append(line[:size])
            line = line[size:]
        if len(current) + len(line) > size:
            out.append(current)
            current = ""
        current += line
    if current or not out:
        out.append(current)
    return out


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def code_blocks(text: str) -> list[dict[str, Any]]:
    # A literal ``` inside would end the fence early; a zero-width joiner keeps it visible.
    safe = escape(text.rstrip("\n")).replace("```", "`\u200d``")
    return [section(f"```{part}```") for part in chunks(safe) if part.strip()]


def text_blocks(text: str) -> list[dict[str, Any]]:
    """Terminal text: one short line reads as prose, anything laid out as lines as code."""
    text = text.rstrip()
    if not text:
        return []
    if "\n" not in text and len(text) <= SECTION_LIMIT:
        return [section(escape(text))]
    return code_blocks(text)


def context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def ran(user: str, line: str) -> dict[str, Any]:
    """"@user ran `/tf line`": the mention is a rich-text ``user`` element, structure that
    text cannot forge; the messenger makes every mention written in text inert."""
    return {"type": "rich_text", "elements": [{"type": "rich_text_section", "elements": [
        {"type": "user", "user_id": user}, {"type": "text", "text": " ran "},
        {"type": "text", "text": f"/tf {line}", "style": {"code": True}}]}]}


def button(text: str, action_id: str, value: str, style: str | None = None,
           confirm: dict | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {"type": "button", "text": {"type": "plain_text", "text": text},
                         "action_id": action_id, "value": value}
    if style:
        b["style"] = style
    if confirm:
        b["confirm"] = confirm
    return b


def actions(buttons: Iterable[dict[str, Any]], block_id: str | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "actions", "elements": list(buttons)}
    if block_id:
        block["block_id"] = block_id
    return block


def fallback(text: str) -> str:
    text = text.strip() or "tfdesk"
    return text if len(text) <= FALLBACK_LIMIT else text[:FALLBACK_LIMIT - 1] + "…"


def job_buttons(job_id: str) -> dict[str, Any]:
    confirm = {"title": {"type": "plain_text", "text": "Cancel this job?"},
               "text": {"type": "mrkdwn", "text": f"Job `{escape(job_id)}` will be stopped."},
               "confirm": {"type": "plain_text", "text": "Cancel job"},
               "deny": {"type": "plain_text", "text": "Keep running"}}
    return actions([button("Cancel job", "tf_job_cancel", job_id, "danger", confirm),
                    button("Show logs", "tf_job_logs", job_id)], block_id=f"job:{job_id}")


def render_reply(reply: Reply, *, user: str | None = None, line: str | None = None,
                 as_json: bool = False, extra: Iterable[dict[str, Any]] = ()) -> dict[str, Any]:
    """``{"text": fallback, "blocks": [...]}`` ready for chat.postMessage/update/postEphemeral."""
    blocks: list[dict[str, Any]] = []
    if user and line is not None:
        blocks.append(ran(user, line))
    data = reply.data if isinstance(reply.data, dict) else {}
    if as_json:
        blocks += code_blocks(reply.to_json())
    elif not reply.ok and data.get("usage"):
        message = reply.text.split("\n\n", 1)[0]
        blocks.append(section(f":warning: {escape(message)}"))
        blocks += code_blocks(data["usage"])
    elif not reply.ok:
        blocks.append(section(":warning: *" + escape(reply.text.split("\n", 1)[0]) + "*"))
        rest = reply.text.split("\n", 1)[1] if "\n" in reply.text else ""
        blocks += text_blocks(rest)
    else:
        blocks += text_blocks(reply.text)
        diff = data.get("diff")
        if isinstance(diff, str) and diff.strip() and diff not in reply.text:
            lines = diff.splitlines()
            excerpt = "\n".join(lines[:DIFF_EXCERPT_LINES])
            more = len(lines) - DIFF_EXCERPT_LINES
            blocks.append(section("*Diff excerpt*" + (f" (first {DIFF_EXCERPT_LINES} of"
                                                      f" {len(lines)} lines)" if more > 0 else "")))
            blocks += code_blocks(excerpt)
    if len(blocks) > MAX_BLOCKS:
        blocks = blocks[:MAX_BLOCKS - 1] + [context("… answer cut to fit in Slack; add `--json` "
                                                    "or use the terminal for all of it.")]
    if reply.links and not as_json:  # the web view's pages for what the answer names
        blocks.append(links_block(reply.links))
    if reply.job is not None and reply.job.state in RUNNING_STATES:
        blocks.append(job_buttons(reply.job.id))
    blocks += list(extra)
    text = reply.to_json() if as_json else reply.text
    return {"text": fallback(text), "blocks": blocks}


def links_block(links) -> dict[str, Any]:
    """A line of links to the web view (bot/web/links.py made them). Links are structure
    (rich-text ``link`` elements), like mentions: the messenger makes every ``<...>`` written
    in text inert, so a link written in mrkdwn would show as text."""
    elements: list[dict[str, Any]] = [{"type": "emoji", "name": "globe_with_meridians"}]
    for i, lk in enumerate(links):
        elements.append({"type": "text", "text": " · " if i else " "})
        elements.append({"type": "link", "url": lk.url, "text": lk.label})
    return {"type": "rich_text", "elements": [{"type": "rich_text_section",
                                               "elements": elements}]}


def json_value(payload: dict[str, Any]) -> str:
    """A button value (Slack allows 2,000 characters)."""
    value = json.dumps(payload, separators=(",", ":"))
    if len(value) > 2000:
        raise ValueError("button value too long")
    return value
