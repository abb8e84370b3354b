"""The read-only pages: runs, a run, a comparison, models, datasets, projects, pipelines and
their runs; charts are PNG routes drawn on the server.

Per item, what a viewer sees follows their Actor: a job's log only for its owner and admins
(``may_change``), server paths only for the operator (``not remote``)."""
from __future__ import annotations

import re
import threading
from typing import Any, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bot.job_model import model_note
from catalog import lineage, lookup
from runners import run_list
from runners.run_charts import benchmark_png, overlay_png
from runners.stored import UnreadableSpec

LOG_TAIL = 60
ACTIVE = ("queued", "starting", "running")
PNG_HEADERS = {"cache-control": "no-store", "x-content-type-options": "nosniff"}


# Charts drawn at once: drawing holds the interpreter, which `tfdesk serve` shares with the
# Slack endpoint's acks; more requests for charts wait their turn instead.
DRAWING = threading.BoundedSemaphore(2)


def _png(draw: Callable[[], bytes | None]) -> Response:
    with DRAWING:
        data = draw()
    if data is None:
        return Response(status_code=204)
    return Response(data, media_type="image/png", headers=PNG_HEADERS)


def _query(params) -> run_list.RunQuery:
    sort = params.get("sort") or "created"
    page = params.get("page") or "1"
    if not page.isdigit() or int(page) < 1:
        raise run_list.BadQuery(f"page must be a whole number from 1, not {page!r}")
    return run_list.RunQuery(
        project=params.get("project") or None, owner=params.get("owner") or None,
        state=params.get("state") or None, kind=params.get("kind") or None,
        params=[run_list.Filter.parse(p, "parameter filter") for p in params.getlist("param") if p],
        metrics=[run_list.Filter.parse(m, "metric filter") for m in params.getlist("metric") if m],
        sort=run_list.Sort.parse(sort), limit=50, offset=(int(page) - 1) * 50)


def _local(uri: str | None) -> bool:
    return bool(uri) and "://" not in uri


class Pages:
    """One method per page or chart; each gets the request and the signed-in viewer."""

    def __init__(self, web):
        self.web = web

    def conn(self):
        return self.web.services.catalog  # the state database of this thread

    def render(self, request, name, viewer, status: int = 200, **ctx):
        return self.web.render(request, name, viewer, status, **ctx)

    def runs(self, request, viewer):
        error = None
        try:
            q = _query(request.query_params)
            rows, total = run_list.list_runs(self.conn(), q)
        except run_list.BadQuery as exc:
            error, rows, total, q = str(exc), [], 0, run_list.RunQuery()
        metric_cols = run_list._metric_columns(rows, q)
        live = any(r.state in ACTIVE for r in rows)
        args = request.query_params
        return self.render(request, "runs.html", viewer, rows=rows, total=total, q=q,
                          metric_cols=metric_cols, live=live, error=error,
                          f={k: args.get(k, "") for k in ("project", "owner", "state", "kind",
                                                          "sort")},
                          params=args.getlist("param") or [""],
                          metrics=args.getlist("metric") or [""],
                          states=run_list.STATES, base=str(request.url.remove_query_params("page")),
                          page=q.offset // q.limit + 1, pages=max(1, -(-total // q.limit)))

    def run(self, request, viewer):
        job_id = request.path_params["id"]
        (row,) = run_list.get_runs(self.conn(), [job_id])
        engine = self.web.services.engine
        try:
            job, unreadable = engine.get(job_id), ""
        except UnreadableSpec as exc:  # shown, with why: its state, reason and log still are
            job, unreadable = engine.get(job_id, strict=False), str(exc)
        may_log = viewer.actor.may_change(job.owner)
        log = engine.read_log(job_id, tail=LOG_TAIL) if may_log else None
        events = [e for e in engine.events(job_id) if e.type in ("state", "error", "warning")]
        arts = engine.artifacts(job_id)
        curves = run_list.curves(self.conn(), job_id)
        summary = run_list.summary(self.conn(), job_id)
        # The model note names paths on this machine: only for viewers who may see them.
        note = model_note(job, arts) if (job.kind == "train" and job.state == "succeeded"
                                         and not unreadable and not viewer.actor.remote) \
            else None
        figures = [s for s in summary if run_list.is_figure(s["name"])]
        return self.render(request, "run.html", viewer, run=row, job=job, log=log,
                          may_log=may_log, events=events[-30:], artifacts=arts, model_note=note,
                          epochs=[s for s in summary if not run_list.is_figure(s["name"])],
                          figures=figures, bench=_bench_summary(figures),
                          steps=run_list.step_summary(self.conn(), job_id),
                          has_epoch=bool(curves["epoch"]),
                          has_step=bool(curves["step"]), lineage=lineage.of_job(self.conn(), job.id, job.spec),
                          show_paths=not viewer.actor.remote, live=job.state in ACTIVE,
                          unreadable=unreadable)

    def run_png(self, request, viewer):
        by = "step" if request.query_params.get("by") == "step" else "epoch"
        job_id = request.path_params["id"]
        run_list.get_runs(self.conn(), [job_id])
        curves = run_list.curves(self.conn(), job_id)[by]
        return _png(lambda: overlay_png({job_id: curves}, axis=by))

    def compare(self, request, viewer):
        ids = request.query_params.getlist("run")
        c = run_list.compare(self.conn(), ids)
        return self.render(request, "compare.html", viewer, c=c,
                          qs="&".join(f"run={i}" for i in ids))

    def compare_png(self, request, viewer):
        ids = request.query_params.getlist("run")
        by = "step" if request.query_params.get("by") == "step" else "epoch"
        run_list.get_runs(self.conn(), ids)
        series = {i: run_list.curves(self.conn(), i)[by] for i in ids}
        return _png(lambda: overlay_png(series, axis=by))

    def models(self, request, viewer):
        from catalog import models as m
        rows = m.list_(self.conn(), search=request.query_params.get("search") or None,
                       limit=200)
        return self.render(request, "models.html", viewer, models=rows,
                          search=request.query_params.get("search", ""))

    def model(self, request, viewer):
        from catalog import models as m
        d = m.get(self.conn(), request.path_params["ref"])
        chain, seen, cur = [], {d["ref"]}, d
        while cur.get("parent") and cur["parent"] not in seen and len(chain) < 20:
            cur = m.get(self.conn(), cur["parent"])
            seen.add(cur["ref"])
            chain.append(cur)
        return self.render(request, "model.html", viewer, m=d, ancestors=chain,
                          versions=lookup.versions(self.conn(), "model", d["name"]), validation=_rows(d.get("validation")),
                          benchmark=_bench_rows(d.get("benchmark")),
                          show_paths=not viewer.actor.remote or not _local(d["artifact_uri"]))

    def model_png(self, request, viewer):
        from catalog import models as m
        d = m.get(self.conn(), request.path_params["ref"])
        return _png(lambda: benchmark_png(d.get("benchmark") or {}, title=d["ref"]))

    def datasets(self, request, viewer):
        from catalog import datasets as ds
        rows = ds.list_(self.conn(), limit=200)
        return self.render(request, "datasets.html", viewer, datasets=rows,
                          show_paths=not viewer.actor.remote)

    def dataset(self, request, viewer):
        from catalog import datasets as ds
        d = ds.get(self.conn(), request.path_params["name"])
        return self.render(request, "dataset.html", viewer, d=d,
                           show_paths=not viewer.actor.remote or "://" in d["uri"])

    def projects(self, request, viewer):
        from catalog import projects as p
        return self.render(request, "projects.html", viewer,
                           projects=p.list_(self.conn(), limit=200))

    def project(self, request, viewer):
        from catalog import projects as p
        d = p.get(self.conn(), request.path_params["name"])
        rows, total = run_list.list_runs(self.conn(), run_list.RunQuery(project=d["name"]))
        return self.render(request, "project.html", viewer, p=d, rows=rows, total=total,
                           member_pages={"dataset": "datasets", "model": "models",
                                         "pipeline": "pipelines"})

    def pipelines(self, request, viewer):
        from catalog import pipelines as pl
        return self.render(request, "pipelines.html", viewer,
                           pipelines=pl.list_(self.conn(), limit=200))

    def pipeline(self, request, viewer):
        from catalog import pipelines as pl
        from catalog import runs as pr
        d = pl.get(self.conn(), request.path_params["name"])
        return self.render(request, "pipeline.html", viewer, p=d,
                          runs=pr.list_runs(self.conn(), d["name"], limit=30))

    def pipeline_png(self, request, viewer):
        from bot.web.graph import pipeline_png as draw
        from catalog import pipelines as pl
        name, definition = pl.definition(self.conn(), request.path_params["name"])
        return _png(lambda: draw(definition["steps"], title=name))

    def pipeline_run(self, request, viewer):
        from catalog import runs as pr
        st = pr.status(self.conn(), request.path_params["id"])
        return self.render(request, "pipeline_run.html", viewer, st=st,
                          live=st["state"] in ("queued", "running"),
                          show_paths=not viewer.actor.remote)

    def pipeline_run_png(self, request, viewer):
        from bot.web.graph import pipeline_png as draw
        from catalog import runs as pr
        st = pr.status(self.conn(), request.path_params["id"])
        definition = pr.definition(self.conn(), st["id"])
        states = {s["name"]: s["state"] for s in st["steps"]}
        return _png(lambda: draw(definition["steps"], states,
                                 title=f"{st['pipeline']} {st['id']}: {st['state']}"))

    def home(self, request, viewer):
        from starlette.responses import RedirectResponse
        return RedirectResponse("/runs", status_code=303)


# path -> the Pages method that answers it
ROUTES = (("/", "home"), ("/runs", "runs"), ("/runs/{id}", "run"),
          ("/runs/{id}/curves.png", "run_png"), ("/compare", "compare"),
          ("/compare.png", "compare_png"), ("/models", "models"), ("/models/{ref}", "model"),
          ("/models/{ref}/benchmark.png", "model_png"), ("/datasets", "datasets"),
          ("/datasets/{name}", "dataset"), ("/projects", "projects"),
          ("/projects/{name}", "project"),
          ("/pipelines", "pipelines"), ("/pipelines/{name}", "pipeline"),
          ("/pipelines/{name}/graph.png", "pipeline_png"),
          ("/pipeline-runs/{id}", "pipeline_run"),
          ("/pipeline-runs/{id}/graph.png", "pipeline_run_png"))


def routes(web) -> list[Route]:
    """Every page behind one gate: signed in with ``read`` (else redirected or refused); a bad
    filter is a 400 with its reason, a thing that is not there (or that no name could name)
    a 404."""
    from catalog.errors import InvalidInput, NotFound
    from runners.models import UnknownJob
    pages = Pages(web)

    def gated(fn):
        def endpoint(request: Request):
            viewer, refusal = web.viewer_or_redirect(request)
            if refusal is not None:
                return refusal
            try:
                return fn(request, viewer)
            except (NotFound, InvalidInput, UnknownJob, run_list.UnknownRun) as exc:
                return web.render(request, "error.html", viewer, 404,
                                  message=str(exc) or "not found")
            except run_list.BadQuery as exc:
                return web.render(request, "error.html", viewer, 400, message=str(exc))
        endpoint.__name__ = fn.__name__
        return endpoint

    return [Route(path, gated(getattr(pages, name))) for path, name in ROUTES]


def _rows(report: dict | None) -> list[tuple[str, Any]]:
    if not report:
        return []
    from runners.tracking import flatten
    flat = flatten(report, "")
    flags = [(k, v) for k, v in report.items() if isinstance(v, (bool, str))]
    return flags + [(k.lstrip("."), v) for k, v in flat.items()]


BENCH_FIGURE = re.compile(r"^benchmark\.(original|converted|speedups)\.b(\d+)\."
                          r"(p50_ms|throughput_per_s|p50_speedup)$")


def _bench_summary(figures) -> list[dict[str, Any]]:
    """A model job's benchmark figures as one row per batch size: p50 before and after,
    the speed-up, the converted model's throughput (the rest stay under "all figures")."""
    keys = ("original.p50_ms", "converted.p50_ms", "speedups.p50_speedup",
            "converted.throughput_per_s")
    rows: dict[int, dict[str, Any]] = {}
    for f in figures:
        m = BENCH_FIGURE.match(f["name"])
        if m:
            row = rows.setdefault(int(m.group(2)), dict.fromkeys(keys))
            row[f"{m.group(1)}.{m.group(3)}"] = f["last"]
    return [{"batch": b, **v} for b, v in sorted(rows.items())]


def _bench_rows(bench: dict | None) -> list[dict[str, Any]]:
    out = []
    for series, rows in (bench or {}).items():
        if isinstance(rows, list):
            for r in rows:
                if isinstance(r, dict) and "batch" in r and "p50_ms" in r:
                    out.append({"series": series, **r})
    return out
