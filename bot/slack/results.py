"""The result of a finished job, as the command that started it would have answered.

A job started from Slack answers at once ("started job …") and its result comes later, when
the job is done. For job kinds whose command renders a result of its own (a model conversion's
validation and benchmark summary, chart and report), the final message in the thread is that
same rendering, so Slack and the terminal say the same thing and nothing is said twice.
Kinds not listed here get the generic final message (state, metrics, chart).
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable

from bot.reply import Reply

log = logging.getLogger(__name__)


def _model_report(job) -> Reply:
    # The handler's own rendering of report.json (text, chart.png, report.json, manifests).
    from bot.model_reply import model_reply
    from converters.model.report import ModelReport, load_report

    workdir = Path(job.workdir)
    report = load_report(workdir)
    if job.state == "cancelled":
        report = ModelReport.crashed(f"job {job.id} was cancelled", "cancelled")
    reply = model_reply(report, workdir, job, job.spec)
    # Where the report lies on the server means nothing in Slack: it is uploaded instead.
    reply.text = "\n".join(line for line in reply.text.splitlines()
                           if not line.startswith("report: "))
    return reply


# Rules as data: job kind -> how its result reads.
RESULTS: dict[str, Callable[[object], Reply]] = {
    "convert-model": _model_report,
    "infer": _model_report,
    "evaluate": _model_report,
}


def job_result(job) -> Reply | None:
    """The command's own answer for a finished job, or None for kinds without one."""
    render = RESULTS.get(getattr(job, "kind", ""))
    # A job whose stored spec cannot be read gets the generic message: its reason says why.
    if render is None or not getattr(job, "workdir", "") or getattr(job, "spec", 0) is None:
        return None
    try:
        return render(job)
    except Exception as exc:  # noqa: BLE001 - fall back to the generic final message
        log.warning("result of job %s could not be rendered: %s", job.id, exc)
        return None
