"""tools/real_questions.py: real users' questions are split by a hash of their thread alone,
bad entries are dropped with a reason, and the repository's manifest (URLs and answers, no
wording) agrees with that split and names only symbols the KB has."""
import pytest
import yaml

from knowledge_base.pipeline import SHIPPED_EXTRACT
from tools import real_questions

needs_extract = pytest.mark.skipif(not SHIPPED_EXTRACT.is_file(), reason="no shipped extract")


def test_split_depends_on_the_thread_only():
    urls = [f"https://github.com/o/r/issues/{i}" for i in range(3000)]
    held = [u for u in urls if real_questions.held_out(u)]
    assert 0.28 < len(held) / len(urls) < 0.39  # about a third
    assert held == [u for u in urls if real_questions.held_out(u)]  # stable


def test_bad_entries_are_dropped_with_a_reason(tmp_path):
    pool = tmp_path / "pool-x.yaml"
    pool.write_text(yaml.safe_dump([
        {"q": "limit gpu memory", "accept": ["tf.config.experimental.set_memory_growth"],
         "source": "https://a/1"},
        {"q": "Limit GPU memory!", "accept": ["tf.config.experimental.set_memory_growth"],
         "source": "https://a/2"},                      # same wording
        {"q": "another", "accept": ["tf.concat"], "source": "https://a/1"},  # same thread
        {"q": "made up", "accept": ["tf.no_such_thing"], "source": "https://a/3"},
        {"q": "no source", "accept": ["tf.concat"]},
    ]))
    names = {"tf.config.experimental.set_memory_growth", "tf.concat"}
    kept, dropped = real_questions.collect([pool], names)
    assert [k["source"] for k in kept] == ["https://a/1"]
    reasons = "\n".join(dropped)
    for why in ("same wording", "thread already taken", "tf.no_such_thing",
                "needs exactly q, accept and source"):
        assert why in reasons


def test_main_writes_both_sets_and_a_manifest_without_wording(tmp_path):
    pool = tmp_path / "pool-y.yaml"
    items = [{"q": f"zqx word {i}?", "accept": ["tf.concat"], "source": f"https://b/{i}"}
             for i in range(30)]
    pool.write_text(yaml.safe_dump(items))
    manifest = tmp_path / "sources.yaml"
    assert real_questions.main([str(pool), "--out", str(tmp_path), "--manifest",
                                str(manifest)]) == 0
    held = yaml.safe_load((tmp_path / "real-heldout.yaml").read_text())
    train = yaml.safe_load((tmp_path / "real-train.yaml").read_text())
    assert len(held) + len(train) == 30 and held and train
    assert all(real_questions.held_out(i["source"]) for i in held)
    text = manifest.read_text()
    assert "zqx" not in text
    assert {e["source"] for e in yaml.safe_load(text)} == {i["source"] for i in items}


@pytest.mark.parametrize("text", ["- {q: [unclosed", "q: not a list\n"])
def test_a_pool_that_is_not_a_list_of_entries_writes_nothing(tmp_path, capsys, text):
    good = tmp_path / "pool-a.yaml"
    good.write_text(yaml.safe_dump([{"q": "x?", "accept": ["tf.concat"], "source": "https://c/1"}]))
    bad = tmp_path / "pool-b.yaml"
    bad.write_text(text)
    manifest = tmp_path / "sources.yaml"
    assert real_questions.main([str(good), str(bad), "--out", str(tmp_path / "out"),
                                "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "pool-b.yaml" in err and "nothing written" in err
    assert not manifest.exists() and not (tmp_path / "out").exists()


@needs_extract
def test_manifest_agrees_with_the_split_and_the_kb():
    entries = yaml.safe_load(real_questions.MANIFEST.read_text())
    assert len(entries) >= 300
    names = real_questions.kb_names()
    sources = [e["source"] for e in entries]
    assert len(set(sources)) == len(sources)
    for e in entries:
        assert set(e) == {"source", "accept", "set"}
        assert e["set"] == ("heldout" if real_questions.held_out(e["source"]) else "train")
        assert e["accept"] and all(n in names for n in e["accept"]), e
    assert sum(e["set"] == "heldout" for e in entries) >= 50
