"""The per-owner limit of active jobs holds under parallel requests: the job store counts the
owner's active jobs and records the new one in one SQLite transaction, so N requests racing
for a limit of L create exactly min(N, L) jobs, whatever the interleaving. Jobs stay queued
here ([jobs] local_workers = 0), so nothing runs and the tests take seconds."""
from __future__ import annotations

import json
import sys
import threading

from hypothesis import given, settings, strategies as st
from tests.jobs_helpers import make_engine, write

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.permissions import member
from runners.models import JobError

SCRIPT = "print('training')\n"


def _race(n: int, work) -> list:
    """Run ``work(i)`` in ``n`` threads released together; their results or errors."""
    gate = threading.Barrier(n)
    out: list = [None] * n

    def one(i):
        gate.wait()
        try:
            out[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - the refusals are the point
            out[i] = exc
    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


@settings(max_examples=6, deadline=None)
@given(n=st.integers(2, 8), limit=st.integers(1, 4), already=st.integers(0, 2))
def test_parallel_submissions_never_pass_the_limit(tmp_path_factory, n, limit, already):
    home = tmp_path_factory.mktemp("home")
    script = write(home / "train.py", SCRIPT)
    engine = make_engine(home, start=False, local_workers=0)
    try:
        spec = {"script_path": str(script)}
        for _ in range(already):  # active jobs the owner had before the burst
            engine.submit("train", spec, owner="ann")
        engine.submit("train", spec, owner="bob")  # someone else's job counts for bob only
        results = _race(n, lambda i: engine.submit("train", spec, owner="ann", max_active=limit))
        made = [r for r in results if not isinstance(r, Exception)]
        refused = [r for r in results if isinstance(r, Exception)]
        assert len(made) == max(0, min(n, limit - already))
        assert all(isinstance(r, JobError) and f"the limit is {limit}" in str(r) for r in refused)
        assert len(engine.list(owner="ann")) == already + len(made)
    finally:
        engine.close()


def test_eight_parallel_train_commands_from_slack_pass_a_limit_of_three(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "tfdesk.toml").write_text(f'[runner]\npython = "{sys.executable}"\n'
                                      "[jobs]\nlocal_workers = 0\n")
    upload = home / "slack" / "uploads" / "F1"
    upload.mkdir(parents=True)
    (upload / "train.py").write_text(SCRIPT)
    (upload / "upload.json").write_text(json.dumps({"name": "train.py", "user": "UANN"}))
    reply_to = {"kind": "slack", "channel": "C1", "thread_ts": "1.0"}

    def train(i):
        ctx = Context(load_config({"TFDESK_HOME": str(home)}),
                      actor=member("UANN", "compute", max_running=3), reply_to=reply_to)
        try:
            return run_line(ctx, "train F1/train.py")[1]
        finally:
            ctx.services.close()
    replies = _race(8, train)
    assert not [r for r in replies if isinstance(r, Exception)], replies
    ok = [r for r in replies if r.ok]
    assert len(ok) == 3, [r.text for r in replies]
    assert all("the limit is 3" in r.text for r in replies if not r.ok)
    ctx = Context(load_config({"TFDESK_HOME": str(home)}))
    try:
        assert len(ctx.services.engine.list(owner="UANN")) == 3
    finally:
        ctx.services.close()
