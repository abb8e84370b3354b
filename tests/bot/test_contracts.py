"""Typed contracts at the boundaries: a Reply says which job it is about and whether dispatch
refused it (Slack reads those fields, never guesses from the shape of ``data``); a model
job's report.json has one type and one loader, which never raises and never follows a link."""
from __future__ import annotations

import json

from hypothesis import given, settings, strategies as st

from bot.reply import JobRef, Reply
from bot.slack.blocks import render_reply
from converters.model.report import ModelReport, load_report

STATES = ["queued", "starting", "running", "succeeded", "failed", "cancelled", "lost"]
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))
json_values = st.recursive(scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=6), kids, max_size=3)),
    max_leaves=8)
# Data shaped like a job record, or holding one: what the old guessing took for a job.
job_like = st.fixed_dictionaries({"id": st.text(min_size=1, max_size=8),
                                  "state": st.sampled_from(STATES),
                                  "kind": st.just("train"), "backend": st.just("local")})
datas = st.one_of(json_values, job_like, st.fixed_dictionaries({"job": job_like}),
                  st.fixed_dictionaries({"job_id": st.text(min_size=1, max_size=8)}))


def buttons(msg) -> list[str]:
    return [e["action_id"] for b in msg["blocks"] if b["type"] == "actions"
            for e in b["elements"]]


@settings(max_examples=150, deadline=None)
@given(datas, st.one_of(st.none(), st.builds(JobRef, st.text(min_size=1, max_size=8),
                                              st.sampled_from(STATES))))
def test_job_buttons_come_from_reply_job_only(data, job):
    shown = buttons(render_reply(Reply(text="x", data=data, job=job)))
    running = job is not None and job.state in ("queued", "starting", "running")
    assert shown == (["tf_job_cancel", "tf_job_logs"] if running else [])


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1, max_size=40), datas)
def test_refusal_is_a_flag_not_data(message, data):
    reply = Reply.error(message, data if isinstance(data, dict) else None, refused=True)
    assert reply.refused and not reply.ok
    assert json.loads(reply.to_json())["refused"] is True
    assert not Reply.error(message).refused


def test_dispatch_refusal_sets_the_flag(tmp_path):
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    from bot.permissions import member
    config = load_config({"TFDESK_HOME": str(tmp_path)})
    ctx = Context(config=config, actor=member("U1"), reply_to={"kind": "slack"})
    _, reply = run_line(ctx, "kb build")  # terminal-only: refused for a Slack member
    assert reply.refused and "refused" not in (reply.data or {})


# -- report.json ------------------------------------------------------------------------------
WORKER_KEYS = {"status": st.sampled_from(["succeeded", "validation_failed", "needs_gpu",
                                          "failed"]),
               "mode": st.sampled_from(["convert", "infer", "evaluate"]),
               "id": st.text(max_size=8),
               "model": st.dictionaries(st.text(max_size=6), scalars, max_size=3),
               "validation": st.dictionaries(st.text(max_size=6), scalars, max_size=3),
               "artifacts": st.lists(st.text(max_size=8), max_size=3),
               "warnings": st.lists(st.text(max_size=8), max_size=3),
               "seconds": st.floats(0, 100), "backend": st.text(max_size=6)}


@settings(max_examples=150, deadline=None)
@given(st.fixed_dictionaries({}, optional=WORKER_KEYS))
def test_a_report_round_trips(d):
    assert ModelReport.from_dict(d).to_dict() == {**ModelReport().to_dict(), **d}


@settings(max_examples=60, deadline=None)
@given(st.one_of(json_values.map(json.dumps), st.binary(max_size=40).map(
    lambda b: b.decode("latin-1"))))
def test_load_report_never_raises(tmp_path_factory, text):
    work = tmp_path_factory.mktemp("r")
    (work / "report.json").write_text(text, encoding="utf-8")
    report = load_report(work)
    assert isinstance(report, ModelReport)
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        assert report.status == "failed" and report.error_text


def test_load_report_names_the_log_tail_and_refuses_links(tmp_path):
    (tmp_path / "worker.log").write_text("Traceback...\nValueError: no input 'features'\n")
    crashed = load_report(tmp_path)
    assert crashed.status == "failed" and "no input 'features'" in crashed.error_text
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"status": "succeeded", "id": "stolen"}))
    (tmp_path / "report.json").symlink_to(secret)
    linked = load_report(tmp_path)
    assert linked.status == "failed" and linked.id != "stolen"


# -- backends -----------------------------------------------------------------------------------
def test_every_backend_offers_the_protocol_with_its_signatures():
    import inspect

    from runners.backends import Backend
    from runners.builtins import backend_class
    from core.vocabulary import BACKENDS
    wanted = {n: inspect.signature(getattr(Backend, n)) for n in
              ("render", "accepts", "start", "observe", "follow", "cancel", "delete")}
    for name in BACKENDS:
        cls = backend_class(name)
        assert cls.name == name and hasattr(cls, "reattach_note")
        for method, sig in wanted.items():
            got = inspect.signature(getattr(cls, method))
            # same parameters by position (names may differ: ``env=None`` is fine)
            assert len(got.parameters) >= len(sig.parameters) - (method == "start"), \
                (name, method, got, sig)


# -- job specs ----------------------------------------------------------------------------------
def test_typed_specs_match_the_kinds_and_refuse_another_kind():
    import pytest

    from runners.builtins import load_kinds
    from runners.kinds import KINDS
    from runners.specs import SPECS, TrainSpec, as_mapping
    load_kinds()
    assert set(SPECS) == set(KINDS)
    spec = TrainSpec(script_path="/x/t.py", args=("--lr", "0.1"))
    mapping = as_mapping("train", spec)
    assert mapping["args"] == ["--lr", "0.1"] and mapping["script_path"] == "/x/t.py"
    with pytest.raises(TypeError):
        as_mapping("infer", spec)
    assert as_mapping("train", {"script_path": "/x"}) == {"script_path": "/x"}
