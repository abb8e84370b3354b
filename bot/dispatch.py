"""Run a parsed Command through its handler and always come back with a Reply.

This is the one place where who may do what is enforced, for every face: the command's
declared permission against the asker's roles, the per-user limit of running jobs, and the
files a remote asker names (``bot.paths``). Ownership of what a command changes is checked by
the handler, which alone knows the target (``bot.permissions.check_owner``).
"""
from __future__ import annotations

import logging

from bot.context import Context
from bot.parser import Command, HelpRequested, UsageError, parse
from bot.paths import (PLACES, Areas, PathRefused, discard, not_an_input, outside_job_folders,
                       read, writable)
from bot.permissions import Forbidden, refusal
from bot.registry import COMMANDS, CommandSpec, path_args
from bot.reply import Reply
from core.vocabulary import ACTIVE

log = logging.getLogger(__name__)


def authorize(ctx: Context, spec: CommandSpec | None, name: str = "") -> str | None:
    """Why ``ctx.actor`` may not run this command now (None: they may). No side effects, so
    a face may ask before deciding where to answer."""
    if spec is None:
        return f"no command {name!r}"
    actor = ctx.actor
    reason = refusal(actor, spec.name, spec.permission)
    if reason is None and spec.permission == "compute" and actor.max_running is not None:
        running = running_jobs(ctx, actor.id)
        if running >= actor.max_running:
            reason = (f"you already have {running} running job(s), the limit is "
                      f"{actor.max_running}; wait for one to finish or cancel one "
                      "(`/tf jobs --mine`).")
    return reason


def running_jobs(ctx: Context, owner: str) -> int:
    """What ``owner`` has running: jobs of their own, and pipeline runs (one each, however many
    steps; a run counts between its steps too)."""
    from catalog.runs import running_count
    jobs = [j for j in ctx.services.engine.list(states=list(ACTIVE), owner=owner)
            if not j.spec.labels.pipeline_run]
    return len(jobs) + running_count(ctx.services.catalog, owner)


def job_limit(ctx: Context) -> dict:
    """The asker's limit of active jobs, for ``Engine.submit``: the job store counts and
    records a job in one transaction, so parallel requests never pass it (authorize's count
    above is the early answer, not the guarantee)."""
    actor = ctx.actor
    if actor.max_running is None:
        return {}
    from catalog.runs import running_count
    return {"max_active": actor.max_running,
            "also_active": running_count(ctx.services.catalog, actor.id)}


def job_owner(ctx: Context):
    def owner(job_id: str) -> str | None:
        try:
            return ctx.services.engine.get(job_id).owner
        except Exception:  # noqa: BLE001 - an unknown job is nobody's
            return None
    return owner


def catalog_model(ctx: Context):
    """NAME[:VERSION] of a catalog model -> where its files are (None: no such model)."""
    def find(ref: str) -> str | None:
        from catalog.names import NAME_RE
        name, _, version = ref.partition(":")
        if not NAME_RE.fullmatch(name) or (version and not version.isdigit()):
            return None
        from catalog.outputs import find_model
        row = find_model(ctx.services.catalog, ref)
        return row["artifact_uri"] if row is not None and row["artifact_uri"] else None
    return find


def resolve_paths(ctx: Context, spec: CommandSpec, args: dict, copy: bool = True,
                  made: list | None = None) -> dict:
    """Every file a command names passes the one file gate (``bot.paths.read``), for every
    face: the handler gets a private copy of what was opened (or a URI, or a catalog model's
    files), never a name to open again; what it writes goes to the asker's own outputs (from
    Slack) and never into job folders, nor over a file it reads. ``copy=False``: only check
    (the names are opened and closed; nothing is copied). ``made`` collects the copies'
    folders, for :func:`bot.paths.discard`."""
    areas = Areas.of(ctx.config)
    out = dict(args)
    inputs: list[tuple[int, int]] = []
    for dest, kind in sorted(path_args(spec), key=lambda a: a[1] == "out"):
        value = args.get(dest)
        if value is None:
            continue
        many = isinstance(value, (list, tuple))
        values = [str(v) for v in value] if many else [str(value)]
        if kind == "out":
            if ctx.actor.remote:
                values = [writable(ctx.actor, v, areas) for v in values]
            for v in values:
                outside_job_folders(v, areas)
                not_an_input(v, inputs)
        else:
            place = (spec.name, dest) in PLACES
            # models add copies into the catalog's store itself, unless --in-place
            keep = place and args.get("in_place", True) is not False
            got = [read(ctx.actor, v, areas, job_owner(ctx), kind == "or-name",
                        catalog_model(ctx), place, copy, keep) for v in values]
            inputs += [g.identity for g in got if g.identity]
            if made is not None:
                made += [g.copy for g in got if g.copy]
            values = [g.value for g in got]
        out[dest] = values if many else values[0]
    return out


def precheck(ctx: Context, command: Command) -> str | None:
    """Why this command would be refused before its handler runs (permission, limit, the
    files it names), without running it or writing anything: a face asks first to decide
    where to answer (a refusal is for the asker only)."""
    spec = COMMANDS.get(command.name)
    reason = authorize(ctx, spec, command.name)
    if reason is None:
        try:
            resolve_paths(ctx, spec, command.args, copy=False)
        except PathRefused as exc:
            reason = str(exc)
    return reason


def run(ctx: Context, command: Command) -> Reply:
    spec = COMMANDS.get(command.name)
    reason = authorize(ctx, spec, command.name)
    reply = None
    if reason is None:
        copies: list = []
        try:
            args = resolve_paths(ctx, spec, command.args, made=copies)
            reply = spec.handler(ctx, **args)
        except (PathRefused, Forbidden) as exc:  # the files it names, or whose the target is
            reason = str(exc)
            discard(copies)  # a refused command leaves nothing behind
        except Exception as exc:  # noqa: BLE001 - every failure becomes an answer
            discard(copies)
            if getattr(exc, "user_facing", False):
                reply = Reply.error(str(exc))
            else:
                log.exception("command %s failed", command.name)
                reply = Reply.error(f"{command.name} failed unexpectedly: "
                                    f"{type(exc).__name__}: {exc}")
    # One audit row per request that changes something or is refused, with the outcome.
    if ctx.audit is not None and (reason or spec.permission != "read"):
        ctx.audit(command.name, command.line, reason is None, reason or "")
    if reason:
        return Reply.error(reason, refused=True)
    from bot.web.links import attach
    attach(ctx.config, reply)  # links to the web view's pages for what it names
    return reply


def run_line(ctx: Context, line: str | list[str]) -> tuple[Command | None, Reply]:
    """Parse and run; usage errors and --help become replies too."""
    try:
        command = parse(line)
    except HelpRequested as h:
        return None, Reply(text=h.text, data={"help": h.text, "command": h.command})
    except UsageError as u:
        text = f"error: {u.message}" + (f"\n\n{u.usage}" if u.usage else "")
        return None, Reply.error(text, {"usage": u.usage, "command": u.command}, status=2)
    return command, run(ctx, command)
