"""Static extraction of one TensorFlow release's public API from its wheels.

``extract_release(ReleaseWheels) -> ReleaseExtract``; run one release from a shell with
``python -m knowledge_base.extract WHEEL_DIR VERSION OUT.jsonl.gz``.
"""
from .release import extract_release

__all__ = ["extract_release"]
