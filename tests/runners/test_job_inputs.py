"""A job sees, read-only, exactly the inputs it was given, and an input is only ever something
its asker may read (runners/inputs.py at submit, runners/sandbox.py binding them).

The oracle for the generated cases is a set of concrete secret files (tfdesk's state, config,
an upload, a private copy, another job's file): whatever path is named, however it is spelled
(links, '..', a parent folder), an accepted input never shows one of them, and a member's
accepted input always lies in a catalog entry. The sandbox part runs a real job."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.jobs_helpers import make_engine, write
from runners.inputs import Grant, resolve
from runners.models import JobError


def _tree(root: Path) -> dict[str, Path]:
    """tfdesk's home (secrets), a catalog entry kept inside it, a job folder, the operator's
    data outside, and links from outside into the home."""
    home, data = root / "home", root / "data"
    files = {
        "state": home / "state.sqlite", "config": home / "tfdesk.toml",
        "upload": home / "slack" / "uploads" / "u1" / "up.txt",
        "gate": home / "gate" / "g1" / "copy.npz", "job": home / "jobs" / "j-1" / "out.txt",
        "kept": home / "catalog" / "files" / "k1" / "member.npz",
        "dataset": data / "sets" / "toy.npz", "other": data / "private" / "notes.txt",
    }
    files["kept2"] = home.joinpath(*KEPT_2)
    for p in files.values():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(p.name)
    links = data / "links"
    links.mkdir()
    for name in ("state", "upload", "dataset"):
        os.symlink(files[name], links / name)
    os.symlink(home, links / "home")
    return files


SECRETS = ("state", "config", "upload", "gate", "job")
KEPT_2 = ("catalog", "files", "k2", "other.npz")  # another kept copy: not the one granted


def _candidates(root: Path, files: dict[str, Path]) -> list[str]:
    names = [str(p) for p in files.values()]
    names += [str(p.parent) for p in files.values()]
    names += [str(root / "data" / "links" / n) for n in ("state", "upload", "dataset", "home")]
    names += [str(root / "data" / "links" / "home" / "state.sqlite"),
              str(root / "data" / "sets" / ".." / ".." / "home" / "tfdesk.toml"),
              str(root), str(root / "home"), str(root / "home" / "catalog" / "files"),
              str(root / "home" / "catalog"), "/", "relative/path", "", "a\x00b",
              str(root / "data" / "missing.npz")]
    return names


def _shows(path: str, secret: Path) -> bool:
    real = Path(os.path.realpath(path))
    return secret == real or secret.is_relative_to(real)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=4),
       anywhere=st.booleans())
def test_an_accepted_input_never_shows_tfdesks_files_nor_beyond_a_members_catalog(
        tmp_path_factory, picks, anywhere):
    root = tmp_path_factory.mktemp("inputs")
    files = _tree(root)
    home = root / "home"
    names = _candidates(root, files)
    grant = Grant(roots=(files["dataset"], files["kept"]), anywhere=anywhere,
                  forbidden=(home, home / "jobs"), shareable=(home / "catalog" / "files",))
    chosen = [names[i % len(names)] for i in picks]
    try:
        got = resolve(chosen, grant)
    except JobError as exc:
        assert str(exc).startswith("input ") and ("refused" in str(exc) or "not" in str(exc))
        return
    for path in got:
        assert Path(path).is_absolute() and Path(path).exists()
        for name in SECRETS:
            assert not _shows(path, files[name]), (chosen, path, name)
        assert not _shows(path, home), (chosen, path)  # never the home, nor what holds it
        assert not (_shows(path, files["kept"]) and _shows(path, files["kept2"])), path
        if not anywhere:
            assert any(Path(path) == files[n] or Path(path).is_relative_to(files[n])
                       for n in ("dataset", "kept")), (chosen, path)


def test_the_refusals_say_why(tmp_path):
    files = _tree(tmp_path)
    home = tmp_path / "home"
    member = Grant(roots=(files["dataset"],), forbidden=(home,))
    with pytest.raises(JobError, match="only catalog datasets and models"):
        resolve([str(files["other"])], member)
    with pytest.raises(JobError, match="tfdesk's own folder"):
        resolve([str(tmp_path / "data" / "links" / "state")], Grant(anywhere=True, forbidden=(home,)))
    with pytest.raises(JobError, match="does not exist"):
        resolve([str(tmp_path / "nope")], Grant(anywhere=True))
    assert resolve([str(tmp_path / "data" / "links" / "dataset")], member) == \
        (str(files["dataset"]),)


def test_submit_refuses_an_input_beyond_the_grant_and_makes_no_job(tmp_path):
    files = _tree(tmp_path)
    home = tmp_path / "home"
    files["state"].unlink()  # the engine's own database takes its place
    engine = make_engine(home, start=False)
    script = write(tmp_path / "s.py", "print('hi')\n")
    spec = {"script_path": str(script), "convert": "none"}
    for name, grant in ((files["other"], Grant(roots=(files["dataset"],))),
                        (files["config"], Grant(anywhere=True)),
                        (home / "jobs", Grant(anywhere=True))):
        with pytest.raises(JobError, match="refused"):
            engine.submit("train", {**spec, "inputs": [str(name)]}, grant=grant)
    with pytest.raises(JobError, match="refused"):  # no grant: nothing may be given
        engine.submit("train", {**spec, "inputs": [str(files["dataset"])]})
    assert engine.list() == []


@pytest.mark.slow
def test_a_job_reads_its_input_and_nothing_beside_it(tmp_path):
    """A real sandboxed job: its dataset is there, read-only, at its own path; the file next
    to it, which it was not given, is not."""
    files = _tree(tmp_path)
    home = tmp_path / "home"
    files["state"].unlink()
    engine = make_engine(home)
    try:
        probe = write(tmp_path / "probe.py", """
            import sys
            import os
            given, beside = sys.argv[1], sys.argv[2]
            print("named:", os.environ["TFDESK_INPUTS"] == given)
            print("given:", open(given).read())
            try:
                open(given, "a").write("x")
                print("WROTE")
            except OSError as exc:
                print("read-only:", type(exc).__name__)
            try:
                open(beside).read()
                print("SAW-BESIDE")
            except OSError as exc:
                print("beside hidden:", type(exc).__name__)
            """)
        beside = files["dataset"].parent / "beside.txt"
        beside.write_text("not given")
        job = engine.submit("train", {"script_path": str(probe), "convert": "none",
                                      "inputs": [str(files["dataset"])],
                                      "args": [str(files["dataset"]), str(beside)]},
                            grant=Grant(roots=(files["dataset"],)))
        done = engine.wait(job.id, timeout=60)
        log = engine.read_log(job.id)
        assert done.state == "succeeded", log
        assert "named: True" in log and "given: toy.npz" in log and "read-only:" in log and "beside hidden:" in log, log
        assert "WROTE" not in log and "SAW-BESIDE" not in log
        assert files["dataset"].read_text() == "toy.npz"
    finally:
        engine.close()


def test_a_member_gives_catalog_names_and_never_a_server_path(tmp_path):
    """Through dispatch: a Slack member's --input is a catalog name; any path they write is
    refused with the reason, and the operator may name a file of theirs but never tfdesk's."""
    from bot.config import load_config
    from bot.context import Context
    from bot.dispatch import run_line
    from bot.permissions import Actor, member
    home = tmp_path / "home"
    home.mkdir()
    data = tmp_path / "data"
    data.mkdir()
    np_file, private = data / "toy.npz", data / "private.txt"
    np_file.write_text("toy")
    private.write_text("private")
    slack = {"kind": "slack", "channel": "C1", "thread_ts": "1.0"}

    def ctx_of(actor):
        return Context(load_config({"TFDESK_HOME": str(home)}), actor=actor,
                       reply_to=slack if actor.remote else {"kind": "terminal"})

    operator = ctx_of(Actor("local"))
    assert run_line(operator, f"datasets add toy {np_file}")[1].ok
    key = home / "slack" / "uploads" / "F1"
    key.mkdir(parents=True)
    (key / "s.py").write_text("print('hi')\n")
    (key / "upload.json").write_text('{"name": "s.py", "user": "U1"}')
    asker = ctx_of(member("U1", "compute"))
    r = run_line(asker, "train F1/s.py --input toy --dry-run")[1]
    assert r.ok, r.text
    assert r.data["spec"]["inputs"] == [str(np_file.resolve())]
    for hostile in (str(private), "/etc/passwd", str(home / "state.sqlite"), "../data/toy.npz"):
        r = run_line(asker, f"train F1/s.py --input {hostile} --dry-run")[1]
        assert not r.ok and "no dataset or model named" in r.text, (hostile, r.text)
    r = run_line(operator, f"train {key / 's.py'} --input {private} --dry-run")[1]
    assert r.ok and r.data["spec"]["inputs"] == [str(private.resolve())], r.text
    r = run_line(operator, f"train {key / 's.py'} --input {home / 'tfdesk.toml'} --dry-run")[1]
    assert not r.ok and "tfdesk's own folder" in r.text, r.text
    for ctx in (operator, asker):
        ctx.services.close()


def test_a_cluster_job_reads_inputs_only_from_the_shared_volume(tmp_path):
    volume, elsewhere = tmp_path / "volume", tmp_path / "elsewhere"
    for d in (volume, elsewhere):
        d.mkdir()
        (d / "x.npz").write_text("x")
    script = write(tmp_path / "s.py", "print('hi')\n")
    engine = make_engine(tmp_path / "home", start=False, kubernetes={
        "api_url": "http://127.0.0.1:9", "pvc": "shared", "pvc_local_path": str(volume)})
    spec = {"script_path": str(script), "convert": "none"}
    grant = Grant(anywhere=True)
    plan = engine.dry_run("train", {**spec, "inputs": [str(volume / "x.npz")]}, "kubernetes",
                          grant=grant)
    assert plan["spec"].inputs == (str((volume / "x.npz").resolve()),)
    with pytest.raises(JobError, match="not on the shared volume"):
        engine.dry_run("train", {**spec, "inputs": [str(elsewhere / "x.npz")]}, "kubernetes",
                       grant=grant)


@pytest.mark.slow
def test_an_entry_of_another_jobs_folder_is_a_private_copy_at_its_own_path(tmp_path):
    """A catalog model a job made lives in that job's folder: the next job is given a copy
    (read without following links) bound read-only at the model's own path, and nothing
    else of the other job's folder; a link in it, the records and the folder of all jobs
    are refused at submit."""
    home = tmp_path / "home"
    engine = make_engine(home)
    try:
        maker = write(tmp_path / "maker.py", """
            import os, pathlib
            w = pathlib.Path(os.environ["TFDESK_WORKDIR"])
            (w / "model").mkdir()
            (w / "model" / "weights.bin").write_text("weights")
            (w / "secret.txt").write_text("not given")
            """)
        first = engine.wait(engine.submit("train", {"script_path": str(maker),
                                                    "convert": "none"}).id, timeout=60)
        assert first.state == "succeeded", engine.read_log(first.id)
        model, secret = Path(first.workdir) / "model", Path(first.workdir) / "secret.txt"
        reader = write(tmp_path / "reader.py", """
            import os, sys
            model, secret = sys.argv[1], sys.argv[2]
            print("weights:", open(os.path.join(model, "weights.bin")).read())
            for what, path in (("secret", secret), ("write", os.path.join(model, "x"))):
                try:
                    open(path, "w" if what == "write" else "r").write("x") if what == "write" \\
                        else open(path).read()
                    print("LEAK", what)
                except OSError as exc:
                    print("refused", what, type(exc).__name__)
            """)
        member = Grant(roots=(model,))
        job = engine.submit("train", {"script_path": str(reader), "convert": "none",
                                      "inputs": [str(model)], "args": [str(model), str(secret)]},
                            grant=member)
        assert set(job.spec.input_copies) == {str(model.resolve())}
        done = engine.wait(job.id, timeout=60)
        log = engine.read_log(job.id)
        assert done.state == "succeeded", log
        assert "weights: weights" in log and "refused secret" in log and "refused write" in log
        assert "LEAK" not in log
        os.symlink(home / "tfdesk.toml", model / "link")
        spec = {"script_path": str(reader), "convert": "none"}
        for hostile in (model, secret, home / "jobs", home / "jobs" / ".records",
                        Path(first.workdir)):
            with pytest.raises(JobError, match="refused"):
                engine.submit("train", {**spec, "inputs": [str(hostile)]}, grant=member)
    finally:
        engine.close()
