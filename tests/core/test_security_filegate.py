"""The one file gate, by invariant (core/filegate.py, bot/paths.read).

Invariants, checked on generated names, planted links and a link swapped in while the gate
opens the file over and over:

1. Whatever a name is, what the gate opens is an inode beneath the root reached through no
   link (one of the inodes a link-free walk of the root finds), and a regular file has no
   other name.
2. No content of a file outside a member's own files ever reaches them: not in a copy, not in
   an error message.
3. Only s3/gs/pvc, in any case, are URIs, and a URI never becomes a local path.
"""
from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from bot.config import load_config
from bot.paths import Areas, PathRefused, read, writable
from bot.permissions import Actor, member
from core import filegate as gate

SECRET = "SECRET-never-for-members-7f3a"
MINE = "mine: print('hello')\n"
THEIRS = "theirs: UB's own script\n"
PROPS = settings(max_examples=300, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture])


def legit_inodes(root: Path) -> set[tuple[int, int]]:
    """Every inode a walk of ``root`` that follows no link reaches."""
    found = set()
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files, "."]:
            st_ = os.lstat(os.path.join(folder, name))
            if not stat.S_ISLNK(st_.st_mode):
                found.add((st_.st_dev, st_.st_ino))
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A tfdesk home with UA's upload and output, UB's upload, a job of UA's, the config file
    holding a secret, and links (to outside, to UB's file, chains) planted everywhere UA can
    name."""
    base = tmp_path_factory.mktemp("gate")
    home = base / "home"
    (home / "slack" / "uploads").mkdir(parents=True)
    (home / "tfdesk.toml").write_text(f"# {SECRET}\n[slack]\n")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)

    def upload(user, key, name="train.py", text=MINE):
        folder = home / "slack" / "uploads" / key
        folder.mkdir()
        (folder / name).write_text(text)
        (folder / "upload.json").write_text(f'{{"name": "{name}", "user": "{user}"}}')
        return folder
    mine = upload("UA", "FUA")
    theirs = upload("UB", "FUB", text=THEIRS)
    out = home / "slack" / "outputs" / "UA"
    (out / "sub").mkdir(parents=True)
    (out / "sub" / "r.txt").write_text(MINE)
    job = home / "jobs" / "j-0a0a0a0a"
    (job / "out").mkdir(parents=True)
    (job / "out" / "model.txt").write_text(MINE)
    # What a job (or anyone who could write there) plants:
    for folder in (mine, out, job / "out"):
        (folder / "to-config").symlink_to(home / "tfdesk.toml")
        (folder / "to-outside").symlink_to(outside)
        (folder / "to-theirs").symlink_to(theirs / "train.py")
        (folder / "chain").symlink_to(folder / "to-config")
        (folder / "dots").symlink_to("../../../../..")
        os.link(outside / "secret.txt", folder / f"hard-{folder.name}")
    os.mkfifo(out / "fifo")
    config = load_config({"TFDESK_HOME": str(home)})
    return {"home": home, "areas": Areas.of(config), "outside": outside, "mine": mine,
            "job": job, "out": out}


def owner_of(job_id: str) -> str | None:
    return "UA" if job_id == "j-0a0a0a0a" else None


# -- names -----------------------------------------------------------------------------------------
PIECES = ["train.py", "FUA", "FUB", "outputs", "sub", "r.txt", "j-0a0a0a0a", "out",
          "model.txt", "to-config", "to-outside", "to-theirs", "chain", "dots", "secret.txt",
          "hard-FUA", "hard-UA", "hard-out", "fifo", "tfdesk.toml", "..", ".", "", "~",
          "%2e%2e", "%2F", "x:", "\x00", "é", "\u202e", "a" * 300, "uploads", "slack",
          "upload.json", "jobs", "\ud800"]
LINKS = st.sampled_from(["to-config", "to-outside", "to-theirs", "chain", "dots", "hard-FUA",
                         "hard-UA", "hard-out", "fifo", "secret.txt", ".."])
SCHEMES = st.sampled_from(["file", "FILE", "FiLe", "x", "s3", "S3", "gs", "Gs", "pvc", "PVC",
                           "http", "hdfs", "", "~/…/x", "../x"])


STARTS = ["", "/", "~/", "./", "FUA/", "FUB/", "outputs/", "outputs/sub/", "j-0a0a0a0a/",
          "j-0a0a0a0a/out/", "{home}/", "{uploads}/", "{uploads}/FUA/", "{uploads}/FUB/",
          "{jobs}/j-0a0a0a0a/out/", "{home}/slack/outputs/UA/", "{outside}/"]


HOME_STARTS = [x for x in STARTS if x.startswith(("{home}", "{uploads}", "{jobs}"))]


@st.composite
def names(draw, starts=tuple(STARTS)):
    """A start a member could mean (their upload, outputs, job, a server path), then parts:
    mostly the names of what is there (files, planted links, '..'), some junk."""
    parts = draw(st.lists(st.one_of(LINKS, LINKS, st.sampled_from(PIECES), st.text(max_size=8)),
                          min_size=1, max_size=4))
    sep = draw(st.sampled_from(["/", "//", "/./"]))
    name = draw(st.sampled_from(starts)) + sep.join(parts)
    if draw(st.integers(0, 3)) == 0:
        name = f"{draw(SCHEMES)}://{name}"
    return name


def expand(name: str, w) -> str:
    a = w["areas"]
    return (name.replace("{home}", str(w["home"])).replace("{uploads}", str(a.uploads))
            .replace("{jobs}", str(a.jobs)).replace("{outside}", str(w["outside"])))


# -- 1. what the gate opens ------------------------------------------------------------------------
@PROPS
@given(name=names())
def test_the_gate_opens_only_inodes_beneath_the_root_reached_without_links(world, name):
    root = world["out"]
    legit = legit_inodes(root)
    try:
        opened = gate.open_beneath(root, gate.components(expand(name, world)))
    except (gate.GateRefused, FileNotFoundError) as exc:
        assert SECRET not in str(exc)
        return
    with opened:
        assert opened.identity in legit
        if not opened.is_dir:
            assert opened.st.st_nlink == 1


# -- 2. what a member gets -------------------------------------------------------------------------
def _copies(path: Path) -> list[bytes]:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for p in [path, *path.rglob("*")] if path.is_dir() else [path]:
        assert not p.is_symlink()
    return [p.read_bytes() for p in files]


@PROPS
@given(name=names(), admin=st.booleans(), names_ok=st.booleans(), place=st.booleans())
def test_no_content_outside_a_members_own_files_reaches_them(world, name, admin, names_ok,
                                                             place):
    actor = member("UA", "admin") if admin else member("UA")
    value = expand(name, world)
    try:
        got = read(actor, value, world["areas"], owner_of, names_ok, lambda _: None, place)
    except PathRefused as exc:
        assert SECRET not in str(exc)
        return
    if gate.uri_scheme(value) is not None:
        assert place and got.value.split("://")[0] in gate.REMOTE_SCHEMES
        assert not Path(got.value).exists()
        return
    copy = Path(got.value)
    assert copy.is_relative_to(world["areas"].gate) or copy.is_relative_to(world["areas"].kept)
    for content in _copies(copy):
        assert SECRET.encode() not in content
        if not admin:  # UB's upload: only an admin reads it
            assert content in (MINE.encode(), b"") or content.startswith(b"{")


@PROPS
@given(name=names(starts=tuple(HOME_STARTS)))
def test_the_terminal_passes_the_same_gate_inside_tfdesks_folders(world, name):
    """The operator's own links elsewhere are theirs; inside tfdesk's folders (jobs write
    there) none is followed, and tfdesk's own folders are nobody's to name."""
    value = expand(name, world)
    assume(value.startswith(str(world["home"])))  # elsewhere: the operator's machine
    try:
        got = read(Actor("local"), value, world["areas"], owner_of)
    except PathRefused as exc:
        assert SECRET not in str(exc)
        return
    real = Path(os.path.realpath(Path(value).expanduser()))
    if real.is_relative_to(world["home"]) or Path(os.path.abspath(value)).is_relative_to(
            world["home"]):
        for content in _copies(Path(got.value)):
            assert SECRET.encode() not in content, value


@pytest.mark.parametrize("value", ["FILE:///etc/shadow", "file:///etc/passwd", "file://",
                                   "x://../../../../tfdesk.toml", "~/…/x://../../tfdesk.toml",
                                   "s3://bucket/../../etc", "S3://b/\x00", "hdfs://nn/x",
                                   "http://example.com/x", "gs://", "pvc://claim/a b"])
def test_no_uri_off_the_allow_list_and_no_uri_is_a_path(world, value):
    for actor in (member("UA", "admin"), Actor("local")):
        with pytest.raises(PathRefused) as caught:
            read(actor, value, world["areas"], owner_of, place=True)
        assert "://" in str(caught.value) or "NUL" in str(caught.value)


@given(scheme=st.sampled_from(gate.REMOTE_SCHEMES), case=st.lists(st.booleans(), min_size=3,
                                                                   max_size=3))
def test_allowed_schemes_in_any_case_are_uris_kept_remote(scheme, case):
    written = "".join(c.upper() if up else c for c, up in zip(scheme, case))
    assert gate.remote_uri(f"{written}://bucket-1/data/x.csv") == f"{scheme}://bucket-1/data/x.csv"
    with pytest.raises(gate.GateRefused):
        gate.components("a/../b")


# -- 3. a link swapped in while the gate opens ---------------------------------------------------
@pytest.mark.parametrize("where", ["leaf", "folder"])
def test_a_link_swapped_in_between_never_leads_outside(world, tmp_path, where):
    """A thread swaps the member's file (or a folder above it) for a link to the secret, and
    back, as fast as it can, while the gate opens the name 2,000 times: every open is the
    member's file or refused, never the secret."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    target = root / "d" / "f.txt"
    target.write_text(MINE)
    secret = outside / "f.txt"  # one name only: the hard-link check cannot be what stops it
    secret.write_text(SECRET)
    stop = threading.Event()

    def swap():
        n = 0
        while not stop.is_set():
            n += 1
            if where == "leaf":
                tmp = root / "d" / f".l{n}"
                tmp.symlink_to(secret)
                os.replace(tmp, target)  # now a link
                good = root / "d" / f".g{n}"
                good.write_text(MINE)
                os.replace(good, target)  # a file again
                time.sleep(0.0002)
            else:
                os.rename(root / "d", root / "saved")
                os.symlink(outside, root / "d")
                time.sleep(0.0001)
                os.unlink(root / "d")
                os.rename(root / "saved", root / "d")
                time.sleep(0.0002)
    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    outcomes = {"opened": 0, "refused": 0, "missing": 0}
    try:
        for _ in range(2000):
            try:
                with gate.open_beneath(root, ("d", "f.txt")) as f:
                    content = os.pread(f.fd, 100, 0)
                    assert SECRET.encode() not in content
                    assert f.identity != (os.stat(secret).st_dev, os.stat(secret).st_ino)
                    outcomes["opened"] += 1
            except gate.GateRefused as exc:
                assert SECRET not in str(exc)
                outcomes["refused"] += 1
            except FileNotFoundError:
                outcomes["missing"] += 1
    finally:
        stop.set()
        swapper.join()
    assert outcomes["opened"] > 0 and outcomes["refused"] + outcomes["missing"] > 0, outcomes


# -- outputs -----------------------------------------------------------------------------------------
@PROPS
@given(name=names())
def test_outputs_land_in_the_members_own_folder_and_never_over_a_link(world, name):
    value = expand(name, world)
    try:
        path = Path(writable(member("UA"), value, world["areas"]))
    except PathRefused as exc:
        assert SECRET not in str(exc)
        return
    assert path.is_relative_to(world["areas"].outputs("UA"))
    assert not path.is_symlink() and not path.is_dir()
    rel = path.relative_to(world["areas"].outputs("UA"))
    for i in range(1, len(rel.parts)):  # no folder on the way is a link
        assert not (world["areas"].outputs("UA") / Path(*rel.parts[:i])).is_symlink()
