"""The docs site's generated pages, written from the KB into a MkDocs ``docs_dir``.

``generate(kb, docs_dir)`` writes the API reference (``api/``: a page per module, class and
module-level function), one "What changed" page per
release (``changes/<version>/``), the release index (``releases/``) and the TF1 -> TF2 table
(``migration/``), at the addresses :mod:`knowledge_base.links` hands out.
:mod:`knowledge_base.site.build` stages hand-written pages next to them and runs MkDocs.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from knowledge_base.site import api, changes, compare, search
from knowledge_base.site.data import load
from knowledge_base.store import KB

# Release pages (changes/) split into parts past this many bytes of generated HTML.
PAGE_BUDGET = 600_000


@dataclass
class GenerateResult:
    pages: list[api.PageStat] = field(default_factory=list)
    seconds: float = 0.0
    symbols: int = 0
    modules: int = 0
    search_entries: int = 0
    search_bytes: int = 0

    @property
    def largest(self) -> api.PageStat | None:
        return max(self.pages, key=lambda p: p.bytes, default=None)


def generate(kb: KB, docs_dir: Path, *, budget: int = PAGE_BUDGET,
             progress: Callable[[str], None] | None = None) -> GenerateResult:
    t0 = time.perf_counter()
    say = progress or (lambda msg: None)
    docs_dir = Path(docs_dir)
    say("reading the knowledge base")
    data = load(kb)
    result = GenerateResult(symbols=len(data.symbols), modules=len(data.by_module))
    say(f"writing API pages for {result.modules} modules, {result.symbols} symbols")
    result.pages += api.api_pages(data, docs_dir)
    say(f"writing change pages for {len(data.versions)} releases")
    result.pages += changes.release_pages(data, docs_dir, budget)
    result.pages += changes.migration_pages(data, docs_dir, budget)
    result.pages += compare.compare_page(data, docs_dir)
    result.search_entries, result.search_bytes = search.write_index(data, docs_dir)
    result.seconds = time.perf_counter() - t0
    return result
