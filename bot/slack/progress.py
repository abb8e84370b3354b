"""Job progress in Slack: one status message per job, updated in place, then a final message.

Events arrive from the job engine's subscription (``Engine.subscribe``) and, as a fallback
that also covers jobs run by another process, from a slow poll of the job store. Updates to
one message are spaced at least ``min_interval`` apart (Slack rate-limits chat.update); the
newest state always wins. The final message (metrics and a PNG chart) is marked sent only
once Slack took it, so a failed post or a restart of ``serve`` delivers it later.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Any, Callable

from bot.slack import blocks as bk
from bot.slack.messenger import Messenger
from bot.slack.results import job_result
from bot.slack.store import SlackStore
from core.vocabulary import ACTIVE, SLACK_ICONS as ICONS, TERMINAL

log = logging.getLogger(__name__)



def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def metric_line(row: dict[str, Any] | None) -> str:
    if not row:
        return ""
    parts = [f"epoch {row['epoch']}"] if "epoch" in row else []
    parts += [f"{k} {_fmt(v)}" for k, v in row.items() if k not in ("epoch", "step")]
    return " · ".join(parts)


def progress_line(progress: tuple[str, int | None, int | None] | None) -> str:
    if not progress:
        return ""
    text, done, total = progress
    return f"{text} ({done}/{total})" if done is not None and total else text


def _links(web, job) -> list[dict[str, Any]]:
    """The web view's page of this run, when [web] url is set (bot/web/links.py)."""
    if web is None:
        return []
    from bot.web.links import Ref
    return [bk.links_block(web.links([Ref("run", job.id)]))]


def status_message(job, metrics: list[dict[str, Any]],
                   progress: tuple[str, int | None, int | None] | None = None,
                   web=None) -> dict[str, Any]:
    state = job.state
    head = f"{ICONS.get(state, '')} Job `{bk.escape(job.id)}` ({bk.escape(job.kind)}): *{state}*"
    blocks = [bk.section(head)]
    line = metric_line(metrics[-1] if metrics else None)
    if line:
        blocks.append(bk.context(bk.escape(line)))
    step = progress_line(progress) if state not in TERMINAL else ""
    if step:
        blocks.append(bk.context(":gear: " + bk.escape(step)))
    if job.reason:
        blocks.append(bk.context(bk.escape(job.reason)))
    blocks += _links(web, job)
    if state not in TERMINAL:
        blocks.append(bk.job_buttons(job.id))
    return {"text": f"Job {job.id} ({job.kind}): {state}", "blocks": blocks}


def final_message(job, metrics: list[dict[str, Any]], web=None) -> dict[str, Any]:
    took = ""
    if job.started_at and job.finished_at:
        took = f" in {job.finished_at - job.started_at:.0f} s"
    blocks = [bk.section(f"{ICONS.get(job.state, '')} Job `{bk.escape(job.id)}` "
                         f"({bk.escape(job.kind)}) *{job.state}*{took}.")]
    if job.reason:
        blocks.append(bk.section(bk.escape(job.reason)))
    if metrics:
        last = metrics[-1]
        fields = [{"type": "mrkdwn", "text": f"*{bk.escape(k)}*\n{_fmt(v)}"}
                  for k, v in last.items()][:10]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "*Final metrics*"},
                       "fields": fields})
    blocks += _links(web, job)
    blocks.append(bk.actions([bk.button("Show logs", "tf_job_logs", job.id)],
                             block_id=f"final:{job.id}"))
    return {"text": f"Job {job.id} ({job.kind}) {job.state}", "blocks": blocks}


def _progress_of(line: str) -> tuple[str, int | None, int | None] | None:
    from converters.model.jobspec import parse_progress  # a few lines of JSON parsing
    return parse_progress(line or "")


class JobPublisher:
    def __init__(self, jobs, messenger: Messenger, store: SlackStore, charts_dir: Path,
                 min_interval: float = 1.0, poll_interval: float = 2.0,
                 busy: Callable[[str, str | None], bool] | None = None, web=None):
        self.jobs = jobs  # runners.store.JobStore (read only here)
        self.web = web  # bot.web.links.WebLinks when [web] url is set, else None
        self.messenger = messenger
        self.store = store
        self.charts_dir = Path(charts_dir)
        self.min_interval = min_interval
        self.poll_interval = poll_interval
        self._dirty: set[str] = set()
        self._last: dict[str, float] = {}
        self._seen: dict[str, tuple[str, int]] = {}
        # The last status message sent per job: an unchanged one is not sent again.
        self._sent: dict[str, dict[str, Any]] = {}
        # The latest progress step a job's log announced (model conversions): text, done, total.
        self._progress: dict[str, tuple[str, int | None, int | None]] = {}
        # Is a command still running in this (channel, thread)? Its own answer will name the
        # jobs it started, so they are not adopted behind its back.
        self.busy = busy or (lambda channel, thread_ts: False)
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- inputs ----------------------------------------------------------------------------
    def on_event(self, event) -> None:
        """Engine subscriber: only marks the job; never blocks the engine or raises."""
        job_id = getattr(event, "job_id", None) or (event.get("job_id")
                                                   if isinstance(event, dict) else None)
        if job_id and getattr(event, "type", None) == "log":
            # Output lines are many; only the progress lines a worker prints change the status.
            step = _progress_of(getattr(event, "message", ""))
            if step is None:
                return
            self._progress[str(job_id)] = step
        if job_id:
            with self._cond:
                self._dirty.add(str(job_id))
                self._cond.notify()

    def attach(self, job_id: str, where, ts: str | None) -> None:
        """A command started a job in Slack; its answer message becomes the status message."""
        self.store.set_job_message(job_id, where.channel, where.thread_ts or ts, ts)
        self.on_event({"job_id": job_id})

    # -- work ------------------------------------------------------------------------------
    def publish(self, job_id: str) -> None:
        row = self.store.job_message(job_id)
        if row is None:
            return
        try:  # a job whose spec cannot be read still has a state and reason to say
            job = self.jobs.get(job_id, strict=False)
        except Exception as exc:  # noqa: BLE001 - deleted job: nothing more to say
            log.info("job %s is gone (%s); no more updates", job_id, exc)
            self.store.mark_final_sent(job_id)
            return
        metrics = self.jobs.metrics(job_id)
        message = status_message(job, metrics, self._progress.get(job_id), self.web)
        if row["status_ts"]:
            if self._sent.get(job_id) != message:
                if self.messenger.update(row["channel"], row["status_ts"], message,
                                         job_id=job_id):
                    self._sent[job_id] = message
        else:
            ts = self.messenger.post(row["channel"], message, thread_ts=row["thread_ts"],
                                     keep=False)
            if ts:
                self.store.set_job_message(job_id, row["channel"], row["thread_ts"], ts)
        self._seen[job_id] = (job.state, len(metrics))
        if job.state in TERMINAL and not row["final_sent"]:
            self.send_final(job, metrics, row)

    def send_final(self, job, metrics, row) -> bool:
        """One final result: the command's own rendering for kinds that have one (a model
        conversion: validation, benchmark, chart, report), else state, metrics and a chart."""
        result = job_result(job)
        if result is not None:
            result.links = self.web.for_reply(result) if self.web is not None else []
            message = bk.render_reply(result, extra=[bk.actions(
                [bk.button("Show logs", "tf_job_logs", job.id)], block_id=f"final:{job.id}")])
            files = list(result.files)
        else:
            message = final_message(job, metrics, self.web)
            files = None
        ts = self.messenger.post(row["channel"], message,
                                 thread_ts=row["thread_ts"] or row["status_ts"], keep=False)
        if ts is None:
            return False  # stays pending; deliver_pending retries it
        self.store.mark_final_sent(job.id)
        self._progress.pop(job.id, None)
        self._sent.pop(job.id, None)
        if files is None:
            chart = self._chart(job, metrics)
            files = [chart] if chart else []
        if files:
            self.messenger.upload(row["channel"], row["thread_ts"] or ts, files, job_id=job.id)
        return True

    def _chart(self, job, metrics) -> Path | None:
        try:
            for a in self.jobs.artifacts(job.id):
                # Artifact paths are relative to the job's folder.
                path = Path(job.workdir or ".") / str(a.get("path", ""))
                if path.suffix == ".png" and path.is_file():
                    return path
        except Exception:  # noqa: BLE001 - a chart is a nicety
            pass
        try:
            from runners.charts import metrics_chart
            return metrics_chart(metrics, self.charts_dir / f"{job.id}.png",
                                 f"job {job.id} ({job.kind})")
        except Exception as exc:  # noqa: BLE001
            log.warning("chart for job %s failed: %s", job.id, exc)
            return None

    def deliver_pending(self) -> int:
        """Finals not yet delivered (restart, Slack down): send them; mark changed jobs."""
        sent = 0
        for row in self.store.pending_finals():
            try:
                job = self.jobs.get(row["job_id"], strict=False)
            except Exception:  # noqa: BLE001 - deleted: nothing to deliver
                self.store.mark_final_sent(row["job_id"])
                continue
            if job.state in TERMINAL:
                self.publish(job.id)
                sent += 1
            elif self._seen.get(job.id, ("",))[0] != job.state:
                self.on_event({"job_id": job.id})
        return sent

    def adopt(self, min_age_s: float = 5.0) -> None:
        """Jobs that report to Slack but no command answer named them (a pipeline step, a job
        started by another process): give them a status message in their thread."""
        now = time.time()
        for job in self.jobs.list(states=ACTIVE):
            to = job.reply_to or {}
            if (to.get("kind") == "slack" and to.get("channel") and now - job.created_at
                    >= min_age_s and self.store.job_message(job.id) is None
                    and not self.busy(to["channel"], to.get("thread_ts"))):
                self.store.set_job_message(job.id, to["channel"], to.get("thread_ts"))
                self.on_event({"job_id": job.id})

    def poll_once(self) -> None:
        """Mark jobs whose state or metrics changed since they were last published."""
        try:
            self.adopt()
        except Exception:  # noqa: BLE001 - the job store may be busy; next poll
            log.exception("adopting jobs failed")
        for row in self.store.pending_finals():
            job_id = row["job_id"]
            try:
                signature = (self.jobs.get(job_id, strict=False).state,
                             len(self.jobs.metrics(job_id)))
            except Exception:  # noqa: BLE001 - publish() handles a vanished job
                signature = None
            if signature != self._seen.get(job_id):
                self.on_event({"job_id": job_id})

    # -- thread --------------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="tfdesk-slack-progress",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify()
        if self._thread:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        next_poll = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_poll:
                self.poll_once()
                next_poll = now + self.poll_interval
            with self._cond:
                ready = [j for j in self._dirty
                         if now - self._last.get(j, 0.0) >= self.min_interval]
                for j in ready:
                    self._dirty.discard(j)
                if not ready:
                    waits = [self.min_interval - (now - self._last.get(j, 0.0))
                             for j in self._dirty]
                    self._cond.wait(timeout=max(0.01, min(waits + [next_poll - now])))
                    continue
            for job_id in ready:
                self._last[job_id] = time.monotonic()
                try:
                    self.publish(job_id)
                except Exception:  # noqa: BLE001 - one job's trouble must not stop the rest
                    log.exception("publishing job %s failed", job_id)
