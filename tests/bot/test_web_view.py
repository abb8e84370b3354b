"""The web view over real HTTP: who may sign in and how (the operator's one-time link, Slack's
OpenID Connect against a local stand-in, every way a token can be wrong), what a member without
rights sees, every page and chart, and [web] settings refused by name."""
from __future__ import annotations

import re

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bot.config import load_config
from bot.permissions import OPERATOR, member
from bot.web.auth import Sessions
from bot.web.settings import WebConfigError, load
from tests.oidc_stub import OidcStub
from tests.web_helpers import start_site, stop_site

COOKIE_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~!#$%&'*+^`|"


@pytest.fixture(scope="module")
def oidc():
    stub = OidcStub().start()
    yield stub
    stub.stop()


@pytest.fixture(scope="module")
def site(tmp_path_factory, oidc):
    site = start_site(tmp_path_factory.mktemp("webhome"), oidc)
    yield site
    stop_site(site)


def _client(site, actor=None) -> httpx.Client:
    c = httpx.Client(base_url=site["url"], timeout=20)
    if actor is not None:
        token = Sessions(site["services"].catalog, site["server"].settings).open(actor)
        c.cookies.set("tfdesk_session", token)
    return c


def test_pages_need_a_sign_in(site):
    with _client(site) as c:
        for path in ("/runs", f"/runs/{site['ids']['runs']['best']}", "/models", "/compare"):
            r = c.get(path)
            assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")


def test_the_operator_link_works_once(site):
    link = Sessions(site["services"].catalog, site["server"].settings).login_link(OPERATOR)
    assert link.startswith(site["url"] + "/login/once?token=")
    with _client(site) as c:
        r = c.get(link, follow_redirects=True)
        assert r.status_code == 200 and "signed in as" in r.text and "(admin)" in r.text
    with _client(site) as c:
        r = c.get(link)
        assert r.status_code == 400 and "used already" in r.text


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300), st.text(st.sampled_from(COOKIE_CHARS), min_size=1, max_size=300))
def test_no_made_up_token_signs_in(site, token, cookie):
    with _client(site) as c:
        r = c.get("/login/once", params={"token": token})
        assert r.status_code == 400 and "tfdesk_session" not in r.headers.get("set-cookie", "")
        c.cookies.set("tfdesk_session", cookie)
        assert c.get("/runs").status_code == 303


def test_sign_in_with_slack_over_http(site, oidc):
    oidc.spoil = None
    with _client(site) as c:
        r = c.get("/login/slack", params={"next": "/models"}, follow_redirects=True)
        assert r.status_code == 200 and str(r.url).endswith("/models")
        assert '<b id="who">Ana</b>' in r.text and "(admin)" not in r.text
    assert oidc.token_calls[-1]["redirect_uri"] == site["url"] + "/auth/slack/callback"


@pytest.mark.parametrize("spoil, says", [
    ("bad-signature", "did not check out"), ("audience", "did not check out"),
    ("issuer", "did not check out"), ("expired", "did not check out"),
    ("nonce", "not for this sign-in"), ("team", "another Slack workspace")])
def test_a_wrong_identity_token_is_refused(site, oidc, spoil, says):
    oidc.spoil = spoil
    try:
        with _client(site) as c:
            r = c.get("/login/slack", follow_redirects=True)
            assert r.status_code == 400 and says in r.text
            assert "tfdesk_session" not in c.cookies
    finally:
        oidc.spoil = None


def test_a_callback_not_started_here_is_refused(site):
    with _client(site) as c:
        r = c.get("/auth/slack/callback", params={"code": "x", "state": "forged"})
        assert r.status_code == 400 and "not started here" in r.text
        r = c.get("/login/slack", params={"next": "//evil.example/"}, follow_redirects=False)
        state = re.search(r"state=([^&]+)", r.headers["location"]).group(1)
        assert "evil" not in r.headers["location"] and state


def test_every_page_and_chart_renders(site):
    ids = site["ids"]
    best, other = ids["runs"]["best"], ids["runs"]["other"]
    pages = ["/runs", f"/runs/{best}", f"/compare?run={best}&run={other}", "/models",
             f"/models/{ids['onnx']}", "/datasets", "/projects", "/projects/vision",
             "/pipelines", f"/pipelines/{ids['pipeline']}",
             f"/pipeline-runs/{ids['pipeline_run']}", "/runs?metric=val_accuracy>0.95"]
    charts = [f"/runs/{best}/curves.png", f"/runs/{best}/curves.png?by=step",
              f"/compare.png?run={best}&run={other}", f"/models/{ids['onnx']}/benchmark.png",
              f"/pipelines/{ids['pipeline']}/graph.png",
              f"/pipeline-runs/{ids['pipeline_run']}/graph.png"]
    with _client(site, OPERATOR) as c:
        for p in pages:
            r = c.get(p)
            assert r.status_code == 200, (p, r.text[:500])
            assert "script-src" not in r.text and "default-src 'none'" in \
                r.headers["content-security-policy"]
        for p in charts:
            r = c.get(p)
            assert r.status_code == 200 and r.content[:4] == b"\x89PNG", p
        assert c.get("/runs?metric=val_accuracy>0.95").text.count('data-run="') == 1
        r = c.get("/runs?metric=val_accuracy>high")
        assert r.status_code == 200 and "compares numbers" in r.text
        # A finished training says what became of its model (here: none saved), as `job ID` does.
        assert 'id="model-note"' in c.get(f"/runs/{best}").text
        assert "no saved model found" in c.get(f"/runs/{best}").text
        assert c.get("/runs/j-nothere").status_code == 404
        assert c.get("/models/nothere:9").status_code == 404


def test_a_member_sees_what_read_allows(site):
    ids = site["ids"]
    with _client(site, member("U0OTHER")) as c:
        r = c.get(f"/runs/{ids['runs']['best']}")
        assert r.status_code == 200
        assert 'id="log-hidden"' in r.text and 'id="log"' not in r.text
        assert str(site["home"]) not in r.text  # no server paths
        assert 'id="model-note"' not in r.text  # it names paths on the tfdesk machine
        r = c.get(f"/pipeline-runs/{ids['pipeline_run']}")
        assert "/srv/models" not in r.text and "a path on the tfdesk machine" in r.text
    with _client(site, member("ana")) as c:
        r = c.get(f"/runs/{ids['runs']['best']}")
        assert 'id="log"' in r.text  # the owner sees the log
    with _client(site, member("U0BOSS", "admin")) as c:
        assert 'id="log"' in c.get(f"/runs/{ids['runs']['bo']}").text


@pytest.mark.parametrize("toml, says", [
    ('[web]\nport = "eighty"', "[web] port must be a number"),
    ("[web]\nport = 70000", "[web] port must be from 0 (any free port) to 65535"),
    ("[web]\nport = -2", "[web] port must be from 0 (any free port) to 65535"),
    ("[web]\nport = 80.5", "[web] port must be a whole number"),
    ('[web]\nbind = "example.com"', "[web] bind must be an IP address"),
    ('[web]\nclient_id = "1"', "client_id and client_secret go together"),
    ('[web]\nurl = "ftp://x/"', "[web] url must be an http(s) URL"),
    ("[web]\nsession_hours = 0", "[web] session_hours must be more than 0"),
    ('[web]\nserve = "yes"', "[web] serve must be true or false"),
])
def test_bad_web_settings_are_named(tmp_path, toml, says):
    (tmp_path / "tfdesk.toml").write_text(toml + "\n")
    with pytest.raises(WebConfigError) as exc:
        load(load_config({"TFDESK_HOME": str(tmp_path)}), {})
    assert says in str(exc.value)


def test_default_bind_is_loopback(tmp_path):
    s = load(load_config({"TFDESK_HOME": str(tmp_path)}), {})
    assert (s.bind, s.port, s.base_url) == ("127.0.0.1", 8765, "http://127.0.0.1:8765/")


def test_serve_starts_the_web_view_beside_slack_unless_told_not_to(tmp_path):
    from bot.services import Services
    from bot.web.server import start_beside_slack
    (tmp_path / "tfdesk.toml").write_text("[web]\nport = 0\n")
    config = load_config({"TFDESK_HOME": str(tmp_path)})
    services = Services(config)
    server = start_beside_slack(config, services)
    try:
        assert server.url.startswith("http://127.0.0.1:")
        assert httpx.get(server.url + "healthz", timeout=10).json() == {"ok": True}
    finally:
        server.stop()
    (tmp_path / "tfdesk.toml").write_text("[web]\nserve = false\n")
    assert start_beside_slack(load_config({"TFDESK_HOME": str(tmp_path)}), services) is None
    services.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>',
                        "javascript:alert(1)", "</td></tr></table><h1>x</h1>"]),
       st.text(min_size=1, max_size=40))
def test_hostile_names_are_shown_as_text(site, hostile, more):
    from runners.store import JobStore
    store = JobStore(site["home"] / "state.sqlite")
    job, _ = store.create("train", {"script_name": hostile + more, "args": ["--note", hostile]},
                          hostile, {}, "local", site["home"] / "jobs")
    store.close()
    with _client(site, OPERATOR) as c:
        for path in (f"/runs/{job.id}", f"/runs?owner={httpx.QueryParams({'o': hostile})['o']}"):
            text = c.get(path).text
            assert "<script>" not in text and "<img" not in text and "<h1>x" not in text


@given(st.text(max_size=80) | st.sampled_from(["//evil.example/", "/\\evil", "https://evil/",
                                               "/runs?x=1", "", "/%2F%2Fevil"]))
def test_after_sign_in_only_paths_here(path):
    from urllib.parse import urlsplit
    from bot.web.auth import safe_next
    got = safe_next(path)
    assert got.startswith("/") and not got.startswith("//") and "\\" not in got
    assert urlsplit(got).netloc == "" and urlsplit(got).scheme == ""


def test_web_login_prints_a_link_that_signs_the_operator_in_once(tmp_path, monkeypatch, capsys):
    from urllib.parse import parse_qs, urlsplit
    from bot.cli import main
    from bot.services import Services
    monkeypatch.setenv("TFDESK_HOME", str(tmp_path))
    assert main(["web", "--login"]) == 0
    out = capsys.readouterr().out
    url = out.strip().split(": ", 1)[1]
    assert url.startswith("http://127.0.0.1:8765/login/once?token=")
    config = load_config({"TFDESK_HOME": str(tmp_path)})
    services = Services(config)
    sessions = Sessions(services.catalog, load(config, {}))
    token = parse_qs(urlsplit(url).query)["token"][0]
    viewer = sessions.viewer(sessions.spend_link(token))
    assert viewer.actor.id == "local" and "operator" in viewer.actor.roles
    with pytest.raises(Exception, match="used already"):
        sessions.spend_link(token)
    services.close()


def test_a_run_tfdesk_cannot_read_is_shown_with_why(site):
    """A run whose stored spec is damaged stays in the list and its page says why (with its
    state, reason and history), instead of failing."""
    from runners.store import JobStore
    store = JobStore(site["home"] / "state.sqlite")
    job, _ = store.create("train", {"script_name": "x.py"}, "ana", {}, "local",
                          site["home"] / "jobs")
    store.transition(job.id, "failed", "could not start: no room")
    store._db().execute("UPDATE jobs SET spec = '[1, 2]' WHERE id = ?", (job.id,))
    try:
        with _client(site, OPERATOR) as c:
            assert f'data-run="{job.id}"' in c.get("/runs").text
            r = c.get(f"/runs/{job.id}")
            assert r.status_code == 200, r.text[:500]
            assert 'id="unreadable"' in r.text and "could not start: no room" in r.text
            assert f"job {job.id}: its stored spec is not a JSON object" in r.text
    finally:
        store.delete(job.id)
        store.close()
