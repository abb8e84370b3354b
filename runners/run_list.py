"""Finding and comparing runs: filters and sort keys as data, one SQL builder, and the
comparison of several runs (parameter differences, metric summaries, curves).

A filter is ``NAME OP VALUE`` (``lr>=0.01``, ``target=horovod``, ``val_accuracy>0.9``) with
OP one of ``= != < <= > >=``; numbers compare as numbers, anything else as text (``=`` and
``!=`` only). Parameters are filtered on their value as given.

A metric is named by the grammar of runners/run_metrics.py (:class:`MetricRef`)::

    METRIC := SERIES | AGG "(" SERIES ")"      AGG := last | min | max  (default last)
    SERIES := NAME                             a per-epoch metric (or a model job's figure)
            | "step:" NAME                     the per-step series of NAME

so ``val_accuracy>0.9`` (its last epoch), ``max(val_accuracy)>0.95``, ``step:loss<0.3`` (the
last recorded step) and ``min(step:loss)<0.1`` filter, and ``--sort metric:min(step:loss)``
sorts. A metric no run records is an error that lists the ones recorded.
"""
from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from runners import tracking
from runners.run_metrics import NAME, BadQuery, MetricRef, check_known

OPS = ("<=", ">=", "!=", "=", "<", ">")
FILTER = re.compile(rf"^\s*({NAME}|\w+\(\s*{NAME}\s*\))\s*(<=|>=|!=|==|=|<|>)\s*(.*?)\s*$",
                    re.S)
STATES = ("queued", "starting", "running", "succeeded", "failed", "cancelled", "lost")
COLUMNS = {"created": "j.seq", "id": "j.id", "state": "j.state", "owner": "j.owner",
           "kind": "j.kind", "finished": "j.finished_at",
           "duration": "(coalesce(j.finished_at, j.started_at) - j.started_at)"}
MAX_LIMIT = 1000


class UnknownRun(BadQuery):
    """A run id that names no run."""


@dataclass(frozen=True)
class Filter:
    name: str
    op: str
    value: str

    @property
    def num(self) -> float | None:
        return tracking.number(self.value)

    @classmethod
    def parse(cls, text: str, what: str = "filter") -> "Filter":
        m = FILTER.match(text or "")
        if not m or not m.group(3):
            raise BadQuery(f"{what} {text!r} is not NAME OP VALUE (OP one of "
                           f"{' '.join(OPS)}), e.g. lr>=0.01 or val_accuracy>0.9")
        op = "=" if m.group(2) == "==" else m.group(2)
        f = cls(m.group(1), op, m.group(3))
        if op not in ("=", "!=") and f.num is None:
            raise BadQuery(f"{what} {text!r}: {op} compares numbers, and {m.group(3)!r} is not "
                           "one")
        return f

    @property
    def metric(self) -> MetricRef:
        return MetricRef.parse(self.name)

    def sql(self, column_text: str, column_num: str) -> tuple[str, list[Any]]:
        if self.num is not None:
            return f"{column_num} {self.op} ?", [self.num]
        return f"{column_text} {self.op} ?", [self.value]


@dataclass(frozen=True)
class Sort:
    key: str = "created"
    desc: bool = True

    @classmethod
    def parse(cls, text: str | None) -> "Sort":
        """``created`` (newest first), ``-created`` for the other way; ``metric:val_loss``
        (highest first; ``-metric:val_loss`` lowest first), ``param:lr``, or a column."""
        if not text:
            return cls()
        desc = not text.startswith("-")
        key = text.strip().lstrip("-+")
        kind, _, name = key.partition(":")
        if kind == "metric" and name:
            return cls(f"metric:{MetricRef.parse(name)}", desc)
        if key in COLUMNS or (kind == "param" and name):
            return cls(key, desc)
        raise BadQuery(f"cannot sort by {text!r}; use one of {', '.join(COLUMNS)}, "
                       "metric:NAME or param:NAME (a leading - reverses)")


@dataclass
class RunQuery:
    project: str | None = None
    owner: str | None = None
    state: str | None = None
    kind: str | None = None
    params: list[Filter] = field(default_factory=list)
    metrics: list[Filter] = field(default_factory=list)
    sort: Sort = field(default_factory=Sort)
    limit: int = 50
    offset: int = 0

    def __post_init__(self) -> None:
        if self.state and self.state not in STATES:
            raise BadQuery(f"state {self.state!r} is not one of {', '.join(STATES)}")
        if not 1 <= int(self.limit) <= MAX_LIMIT:
            raise BadQuery(f"limit must be from 1 to {MAX_LIMIT}, not {self.limit}")
        if int(self.offset) < 0:
            raise BadQuery("offset cannot be negative")


@dataclass
class RunRow:
    id: str
    kind: str
    owner: str
    state: str
    backend: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    project: str | None
    params: dict[str, str]
    metrics: dict[str, float]
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _has_table(conn, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (name,)).fetchone() is not None


def _where(conn, q: RunQuery) -> tuple[list[str], list[Any]]:
    where, args = [], []
    for col, value in (("j.owner", q.owner), ("j.state", q.state), ("j.kind", q.kind)):
        if value:
            where.append(f"{col} = ?")
            args.append(value)
    if q.project:
        link = ""
        if _has_table(conn, "catalog_project_jobs"):
            link = ("j.id IN (SELECT pj.job_id FROM catalog_project_jobs pj JOIN catalog_projects"
                    " p ON p.id = pj.project_id WHERE p.name = ? COLLATE NOCASE) OR ")
            args.append(q.project)
        where.append(f"({link}EXISTS (SELECT 1 FROM run_params p WHERE p.job_id = j.id AND "
                     "p.name = 'project' AND p.value = ? COLLATE NOCASE))")
        args.append(q.project)
    # Each filter is a set of job ids read from its own index (name, value or last), so a
    # filter costs the rows that match it, not a probe per run.
    for f in q.params:
        cond, a = f.sql("value", "num")
        where.append(f"j.id IN (SELECT job_id FROM run_params WHERE name IN (?, ?) AND {cond})")
        args += [f.name, f"flag.{f.name}", *a]
    for f in q.metrics:
        if f.num is None:
            raise BadQuery(f"metric filter {f.name}{f.op}{f.value}: metrics are numbers")
        m = f.metric
        check_known(conn, m)
        where.append(f"j.id IN (SELECT job_id FROM {m.table} WHERE name = ? AND "
                     f"{m.agg} {f.op} ?)")
        args += [m.name, f.num]
    return where, args


def list_runs(conn: sqlite3.Connection, q: RunQuery) -> tuple[list[RunRow], int]:
    """One page of runs matching ``q`` and how many match in all."""
    tracking.ensure(conn)
    tracking.sync(conn)
    where, args = _where(conn, q)
    sql_where = (" WHERE " + " AND ".join(where)) if where else ""
    total = conn.execute(f"SELECT count(*) FROM jobs j{sql_where}", args).fetchone()[0]
    kind, _, name = q.sort.key.partition(":")
    direction = "DESC" if q.sort.desc else "ASC"
    shown = _wanted(q)
    if kind == "metric":
        ref = MetricRef.parse(name)
        check_known(conn, ref)
        rows = _by_metric(conn, ref, direction, sql_where, args, q)
        return _rows(conn, rows, shown), total
    join, order_args = "", []
    if kind == "param":
        join = " LEFT JOIN run_params o ON o.job_id = j.id AND (o.name = ? OR o.name = ?)"
        order = f"o.value IS NULL, o.num {direction}, o.value {direction}, j.seq DESC"
        order_args = [name, f"flag.{name}"]
    else:
        order = f"{COLUMNS[q.sort.key]} {direction}, j.seq DESC"
    rows = conn.execute(
        f"SELECT j.* FROM jobs j{join}{sql_where} ORDER BY {order} LIMIT ? OFFSET ?",
        [*order_args, *args, int(q.limit), int(q.offset)]).fetchall()
    return _rows(conn, rows, shown), total


def _wanted(q: RunQuery) -> list[MetricRef]:
    """The metrics a query filters or sorts on that RunRow.metrics does not hold by name."""
    refs = [f.metric for f in q.metrics]
    if q.sort.key.startswith("metric:"):
        refs.append(MetricRef.parse(q.sort.key.split(":", 1)[1]))
    return [r for r in dict.fromkeys(refs) if not r.plain]


def _by_metric(conn, ref: MetricRef, direction: str, sql_where: str, args: list, q: RunQuery):
    """A page sorted by a metric's value, read in the order of the (name, last) index
    (it stops after the page instead of sorting every run); runs without the metric follow,
    newest first."""
    extra = sql_where.replace(" WHERE ", " AND ", 1)
    table, name = ref.table, ref.name
    having = conn.execute(  # the join only when there are filters on the job
        f"SELECT count(*) FROM {table} o JOIN jobs j ON j.id = o.job_id WHERE o.name = ?"
        f"{extra}" if extra else f"SELECT count(*) FROM {table} o WHERE o.name = ?",
        [name, *args]).fetchone()[0]
    rows = []
    if q.offset < having:
        rows = conn.execute(
            f"SELECT j.* FROM {table} o JOIN jobs j ON j.id = o.job_id WHERE o.name = ?"
            f"{extra} ORDER BY o.{ref.agg} {direction}, o.job_id {direction} LIMIT ? OFFSET ?",
            [name, *args, int(q.limit), int(q.offset)]).fetchall()
    left = q.limit - len(rows)
    if left > 0:
        none = " AND " if sql_where else " WHERE "
        rows += conn.execute(
            f"SELECT j.* FROM jobs j{sql_where}{none}j.id NOT IN (SELECT job_id FROM "
            f"{table} WHERE name = ?) ORDER BY j.seq DESC LIMIT ? OFFSET ?",
            [*args, name, left, max(0, q.offset - having)]).fetchall()
    return rows


def _rows(conn, rows, extra: list[MetricRef] = ()) -> list[RunRow]:
    ids = [r["id"] for r in rows]
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    params: dict[str, dict[str, str]] = {i: {} for i in ids}
    for p in conn.execute(f"SELECT job_id, name, value FROM run_params WHERE job_id IN ({marks})",
                          ids):
        params[p["job_id"]][p["name"]] = p["value"]
    metrics: dict[str, dict[str, float]] = {i: {} for i in ids}
    for m in conn.execute(f"SELECT job_id, name, last FROM run_summary WHERE job_id IN ({marks})",
                          ids):
        metrics[m["job_id"]][m["name"]] = m["last"]
    for ref in extra:  # the figures filtered or sorted on, under their metric text
        for m in conn.execute(f"SELECT job_id, {ref.agg} AS v FROM {ref.table} WHERE name = ? "
                              f"AND job_id IN ({marks})", [ref.name, *ids]):
            metrics[m["job_id"]][str(ref)] = m["v"]
    projects: dict[str, str] = {}
    if _has_table(conn, "catalog_project_jobs"):
        for p in conn.execute(
                "SELECT pj.job_id, p.name FROM catalog_project_jobs pj JOIN catalog_projects p "
                f"ON p.id = pj.project_id WHERE pj.job_id IN ({marks})", ids):
            projects[p["job_id"]] = p["name"]
    return [RunRow(r["id"], r["kind"], r["owner"], r["state"], r["backend"], r["created_at"],
                   r["started_at"], r["finished_at"],
                   projects.get(r["id"]) or params[r["id"]].get("project"),
                   params[r["id"]], metrics[r["id"]], r["reason"]) for r in rows]


def get_runs(conn: sqlite3.Connection, ids: list[str]) -> list[RunRow]:
    """The runs ``ids``, in that order; raises BadQuery naming any unknown one."""
    tracking.ensure(conn)
    tracking.sync(conn)
    marks = ",".join("?" * len(ids))
    rows = {r["id"]: r for r in conn.execute(f"SELECT * FROM jobs WHERE id IN ({marks})", ids)}
    missing = [i for i in ids if i not in rows]
    if missing:
        raise UnknownRun(f"no run {', '.join(missing)} ('tfdesk runs' lists them)")
    return _rows(conn, [rows[i] for i in ids])


def curves(conn: sqlite3.Connection, job_id: str) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{"epoch": {metric: [(epoch, value)...]}, "step": {metric: [(step, value)...]}}."""
    out: dict[str, dict[str, list[tuple[int, float]]]] = {"epoch": {}, "step": {}}
    for r in conn.execute("SELECT step, name, value FROM job_metrics WHERE job_id = ? "
                          "ORDER BY name, step", (job_id,)):
        out["epoch"].setdefault(r["name"], []).append((r["step"], r["value"]))
    for r in conn.execute("SELECT step, name, value FROM run_step_metrics WHERE job_id = ? "
                          "ORDER BY name, step", (job_id,)):
        out["step"].setdefault(r["name"], []).append((r["step"], r["value"]))
    return out


def summary(conn: sqlite3.Connection, job_id: str) -> list[sqlite3.Row]:
    """Each metric of a run, by name: its last value and step, its min and max."""
    return conn.execute("SELECT name, last, step, min, max FROM run_summary WHERE job_id = ? "
                        "ORDER BY name", (job_id,)).fetchall()


def step_summary(conn: sqlite3.Connection, job_id: str) -> list[sqlite3.Row]:
    """Each per-step series of a run, by name: its last value and step, its min and max."""
    tracking.ensure(conn)
    return conn.execute("SELECT name, last, step, min, max FROM run_step_summary WHERE "
                        "job_id = ? ORDER BY name", (job_id,)).fetchall()


def is_figure(name: str) -> bool:
    """A model job's benchmark or validation figure (tracking copies them from the catalog),
    not a metric logged over epochs."""
    return name.split(".", 1)[0] in ("benchmark", "validation")


@dataclass
class Comparison:
    runs: list[RunRow]
    differ: dict[str, list[str | None]]     # parameter -> each run's value (None: not set)
    same: dict[str, str]                    # parameters equal in every run
    metrics: dict[str, list[float | None]]  # metric -> each run's last value

    def to_dict(self) -> dict[str, Any]:
        return {"runs": [r.id for r in self.runs], "differ": self.differ, "same": self.same,
                "metrics": self.metrics}


def compare(conn: sqlite3.Connection, ids: list[str]) -> Comparison:
    if len(ids) < 2:
        raise BadQuery("compare needs two runs or more, e.g. runs compare j-1a2b j-3c4d")
    if len(set(ids)) != len(ids):
        raise BadQuery("each run may be named once")
    runs = get_runs(conn, ids)
    names = sorted({k for r in runs for k in r.params})
    differ, same = {}, {}
    for name in names:
        values = [r.params.get(name) for r in runs]
        if len(set(values)) == 1:
            same[name] = values[0]
        else:
            differ[name] = values
    metric_names = sorted({k for r in runs for k in r.metrics})
    metrics = {m: [r.metrics.get(m) for r in runs] for m in metric_names}
    return Comparison(runs, differ, same, metrics)


def render_comparison(c: Comparison) -> str:
    """The comparison as text: differing parameters, then metrics, one column per run."""
    ids = [r.id for r in c.runs]
    width = max(12, *(len(i) for i in ids))
    names = list(c.differ) + list(c.metrics)
    left = max([9, *(len(n) for n in names)])
    head = f"{'':<{left}}  " + "  ".join(f"{i:<{width}}" for i in ids)
    lines = [head]
    if c.differ:
        lines.append("parameters that differ:")
        for name, values in c.differ.items():
            lines.append(f"{name:<{left}}  " + "  ".join(
                f"{_short(v, width):<{width}}" for v in values))
    else:
        lines.append("parameters: all the same")
    if c.metrics:
        lines.append("metrics (last value):")
        for name, values in c.metrics.items():
            lines.append(f"{name:<{left}}  " + "  ".join(
                f"{('-' if v is None else f'{v:.4g}'):<{width}}" for v in values))
    lines.append(f"{len(c.same)} parameter(s) the same: " + ", ".join(
        f"{k}={_short(v, 24)}" for k, v in list(c.same.items())[:12])
        + (" ..." if len(c.same) > 12 else ""))
    return "\n".join(lines)


def _short(value: str | None, width: int) -> str:
    if value is None:
        return "-"
    return value if len(value) <= width else value[:width - 1] + "…"


def render_list(rows: list[RunRow], total: int, q: RunQuery) -> str:
    if not rows:
        return "no runs match" if total == 0 else f"no runs on this page ({total} match)"
    metric_cols = _metric_columns(rows, q)
    lines = [f"{'run':<12} {'state':<10} {'kind':<13} {'owner':<10} {'project':<10} "
             + " ".join(f"{m[:12]:>12}" for m in metric_cols) + "  what"]
    for r in rows:
        what = r.params.get("script") or r.params.get("model") or ""
        target = r.params.get("target")
        what += f" ({r.params.get('workers', '1')}x {target})" if r.kind == "train" and target \
            else ""
        lines.append(f"{r.id:<12} {r.state:<10} {r.kind:<13} {r.owner[:10]:<10} "
                     f"{(r.project or '-')[:10]:<10} "
                     + " ".join(f"{_num(r.metrics.get(m)):>12}" for m in metric_cols)
                     + f"  {what}")
    shown = f"{q.offset + 1}-{q.offset + len(rows)} of {total}"
    lines.append(f"({shown}; sorted by {'-' if not q.sort.desc else ''}{q.sort.key})")
    return "\n".join(lines)


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def _metric_columns(rows: list[RunRow], q: RunQuery, most: int = 4) -> list[str]:
    """The metrics worth a column: those filtered or sorted on, then the most common."""
    wanted = [str(f.metric) for f in q.metrics]
    if q.sort.key.startswith("metric:"):
        wanted.insert(0, q.sort.key.split(":", 1)[1])
    counts: dict[str, int] = {}
    for r in rows:
        for m in r.metrics:
            if "." not in m and m not in wanted:
                counts[m] = counts.get(m, 0) + 1
    for m in sorted(counts, key=lambda m: (-counts[m], "loss" not in m, m)):
        if m not in wanted:
            wanted.append(m)
    return list(dict.fromkeys(wanted))[:most]


def as_json(rows: list[RunRow]) -> str:
    return json.dumps([r.to_dict() for r in rows], default=str)


__all__ = ["BadQuery", "Comparison", "Filter", "MetricRef", "RunQuery", "RunRow", "Sort", "UnknownRun",
           "compare", "curves", "get_runs", "is_figure", "list_runs", "render_comparison",
           "render_list", "step_summary", "summary"]
