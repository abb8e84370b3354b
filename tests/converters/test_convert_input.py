"""Bad input gets a clear, specific error; nothing is executed during conversion."""
from pathlib import Path

import pytest

from converters.script import ConversionError, convert

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


@pytest.mark.parametrize("name, needle, line", [
    ("broken_syntax.py", "syntax error at line 3", 3),
    ("empty.py", "is empty", None),
    ("notebook.ipynb", "Jupyter notebook", None),
    ("latin1.py", "not UTF-8 text: byte 0xe9 at line 3", 3),
])
def test_broken_corpus_scripts_are_refused_clearly(name, needle, line):
    with pytest.raises(ConversionError) as exc:
        convert((SCRIPTS / name).read_bytes(), "horovod", name)
    assert needle in str(exc.value)
    assert name in str(exc.value)
    assert exc.value.line == line
    assert exc.value.user_facing is True


def test_notebook_detected_by_content_even_with_py_name():
    nb = (SCRIPTS / "notebook.ipynb").read_text()
    with pytest.raises(ConversionError, match="notebook"):
        convert(nb, "horovod", "train.py")


def test_size_limit():
    big = "x = 1\n" * 200_000  # 1.2 MB
    with pytest.raises(ConversionError, match="1 MB"):
        convert(big, "horovod", "big.py")
    with pytest.raises(ConversionError, match="1 MB"):
        convert(big.encode(), "horovod", "big.py")


def test_whitespace_only_is_empty():
    with pytest.raises(ConversionError, match="empty"):
        convert("\n\n   \n", "horovod", "blank.py")


def test_unknown_target_names_the_choices():
    with pytest.raises(ConversionError, match="horovod, tf-distribute"):
        convert("import tensorflow as tf\n", "deepspeed")


def test_nothing_is_executed(tmp_path):
    marker = tmp_path / "ran"
    src = (f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
           "import tensorflow as tf\nmodel = tf.keras.Sequential()\n"
           "model.compile(optimizer='adam', loss='mse')\nmodel.fit([1], [1])\n")
    result = convert(src, "horovod")
    assert result.changed
    assert not marker.exists()


def test_utf8_bom_and_non_ascii_are_fine():
    src = "\ufeff# café\nimport tensorflow as tf\nm = tf.keras.Sequential()\nm.fit([1], [1])\n"
    result = convert(src.encode("utf-8"), "horovod")
    assert "café" in result.code
    assert "hvd.init()" in result.code
