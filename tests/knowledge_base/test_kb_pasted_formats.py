"""A traceback reads the same whatever printed it (issue 27): a script's Python traceback, a
notebook's as IPython 7 and 8 print it (Jupyter, Colab), in colour or not, indented as a whole,
as Slack sends it; and an error Keras or TensorFlow wrapped ("Exception encountered when
calling …", "Graph execution error:") reads as the error it wraps. Generated: every format of
benchmarks/traceback_formats.py x error lines from Python's own templates x user code."""
from __future__ import annotations

import html

from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.error_cases import python_templates
from benchmarks.traceback_formats import FORMATS, WRAPPERS, Frame, coloured
from knowledge_base.qa import pasted

IDENT = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
DOTTED = st.lists(IDENT, min_size=1, max_size=3).map(".".join)
TEMPLATES = python_templates()
LIBRARIES = ("/usr/local/lib/python3.11/site-packages/keras/src/utils/traceback_utils.py",
             "/opt/conda/lib/python3.10/site-packages/tensorflow/python/eager/execute.py",
             "C:\\Users\\ana\\miniconda3\\lib\\site-packages\\keras\\engine\\training.py",
             "/usr/lib/python3/dist-packages/numpy/core/fromnumeric.py")


@st.composite
def error_lines(draw) -> str:
    kind = draw(st.sampled_from(sorted(TEMPLATES)))
    return TEMPLATES[kind].format(module=draw(DOTTED), name=draw(IDENT), type=draw(IDENT),
                                  path="/x/y.py", callable=draw(IDENT), kw=draw(IDENT))


@st.composite
def code_lines(draw) -> str:
    kws = draw(st.lists(IDENT, max_size=3, unique=True))
    args = ", ".join(["x"] + [f"{k}={i}" for i, k in enumerate(kws)])
    return f"{draw(IDENT)} = {draw(DOTTED)}({args})"


@st.composite
def frame_lists(draw) -> list[Frame]:
    """The user's cells or scripts first, then library frames, as a traceback runs."""
    frames = []
    for i in range(draw(st.integers(1, 3))):
        cell = draw(st.booleans())
        before = tuple(draw(st.lists(code_lines(), max_size=3)))
        frames.append(Frame("" if cell else f"/home/ana/proj/m{i}.py",
                            draw(st.integers(len(before) + 1, 400)),
                            "<module>" if i == 0 else draw(IDENT), draw(code_lines()), before))
    for _ in range(draw(st.integers(0, 3))):
        frames.append(Frame(draw(st.sampled_from(LIBRARIES)), draw(st.integers(1, 9999)),
                            draw(IDENT), "raise e.with_traceback(filtered_tb) from None",
                            ("try:", "    return fn(*args, **kwargs)")))
    return frames


def as_pasted(text: str, colour: bool, slack: bool, indent: bool) -> str:
    if colour:
        text = coloured(text)
    if indent:
        text = "\n".join("    " + ln if ln else ln for ln in text.split("\n"))
    return html.escape(text, quote=False) if slack else text


def read(text: str) -> tuple:
    got = pasted.read(text)
    assert got is not None, text[:400]
    return got.line, got.user_code, got.calls(), got.keywords()


@settings(max_examples=200, deadline=None)
@given(frame_lists(), error_lines(), st.sampled_from(sorted(FORMATS)), st.booleans(),
       st.booleans(), st.booleans())
def test_every_format_reads_as_a_scripts_traceback(frames, line, fmt, colour, slack, indent):
    want = read(FORMATS["python"](frames, line))
    assert want[0] == line
    assert want[1] == [f.code for f in frames if not f.path or "/home/" in f.path]
    got = read(as_pasted(FORMATS[fmt](frames, line), colour, slack, indent))
    assert got == want, (fmt, colour, slack, indent)


@settings(max_examples=200, deadline=None)
@given(frame_lists(), error_lines(), st.sampled_from(sorted(WRAPPERS)),
       st.sampled_from(sorted(FORMATS)), st.booleans())
def test_a_wrapped_error_reads_as_the_error_it_wraps(frames, line, wrapper, fmt, colour):
    error_type, message = line.split(": ", 1)
    printed = WRAPPERS[wrapper](error_type, message, frames[0])
    got = pasted.read(as_pasted(FORMATS[fmt](frames, printed), colour, False, False))
    assert got is not None and got.line == line, printed
    assert got.wrapper.startswith(("Exception encountered when calling", "Graph execution error"))
    assert set(got.user_code) == {f.code for f in frames if not f.path or "/home/" in f.path}


def test_an_eager_ops_function_node_is_not_its_message():
    text = ("tensorflow.python.framework.errors_impl.InvalidArgumentError: {{function_node "
            "__wrapped__AddV2_device_/job:localhost/replica:0/task:0/device:CPU:0}} Incompatible "
            "shapes: [32,10] vs. [32] [Op:AddV2] name: ")
    got = pasted.read(text)
    assert got.line == "InvalidArgumentError: Incompatible shapes: [32,10] vs. [32] [Op:AddV2]"


def test_a_wrapper_without_its_error_stays_as_printed():
    """A paste cut after the wrapper's first line: nothing to unwrap, nothing invented."""
    got = pasted.read("ValueError: Exception encountered when calling Sequential.call().")
    assert got.line == "ValueError: Exception encountered when calling Sequential.call()."
    assert got.wrapper == ""


def test_prose_after_an_error_is_not_its_message():
    got = pasted.read("ValueError: Shapes (None, 1) and (None, 10) are incompatible\n\n"
                      "Any idea what I am doing wrong? I use keras 3.")
    assert got.line == "ValueError: Shapes (None, 1) and (None, 10) are incompatible"


RUNTIME = (  # messages no family answers: the search on the message decides
    "ValueError: Input 0 of layer \"dense\" is incompatible with the layer: expected axis -1 of "
    "input shape to have value 784, but received input with shape (32, 28, 28)",
    "InvalidArgumentError: Received a label value of 10 which is outside the valid range of "
    "[0, 10).  Label values: 3 7 10 2",
    "InvalidArgumentError: Incompatible shapes: [32,10] vs. [32] [Op:AddV2]",
)


def test_a_wrapped_runtime_error_is_answered_as_the_error(shipped_kb):
    user = Frame("", 12, "<module>", "model.fit(x, y, epochs=3)")
    lib = Frame(LIBRARIES[0], 122, "error_handler", "raise e.with_traceback(filtered_tb) from None")
    for line in RUNTIME:
        want = [r["name"] for r in shipped_kb.ask(line)["results"][:3]]
        error_type, message = line.split(": ", 1)
        fmts = sorted(FORMATS)
        for i, wrapper in enumerate(sorted(WRAPPERS)):
            fmt = fmts[i % len(fmts)]
            a = shipped_kb.ask(FORMATS[fmt]([user, lib], WRAPPERS[wrapper](error_type, message,
                                                                            user)))
            assert a["error"]["line"] == line, (wrapper, fmt)
            assert [r["name"] for r in a["results"][:3]] == want, (wrapper, fmt, line)


# -- log lines ------------------------------------------------------------------------------
LOG_PREFIXES = (  # TensorFlow's C++ (glog/absl, old and new) and Python logging's
    "2024-03-01 10:22:31.123456: {level} tensorflow/core/common_runtime/bfc_allocator.cc:479] ",
    "{level}0000 00:00:1712345678.123456    1234 cuda_dnn.cc:8310] ",
    "{level} tensorflow/core/framework/op_kernel.cc:1780] ",
    "{plevel}:tensorflow:",
    "{plevel}:absl:",
)
LEVELS = {"I": "INFO", "W": "WARNING", "E": "ERROR"}
MESSAGE = st.text(alphabet="abcdefgh xyz0123456789,.()[]'", min_size=1, max_size=120).map(
    str.strip).filter(lambda m: m and not m.startswith(("(", "[")))


def log_line(prefix: str, level: str, message: str) -> str:
    return prefix.format(level=level, plevel=LEVELS[level]) + message


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(LOG_PREFIXES), st.sampled_from(sorted(LEVELS)), MESSAGE,
       st.sampled_from([None, "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "Failed precondition",
                        "UNIMPLEMENTED", "Not found"]), st.booleans())
def test_a_log_line_reads_as_its_message(prefix, level, message, code, op_requires):
    said = message if code is None else f"{code}: {message}"
    if op_requires and code is not None:
        said = f"OP_REQUIRES failed at cast_op.cc:121 : {said}"
    got = pasted.read(log_line(prefix, level, said))
    assert got is not None and got.message == message
    if code is not None:
        assert got.error_type == "".join(
            w.capitalize() for w in code.upper().replace(" ", "_").split("_")) + "Error"
        assert got.line == f"{got.error_type}: {message}"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(LOG_PREFIXES), st.sampled_from(sorted(LEVELS)),
                          MESSAGE), min_size=1, max_size=6), error_lines())
def test_the_most_severe_log_line_and_any_exception_first(logs, error):
    text = "\n".join(log_line(*t) for t in logs)
    rank = {"I": 0, "W": 1, "E": 2}
    top = max(rank[lv] for _, lv, _ in logs)
    want = [m for _, lv, m in logs if rank[lv] == top][-1]
    assert pasted.read(text).message == want
    # An exception printed among the logs is the error.
    assert pasted.read(text + "\n" + FORMATS["python"]([Frame("", 3, "<module>", "f(x)")], error)
                       + "\n" + text).line == error


def test_a_log_line_is_answered_as_its_message(shipped_kb):
    message = "Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.00GiB"
    want = [r["name"] for r in shipped_kb.ask(message, errors=False)["results"][:3]]
    for prefix in LOG_PREFIXES:
        a = shipped_kb.ask(log_line(prefix, "W", message))
        assert a["error"]["line"] == message
        assert [r["name"] for r in a["results"][:3]] == want, prefix
