"""``ask``'s answer as a type (knowledge_base.qa.answer.Answer): ``to_dict`` is the --json
shape, fields in declared order, unsaid (None) fields left out, and dict reading agrees."""
from __future__ import annotations

import json
from dataclasses import fields

from hypothesis import given, strategies as st

from knowledge_base.qa.answer import Answer

NAMES = [f.name for f in fields(Answer)]
VALUE = st.one_of(st.none(), st.text(max_size=5), st.lists(st.text(max_size=3), max_size=2))


@given(values=st.fixed_dictionaries({n: VALUE for n in NAMES if n not in ("query", "version")}),
       query=st.text(max_size=5), version=st.one_of(st.none(), st.text(max_size=4)))
def test_to_dict_is_the_set_fields_in_order(values, query, version):
    if values["results"] is None:
        values["results"] = []
    a = Answer(query=query, version=version, **values)
    d = a.to_dict()
    assert all(v is not None for v in d.values())
    assert set(d) == {n for n in NAMES if getattr(a, n) is not None}
    if version is None and a.message is not None:  # the empty question's order, kept
        assert list(d)[:3] == ["query", "results", "message"]
        rest = [k for k in d if k not in ("query", "results", "message")]
    else:
        rest = list(d)
    assert rest == sorted(rest, key=NAMES.index)
    assert dict(a) == d and a == d and len(a) == len(d)
    assert json.loads(json.dumps(d)) == d
