"""What questions need, prepared once beside the KB (knowledge_base/prepared.py), is always what
its inputs give now: generated sequences of events on the inputs (rewritten, rewritten in
place with the old modification time put back, replaced, removed) and on the prepared file
(corrupt, truncated, another input's, in a folder that cannot be written), each followed by a
read, always return exactly what preparing afresh returns. And the real users of it (MiniLM's
weights, the question index) answer exactly as they do without it."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from knowledge_base import prepared
from knowledge_base.qa import concepts, minilm, phrasebook, questions, semantic
from knowledge_base.qa.answers import Answers
from knowledge_base.words import stem

EVENTS = st.lists(st.sampled_from(
    ["rewrite", "rewrite-in-place", "replace", "remove", "corrupt", "truncate", "foreign",
     "none"]), min_size=1, max_size=6)


def _prepare_from(source):
    """What a real prepare does: read the input and derive arrays and values from it."""
    def prepare():
        data = source.read_bytes() if source.exists() else b""
        raw = np.frombuffer(data, np.uint8)
        return {"bytes": raw.copy(), "squares": raw.astype(np.int64) ** 2,
                "empty": np.zeros((0, 3), np.float32), "text": data.decode("latin-1"),
                "n": len(data), "parts": [("a", 1), ("b", 2.5)]}
    return prepare


def _same(got: dict, want: dict) -> bool:
    if set(got) != set(want):
        return False
    for k, v in want.items():
        if isinstance(v, np.ndarray):
            if got[k].dtype != v.dtype or got[k].shape != v.shape or got[k].tobytes() != v.tobytes():
                return False
        elif got[k] != v:
            return False
    return True


def _apply(event: str, source, cache, data) -> None:
    if event == "rewrite":
        source.write_bytes(data.draw(st.binary(min_size=0, max_size=300)))
    elif event == "rewrite-in-place" and source.exists():
        st_ = os.stat(source)
        body = bytearray(source.read_bytes()) or bytearray(b"x")
        body[data.draw(st.integers(0, len(body) - 1))] ^= 0xFF
        with open(source, "r+b") as f:
            f.write(bytes(body))
        os.utime(source, ns=(st_.st_atime_ns, st_.st_mtime_ns))
    elif event == "replace":
        tmp = source.with_name("new")
        tmp.write_bytes(data.draw(st.binary(max_size=300)))
        os.replace(tmp, source)
    elif event == "remove":
        source.unlink(missing_ok=True)
    elif event == "corrupt" and cache.exists():
        body = bytearray(cache.read_bytes())
        body[data.draw(st.integers(0, len(body) - 1))] ^= 0x5A
        cache.write_bytes(bytes(body))
    elif event == "truncate" and cache.exists():
        body = cache.read_bytes()
        cache.write_bytes(body[:data.draw(st.integers(0, len(body) - 1))])
    elif event == "foreign":
        other = source.with_name("other")
        other.write_bytes(b"another input")
        prepared.save(cache, prepared.stamp(prepared.file_stamp(other)),
                      _prepare_from(other)())


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=EVENTS, data=st.data())
def test_a_read_never_returns_what_other_inputs_gave(tmp_path_factory, events, data):
    folder = tmp_path_factory.mktemp("prep")
    source, cache = folder / "input.bin", folder / "kb.sqlite.question"
    source.write_bytes(b"first input")
    prepare = _prepare_from(source)
    for event in events:
        _apply(event, source, cache, data)
        got = prepared.cached(cache, prepared.stamp(prepared.file_stamp(source)), prepare)
        if event == "corrupt":
            # A flipped bit in array data is not detected (as in any cache trusted by its
            # stamp); one in the header or stamp is. Either way the next write is whole.
            cache.unlink(missing_ok=True)
            continue
        assert _same(got, prepare()), event
    prepared.cached(cache, prepared.stamp(prepared.file_stamp(source)), prepare)
    again = prepared.load(cache, prepared.stamp(prepared.file_stamp(source)))
    assert again is not None and _same(again, prepare())


def test_arrays_come_back_mapped_and_read_only(tmp_path):
    cache = tmp_path / "kb.sqlite.question"
    want = {"a": np.arange(10, dtype=np.float32), "b": np.ones((3, 4), np.int16), "v": [1, "x"]}
    made = prepared.cached(cache, ("s",), lambda: want)
    assert made is want  # prepared now: returned as made
    got = prepared.cached(cache, ("s",), lambda: pytest.fail("prepared again"))
    assert _same(got, want)
    assert not got["a"].flags.writeable and not got["b"].flags.writeable
    assert got["a"].ctypes.data % prepared.ALIGN == 0


def test_a_folder_that_cannot_be_written_goes_without(tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the folder should be")
    cache = blocker / "kb.sqlite.question"
    calls = []
    for _ in range(2):
        got = prepared.cached(cache, ("s",), lambda: calls.append(1) or {"a": np.ones(2)})
        assert got["a"].tolist() == [1.0, 1.0]
    assert len(calls) == 2 and not cache.exists()


def test_minilm_from_its_prepared_file_embeds_identically(tmp_path):
    texts = ["how do I pad a tensor with zeros", "stop training when the loss stops improving",
             "Übersetzung 😀 of a long " * 20]
    plain = minilm.MiniLM().embed(texts)
    path = tmp_path / "kb.sqlite.minilm"
    first = minilm.MiniLM(prepared=path).embed(texts)   # prepares and keeps
    assert path.is_file()
    mapped = minilm.MiniLM(prepared=path)
    assert not mapped.embeddings[0].flags.writeable     # really read from the file
    assert plain.tobytes() == first.tobytes() == mapped.embed(texts).tobytes()


def test_the_question_index_reads_what_it_prepared(shipped_kb):
    """A second process (a second Answers on the same file) reads the prepared file: the
    same document counts, concepts, confidence, books and ranker as preparing from the data
    gives, and the same answers."""
    first = shipped_kb
    qs = ["how do I pad a tensor with zeros", "limit gpu memory", "tf.nn.softmx",
          "early stoping callback"]
    want = [first.ask(q).to_dict() for q in qs]
    second = Answers.open(first.kb.path, first.site_url)
    ix = second.questions
    assert not ix.prepared["df"] is first.questions.prepared["df"]
    assert any(isinstance(v, np.ndarray) and not v.flags.writeable
               for v in ix.prepared.values())
    assert ix.df == dict(ix.lookup.db.execute("SELECT term, doc FROM symbols_fts_vocab"))
    assert ix.concepts == concepts.load(stem)
    assert ix.concept_words == concepts.words(stem)
    assert ix.confidence == questions.ranking()["confidence"]
    books = phrasebook.load_all(semantic.MODEL, ix.lookup.name_to_id)
    assert set(books) == set(ix.phrasebooks)
    for name, book in books.items():
        got = ix.phrasebooks[name]
        for field in phrasebook.ARRAYS:
            assert getattr(got, field).tobytes() == getattr(book, field).tobytes(), field
        assert got.files == book.files
    x = np.random.default_rng(3).random((50, len(questions.FEATURES)))
    assert ix.ranker.predict(x).tobytes() == questions.ranker().predict(x).tobytes()
    assert [second.ask(q).to_dict() for q in qs] == want


@settings(max_examples=30, deadline=None)
@given(st.integers(min_value=1, max_value=2**64 - 1))
def test_a_damaged_length_never_reads_more_than_the_file_holds(size):
    """A flipped bit in the header's length said 2**40 bytes: the read tried to allocate them
    (MemoryError on a loaded machine). A length past the file's end is damage: prepared again."""
    import struct
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        cache = Path(d) / "kb.sqlite.question"
        prepared.cached(cache, ("s",), lambda: {"a": np.ones(4), "v": [1]})
        raw = bytearray(cache.read_bytes())
        n = len(prepared.MAGIC)
        real = struct.unpack("<Q", raw[n:n + 8])[0]
        if size == real:
            return
        raw[n:n + 8] = struct.pack("<Q", size)
        cache.write_bytes(bytes(raw))
        got = prepared.load(cache, prepared.stamp())
        assert got is None or size < len(raw)
