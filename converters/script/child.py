"""The script converter run in a child process, for callers that must stay responsive.

LibCST's native parser holds the GIL while it parses: on a 780 KB script it held it for 10 to
18 s in one stretch (measured on this project's loaded 2-core machine), so every other thread
of the process that parses stalls meanwhile — in the Slack process, the acks Slack wants within
3 s. A child process has its own interpreter: the parent only waits on a pipe.

Same signature and results as :func:`converters.script.convert` (results and
``ConversionError`` pickle with their fields).
"""
from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from converters.script.api import ConversionResult
from converters.script.api import convert as _convert
from converters.script.errors import ConversionError

WORKERS = 2  # conversions at once; more wait their turn in the queue
_pool: ProcessPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ProcessPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            # spawn, not fork: forking a process with threads (the Slack app's) is unsafe.
            _pool = ProcessPoolExecutor(WORKERS, mp_context=multiprocessing.get_context("spawn"))
        return _pool


def convert(source: str | bytes, target: str = "horovod", filename: str = "script.py",
            warmup_epochs: int | None = None, force: bool = False) -> ConversionResult:
    global _pool
    pool = _executor()
    try:
        return pool.submit(_convert, source, target, filename, warmup_epochs, force).result()
    except BrokenProcessPool:
        with _lock:
            if _pool is pool:
                _pool = None  # the next conversion starts a fresh child
        raise ConversionError(f"{filename}: the converter's process stopped while converting "
                              "it (out of memory?); nothing was written") from None
