"""Every answer that names a run, model, dataset, project or pipeline links to the web view's
page for it, and the web view serves that page: generated over the command set (terminal text,
Slack blocks, --json) and the Slack job messages, each link requested over real HTTP from the
running web app by a signed-in member (200), a member without ``read`` (403), and under a
made-up key (404). Without ``[web] url`` no answer carries a link."""
from __future__ import annotations

import io
import itertools
import re
from dataclasses import replace
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bot import commands
from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.permissions import member
from bot.services import Services
from bot.slack import blocks as bk
from bot.slack.progress import final_message, status_message
from bot.terminal import emit
from bot.web.auth import Sessions
from bot.web.links import LISTS, ROUTES, Ref, WebLinks
from bot.web.server import WebServer
from catalog import datasets, models, pipelines, projects
from catalog import runs as pipeline_runs
from catalog.store import open_db
from runners import tracking
from runners.store import JobStore
from tests.web_helpers import RecordingSteps, train_job

# Names no other kind's name contains, so the test can tell from an answer's text alone which
# objects it names (the oracle does not use tfdesk's rules for that).
PIPELINE = """
name: pipe-flow
project: prj-vision
steps:
  - name: train
    kind: train
    with: {script: train.py, workers: 2}
  - name: export
    kind: convert-model
    with: {model: "${steps.train.outputs.model}", target: onnx}
"""
COMMANDS = ["job {job}", "logs {job}", "jobs", "jobs --all", "jobs --state failed",
            "jobs --mine", "runs",
            "runs --owner ana", "runs --state running", "runs compare {job} {job2}",
            "models list", "models show {model}", "datasets list", "datasets show {dataset}",
            "projects list", "projects show {project}", "pipelines list",
            "pipelines show {pipeline}", "pipeline status {prun}", "pipeline runs",
            "pipeline runs {pipeline}",
            # answers that change something, each naming what it made or touched
            "models add mdl-new{n} gs://team/m{n}.onnx --format onnx --dataset {dataset} "
            "--parent {model} --project {project}",
            "datasets add ds-new{n} gs://team/d{n} --project {project}", "projects add prj-new{n}",
            "cancel {job}"]


def _populate(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    store = JobStore(home / "state.sqlite")
    conn = open_db(home / "state.sqlite")
    projects.add(conn, "prj-vision", "ana", "image models")
    datasets.add(conn, "ds-digits", "gs://team/digits", "ana", format="tfrecord",
                 project="prj-vision")
    done = train_job(store, home, "ana", "0.001", 0.97)
    train_job(store, home, "bo", "0.1", 0.60, state="failed")
    train_job(store, home, "ana", "0.01", 0.80, state="running")
    projects.add_job(conn, "prj-vision", done)
    tconn = tracking.open_tracking(home / "state.sqlite")
    tracking.record_steps(tconn, done, [(s, {"loss": 1.0 / s}) for s in range(10, 60, 10)])
    tconn.close()
    keras = models.add(conn, "mdl-cnn", "ana", "gs://team/models/cnn.keras", format="keras",
                       job_id=done, dataset="ds-digits", project="prj-vision")
    models.add(conn, "mdl-cnn-onnx", "ana", "gs://team/models/cnn.onnx", format="onnx",
               parent=keras["ref"], project="prj-vision")
    pipelines.add(conn, None, PIPELINE, "ana")
    run_id = pipeline_runs.start(conn, "pipe-flow", "ana")
    pipeline_runs.execute(conn, run_id, RecordingSteps(store, home / "jobs", "ana"))
    store.close()
    conn.close()


def _universe(conn) -> dict[str, list[str]]:
    """kind -> every key of that kind in the state database."""
    return {
        "run": [r[0] for r in conn.execute("SELECT id FROM jobs")],
        "model": [f"{r[0]}:{r[1]}" for r in conn.execute(
            "SELECT name, version FROM catalog_models")],
        "dataset": [r[0] for r in conn.execute("SELECT name FROM catalog_datasets")],
        "project": [r[0] for r in conn.execute("SELECT name FROM catalog_projects")],
        "pipeline": [r[0] for r in conn.execute("SELECT name FROM catalog_pipelines")],
        "pipeline-run": [r[0] for r in conn.execute("SELECT id FROM catalog_runs")],
    }


class _Web(dict):
    def __repr__(self) -> str:  # hypothesis prints the fixture with each failing example
        return "<web view>"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    home = tmp_path_factory.mktemp("links")
    _populate(home)
    commands.load()
    (home / "tfdesk.toml").write_text('[slack]\nadmin_users = ["U0BOSS"]\n')
    plain = load_config({"TFDESK_HOME": str(home)})
    services = Services(plain)
    server = WebServer(plain, services, host="127.0.0.1", port=0, env={}).start()
    (home / "tfdesk.toml").write_text(f'[web]\nurl = "{server.url}"\n'
                                      '[slack]\nadmin_users = ["U0BOSS"]\n')
    config = load_config({"TFDESK_HOME": str(home)})
    sessions = Sessions(services.catalog, server.settings)
    clients = {}
    for who, actor in (("reader", member("U0READ")),
                       ("nobody", replace(member("U0NONE"), roles=frozenset()))):
        clients[who] = httpx.Client(timeout=20)
        clients[who].cookies.set("tfdesk_session", sessions.open(actor))
    yield _Web({"config": config, "plain": plain, "services": services, "server": server,
                "clients": clients, "universe": _universe(services.catalog), "served": {},
                "start": _universe(services.catalog), "count": itertools.count()})
    for c in clients.values():
        c.close()
    server.stop()
    services.close()


def _named(text: str, universe: dict[str, list[str]]) -> set[Ref]:
    """The objects a text names, by their keys standing alone (not inside a longer name or a
    path: "mdl-cnn" is not "mdl-cnn-onnx", "ds-digits" not "ds-digits.npz")."""
    found = set()
    for kind, keys in universe.items():
        for key in keys:
            if re.search(rf"(?<![\w.:/-]){re.escape(key)}(?![\w:/-]|\.\w)", text):
                found.add(Ref(kind, key))
    return found


def _status(web, who: str, url: str) -> tuple[int, str]:
    key = (who, url)
    if key not in web["served"]:
        r = web["clients"][who].get(url)
        web["served"][key] = (r.status_code, r.text)
    return web["served"][key]


def _check_links(web, text: str, links) -> None:
    """Every object ``text`` names is linked, or one click away on a linked page (a long
    list links its list page; a pipeline run's error names its step's job, which the run's
    page links); every link is served to a reader (200) and refused to a member without
    read (403)."""
    urls = {lk.url for lk in links}
    pages = WebLinks(web["server"].url)
    for lk in links:
        assert _status(web, "reader", lk.url)[0] == 200, lk.url
        assert _status(web, "nobody", lk.url)[0] == 403, lk.url
    for ref in _named(text, web["universe"]):
        url = pages.url(ref)
        if url in urls:
            continue
        path = url[len(web["server"].url) - 1:]
        assert any(f'href="{path}"' in _status(web, "reader", page)[1] for page in urls), \
            f"{ref} is named but not linked: {text[:300]}"


def _reply(web, line: str, config=None):
    ctx = Context(config or web["config"], services=web["services"])
    _, reply = run_line(ctx, line)
    return reply


@st.composite
def command_lines(draw, universe):
    line = draw(st.sampled_from(COMMANDS))
    runs = universe["run"]
    job = draw(st.sampled_from(runs))
    other = draw(st.sampled_from([r for r in runs if r != job]))
    return line.format(job=job, job2=other, model=draw(st.sampled_from(universe["model"])),
                       n="{n}",
                       dataset=draw(st.sampled_from(universe["dataset"])),
                       project=draw(st.sampled_from(universe["project"])),
                       pipeline=draw(st.sampled_from(universe["pipeline"])),
                       prun=draw(st.sampled_from(universe["pipeline-run"])))


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_answer_links_what_it_names(web, data):
    # Drawn from what populate made (fixed, so examples replay); new names from a counter.
    line = data.draw(command_lines(web["start"]))
    line = line.format(n=next(web["count"]))
    before = web["universe"]
    reply = _reply(web, line)
    web["universe"] = _universe(web["services"].catalog)
    if web["universe"] != before:  # a list page fetched before it changed is stale now
        web["served"].clear()
    if line.startswith("cancel") and not reply.ok:  # a finished job: an error, not an answer
        assert "nothing to cancel" in reply.text and reply.links == []
        return
    assert reply.ok, (line, reply.text)
    _check_links(web, reply.text, reply.links)
    out = io.StringIO()
    emit(reply, as_json=False, out=out, err=out)
    message = bk.render_reply(reply)
    slack = " ".join(str(b) for b in message["blocks"])
    for lk in reply.links:  # the same links, in the terminal, in Slack and in --json
        assert lk.url in out.getvalue()
        assert f"'url': '{lk.url}'" in slack
        assert lk.url in reply.to_json()


def test_slack_job_messages_link_their_run(web):
    """Submitted, progress, finished and failed: the messages the Slack thread gets."""
    links = WebLinks(web["server"].url)
    store = web["services"].engine.store
    for job in store.list():
        for message in (status_message(job, store.metrics(job.id), None, links),
                        final_message(job, store.metrics(job.id), links)):
            found = [lk for lk in links.links([Ref("run", job.id)])
                     if f"'url': '{lk.url}'" in str(message["blocks"])]
            assert found, message
            _check_links(web, str(message["blocks"]), found)


def test_without_a_web_url_no_answer_links(web):
    for template in COMMANDS:
        u = web["universe"]
        line = template.format(job=u["run"][0], job2=u["run"][1], model=u["model"][0], n="x7",
                               dataset=u["dataset"][0], project=u["project"][0],
                               pipeline=u["pipeline"][0], prun=u["pipeline-run"][0])
        reply = _reply(web, line, web["plain"])
        assert reply.links == []
        out = io.StringIO()
        emit(reply, as_json=False, out=out, err=out)
        assert "in the browser" not in out.getvalue() and "http" not in out.getvalue()
        assert "globe_with_meridians" not in str(bk.render_reply(reply)["blocks"])
        assert '"links"' not in reply.to_json()
        job = web["services"].engine.store.get(u["run"][0])
        assert "globe" not in str(status_message(job, [], None, None))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from([k for k in ROUTES if k not in LISTS]),
       # No "/": no id or catalog name holds one, and uvicorn decodes %2F before routing.
       key=st.text(min_size=1, max_size=40).filter(lambda k: k.strip() and "/" not in k))
def test_a_key_that_names_nothing_is_a_404_never_another_page(web, kind, key):
    if key.strip() in web["universe"].get(kind, []):
        return
    url = WebLinks(web["server"].url).url(Ref(kind, key.strip()))
    status, _ = _status(web, "reader", url)
    assert status == 404, (url, status)


def test_a_slack_answer_links_over_real_slack_http(tmp_path):
    """Through the real endpoint and the Slack stand-in: the posted answer carries the link."""
    from tests.slack_stub import SlackEnv
    env = SlackEnv(tmp_path, '[web]\nurl = "https://tfdesk.example.com/"\n')
    try:
        assert env.command("projects add prj-links").status_code == 200
        (call,) = env.stub.wait_for("chat.postMessage",
                                    lambda c: "prj-links" in str(c["args"]), timeout=30)
        assert {"type": "link", "url": "https://tfdesk.example.com/projects/prj-links",
                "text": "project prj-links"} in \
            call["args"]["blocks"][-1]["elements"][0]["elements"]
    finally:
        env.close()


def test_the_run_list_filters_by_per_step_metrics_in_the_browser(web):
    """The web view reads the same metric grammar as `tfdesk runs` (runners/run_list.py)."""
    base = web["server"].url
    status, html = _status(web, "reader", base + "runs?metric=min(step:loss)<0.05")
    assert status == 200 and html.count("data-run=") == 1 and ">min(step:loss)</a>" in html
    status, html = _status(web, "reader", base + "runs?metric=min(step:los)<0.05")
    assert status == 200 and 'id="error"' in html and "no run records the metric" in html
    assert "step:NAME: loss" in html
