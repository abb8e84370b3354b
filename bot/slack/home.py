"""The App Home tab: the user's recent jobs and how to talk to tfdesk."""
from __future__ import annotations

from typing import Any

from bot.reply import Reply
from bot.slack import blocks as bk
from core.vocabulary import SLACK_ICONS as STATE_ICONS

MAX_JOBS = 15


def _job_rows(data: Any) -> list[dict[str, Any]] | None:
    if isinstance(data, list):
        return [j for j in data if isinstance(j, dict)]
    if isinstance(data, dict) and isinstance(data.get("jobs"), list):
        return [j for j in data["jobs"] if isinstance(j, dict)]
    return None


def home_view(user: str, jobs: Reply | None) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": "tfdesk"}},
        bk.section("Ask about TensorFlow APIs, convert training scripts and models, run jobs. "
                   "Type `/tf help` anywhere, or share a `.py` script or a model with "
                   "a mention of @tfdesk."),
        {"type": "divider"},
        bk.section("*Your recent jobs*"),
    ]
    rows = _job_rows(jobs.data) if jobs is not None and jobs.ok else None
    if jobs is None:
        blocks.append(bk.context("Jobs are not available in this installation."))
    elif rows is None:
        blocks += bk.text_blocks(jobs.text)[:20]
    elif not rows:
        blocks.append(bk.context("No jobs yet. Start one with `/tf train` or share a script."))
    else:
        for job in rows[:MAX_JOBS]:
            state = str(job.get("state", "?"))
            jid = str(job.get("id", job.get("job_id", "?")))
            kind = str(job.get("kind", "job"))
            when = job.get("created_at") or job.get("created") or ""
            blocks.append(bk.section(f"{STATE_ICONS.get(state, ':grey_question:')} "
                                     f"`{bk.escape(jid)}` {bk.escape(kind)} · *{state}*"
                                     + (f" · {bk.escape(str(when))}" if when else "")))
            if state in bk.RUNNING_STATES:
                blocks.append(bk.job_buttons(jid))
    bad = jobs.data.get("unreadable") if jobs is not None and isinstance(jobs.data, dict) else None
    if isinstance(bad, list) and bad:  # not in the list above, but not hidden either
        ids = ", ".join(f"`{bk.escape(str(b.get('id')))}`" for b in bad[:MAX_JOBS]
                        if isinstance(b, dict))
        blocks.append(bk.context(f":warning: tfdesk cannot read {len(bad)} of your jobs ({ids}); "
                                 "`/tf job ID` says why, `/tf delete ID` removes one."))
    return {"type": "home", "blocks": blocks[:100]}
