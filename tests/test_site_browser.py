"""Search in a real browser: headless Debian Chromium driven by Playwright (never a downloaded
browser) against the built site served on localhost."""
from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
import yaml

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.handlers.site import make_server
from site_kb import make_kb

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
FIRST_SEARCH_LIMIT_S = 1.0

pytestmark = pytest.mark.slow


def build_site(home: Path, project: Path) -> Path:
    home.mkdir(parents=True)
    project.mkdir(parents=True)
    make_kb(home / "kb.sqlite")
    (project / "mkdocs.yml").write_text((REPO / "mkdocs.yml").read_text())
    shutil.copytree(REPO / "site_docs", project / "site_docs")
    cfg = yaml.safe_load((REPO / "mkdocs.yml").read_text())

    def pages(nav):
        for item in nav:
            v = list(item.values())[0] if isinstance(item, dict) else item
            yield from pages(v) if isinstance(v, list) else [v]
    for p in pages(cfg["nav"]):  # guides not written yet (test_site_build reports them)
        f = project / "site_docs" / p
        if not p.startswith(("api/", "releases/", "migration/")) and not f.exists():
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(f"# {p}\n")
    (home / "tfdesk.toml").write_text(f'[site]\nproject_dir = "{project}"\n')
    ctx = Context(config=load_config({"TFDESK_HOME": str(home)}))
    _, reply = run_line(ctx, ["site", "build", "--no-examples"])
    assert reply.ok, reply.text
    return Path(reply.data["site_dir"])


def test_search_finds_a_symbol_and_opens_its_page(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} missing: apt-get install -y chromium (see .ci/run)")
    site = build_site(tmp_path / "home", tmp_path / "project")
    server = make_server(site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    shot = tmp_path / "search.png"
    try:
        with playwright.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page()
            outside: list[str] = []
            page.on("request", lambda r: None if r.url.startswith(base) or
                    r.url.startswith("data:") else outside.append(r.url))
            page.goto(base, wait_until="load")
            page.click("label.md-search__icon, .md-search__input")
            box = page.locator("input.md-search__input")
            t0 = time.perf_counter()
            box.press_sequentially("softmax")  # Material listens to key events, not fill()
            result = page.locator('a.md-search-result__link[href*="#tf.nn.softmax"]').first
            result.wait_for(state="visible", timeout=15_000)
            first_result_s = time.perf_counter() - t0
            page.screenshot(path=str(shot))
            result.click()
            page.wait_for_url("**/api/tf.nn/**")
            assert "#tf.nn.softmax" in page.url
            heading = page.locator('[id="tf.nn.softmax"]')
            assert heading.is_visible()
            page.screenshot(path=str(tmp_path / "symbol.png"))
            browser.close()
    finally:
        server.shutdown()
        server.server_close()
    print(f"\nfirst search result after {first_result_s * 1000:.0f} ms; screenshot: {shot}")
    assert not outside, f"the site fetched from other hosts: {outside}"
    assert first_result_s < FIRST_SEARCH_LIMIT_S, f"first result took {first_result_s:.2f} s"
