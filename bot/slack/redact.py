"""Keep Slack tokens and the signing secret out of logs, whoever logs them (slack_sdk logs
request headers at DEBUG; an exception's message may quote a request).

A log record factory rather than a handler filter: it covers every logger and every handler,
including ones configured after ``serve`` starts. Tracebacks are formatted and redacted when
the record is made, so no formatter ever prints the raw one.
"""
from __future__ import annotations

import logging
import re
import threading

TOKEN = re.compile(r"\bxox[abposre]-[A-Za-z0-9-]+|\bxapp-[A-Za-z0-9-]+")
REDACTED = "xox…[redacted]"
SECRET_REDACTED = "[redacted]"
MIN_SECRET = 8  # shorter values would redact ordinary words

_installed = False
_secrets: set[str] = set()
_lock = threading.Lock()
_formatter = logging.Formatter()


def redact(text: str) -> str:
    text = TOKEN.sub(REDACTED, text)
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, SECRET_REDACTED)
    return text


def add_secrets(*values: str | None) -> None:
    """Values that must never be logged verbatim (the signing secret has no token shape)."""
    with _lock:
        _secrets.update(v for v in values if v and len(v) >= MIN_SECRET)


def install_redaction(*secrets: str | None) -> None:
    global _installed
    add_secrets(*secrets)
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string is the logger's problem
            return record
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and record.exc_info[0] is not None:
            # Formatters reuse exc_text when it is set; it is set here, redacted.
            record.exc_text = redact(_formatter.formatException(record.exc_info))
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return record

    logging.setLogRecordFactory(factory)
