"""The catalog commands: datasets, models, environments, components, projects, pipelines
(list/show/add/delete), pipeline runs, and export/import.

Logic lives in ``catalog/``; these handlers parse, open the state database once per context,
and render.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from bot.context import Context
from bot.paths import Areas
from bot.handlers.catalog_owners import (check_owners, first_owner, model_store,
                                         not_tfdesk_folder)
from bot.handlers.pipeline_gate import check_steps
from bot.permissions import Forbidden, check_owner
from bot.registry import arg, command, count, group
from bot.reply import Reply

# kind -> (module name in catalog, columns shown by 'list', what 'show' takes)
KINDS: dict[str, dict[str, Any]] = {
    "datasets": {"module": "datasets", "cols": ["name", "format", "uri", "size_bytes", "owner",
                                                 "project", "tags"], "key": "NAME"},
    "models": {"module": "models", "cols": ["ref", "format", "tf_version", "job_id", "owner",
                                             "project", "tags"], "key": "NAME[:VERSION]"},
    "environments": {"module": "environments", "cols": ["name", "kind", "image", "tf_version",
                                                         "keras_version", "horovod_version",
                                                         "default", "tags"],
                     "key": "NAME"},
    "components": {"module": "components", "cols": ["ref", "kind", "owner", "project", "tags"],
                   "key": "NAME[:VERSION]"},
    "projects": {"module": "projects", "cols": ["name", "owner", "description", "tags"],
                 "key": "NAME"},
    "pipelines": {"module": "pipelines", "cols": ["name", "steps", "owner", "project", "tags"],
                  "key": "NAME"},
}
FILTERS = [arg("--project", "-p", help="only entries of this project"),
           arg("--tag", "-t", help="only entries with this tag"),
           arg("--owner", "-o", help="only entries added by this owner"),
           arg("--search", "-s", help="text in the name or description"),
           arg("--limit", "-n", type=count(), default=50, help="how many (default 50, newest first)"),
           arg("--offset", type=int, default=0, help="skip this many (paging)")]
COMMON_ADD = [arg("--description", "-d", default="", help="what it is, in a sentence"),
              arg("--tag", "-t", action="append", dest="tags", default=[],
                  help="a tag (repeat, or comma-separated)")]
PROJECT_ARG = arg("--project", "-p", help="the project it belongs to (default: the channel's)")

for _kind in KINDS:
    group(_kind, f"the catalog's {_kind}: list, show, add, delete")
group("pipeline", "run catalogued pipelines and follow their runs")
group("catalog", "export and import the whole catalog")


def db(ctx: Context):
    return ctx.services.catalog


def runner_python(ctx: Context) -> str:
    from bot.services import runner_python as python
    return str(python(ctx.config))


def _project(ctx: Context, project: str | None) -> str | None:
    """An explicit --project wins; in a Slack channel, the channel's default project."""
    if project:
        return project
    from catalog import projects
    return projects.channel_default(db(ctx), ctx.reply_to.get("channel"))


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ",".join(map(str, value)) or "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    text = str(value)
    return text if len(text) <= 48 else text[:45] + "..."


def table(rows: list[dict], cols: list[str]) -> str:
    cells = [[_cell(r.get(c)) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    lines = ["  ".join(c.upper().ljust(w) for c, w in zip(cols, widths)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def details(d: dict, skip=("id",)) -> str:
    lines = []
    for k, v in d.items():
        if k in skip or v in (None, "", [], {}):
            continue
        if isinstance(v, dict):
            import json
            v = json.dumps(v, default=str)
        elif isinstance(v, list):
            v = ", ".join(map(str, v)) if all(not isinstance(x, dict) for x in v) else \
                "; ".join(", ".join(f"{a}={b}" for a, b in x.items()) for x in v)
        lines.append(f"{k}: {v}")
    return "\n".join(lines)


def _module(kind: str):
    import importlib
    return importlib.import_module(f"catalog.{KINDS[kind]['module']}")


def _make_list(kind: str):
    def handler(ctx: Context, limit: int, offset: int, tag=None, owner=None, search=None,
                project=None, format=None):
        kwargs = dict(tag=tag, owner=owner, search=search, limit=limit, offset=offset)
        if kind != "projects":
            kwargs["project"] = project
        if kind == "models":
            kwargs["format"] = format
        rows = _module(kind).list_(db(ctx), **kwargs)
        if not rows:
            return Reply(text=f"no {kind} match" if any([tag, owner, search, project, format])
                         else f"no {kind} yet; add one with '{kind} add'",
                         data={kind: [], "count": 0})
        return Reply(text=table(rows, KINDS[kind]["cols"]), data={kind: rows, "count": len(rows)})
    return handler


def _make_show(kind: str):
    def handler(ctx: Context, name: str):
        d = _module(kind).get(db(ctx), name)
        return Reply(text=details(d), data={kind[:-1]: d})
    return handler


def _make_delete(kind: str):
    def handler(ctx: Context, name: str, force: bool):
        mod = _module(kind)
        check_owners(ctx, kind, name)  # --force too: deleting is the owner's or an admin's
        kept = {"kept_dir": Areas.of(ctx.config).kept} if kind in ("models", "datasets") else {}
        if kind == "models":
            out = mod.delete(db(ctx), name, force=force, store_dir=model_store(ctx), **kept)
            text = "deleted " + ", ".join(out["deleted"])
            if out["artifacts_removed"]:
                text += "\nremoved artifacts: " + ", ".join(out["artifacts_removed"])
            if out["artifacts_kept"]:
                text += ("\nleft in place (not copied into the catalog by tfdesk): "
                         + ", ".join(out["artifacts_kept"]))
        else:
            out = mod.delete(db(ctx), name, force=force, **kept)
            deleted = out["deleted"]
            text = "deleted " + (", ".join(deleted) if isinstance(deleted, list) else deleted)
        deps = out.get("dependants") or out.get("detached")
        if deps:
            text += "\n(forced; it was used by: " + ", ".join(deps) + ")"
        return Reply(text=text, data=out)
    return handler


for _kind, _spec in KINDS.items():
    _filters = [f for f in FILTERS if not (_kind == "projects" and f[0][0] == "--project")]
    if _kind == "models":
        _filters = _filters + [arg("--format", "-f", help="savedmodel, keras, onnx, tensorrt")]
    command(f"{_kind} list", f"list {_kind}, newest first, with filters", args=_filters,
            examples=[f"tfdesk {_kind} list --tag vision", f"tfdesk {_kind} list --json"],
            permission="read")(_make_list(_kind))
    command(f"{_kind} show", f"one {_kind[:-1]} in full",
            args=[arg("name", metavar=_spec["key"])], permission="read")(_make_show(_kind))
    # Runtimes are shared by every job: only admins remove them.
    command(f"{_kind} delete", f"delete {'an' if _kind[0] in 'aeiou' else 'a'} {_kind[:-1]} "
            "(refused while others use it)",
            args=[arg("name", metavar=_spec["key"]),
                  arg("--force", action="store_true",
                      help="delete even though others depend on it")],
            permission="admin" if _kind == "environments" else "own")(_make_delete(_kind))


def _added(kind: str, d: dict) -> Reply:
    return Reply(text=f"added {kind} {d.get('ref') or d['name']}\n" + details(d),
                 data={kind: d})


@command("datasets add", "register a dataset (local path, pvc://, s3://, gs://)",
         args=[arg("name"), arg("uri", help="a path, pvc://CLAIM/PATH, s3://BUCKET/KEY or gs://BUCKET/OBJECT (file:// is refused)", path=True),
               arg("--format", "-f", help="tfrecord, csv, npz, ... (guessed from the path)"),
               arg("--size", type=int, help="size in bytes, for remote data"),
               PROJECT_ARG, *COMMON_ADD],
         examples=["tfdesk datasets add mnist ./data/mnist.npz --tag vision",
                   "tfdesk datasets add imagenet pvc://datasets/imagenet --format tfrecord"], permission="own")
def datasets_add(ctx, name, uri, format, size, project, description, tags):
    from catalog import datasets
    d = datasets.add(db(ctx), name, uri, ctx.owner, format=format, description=description,
                     size_bytes=size, project=_project(ctx, project), tags=tags)
    return _added("dataset", d)


@command("models add", "register a model version (SavedModel folder, .keras, .onnx, plan)",
         args=[arg("name"), arg("path", help="the model's file or folder", path=True),
               arg("--format", "-f", help="savedmodel, keras, onnx, tensorrt (guessed)"),
               arg("--tf-version", default="", help="the TensorFlow that produced it"),
               arg("--dataset", help="the catalog dataset it was trained on"),
               arg("--parent", help="the catalog model it was converted from (NAME[:VERSION])"),
               arg("--in-place", action="store_true",
                   help="point at the files instead of copying them into tfdesk's store "
                        "(deleting the model then leaves them)"),
               PROJECT_ARG, *COMMON_ADD],
         examples=["tfdesk models add mnist-cnn ./export/saved_model --dataset mnist"], permission="own")
def models_add(ctx, name, path, format, tf_version, dataset, parent, in_place, project,
               description, tags):
    from catalog import models
    if "://" not in path:
        not_tfdesk_folder(ctx, Path(path))
    first_owner(ctx, "models", name)
    d = models.add(db(ctx), name, ctx.owner, artifact_uri=path, format=format,
                   tf_version=tf_version, dataset=dataset, parent=parent,
                   description=description, project=_project(ctx, project), tags=tags,
                   store_dir=model_store(ctx), copy=not in_place)
    return _added("model", d)


@command("environments add", "register a runtime: a local interpreter or a container image",
         args=[arg("name"), arg("--image", default="", help="container image (Kubernetes)"),
               arg("--python", default="", help="interpreter path (a local environment)"),
               arg("--tf", dest="tf_version", default="", help="TensorFlow version"),
               arg("--keras", dest="keras_version", default="", help="Keras version"),
               arg("--horovod", dest="horovod_version", default="", help="Horovod version"),
               arg("--default", action="store_true", help="make it the default"),
               PROJECT_ARG, *COMMON_ADD],
         examples=["tfdesk environments add tf215-gpu --image horovod/horovod:0.28.1 "
                   "--tf 2.15.1 --horovod 0.28.1"], permission="admin")
def environments_add(ctx, name, image, python, tf_version, keras_version, horovod_version,
                     default, project, description, tags):
    from catalog import environments
    if image and python:
        return Reply.error("give --image (a container) or --python (local), not both")
    if python and ctx.actor.remote:
        raise Forbidden("a local interpreter is a path on the tfdesk machine: register it in a "
                        "terminal there (tfdesk environments add NAME --python PATH); from "
                        "Slack, register a container image (--image)")
    d = environments.add(db(ctx), name, ctx.owner, kind="local" if python else "image",
                         image=image, python=python, tf_version=tf_version,
                         keras_version=keras_version, horovod_version=horovod_version,
                         description=description, project=_project(ctx, project),
                         default=default, tags=tags)
    return _added("environment", d)


@command("environments default", "make an environment the default for jobs of its kind",
         args=[arg("name")], permission="admin")
def environments_default(ctx, name):
    from catalog import environments
    d = environments.set_default(db(ctx), name)
    jobs = "Kubernetes" if d["kind"] == "image" else "local"
    return Reply(text=f"{d['name']} is now the default environment for {jobs} jobs",
                 data={"environment": d})


@command("environments match", "which environment a script or model needing these would get",
         args=[arg("--tf", help="TensorFlow version or requirement, e.g. 2.15 or '>=2.16'"),
               arg("--horovod", action="store_true", help="needs Horovod"),
               arg("--kind", choices=["local", "image"], help="only local or only images")], permission="read")
def environments_match(ctx, tf, horovod, kind):
    from catalog import environments
    d = environments.match(db(ctx), tf=tf, horovod=horovod, kind=kind)
    return Reply(text=f"{d['name']} ({d['kind']}, TensorFlow {d['tf_version'] or '?'})",
                 data={"environment": d})


def _params(items: list[str]) -> dict[str, Any]:
    import yaml
    from catalog.errors import InvalidInput
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--param {item!r} should read KEY=VALUE")
        out[key] = yaml.safe_load(value) if value else ""  # 2 -> int, true -> bool, x -> str
    return out


@command("components add", "register a reusable step (a new version if the name exists)",
         args=[arg("name"), arg("--kind", "-k", required=True,
                                help="convert-script, train, convert-model, infer, evaluate"),
               arg("--param", action="append", default=[], help="KEY=VALUE default (repeat)"),
               arg("--file", help="a YAML mapping of default parameters", path=True),
               PROJECT_ARG, *COMMON_ADD],
         examples=["tfdesk components add hvd-train --kind train --param workers=2"], permission="own")
def components_add(ctx, name, kind, param, file, project, description, tags):
    import yaml
    from catalog import components
    from catalog.errors import InvalidInput
    params = {}
    if file:
        try:
            params = yaml.safe_load(Path(file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidInput(f"cannot read parameters from {file}: {exc}") from None
        if not isinstance(params, dict):
            raise InvalidInput(f"{file} must hold a YAML mapping of parameters")
    params.update(_params(param))
    first_owner(ctx, "components", name)
    # Its parameters become a step's: the same gates (no inline code or server paths from Slack).
    check_steps(ctx, {"steps": [{"name": name, "kind": kind, "with": params}]}, {})
    d = components.add(db(ctx), name, kind, ctx.owner, params=params, description=description,
                       project=_project(ctx, project), tags=tags)
    return _added("component", d)


@command("projects add", "create a project", args=[arg("name"), *COMMON_ADD], permission="own")
def projects_add(ctx, name, description, tags):
    from catalog import projects
    return _added("project", projects.add(db(ctx), name, ctx.owner, description, tags))


@command("projects use", "make a project the default of this Slack channel",
         args=[arg("name", nargs="?", help="the project (leave out with --clear)"),
               arg("--channel", help="the channel (default: the one you are in)"),
               arg("--clear", action="store_true", help="remove the channel's default")], permission="own")
def projects_use(ctx, name, channel, clear):
    from catalog import projects
    here = ctx.reply_to.get("channel")
    if channel and channel != here and ctx.actor.remote and not ctx.actor.is_admin:
        raise Forbidden("you may set the default project of the channel you are in; another "
                        "channel's is for its members there, or an admin")
    channel = channel or here
    if not channel:
        return Reply.error("no channel here; give --channel C123 (a Slack channel id)")
    if clear:
        projects.set_channel_default(db(ctx), channel, None)
        return Reply(text=f"channel {channel} has no default project now",
                     data={"channel": channel, "project": None})
    if not name:
        return Reply.error("name the project, or use --clear")
    projects.set_channel_default(db(ctx), channel, name)
    return Reply(text=f"channel {channel} now defaults to project {name}",
                 data={"channel": channel, "project": name})


@command("pipelines add", "store a pipeline definition (YAML) in the catalog",
         args=[arg("name", help="pipeline name (or 'name:' in the YAML; '-' to take that)"),
               arg("file", help="the YAML definition", path=True),
               arg("--replace", action="store_true", help="update an existing pipeline"),
               PROJECT_ARG, arg("--tag", "-t", action="append", dest="tags", default=None,
                                help="a tag (repeat)")],
         examples=["tfdesk pipelines add mnist-hvd pipeline.yaml"], permission="own")
def pipelines_add(ctx, name, file, replace, project, tags):
    from catalog import pipelines
    from catalog.errors import InvalidInput
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"cannot read {file}: {exc}") from None
    definition = pipelines.parse(text)
    target = definition.get("name") if name == "-" else name
    if replace and target:
        check_owners(ctx, "pipelines", target, "replace")
    check_steps(ctx, definition, {}, db(ctx))  # no server paths or inline code from Slack
    # The terminal's relative files are stored resolved, from the folder the command runs in
    # (the file gate hands over a copy of the YAML, not its place); a Slack member's steps name
    # no server files at all (check_steps).
    base = None if ctx.actor.remote else Path.cwd()
    d = pipelines.add(db(ctx), None if name == "-" else name, text, ctx.owner,
                      project=_project(ctx, project), tags=tags, replace=replace,
                      base_dir=base)
    return _added("pipeline", d)


def executor(ctx: Context):
    """The job engine as a StepExecutor (see catalog.executor)."""
    from bot.pipeline_engine import engine_executor
    return engine_executor(ctx)


@command("pipeline run", "run a catalogued pipeline: each step a job, outputs feeding the next",
         args=[arg("name"), arg("--from", dest="from_step", metavar="STEP",
                                help="resume from this step, reusing the earlier steps' outputs"),
               arg("--param", action="append", default=[], help="KEY=VALUE override (repeat)")],
         examples=["tfdesk pipeline run mnist-hvd", "tfdesk pipeline run mnist-hvd --from train"],
         slow=True, permission="compute")
def pipeline_run(ctx, name, from_step, param):
    from catalog import runs
    ex = executor(ctx)
    from catalog import pipelines
    conn = db(ctx)
    _, definition = pipelines.definition(conn, name)
    # Each step passes the gates of the command it stands for, for whoever runs it.
    params = check_steps(ctx, definition, _params(param), conn, running=True,
                         from_step=from_step)
    # --from reuses earlier outputs: a member's own runs' (their jobs' files), an admin's any.
    run_id = runs.start(conn, name, ctx.owner, ctx.reply_to, from_step=from_step,
                        params=params, reuse_own_only=not ctx.actor.is_admin)
    st = runs.execute(conn, run_id, ex, progress=lambda m, d, t: ctx.report(m, d, t))
    ok = st["state"] == runs.SUCCEEDED
    return Reply(text=runs.render(st), data={"run": st}, ok=ok, status=0 if ok else 1)


@command("pipeline follow", "take over a run whose tfdesk stopped: wait for its running "
         "step's job, then run the rest",
         args=[arg("run", help="the run id (run-...)")],
         examples=["tfdesk pipeline follow run-1a2b3c4d"], slow=True, permission="compute")
def pipeline_follow(ctx, run):
    from catalog import runs
    ex = executor(ctx)
    conn = db(ctx)  # the engine, made for the executor, has settled what can be settled
    st = runs.status(conn, run)
    check_owner(ctx.actor, st["owner"], f"pipeline run {run}", "take over")
    if st["state"] == runs.RUNNING:
        st = runs.follow(conn, run, ex, progress=lambda m, d, t: ctx.report(m, d, t))
    ok = st["state"] == runs.SUCCEEDED
    return Reply(text=runs.render(st), data={"run": st}, ok=ok, status=0 if ok else 1)


@command("pipeline status", "a pipeline run's steps, jobs, outputs and errors",
         args=[arg("run", help="the run id (run-...)")], permission="read")
def pipeline_status(ctx, run):
    from catalog import runs
    st = runs.status(db(ctx), run)
    return Reply(text=runs.render(st), data={"run": st})


@command("pipeline runs", "recent runs of one pipeline or of all",
         args=[arg("name", nargs="?"), arg("--limit", "-n", type=count(), default=20)], permission="read")
def pipeline_runs(ctx, name, limit):
    from catalog import runs
    rows = runs.list_runs(db(ctx), name, limit)
    if not rows:
        return Reply(text="no pipeline runs yet", data={"runs": []})
    return Reply(text=table(rows, ["id", "pipeline", "state", "owner", "created", "error"]),
                 data={"runs": rows})


@command("catalog export", "write the whole catalog to a JSON file",
         args=[arg("file", path="out")], examples=["tfdesk catalog export backup.json"],
         permission="terminal")
def catalog_export(ctx, file):
    from catalog import transfer
    counts = transfer.export_file(db(ctx), file)
    summary = ", ".join(f"{n} {t}" for t, n in counts.items() if n)
    return Reply(text=f"exported the catalog to {file}: {summary or 'empty'}",
                 data={"file": str(file), "counts": counts})


@command("catalog import", "load a catalog JSON export (all or nothing)",
         args=[arg("file")], examples=["tfdesk catalog import backup.json"], permission="terminal")
def catalog_import(ctx, file):
    from catalog import transfer
    counts = transfer.import_file(db(ctx), file)
    summary = ", ".join(f"{n} {t}" for t, n in counts.items() if n)
    return Reply(text=f"imported from {file}: {summary or 'nothing'}",
                 data={"file": str(file), "counts": counts})


@command("catalog check", "list catalog entries that no longer resolve (files gone, names "
         "missing); --repair removes those whose files are gone",
         args=[arg("--repair", action="store_true",
                   help="remove entries whose files are gone and that nothing depends on")],
         examples=["tfdesk catalog check", "tfdesk catalog check --repair"], permission="admin")
def catalog_check(ctx, repair):
    from dataclasses import asdict

    from catalog import integrity
    before = integrity.check(db(ctx))
    left = integrity.check(db(ctx), repair=True) if repair else before
    removed = [d for d in before if d not in left]
    lines = [f"removed {d}" for d in removed] + [f"dangling: {d}" for d in left]
    text = "\n".join(lines) or "every catalog entry resolves"
    ok = not left
    return Reply(text=text, data={"dangling": [asdict(d) for d in left],
                                  "removed": [asdict(d) for d in removed]},
                 ok=ok, status=0 if ok else 1)
