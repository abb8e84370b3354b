"""The web view in a real browser (Debian's Chromium driven by Playwright, nothing
downloaded): sign in with Slack (the local OpenID Connect stand-in), find a run by a metric,
open it, compare two runs, follow a model's lineage back to the run that made it, watch a run's
state change, and see only what ``read`` allows."""
from __future__ import annotations

import os

import pytest

from runners.store import JobStore
from tests.oidc_stub import OidcStub
from tests.web_helpers import start_site, stop_site, train_job

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    oidc = OidcStub(user="U0ANA", name="Ana").start()
    site = start_site(tmp_path_factory.mktemp("browserhome"), oidc)
    yield site
    stop_site(site)
    oidc.stop()


@pytest.fixture(scope="module")
def page(site):
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"{CHROMIUM} missing: apt-get install -y chromium (see .ci/run)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        page.goto(site["url"] + "/runs")  # not signed in: sent to the sign-in page
        assert "/login?next=" in page.url
        page.click("#slack-sign-in")
        page.wait_for_url("**/runs")
        assert page.inner_text("#who") == "Ana"
        yield page
        browser.close()


def _loaded(page, selector: str) -> bool:
    """The chart arrived and is a picture (the server drew it)."""
    page.wait_for_function("s => { const i = document.querySelector(s);"
                           " return i && i.complete && i.naturalWidth > 100; }", arg=selector)
    return True


def test_find_a_run_by_metric_open_it_and_compare(site, page):
    best, other = site["ids"]["runs"]["best"], site["ids"]["runs"]["other"]
    page.goto(site["url"] + "/runs")
    page.fill("input[name=metric]", "val_accuracy>0.95")
    page.click("#apply")
    rows = page.locator("#runs tr[data-run]")
    assert rows.count() == 1 and rows.first.get_attribute("data-run") == best
    page.click(f"a[href='/runs/{best}']")
    assert "flag.lr" in page.inner_text("#params") and "0.001" in page.inner_text("#params")
    assert _loaded(page, "img[alt='curves per epoch']")
    assert _loaded(page, "img[alt='curves per step']")
    page.goto(site["url"] + "/runs?sort=metric:val_accuracy")
    page.check(f"input[value={best}]")
    page.check(f"input[value={other}]")
    page.click("#compare")
    differ = page.inner_text("#compare")
    assert "flag.lr" in differ and "0.001" in differ and "0.01" in differ
    assert _loaded(page, "#overlay")


def test_follow_a_model_lineage_to_its_run(site, page):
    ids = site["ids"]
    page.goto(site["url"] + "/models")
    page.click(f"#models a[href='/models/{ids['onnx']}']")
    assert "Validation" in page.content() and page.locator("#benchmark tr").count() == 7
    page.click(f"#lineage a[href='/models/{ids['keras']}']")
    page.click(f"#lineage a[href='/runs/{ids['runs']['best']}']")
    assert page.inner_text("h1").startswith(f"Run {ids['runs']['best']}")


def test_a_new_user_finds_a_training_a_conversion_and_a_pipeline(site, page):
    """Only by clicking from the header, as someone who has not read the docs: the two-worker
    training says what ran, the ONNX model leads to the conversion run that made it, and the
    pipeline leads to its run and that run's steps."""
    ids = site["ids"]
    best = ids["runs"]["best"]
    page.goto(site["url"] + "/runs")
    row = page.locator(f"#runs tr[data-run='{best}']")
    assert "2× horovod" in row.inner_text()
    row.locator(f"a[href='/runs/{best}']").click()
    assert "2 workers (horovod)" in page.inner_text("#what")
    assert page.locator("#metrics").count() == 1 and page.locator("#step-metrics").count() == 1
    page.click("header a[href='/models']")
    page.click(f"#models a[href='/models/{ids['onnx']}']")
    page.click(f"#lineage a[href='/runs/{ids['convert']}']")
    assert "→ onnx" in page.inner_text("#what") and "2×" not in page.inner_text("#what")
    assert f"produced model {ids['onnx']}" in page.inner_text("#lineage")
    assert page.locator("#bench-summary tr").count() == 4  # a row per batch size, not 30 figures
    page.click("header a[href='/pipelines']")
    page.click(f"#pipelines a[href='/pipelines/{ids['pipeline']}']")
    page.click(f"#pipeline-runs a[href='/pipeline-runs/{ids['pipeline_run']}']")
    steps = page.inner_text("#steps")
    assert "train" in steps and "convert-model" in steps and "not-run" not in steps


def test_a_member_sees_only_what_read_allows(site, page):
    # Ana (U0ANA) is a member: she reads everything, but bo's run keeps its log to bo and
    # the admins, and no path on the tfdesk machine is shown to her.
    page.goto(site["url"] + f"/runs/{site['ids']['runs']['bo']}")
    assert page.locator("#log-hidden").count() == 1 and page.locator("#log").count() == 0
    assert str(site["home"]) not in page.content()


def test_a_running_run_updates_in_place(site, page):
    store = JobStore(site["home"] / "state.sqlite")
    job = train_job(store, site["home"], "ana", "0.05", 0.8, state="running")
    page.goto(site["url"] + f"/runs/{job}")
    assert page.inner_text("#state") == "running"
    store.transition(job, "succeeded")
    from playwright.sync_api import expect
    expect(page.locator("#state")).to_have_text("succeeded", timeout=12_000)  # no reload by us
    store.close()


def test_watch_a_pipeline_run_update(site, page):
    """A pipeline run driven by catalog.runs in a thread; its page refreshes itself while the
    step's job is held, then shows the run finished."""
    import threading

    from catalog import runs as pipeline_runs
    from catalog.store import open_db
    from tests.web_helpers import RecordingSteps

    release = threading.Event()

    class HeldSteps(RecordingSteps):
        def wait(self, job_id, timeout=None):
            release.wait(30)
            return super().wait(job_id, timeout)

    conn = open_db(site["home"] / "state.sqlite")
    store = JobStore(site["home"] / "state.sqlite")
    run_id = pipeline_runs.start(conn, site["ids"]["pipeline"], "ana")

    def drive():
        c = open_db(site["home"] / "state.sqlite")
        pipeline_runs.execute(c, run_id, HeldSteps(store, site["home"] / "jobs", "ana"))
        c.close()

    t = threading.Thread(target=drive, daemon=True)
    t.start()
    from playwright.sync_api import expect
    page.goto(site["url"] + f"/pipeline-runs/{run_id}")
    expect(page.locator("#state")).to_have_text("running", timeout=10_000)
    # The run is marked running a moment before its first step: the page shows the step
    # running on one of its own refreshes, not necessarily on the first.
    expect(page.locator("#steps")).to_contain_text("running", timeout=10_000)
    release.set()
    expect(page.locator("#state")).to_have_text("succeeded", timeout=15_000)
    assert page.inner_text("#steps").count("succeeded") == 2
    t.join(10)
    conn.close()
    store.close()
