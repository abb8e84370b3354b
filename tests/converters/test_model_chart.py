"""A model job's chart is drawn on tfdesk's side from its report, once (report.ensure_chart):
the worker's sandbox draws none. A link left where the chart goes is never written through."""
from __future__ import annotations

import json
import os

from hypothesis import given, settings, strategies as st

from converters.model.report import CHART, ensure_chart

PNG = b"\x89PNG\r\n\x1a\n"


def _report(workdir, batches):
    rows = [{"batch": b, "p50_ms": 1.0 + b, "p99_ms": 2.0 + b, "throughput_per_s": 100.0 * b}
            for b in batches]
    bench = {"original": rows, "converted": rows} if batches else None
    (workdir / "report.json").write_text(json.dumps(
        {"status": "succeeded", "model": {"name": "m"}, "benchmark": bench}))


def test_drawn_from_the_report_once(tmp_path):
    _report(tmp_path, [1, 8])
    png = ensure_chart(tmp_path)
    assert png == tmp_path / CHART and png.read_bytes()[:8] == PNG
    before = png.stat().st_mtime_ns
    assert ensure_chart(tmp_path) == png and png.stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHART, "report.json"]


def test_no_benchmark_no_chart(tmp_path):
    _report(tmp_path, [])
    assert ensure_chart(tmp_path) is None and not (tmp_path / CHART).exists()
    assert ensure_chart(tmp_path / "missing") is None


@settings(max_examples=5, deadline=None)
@given(dangling=st.booleans())
def test_a_planted_link_is_never_written_through(tmp_path_factory, dangling):
    work, outside = tmp_path_factory.mktemp("job"), tmp_path_factory.mktemp("outside")
    _report(work, [1])
    target = outside / "victim"
    if not dangling:
        target.write_text("keep")
    os.symlink(target, work / CHART)
    assert ensure_chart(work) is None
    assert (target.read_text() == "keep") if not dangling else not os.path.lexists(target)
    assert os.path.islink(work / CHART)
