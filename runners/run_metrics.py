"""The metric grammar of run filters and sort keys: which figure of each run a name means.

    METRIC := SERIES | AGG "(" SERIES ")"      AGG := last | min | max  (default last)
    SERIES := NAME                             a per-epoch metric (or a model job's figure)
            | "step:" NAME                     the per-step series of NAME

Tracking keeps last, min and max of every series per run (run_summary for epoch metrics and
figures, run_step_summary for per-step series), so each reference reads one indexed row per run.
"""
from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass

NAME = r"[A-Za-z_][\w.:/-]*"
SERIES = re.compile(rf"^\s*(?:(\w+)\(\s*({NAME})\s*\)|({NAME}))\s*$")
AGGREGATES = ("last", "min", "max")
STEP = "step:"


class BadQuery(ValueError):
    """A filter or sort key tfdesk cannot read; the message says what would be read."""
    user_facing = True


@dataclass(frozen=True)
class MetricRef:
    """One figure of each run: the last, min or max of an epoch metric or a per-step series
    (tracking keeps all three per run: run_summary, run_step_summary)."""
    name: str
    per_step: bool = False
    agg: str = "last"

    @classmethod
    def parse(cls, text: str) -> "MetricRef":
        m = SERIES.match(text or "")
        if not m:
            raise BadQuery(f"metric {text!r} is not NAME, step:NAME or AGG(NAME) with AGG one "
                           f"of {', '.join(AGGREGATES)}, e.g. val_accuracy or min(step:loss)")
        agg, inner, plain = m.groups()
        if agg is not None and agg not in AGGREGATES:
            raise BadQuery(f"metric {text!r}: {agg!r} is not one of {', '.join(AGGREGATES)} "
                           "(the last, lowest or highest value of the metric)")
        series = inner or plain
        per_step = series.startswith(STEP)
        name = series[len(STEP):] if per_step else series
        if not name:
            raise BadQuery(f"metric {text!r}: name the per-step series, e.g. step:loss")
        return cls(name, per_step, agg or "last")

    @property
    def table(self) -> str:
        return "run_step_summary" if self.per_step else "run_summary"

    @property
    def plain(self) -> bool:
        """The epoch metric's last value: what RunRow.metrics holds by name."""
        return not self.per_step and self.agg == "last"

    def __str__(self) -> str:
        series = f"{STEP}{self.name}" if self.per_step else self.name
        return series if self.agg == "last" else f"{self.agg}({series})"


def check_known(conn: sqlite3.Connection, ref: MetricRef) -> None:
    """Raise BadQuery naming the metrics recorded when no run records ``ref``'s series."""
    if conn.execute(f"SELECT 1 FROM {ref.table} WHERE name = ? LIMIT 1",
                    (ref.name,)).fetchone():
        return
    def names(table: str) -> list[str]:
        return [r[0] for r in conn.execute(f"SELECT DISTINCT name FROM {table} ORDER BY name "
                                           "LIMIT 13")]
    epoch, step = names("run_summary"), names("run_step_summary")
    if not epoch and not step:
        raise BadQuery(f"no run has recorded metrics yet, so none is called {str(ref)!r}")
    hint = ""
    other = step if not ref.per_step else epoch
    if ref.name in other:
        hint = (f"; {ref.name!r} is recorded " + ("per step: write step:" + ref.name
                                                   if not ref.per_step else
                                                   "per epoch: write " + ref.name))
    def shown(found):
        return ", ".join(found[:12]) + (", ..." if len(found) > 12 else "") if found else "none"
    raise BadQuery(f"no run records the metric {str(ref)!r}{hint} (per epoch: {shown(epoch)}; "
                   f"per step, as step:NAME: {shown(step)})")
