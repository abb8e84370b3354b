"""Every shipped data file of the KB is in knowledge_base/data/MANIFEST.yaml, with what it is,
whether tfdesk reads it at run time, the command that writes it, and its sha256, which matches
the file (a rewritten binary must come with its manifest entry)."""
import yaml

from knowledge_base import data_manifest


def test_the_shipped_data_matches_its_manifest():
    problems = data_manifest.problems()
    assert not problems, "\n".join(map(str, problems))


def test_every_entry_says_what_writes_it_and_from_what():
    for e in data_manifest.entries():
        assert e.purpose and e.written_by, e.path
        assert e.use.split(" ")[0] in ("runtime", "build-only"), e.path
        # A command to run, or said to be written by hand.
        assert e.written_by.startswith(("tfdesk ", ".venv/bin/python -m tools.", "hand-written")), \
            e.path


def test_a_changed_unlisted_or_gone_file_is_found(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "qa" / "data").mkdir(parents=True)
    (tmp_path / "data" / "a.txt").write_text("a")
    (tmp_path / "qa" / "data" / "b.bin").write_bytes(b"b")
    manifest = tmp_path / "data" / "MANIFEST.yaml"
    entry = {"purpose": "p", "use": "runtime (ask)", "written_by": "hand-written"}
    manifest.write_text(yaml.safe_dump({"files": [
        {"path": "data/a.txt", **entry, "sha256": data_manifest.sha256(tmp_path / "data/a.txt")},
        {"path": "data/gone.txt", **entry, "sha256": "0" * 64}]}))
    found = {(p.kind, p.path) for p in data_manifest.problems(tmp_path, manifest)}
    assert found == {("unlisted", "qa/data/b.bin"), ("missing", "data/gone.txt")}
    (tmp_path / "data" / "a.txt").write_text("changed")
    found = {(p.kind, p.path) for p in data_manifest.problems(tmp_path, manifest)}
    assert ("checksum", "data/a.txt") in found
