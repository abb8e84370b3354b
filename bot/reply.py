"""The transport-neutral answer every handler returns.

The terminal prints ``text`` (or ``data`` as JSON with ``--json``); Slack renders the same
Reply as Block Kit. Handlers never print.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class JobRef:
    """The job an answer is about: Slack follows it (buttons, progress in the thread)."""
    id: str
    state: str

    @classmethod
    def of(cls, job) -> "JobRef":
        return cls(str(job.id), str(job.state))


@dataclass
class Reply:
    text: str
    data: Any = None
    ok: bool = True
    files: list[Path] = field(default_factory=list)
    # Exit status for the terminal: 0 ok, 1 failed, 2 usage error.
    status: int = 0
    # The job this answer started, waited for or shows.
    job: JobRef | None = None
    # Dispatch refused the request (permission, limit, a file it names): for the asker only.
    refused: bool = False
    # Objects the answer names beyond its job and data (bot/web/links.py reads both), and
    # the web view's links to all of them, attached by dispatch when [web] url is set.
    refs: list = field(default_factory=list)
    links: list = field(default_factory=list)

    @classmethod
    def error(cls, message: str, data: Any = None, status: int = 1, *,
              refused: bool = False, job: JobRef | None = None) -> "Reply":
        payload = {"ok": False, "error": message}
        if data is not None:
            payload.update(data if isinstance(data, dict) else {"detail": data})
        return cls(text=message, data=payload, ok=False, status=status, job=job,
                   refused=refused)

    def to_json(self) -> str:
        data = self.data if self.data is not None else {"text": self.text}
        if isinstance(data, dict) and "ok" not in data:
            data = {"ok": self.ok, **data}
        if self.refused and isinstance(data, dict):
            data = {**data, "refused": True}
        if self.links and isinstance(data, dict):
            data = {**data, "links": [{"kind": lk.ref.kind, "key": lk.ref.key, "url": lk.url}
                                      for lk in self.links]}
        return json.dumps(data, indent=2, default=str, ensure_ascii=False)
