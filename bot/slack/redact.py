"""Keep Slack tokens out of logs, whoever logs them (slack_sdk logs request headers at DEBUG).

A log record factory rather than a handler filter: it covers every logger and every handler,
including ones configured after ``serve`` starts.
"""
from __future__ import annotations

import logging
import re

TOKEN = re.compile(r"\bxox[abposre]-[A-Za-z0-9-]+|\bxapp-[A-Za-z0-9-]+")
REDACTED = "xox…[redacted]"

_installed = False


def redact(text: str) -> str:
    return TOKEN.sub(REDACTED, text)


def install_redaction() -> None:
    global _installed
    if _installed:
        return
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is the logger's problem
            return record
        if TOKEN.search(message):
            record.msg, record.args = redact(message), None
        return record

    logging.setLogRecordFactory(factory)
    _installed = True
