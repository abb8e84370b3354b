"""Copies the file gate keeps for catalog entries (TFDESK_HOME/catalog/files): after any
sequence of in-place adds and deletes by a Slack member, the copies on disk are exactly those
some remaining entry points at (catalog/kept.py) -- none orphaned, none pulled from under an
entry."""
from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings, strategies as st

from bot.config import load_config
from bot.context import Context
from bot.dispatch import run_line
from bot.permissions import member
from catalog.kept import copy_folder

SLACK = {"kind": "slack", "channel": "C1", "thread_ts": "1.0"}
ADDS = {"model": "models add {name} FDATA --in-place --format keras",
        "dataset": "datasets add {name} FDATA/data.keras --format other"}
# an op: add an entry of a kind under a name, or delete the entry (every version) of a name
ops = st.lists(st.tuples(st.sampled_from(["model", "dataset", "delete"]),
                         st.sampled_from(["a", "b"])), min_size=1, max_size=6)


def _setup(home: Path) -> Context:
    folder = home / "slack" / "uploads" / "FDATA"
    folder.mkdir(parents=True)
    (folder / "data.keras").write_text("PK\x03\x04 model")
    (folder / "upload.json").write_text(json.dumps({"name": "data.keras", "user": "UCOMP"}))
    return Context(load_config({"TFDESK_HOME": str(home)}), actor=member("UCOMP", "compute"),
                   reply_to=SLACK)


def _pointed_at(ctx: Context, kept: Path) -> set[Path]:
    """The kept copies the remaining entries point at, read through the commands."""
    out = set()
    for kind, key, field in (("models", "models", "artifact_uri"),
                             ("datasets", "datasets", "uri")):
        reply = run_line(ctx, f"{kind} list --json")[1]
        for entry in reply.data[key]:
            folder = copy_folder(kept, entry[field])
            assert folder is not None, entry  # a member's in-place entry is a kept copy
            out.add(folder)
    return out


@settings(max_examples=12, deadline=None)
@given(ops)
def test_kept_copies_are_exactly_those_entries_point_at(tmp_path_factory, steps):
    home = tmp_path_factory.mktemp("home").resolve()
    ctx = _setup(home)
    kept = home / "catalog" / "files"
    kinds: dict[str, str] = {}   # name -> the kind added under it (names are per kind)
    for op, name in steps:
        if op == "delete":
            if name in kinds:
                reply = run_line(ctx, f"{kinds.pop(name)}s delete {name}")[1]
                assert reply.ok, reply.text
            continue
        if name in kinds and kinds[name] != op:
            continue  # keep one kind per name so 'delete NAME' has one meaning here
        reply = run_line(ctx, ADDS[op].format(name=name))[1]
        # a model gets a new version; a second dataset of a name is refused, keeping no copy
        assert reply.ok == (op == "model" or name not in kinds), reply.text
        kinds[name] = op
        on_disk = {p for p in kept.iterdir()} if kept.exists() else set()
        assert on_disk == _pointed_at(ctx, kept)
    on_disk = {p for p in kept.iterdir()} if kept.exists() else set()
    assert on_disk == _pointed_at(ctx, kept)
    for file in on_disk:
        assert (file / "data.keras").read_text() == "PK\x03\x04 model"
