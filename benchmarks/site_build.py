"""Benchmark: the full docs-site build (all modules, all releases).

    .venv/bin/python benchmarks/site_build.py                 # the KB at $TFDESK_HOME/kb.sqlite
    .venv/bin/python benchmarks/site_build.py --kb PATH
    .venv/bin/python benchmarks/site_build.py --synthetic 40000   # no KB yet: a made-up one
    .venv/bin/python benchmarks/site_build.py --browser       # also time a first search

Prints build time (generation + mkdocs), pages, total size, the largest page and the search
index size, and the ratio of the full build to a baseline measured in the same run: the same
site without the generated API pages (hand-written pages only). Targets (issue 3): under
3 minutes on 2 cores, no page over 1 MB, first search under a second.
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


def first_search(site: Path, query: str, expect: str) -> float:
    from playwright.sync_api import sync_playwright
    server = make_server(site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = b.new_page()
            page.goto(base, wait_until="load")
            page.click("label.md-search__icon, .md-search__input")
            t0 = time.perf_counter()
            page.locator("input.md-search__input").press_sequentially(query)
            page.locator(f'a.md-search-result__link[href*="#{expect}"]').first.wait_for(
                state="visible", timeout=60_000)
            s = time.perf_counter() - t0
            b.close()
            return s
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", help="KB file (default: $TFDESK_HOME/kb.sqlite)")
    ap.add_argument("--synthetic", type=int, metavar="N", help="use a made-up KB of N symbols")
    ap.add_argument("--browser", action="store_true", help="time a first search in Chromium")
    ap.add_argument("--query", default="softmax")
    ap.add_argument("--expect", default="tf.nn.softmax")
    ap.add_argument("--keep", action="store_true", help="keep the built sites")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tfdesk-site-bench-"))
    try:
        if a.synthetic:
            t0 = time.perf_counter()
            kb_path = synthetic_kb(work / "kb.sqlite", a.synthetic)
            print(f"synthetic KB of {a.synthetic} symbols built in {time.perf_counter() - t0:.1f} s")
            a.query, a.expect = "f8005", "tf.m0.s1.f8005"  # indexed (raw_ops is not)
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
            s = first_search(full["site_dir"], a.query, a.expect)
            print(f"first search '{a.query}' -> {a.expect}: {s * 1000:.0f} ms (target < 1000)")
            ok = ok and s < 1.0
        print("targets met" if ok else "TARGETS MISSED (build < 180 s, pages < 1 MB, search < 1 s)")
        if a.keep:
            print(f"sites kept in {work}")
        return 0 if ok else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
