"""Acks first: work waits for a lull in incoming requests, but never longer than max_wait."""
from __future__ import annotations

import threading
import time

from bot.slack.priority import AckFirst


def test_work_waits_while_a_request_is_in_flight_then_for_a_short_lull():
    gate = AckFirst(max_wait=5.0, quiet=0.05)
    done = []
    with gate:
        t = threading.Thread(target=lambda: done.append((gate.wait(), time.monotonic())))
        t.start()
        time.sleep(0.2)
        assert not done  # still acking
        left = time.monotonic()
    t.join(2)
    quiet, at = done[0]
    assert quiet and at - left >= 0.04  # waited for the lull after the last request


def test_work_is_never_starved_by_steady_traffic():
    gate = AckFirst(max_wait=0.2, quiet=0.05)
    with gate:
        start = time.monotonic()
        assert gate.wait() is False
        assert 0.15 <= time.monotonic() - start < 1.0


def test_no_traffic_means_no_wait():
    gate = AckFirst(max_wait=5.0, quiet=0.05)
    start = time.monotonic()
    assert gate.wait() is True and time.monotonic() - start < 0.1
