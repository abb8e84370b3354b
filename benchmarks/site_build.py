"""Benchmark: the full docs-site build (all modules, all releases).

    .venv/bin/python benchmarks/site_build.py                 # the KB at $TFDESK_HOME/kb.sqlite
    .venv/bin/python benchmarks/site_build.py --kb PATH
    .venv/bin/python benchmarks/site_build.py --synthetic 40000   # no KB yet: a made-up one
    .venv/bin/python benchmarks/site_build.py --browser       # also rank the query list
    .venv/bin/python benchmarks/site_build.py --browser --site DIR   # rank a built site only

Prints build time (generation + mkdocs), pages, total size, the largest page and the search
index size, and the ratio of the full build to a baseline measured in the same run: the same
site without the generated API pages (hand-written pages only). With --browser, the first
search's time in headless Chromium and the rank of the expected page for every query of
benchmarks/site_search_queries.yaml (top-1, top-5; written before the search was tuned), and
screenshots of a class page and the results. ``--browser --site DIR`` ranks an already built
site (Material's own search or tfdesk's, whichever the site has): the before/after comparison.
Targets (issues 3, 14, 30): under 3 minutes on 2 cores, no page over 1 MB, first search under
a second.
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
        for p in ("api/index.md", "releases/index.md", "releases/compare/index.md",
                  "migration/index.md"):
            (docs / p).parent.mkdir(parents=True, exist_ok=True)
            (docs / p).write_text("# placeholder\n")
    built = run_mkdocs(cfg, out)
    stats = site_stats(out)
    stats.update(seconds=time.perf_counter() - t0, generate_seconds=gen_s,
                 mkdocs_seconds=built.seconds, site_dir=out)
    return stats


QUERY_FILE = REPO / "benchmarks" / "site_search_queries.yaml"
CLASS_PAGE = "api/tf.keras.Model/"
# The search box and result links of tfdesk's own search, and of Material's (the baseline).
ENGINES = {"tfdesk": ("input.tfd-search-input", "a.tfd-search-link"),
           "material": ("input.md-search__input", "a.md-search-result__link")}


def load_queries(kb: KB, path: Path = QUERY_FILE) -> list[tuple[str, str, set[str]]]:
    """(query, expected name, addresses that count): the expected symbol's page or the page
    of another name of the same object in the same releases (tf.math.softmax for tf.nn.softmax)."""
    import yaml
    from knowledge_base import links
    out = []
    for item in yaml.safe_load(path.read_text(encoding="utf-8")):
        s = kb.symbol(item["expect"])
        if s is None:
            raise SystemExit(f"{path}: {item['expect']} is not in the KB")
        same = kb.db.execute("SELECT name, module, kind, parent FROM symbols WHERE object = ? "
                             "AND last_ord = ?", (s["object"], s["last_ord"])).fetchall()
        ok = {links.sym_path(s)} | {links.sym_path(dict(r)) for r in same}
        out.append((item["q"], item["expect"], ok))
    return out


def _engine(page) -> str:
    for name, (box, _) in ENGINES.items():
        if page.locator(box).count():
            return name
    raise RuntimeError("no search box on the page")


def _type_query(page, base: str, query: str) -> tuple[list[str], float]:
    """Type ``query`` on a fresh page; result addresses (site-relative) and time to the first."""
    page.goto(base, wait_until="load")
    engine = _engine(page)
    box, result = ENGINES[engine]
    if engine == "material":
        page.click("label.md-search__icon, .md-search__input")
    else:
        page.click(box)
    t0 = time.perf_counter()
    page.locator(box).press_sequentially(query)
    try:
        page.locator(result).first.wait_for(state="visible", timeout=30_000)
    except Exception:  # noqa: BLE001 - no result at all is a miss, not a crash
        return [], time.perf_counter() - t0
    first = time.perf_counter() - t0
    page.wait_for_timeout(400)  # results for the whole query, not a prefix of it
    hrefs = [a.get_attribute("href") or "" for a in page.locator(result).all()[:10]]
    out = []
    for h in hrefs:
        absolute = page.evaluate("h => new URL(h, document.baseURI).href", h)
        path, _, frag = absolute.removeprefix(base).partition("#")
        out.append(path.split("?")[0] + (f"#{frag}" if frag else ""))
    return out, first


def browse(site: Path, queries, shots: Path) -> tuple[float, list[tuple[str, int | None]], str]:
    """First-search time, the rank of each expected result (None: not in the first 10), the
    engine found, and screenshots of a class page and of the search results in ``shots``."""
    from playwright.sync_api import sync_playwright
    server = make_server(site, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    shots.mkdir(parents=True, exist_ok=True)
    ranks, first, engine = [], 0.0, ""
    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            page = b.new_page(viewport={"width": 1280, "height": 1000})
            later = []
            for n, (query, _, ok) in enumerate(queries):
                hrefs, t = _type_query(page, base, query)
                if n == 0:
                    first, engine = t, _engine(page)
                    page.screenshot(path=str(shots / "search.png"))
                else:
                    later.append(t)
                rank = next((i + 1 for i, h in enumerate(hrefs) if h in ok), None)
                ranks.append((query, rank))
            page.goto(base + CLASS_PAGE, wait_until="load")
            page.wait_for_timeout(300)
            page.screenshot(path=str(shots / "class-page.png"))
            b.close()
    finally:
        server.shutdown()
        server.server_close()
    if later:
        print(f"first result on a fresh page once the browser has the index file: median "
              f"{sorted(later)[len(later) // 2] * 1000:.0f} ms over {len(later)} searches")
    return first, ranks, engine


def report_ranks(ranks) -> tuple[float, float]:
    n = len(ranks)
    top1 = sum(1 for _, r in ranks if r == 1) / n
    top5 = sum(1 for _, r in ranks if r and r <= 5) / n
    for query, rank in ranks:
        if rank != 1:
            print(f"  {query!r:40} expected result at rank {rank or 'not in top 10'}")
    print(f"search ranking on {n} queries: top-1 {top1:.0%}, top-5 {top5:.0%}")
    return top1, top5


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kb", help="KB file (default: $TFDESK_HOME/kb.sqlite)")
    ap.add_argument("--synthetic", type=int, metavar="N", help="use a made-up KB of N symbols")
    ap.add_argument("--browser", action="store_true",
                    help="rank the query list and time a first search in Chromium")
    ap.add_argument("--site", help="with --browser: search this built site, build nothing")
    ap.add_argument("--shots", default=str(REPO / "benchmarks" / "out" / "site"),
                    help="where --browser writes its screenshots")
    ap.add_argument("--keep", action="store_true", help="keep the built sites")
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tfdesk-site-bench-"))
    try:
        if a.synthetic:
            t0 = time.perf_counter()
            kb_path = synthetic_kb(work / "kb.sqlite", a.synthetic)
            print(f"synthetic KB of {a.synthetic} symbols built in {time.perf_counter() - t0:.1f} s")
        else:
            home = Path(os.environ.get("TFDESK_HOME") or Path.home() / ".tfdesk")
            kb_path = Path(a.kb) if a.kb else home / "kb.sqlite"
        kb = KB(kb_path)
        if a.site:
            return search_only(kb, Path(a.site), Path(a.shots))
        base = build(None, work, "baseline")
        full = build(kb, work, "full")
        n = kb.db.execute("SELECT count(*) FROM symbols").fetchone()[0]
        print(f"KB: {kb_path} ({len(kb.versions)} releases, {kb.versions[0]}–{kb.newest}, "
              f"{n} symbols); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
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
        if a.browser and not a.synthetic:
            ok = search_only(kb, full["site_dir"], Path(a.shots)) == 0 and ok
        print("targets met" if ok else "TARGETS MISSED (build < 180 s, pages < 1 MB)")
        if a.keep:
            print(f"sites kept in {work}")
        return 0 if ok else 1
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


def search_only(kb: KB, site: Path, shots: Path) -> int:
    """Rank the query list on a built site; 0 when the first search is under a second."""
    queries = load_queries(kb)
    s, ranks, engine = browse(site, queries, shots)
    print(f"search engine: {engine}; first search {queries[0][0]!r}: {s * 1000:.0f} ms "
          f"(target < 1000)")
    report_ranks(ranks)
    print(f"screenshots (class page, search results): {shots}")
    return 0 if s < 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
