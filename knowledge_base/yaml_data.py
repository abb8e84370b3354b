"""The KB's YAML data files (concepts, rankings, error families, question sets), read with
libyaml's C loader where PyYAML was built with it: ten times faster than the pure-Python
loader (concepts.yaml: 0.30 s -> 0.03 s of a shell's question) and the same data, as
tests/knowledge_base/test_kb_yaml_data.py checks for every data file and for generated documents."""
from __future__ import annotations

from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    return yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader, C or Python
