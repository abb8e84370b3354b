"""Acks first: work handed to the pool waits for a lull in incoming requests, briefly.

One process serves Slack, and Python runs one thread at a time: a burst of slash commands
acks fastest when the workers answering earlier commands are not competing for the
interpreter meanwhile. The wait is bounded (``max_wait``), so steady traffic never starves
the work; it only reorders a burst so that Slack's 3-second ack deadline is never at risk.
"""
from __future__ import annotations

import threading


class AckFirst:
    def __init__(self, max_wait: float = 0.5):
        self.max_wait = max_wait
        self._inflight = 0
        self._cond = threading.Condition()

    def __enter__(self) -> "AckFirst":
        with self._cond:
            self._inflight += 1
        return self

    def __exit__(self, *exc) -> None:
        with self._cond:
            self._inflight -= 1
            if self._inflight == 0:
                self._cond.notify_all()

    @property
    def inflight(self) -> int:
        return self._inflight

    def wait(self) -> bool:
        """Block until no request is being acked, or ``max_wait`` passed; True if quiet."""
        with self._cond:
            return self._cond.wait_for(lambda: self._inflight == 0, timeout=self.max_wait)
