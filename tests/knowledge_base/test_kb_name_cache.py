"""The name lookup's cached tables (knowledge_base.name_cache) are always the ones its KB file
holds now: whatever happened to the KB (rebuilt, written in place with its time stamp put
back) or to the cache (corrupt, truncated, another KB's), a Searcher's tables equal those
built from SQL. Generated sequences of those events, each followed by a fresh Searcher."""
import os
import shutil
import sqlite3

from hypothesis import HealthCheck, given, settings, strategies as st

from knowledge_base import name_cache
from knowledge_base.builder import build_kb
from knowledge_base.search import Searcher, build_tables
from tests.kbdata import history_releases

EVENTS = st.lists(st.sampled_from(
    ["rebuild-small", "rebuild-full", "write-in-place", "corrupt", "truncate", "foreign",
     "none"]), min_size=1, max_size=6)


def _tables(s: Searcher) -> tuple:
    return s.names, s.kinds, s._facts, s.name_to_id, s.short, s.children


def _write_in_place(kb):
    """A committed write that keeps the file's size and modification time."""
    st = os.stat(kb)
    with sqlite3.connect(kb) as db:
        sid = db.execute("SELECT max(id) FROM symbols").fetchone()[0]
        kind = db.execute("SELECT kind FROM symbols WHERE id = ?", (sid,)).fetchone()[0]
        db.execute("UPDATE symbols SET kind = ? WHERE id = ?",
                   ("function" if kind != "function" else "class", sid))
    db.close()
    os.utime(kb, ns=(st.st_atime_ns, st.st_mtime_ns))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=EVENTS, data=st.data())
def test_a_searcher_never_reads_tables_of_another_file(tmp_path_factory, events, data):
    folder = tmp_path_factory.mktemp("names")
    kb, other = folder / "kb.sqlite", folder / "other.sqlite"
    releases = history_releases()
    build_kb(releases, kb)
    build_kb(releases[:1], other)
    Searcher(sqlite3.connect(other), ["x"])  # the other KB's cache, for "foreign"
    for event in events:
        cache = name_cache.path_for(kb)
        if event == "rebuild-small":
            build_kb(releases[:data.draw(st.integers(1, len(releases) - 1))], kb)
        elif event == "rebuild-full":
            build_kb(releases, kb)
        elif event == "write-in-place":
            _write_in_place(kb)
        elif event == "corrupt" and cache.exists():
            cache.write_bytes(data.draw(st.binary(max_size=64)))
        elif event == "truncate" and cache.exists():
            cache.write_bytes(cache.read_bytes()[:data.draw(st.integers(0, 200))])
        elif event == "foreign":
            shutil.copyfile(name_cache.path_for(other), cache)
        db = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
        assert _tables(Searcher(db, ["x"])) == build_tables(db), events
        db.close()


def test_the_cache_is_used_and_equal(tmp_path):
    kb = tmp_path / "kb.sqlite"
    build_kb(history_releases(), kb)
    db = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    first = _tables(Searcher(db, ["x"]))  # builds and writes the cache
    assert name_cache.path_for(kb).is_file()
    made = name_cache.load(kb, name_cache.stamp(kb))
    assert made is not None and tuple(made) == first == build_tables(db)


def test_an_unwritable_folder_goes_without(tmp_path):
    kb = tmp_path / "kb.sqlite"
    build_kb(history_releases(), kb)
    name_cache.path_for(kb).mkdir()  # the cache's name is taken: nothing can be written there
    db = sqlite3.connect(f"file:{kb}?mode=ro", uri=True)
    assert _tables(Searcher(db, ["x"])) == build_tables(db)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
