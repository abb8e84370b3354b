"""Static extraction of one TensorFlow release's public API from its wheels.

``extract_release(ReleaseWheels) -> ReleaseExtract``; run one release from a shell with
``python -m knowledge_base.extract WHEEL_DIR VERSION OUT.jsonl.gz``.

The extractor is imported when first asked for: the KB's readers import light modules of
this package (``companions``) and must not pay for the extractor (subprocess, wheels).
"""
from __future__ import annotations

__all__ = ["extract_release"]


def __getattr__(name: str):
    if name == "extract_release":
        from .release import extract_release
        return extract_release
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
