"""knowledge_base.yaml_data reads what PyYAML's pure-Python safe loader reads (the oracle):
for every YAML data file of knowledge_base/, and for generated documents of the shapes those
files use (lists of mappings of strings, numbers, booleans, nulls, nested lists)."""
from pathlib import Path

import yaml
from hypothesis import given, settings, strategies as st

from knowledge_base import yaml_data

ROOT = Path(__file__).resolve().parents[2] / "knowledge_base"
SCALARS = (st.text(max_size=30) | st.integers() | st.booleans() | st.none()
           | st.floats(allow_nan=False))
DOCS = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=5)
                    | st.dictionaries(st.text(min_size=1, max_size=12), inner, max_size=5),
                    max_leaves=30)


def _oracle(text: str):
    return yaml.load(text, Loader=yaml.SafeLoader)


def test_every_data_file_reads_the_same():
    files = sorted(ROOT.rglob("*.yaml"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert yaml_data.load(text) == _oracle(text), path


@settings(max_examples=200, deadline=None)
@given(doc=DOCS, style=st.sampled_from([None, False, True]))
def test_generated_documents_read_the_same(doc, style):
    text = yaml.safe_dump(doc, default_flow_style=style, allow_unicode=True)
    assert yaml_data.load(text) == _oracle(text)
