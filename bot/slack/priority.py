"""Acks first: work handed to the pool waits for a lull in incoming requests, briefly.

One process serves Slack, and Python runs one thread at a time: a burst of slash commands
acks fastest when the workers answering earlier commands are not competing for the
interpreter meanwhile. A lull is no request in flight and none begun or ended for ``quiet``
seconds (between two requests of a burst the count touches zero). The wait is bounded
(``max_wait``), so steady traffic never starves the work; it only reorders a burst so that
Slack's 3-second ack deadline is never at risk.
"""
from __future__ import annotations

import threading
import time


class AckFirst:
    def __init__(self, max_wait: float = 0.5, quiet: float = 0.02):
        self.max_wait = max_wait
        self.quiet = quiet
        self._inflight = 0
        self._last = 0.0
        self._cond = threading.Condition()

    def __enter__(self) -> "AckFirst":
        with self._cond:
            self._inflight += 1
            self._last = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        with self._cond:
            self._inflight -= 1
            self._last = time.monotonic()
            if self._inflight == 0:
                self._cond.notify_all()

    @property
    def inflight(self) -> int:
        return self._inflight

    def wait(self) -> bool:
        """Block until a lull, or ``max_wait`` passed; True if it was a lull."""
        deadline = time.monotonic() + self.max_wait
        with self._cond:
            while True:
                now = time.monotonic()
                calm_in = self._last + self.quiet - now
                if self._inflight == 0 and calm_in <= 0:
                    return True
                if now >= deadline:
                    return False
                self._cond.wait(min(deadline - now, calm_in if self._inflight == 0
                                    else self.quiet))
