"""One default environment per kind (issue 28, found by running the catalog guide): making an
image the default for Kubernetes jobs leaves local jobs their default interpreter, so a local
job is never moved to another runtime because an image became the default."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hypothesis import given, settings, strategies as st

from catalog import environments, open_db
from runners.runtimes import Needs, choose

KINDS = ("local", "image")
_op = st.tuples(st.sampled_from(("add", "add-default", "set-default")),
                st.sampled_from(KINDS), st.integers(0, 3))


def _add(conn, kind, n, default):
    name = f"{kind}-{n}"
    if conn.execute("SELECT 1 FROM catalog_environments WHERE name = ?", (name,)).fetchone():
        return None
    extra = {"image": f"reg.example/tf:{n}"} if kind == "image" else {"python": sys.executable}
    environments.add(conn, name, "ann", kind=kind, tf_version=f"2.{15 + n}.0", default=default,
                     **extra)
    return name


@settings(max_examples=60, deadline=None)
@given(ops=st.lists(_op, max_size=12))
def test_each_kind_keeps_its_own_default(ops):
    with tempfile.TemporaryDirectory() as d:
        conn = open_db(Path(d) / "state.sqlite")
        try:
            environments.ensure_default(conn, sys.executable)  # a real interpreter
            expect = {"local": "runner", "image": None}
            for what, kind, n in ops:
                if what == "set-default":
                    name = f"{kind}-{n}"
                    if conn.execute("SELECT 1 FROM catalog_environments WHERE name = ?",
                                    (name,)).fetchone():
                        environments.set_default(conn, name)
                        expect[kind] = name
                    continue
                name = _add(conn, kind, n, what == "add-default")
                if name and what == "add-default":
                    expect[kind] = name
            envs = environments.records(conn)
            for kind in KINDS:
                got = [e["name"] for e in envs if e["kind"] == kind and e["default"]]
                assert got == ([expect[kind]] if expect[kind] else []), (kind, ops)
            # the local default is the one a local job that needs nothing in particular gets
            env, _ = choose(envs, Needs(), "local")
            assert env["name"] == expect["local"]
        finally:
            conn.close()
