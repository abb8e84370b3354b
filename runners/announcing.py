"""A job's end, seen by every subscriber before ``Engine.wait`` returns: a training waited on
with ``--wait`` has its model registered in the catalog (a subscriber) by the time the reply
says so. The engine marks a job it is ending before it writes the end, and the event thread
unmarks it once every subscriber has been called with that end."""
from __future__ import annotations

import threading
import time

# How long wait() waits for subscribers to see a job's end before returning anyway.
ANNOUNCE_WAIT_S = 30.0


class Announcing:
    """Mixed into the Engine (its ``_subs``, ``_dispatcher``, ``_announcing``,
    ``_announced``)."""

    def _announcing_end(self, job_id: str) -> None:
        if self._subs:  # with none, nobody is to be waited for
            with self._announced:
                self._announcing.add(job_id)

    def _end_announced(self, job_id: str) -> None:
        with self._announced:
            self._announcing.discard(job_id)
            self._announced.notify_all()

    def _await_announced(self, job_id: str, end: float | None) -> None:
        """Until the subscribers have seen the job's end (bounded: a subscriber stuck on
        another event must not hold every waiter). Never on the event thread itself."""
        if threading.current_thread() is self._dispatcher:
            return
        limit = time.monotonic() + ANNOUNCE_WAIT_S
        if end is not None:
            limit = min(limit, end)
        with self._announced:
            while job_id in self._announcing and (left := limit - time.monotonic()) > 0:
                self._announced.wait(left)
