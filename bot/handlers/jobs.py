"""Jobs: train, jobs, job, logs, cancel, delete. The work itself lives in runners/."""
from __future__ import annotations

import time
from pathlib import Path

from bot.permissions import check_owner
from bot.registry import arg, command
from bot.reply import JobRef, Reply
from core.vocabulary import (ACTIVE, BACKENDS, CONVERT_CHOICES, STATES,
                             TERMINAL_ICONS as STATE_ICON)




def _age(ts):
    if not ts:
        return "-"
    s = time.time() - ts
    return f"{s:.0f}s ago" if s < 90 else f"{s / 60:.0f}m ago" if s < 5400 else f"{s / 3600:.1f}h ago"


def _summary(engine, job) -> dict:
    from runners.kinds import get_kind
    metrics = engine.metrics(job.id)
    return {**job.to_dict(), "summary": get_kind(job.kind).describe(job.spec),
            "last_metrics": metrics[-1] if metrics else None}


def _line(d: dict) -> str:
    m = d.get("last_metrics") or {}
    last = "  ".join(f"{k}={v:.4g}" for k, v in m.items() if k != "epoch")
    last = f"  epoch {m['epoch']}: {last}" if m else ""
    shown = ("failed", "lost", "waiting_gpu")  # states whose reason is the news
    why = f" ({d['reason']})" if d["reason"] and d["state"] in shown else ""
    return (f"{STATE_ICON.get(d['state'], ' ')} {d['id']}  {d['state']:<9} {d['kind']:<6} "
            f"{d['backend']:<10} {d['summary']}  {_age(d['created_at'])}{why}{last}")


def _progress_subscriber(ctx, job_id):
    def on_event(ev):
        if ev.type == "metric":
            d = ev.data
            loss = f" loss {d['loss']:.4f}" if "loss" in d else ""
            ctx.report(f"{job_id}: epoch {d['epoch']}{'/' + str(d['epochs']) if d.get('epochs') else ''}{loss}",
                       d["epoch"], d.get("epochs"))
        elif ev.type == "state":
            ctx.report(f"{job_id}: {ev.message}", None, None)
    return on_event


@command("train", "run a training script as a job (converted to distributed when needed)",
         args=[arg("script", help="the training script (.py)", path=True),
               arg("script_args", nargs="*", metavar="-- ARGS", after_dashes=True,
                   help="arguments for the script, after `--` (e.g. -- --lr 0.01 --batch 64)"),
               arg("--workers", type=int, default=1, help="processes / pods (default 1)"),
               arg("--gpus-per-worker", type=int, default=0, help="GPUs per worker (Kubernetes)"),
               arg("--cpu", help="CPU request and limit per worker, e.g. 4 or 500m (Kubernetes)"),
               arg("--memory", help="memory request and limit per worker, e.g. 8Gi (Kubernetes)"),
               arg("--backend", choices=list(BACKENDS), default="local"),
               arg("--convert", "--to", dest="convert", default="auto",
                   choices=list(CONVERT_CHOICES),
                   help="target for a single-process script (auto, with several workers: "
                   "horovod; tf-distribute for Keras 3 scripts)"),
               arg("--epochs", type=int, help="passed to the script as TFDESK_EPOCHS"),
               arg("--timeout", type=float, help="wall-clock limit in seconds"),
               arg("--tf-version", help="TensorFlow version the script needs (picks the image)"),
               arg("--env", dest="environment", help="the catalog environment to run in "
                   "(default: the one that fits the script; see 'tfdesk environments list')"),
               arg("--input", dest="inputs", action="append", default=[], metavar="NAME",
                   help="a catalog dataset or model the job reads (from the terminal, also a "
                   "path), shown to it read-only at its path; repeat for several"),
               arg("--register", metavar="NAME", help="register the trained model in the "
                   "catalog as the next version of NAME (without it, the model stays the job's "
                   "artifact)"),
               arg("--project", "-p", help="the catalog project the job and its model belong "
                   "to (default: the channel's)"),
               arg("--wait", action="store_true", help="wait for the end, showing progress"),
               arg("--dry-run", action="store_true", help="show what would run (Kubernetes: manifests)")],
         examples=["tfdesk train train.py --workers 2", "tfdesk train train.py -- --lr 0.01",
                   "tfdesk train train.py --register mnist-cnn --project vision",
                   "tfdesk train train.py --workers 4 "
                   "--backend kubernetes --gpus-per-worker 1 --dry-run"], slow=True, permission="compute")
def train(ctx, script, workers, gpus_per_worker, backend, convert, epochs, timeout, tf_version,
          environment, wait, dry_run, script_args=(), cpu=None, memory=None, inputs=(),
          register=None, project=None):
    from bot import job_inputs
    from runners.specs import TrainSpec  # here: other commands never load runners
    engine = ctx.services.engine
    labels = _catalog_labels(ctx, register, project)
    spec = TrainSpec(script_path=str(Path(script).expanduser().resolve()), workers=workers,
                     gpus_per_worker=gpus_per_worker, convert=convert, epochs=epochs,
                     timeout=timeout, tf_version=tf_version, environment=environment,
                     args=tuple(script_args or ()), cpu=cpu, memory=memory,
                     inputs=job_inputs.named(ctx, inputs), labels=labels)
    grant = job_inputs.grant(ctx)
    if dry_run:
        plan = engine.dry_run("train", spec, backend, grant=grant)
        # As YAML comments, the findings leave the manifests a valid YAML stream.
        from runners.stored import dump
        return Reply(text=_with_findings(plan["spec"], plan["text"], comment=backend != "local"),
                     data={**plan, "spec": dump(plan["spec"])})
    from bot.dispatch import job_limit
    job = engine.submit("train", spec, owner=ctx.owner, reply_to=ctx.reply_to, backend=backend,
                        grant=grant, **job_limit(ctx))
    if wait:
        token = engine.subscribe(_progress_subscriber(ctx, job.id), job_id=job.id)
        try:
            job = engine.wait(job.id)
        finally:
            engine.unsubscribe(token)
        return _job_reply(engine, job.id, judge=True)
    d = _summary(engine, job)
    where = f"\nenvironment: {job.spec.runtime_why}" if job.spec.runtime_why else ""
    if job.state == "queued":
        where += ("\nqueued: " + ("the scheduler (tfdesk serve) starts it when a slot frees"
                                  if engine.scheduler() else
                                  "no scheduler runs and no slot is free now; `tfdesk serve` "
                                  f"starts it, or `tfdesk logs {job.id} --follow` waits and "
                                  "starts it here"))
    return Reply(text=_with_findings(job.spec, f"started job {job.id} ({d['summary']}) on {backend}: "
                                               f"{job.state}{where}\nfollow it with: tfdesk logs "
                                               f"{job.id} --follow"), data=d,
                 job=JobRef.of(job))


def _catalog_labels(ctx, register: str | None, project: str | None):
    """What a training's model is registered as, checked before the job starts: a model name
    (someone else's needs an admin, as with ``models add``) and a project that exists."""
    from bot.handlers.catalog_owners import first_owner
    from catalog import projects
    from catalog.errors import NotFound
    from catalog.names import check_name
    from runners.stored import Labels
    if register:
        check_name(register, "model name")
        first_owner(ctx, "models", register)
    project = project or projects.channel_default(ctx.services.catalog,
                                                  ctx.reply_to.get("channel"))
    if project and ctx.services.catalog.execute(
            "SELECT 1 FROM catalog_projects WHERE name = ?", (project,)).fetchone() is None:
        raise NotFound(f"no project {project!r} in the catalog; see 'tfdesk projects list'")
    return Labels(register=register or None, project=project or None)


def _with_findings(spec, text: str, comment: bool = False) -> str:
    """The converter's findings (what it changed, what to check) before the job's own text
    (``spec``: a train job's runners.stored.StoredTrain)."""
    report = spec.conversion_report
    if not report:
        return text
    head = f"converted to {spec.converted_to}:\n{report}"
    if comment:
        return "\n".join(f"# {line}" if line else "#" for line in head.splitlines()) + "\n" + text
    return f"{head}\n\n{text}"


@command("jobs", "list jobs (recent ones; --all for every job)",
         args=[arg("--state", choices=[*STATES, "active"]),
               arg("--mine", action="store_true", help="only jobs you started"),
               arg("--all", action="store_true", help="every job, not only the last 20")],
         examples=["tfdesk jobs", "tfdesk jobs --state running --mine"], permission="read")
def jobs(ctx, state, mine, all):  # noqa: A002 - the flag is --all
    engine = ctx.services.engine
    states = list(ACTIVE) if state == "active" else [state] if state else None
    bad: list[tuple[str, str]] = []
    found = engine.list(states=states, owner=ctx.owner if mine else None,
                        limit=None if all else 20, skipped=bad)
    rows = [_summary(engine, j) for j in found]
    notes = [f"{job_id} cannot be read: {why}; `tfdesk delete {job_id}` removes it"
             for job_id, why in bad]
    unreadable = [{"id": job_id, "why": why} for job_id, why in bad]
    if not rows:
        text = "no jobs" + (f" in state {state}" if state else "")
        return Reply(text="\n".join([text, *notes]),
                     data={"jobs": [], "unreadable": unreadable})
    from bot.web.links import Ref, query  # the same list in the web view
    page = Ref("runs", query(owner=ctx.owner if mine else None,
                             state=None if state == "active" else state))
    return Reply(text="\n".join([*(_line(r) for r in rows), *notes]),
                 data={"jobs": rows, "unreadable": unreadable},
                 refs=[page])


def _unreadable_reply(engine, job_id: str, why: str) -> Reply:
    """A job whose stored spec cannot be read: what its row says outside the spec (state,
    reason, history), why the rest cannot be shown, and how to remove it."""
    job = engine.get(job_id, strict=False)
    d = {k: getattr(job, k) for k in ("id", "kind", "state", "reason", "owner", "backend",
                                      "workdir", "created_at", "started_at", "finished_at")}
    d.update(unreadable=why, events=[e.to_dict() for e in engine.events(job_id)])
    lines = [f"{STATE_ICON.get(job.state, ' ')} {job.id}  {job.state:<9} {job.kind:<6} "
             f"{job.backend:<10} {_age(job.created_at)}",
             f"  owner {job.owner}  workdir {job.workdir}", f"  spec: cannot be read: {why}"]
    if job.reason:
        lines.append(f"  reason: {job.reason}")
    lines.append("  events:")
    lines += [f"    {time.strftime('%H:%M:%S', time.localtime(e['ts']))} {e['type']}: "
              f"{e['message']}" for e in d["events"]]
    lines.append(f"  `tfdesk logs {job.id}` shows its log; `tfdesk delete {job.id}` removes it")
    return Reply(text="\n".join(lines), data=d, job=JobRef.of(job))


def _job_reply(engine, job_id, judge=False):
    from runners.charts import metrics_chart
    from runners.stored import UnreadableSpec
    try:
        job = engine.get(job_id)
    except UnreadableSpec as exc:
        return _unreadable_reply(engine, job_id, str(exc))
    d = _summary(engine, job)
    d["events"] = [e.to_dict() for e in engine.events(job_id)]
    d["metrics"] = engine.metrics(job_id)
    d["artifacts"] = engine.artifacts(job_id)
    lines = [_line(d), f"  owner {job.owner}  workdir {job.workdir}",
             "  spec: " + ", ".join(f"{k}={v}" for k, v in d["spec"].items()
                                 if v not in (None, [], "", {}) and
                                 k not in ("v", "kind", "runtime", "runtime_why"))]
    if job.spec.runtime_why:
        lines.append(f"  environment: {job.spec.runtime_why}")
    if job.reason:
        lines.append(f"  reason: {job.reason}")
    lines.append("  events:")
    lines += [f"    {time.strftime('%H:%M:%S', time.localtime(e['ts']))} {e['type']}: {e['message']}"
              for e in d["events"]]
    if d["metrics"]:
        lines.append("  metrics:")
        lines += ["    epoch " + str(m["epoch"]) + ": " + "  ".join(
            f"{k}={v:.4g}" for k, v in m.items() if k != "epoch") for m in d["metrics"]]
    if d["artifacts"]:
        lines.append("  artifacts:")
        lines += [f"    {a['path']}  {a['kind']}  {a['size']} bytes"
                  + ("  (saved outside the job's folder)" if a.get("name") == "saved_outside"
                     else "") for a in d["artifacts"]]
    if job.kind == "train" and job.state == "succeeded":
        from bot.job_model import model_note
        note = model_note(job, d["artifacts"])
        lines.append(f"  {note}")
        d["model_note"] = note
    files = []
    if d["metrics"] and Path(job.workdir).is_dir():
        from runners.local import paths  # tfdesk's own files: the job's record folder
        chart = metrics_chart(d["metrics"], paths(Path(job.workdir))["records"] / "metrics.png",
                              f"{job.id} {d['summary']}")
        if chart:
            files.append(chart)
    # With judge (train --wait) a job that did not succeed makes the command fail (exit 1).
    ok = job.state == "succeeded" or not judge
    return Reply(text="\n".join(lines), data=d, files=files, ok=ok, status=0 if ok else 1,
                 job=JobRef.of(job))


@command("job", "show one job: spec, state, events, metrics, artifacts",
         args=[arg("id", help="job id, e.g. j-1a2b3c4d")], examples=["tfdesk job j-1a2b3c4d"], permission="read")
def job(ctx, id):  # noqa: A002
    return _job_reply(ctx.services.engine, id)


@command("logs", "show a job's log",
         args=[arg("id", help="job id"), arg("--tail", type=int, help="only the last N lines"),
               arg("--follow", action="store_true", help="wait for the job to end, showing progress")],
         examples=["tfdesk logs j-1a2b3c4d --tail 50"], permission="read")
def logs(ctx, id, tail, follow):  # noqa: A002
    engine = ctx.services.engine
    job = engine.get(id, strict=False)  # a log is outside the spec: shown even without one
    # From Slack the job's own thread follows it; a request waiting here would hold one of
    # the few workers every member shares for as long as the job runs.
    if follow and job.active and job.spec is not None and not ctx.actor.remote:
        def on_event(ev):
            if ev.type == "log":
                ctx.report(f"{id}: {ev.message[:100]}", None, None)
        token = engine.subscribe(on_event, job_id=id)
        try:
            job = engine.wait(id)
        finally:
            engine.unsubscribe(token)
    text = engine.read_log(id, tail)
    return Reply(text=text.rstrip("\n") or f"(job {id} has written no output yet)",
                 data={"id": id, "state": job.state, "log": text})


@command("cancel", "cancel a queued or running job",
         args=[arg("id", help="job id")], examples=["tfdesk cancel j-1a2b3c4d"], permission="own")
def cancel(ctx, id):  # noqa: A002
    engine = ctx.services.engine
    check_owner(ctx.actor, engine.get(id, strict=False).owner, f"job {id}", "cancel")
    job = engine.cancel(id)
    note = "" if job.state == "cancelled" else " (stopping; 'tfdesk job ID' shows when it is done)"
    return Reply(text=f"job {id}: {job.state}{note}", data=job.to_dict(), job=JobRef.of(job))


@command("delete", "delete a finished job: its files, cluster objects and record",
         args=[arg("id", help="job id"),
               arg("--force", action="store_true", help="cancel it first when it is still running")],
         examples=["tfdesk delete j-1a2b3c4d"], permission="own")
def delete(ctx, id, force):  # noqa: A002
    engine = ctx.services.engine
    # The owner is outside the spec: a job whose spec cannot be read can still be deleted.
    check_owner(ctx.actor, engine.get(id, strict=False).owner, f"job {id}", "delete")
    engine.delete(id, force=force)
    return Reply(text=f"deleted job {id}", data={"id": id, "deleted": True})
