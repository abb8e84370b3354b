"""runs: every job as a tracked run, listed, filtered, sorted and compared (runners/run_list.py).

``runs`` lists; ``runs compare A B ...`` prints the parameter differences and draws the runs'
curves overlaid (a PNG the terminal names and Slack attaches)."""
from __future__ import annotations

import hashlib
from pathlib import Path

from bot.registry import arg, command, count
from bot.reply import Reply
from bot.web.links import Ref, query
from core.vocabulary import STATES


def _conn(ctx):
    return ctx.services.catalog  # the state database, opened once per thread


@command("runs", "list tracked runs (every job), filtered and sorted by parameter and metric; "
         "'runs compare A B' compares runs",
         args=[arg("words", nargs="*", metavar="compare RUN",
                   help="'compare' and two or more run ids to compare them"),
               arg("--project", help="only runs of this project"),
               arg("--owner", help="only runs of this owner"),
               arg("--state", choices=list(STATES), help="only runs in this state"),
               arg("--kind", help="only jobs of this kind (train, convert-model, infer, ...)"),
               arg("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="parameter filter, e.g. --param lr=0.01 --param 'workers>=2' "
                        "(script flags by name; repeat for several)"),
               arg("--metric", action="append", default=[], metavar="METRIC>VALUE",
                   help="metric filter: NAME (its last epoch), step:NAME (its per-step "
                        "series), either inside last(), min() or max(), e.g. --metric "
                        "'val_accuracy>0.9' --metric 'min(step:loss)<0.1'"),
               arg("--sort", default="created",
                   help="created (newest first), state, owner, kind, duration, "
                        "metric:METRIC (highest first; e.g. metric:min(step:loss)) or "
                        "param:NAME; a leading - reverses"),
               arg("--limit", type=count(1000), default=30, help="runs per page (default 30)"),
               arg("--page", type=count(), default=1, help="page number (default 1)"),
               arg("--chart", metavar="PNG", path="out",
                   help="compare: where to write the curves (default under TFDESK_HOME/charts)"),
               arg("--by", choices=["epoch", "step"], default="epoch",
                   help="compare: curves per epoch (default) or per training step")],
         description="Every job is a run: its parameters (the script's flags as given, the "
                     "script's hash, workers, target, environment) and its metrics per epoch "
                     "and per step are recorded without logging code in the script. Filters "
                     "combine; numbers compare as numbers.",
         examples=["tfdesk runs --metric 'val_accuracy>0.9' --sort metric:val_accuracy",
                   "tfdesk runs --metric 'min(step:loss)<0.1' --sort -metric:min(step:loss)",
                   "tfdesk runs --owner ana --state succeeded --param lr=0.01",
                   "tfdesk runs compare j-1a2b3c4d j-5e6f7a8b"],
         permission="read")
def runs(ctx, words, project, owner, state, kind, param, metric, sort, limit, page, chart, by):
    from runners.run_list import Filter, RunQuery, Sort, list_runs, render_list
    if words:
        if words[0] != "compare":
            return Reply.error(f"unknown runs action {words[0]!r}: use 'runs' to list or "
                               "'runs compare RUN RUN ...'", status=2)
        return _compare(ctx, words[1:], chart, by)
    q = RunQuery(project=project, owner=owner, state=state, kind=kind,
                 params=[Filter.parse(p, "parameter filter") for p in param],
                 metrics=[Filter.parse(m, "metric filter") for m in metric],
                 sort=Sort.parse(sort), limit=limit, offset=(page - 1) * limit)
    rows, total = list_runs(_conn(ctx), q)
    text = render_list(rows, total, q)
    # The same list in the browser: the web view reads the same filters (bot/web/pages.py).
    page_ref = Ref("runs", query(project=project, owner=owner, state=state, kind=kind,
                                 param=param, metric=metric,
                                 sort=None if sort == "created" else sort))
    return Reply(text=text, data={"total": total, "page": page,
                                  "runs": [r.to_dict() for r in rows]},
                 refs=[page_ref] if rows else [])


def _compare(ctx, ids: list[str], chart: str | None, by: str) -> Reply:
    from runners.run_charts import overlay_png, write_png
    from runners.run_list import compare, curves, render_comparison
    conn = _conn(ctx)
    c = compare(conn, ids)
    series = {r.id: curves(conn, r.id)[by] for r in c.runs}
    png = overlay_png(series, axis=by, title="runs " + " vs ".join(ids))
    files, text = [], render_comparison(c)
    if png:
        path = Path(chart) if chart else (
            ctx.config.home / "charts" /
            f"compare-{hashlib.sha1(' '.join(ids).encode()).hexdigest()[:10]}-{by}.png")
        files.append(write_png(png, path))
        if not ctx.actor.remote:
            text += f"\ncurves: {path}"
    else:
        text += f"\nno {by} metrics recorded for these runs, so no curves"
    return Reply(text=text, data=c.to_dict(), files=files,
                 refs=[Ref("compare", query(run=ids)), *(Ref("run", i) for i in ids)])
