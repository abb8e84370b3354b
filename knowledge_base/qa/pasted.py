"""A pasted error or traceback, read as a question.

People paste what their terminal or notebook printed: a whole traceback, or only its last
line, in Slack (HTML-escaped, inside code fences or quotes) or in a terminal (many lines).
:func:`read` finds, whatever the length of the paste:

- the error line (``AttributeError: module 'tensorflow' has no attribute 'Session'``), kept
  whole with any continuation lines (Keras wraps long messages);
- the user's own code lines of the traceback (frames outside site-packages and the
  interpreter's own files), the last of them being where their code called into TensorFlow,
  whichever printed it: Python, or IPython as Jupyter and Colab do (``Cell In[4], line 3``,
  ``<ipython-input-4-…> in <module>``, the line that ran marked ``---->``), in colour or not;
- inside a wrapper, the error itself: Keras reports a layer's error as "Exception
  encountered when calling …" with the error in the paragraph below, and a failed graph op
  is "Graph execution error:" with the op's message after where the node was defined;
- from those code lines, the dotted names called and the keywords passed, which say what
  failed when the message does not (``Argument(s) not recognized: {'lr': 0.1}``).

An issue title or a Slack line often quotes the message without its exception type
(``module 'tensorflow' has no attribute 'Session'``, ``No module named 'tensorflow.contrib'``),
with typographic quotes that Slack and editors put in: such a line is the same error, and is
read as one when a known message template (the error families' patterns) matches it. Only a
line with a quote mark is tried: the messages quote what they are about, and a plain question
then never loads the templates.
"""
from __future__ import annotations

import html
import re
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# "ValueError: ...", "tensorflow.python.framework.errors_impl.NotFoundError: ...",
# "keras.src.saving...ValueError: ..." and bare "StopIteration".
_ERROR = re.compile(r"(?:^|(?<=\s))((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Warning)|"
                    r"StopIteration|KeyboardInterrupt|SystemExit))(?::\s?(.*))?$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
# IPython's frames: 8+ "File /x/y.py:81, in Embedding.__init__(self, ...)", "Cell In[4], line 3",
# 8.0-8.4 "Input In [4], in <cell line: 3>()", 7 and Colab "<ipython-input-4-1f2e> in
# <module>()" and "/x/y.py in fit(self, x)". Each lists numbered lines around the one that
# ran, which it marks "---->"; only that one is the frame's code.
_IPY_FRAME = re.compile(
    r"^\s*(?:File (?P<path>\S.*?):(?P<line>\d+)(?:, in (?P<func>.+))?"
    r"|(?P<cell>Cell In ?\[\d*\]), line (?P<cline>\d+)"
    r"|(?P<input>Input In ?\[\d*\])(?:, in (?P<ifunc>.+))?"
    r"|(?P<path7><ipython-input-[^>]*>|(?:[A-Za-z]:)?[\\/~]\S*\.pyx?) in (?P<func7>\S.*))\s*$")
_ARROW = re.compile(r"^\s*-+>\s*(?P<line>\d+)(?: (?P<code>.*))?$")
_NUMBERED = re.compile(r"^\s*\d+(?: .*)?$")
# Colour codes (IPython colours tracebacks; Keras 3 prints its inner message bold), and what is
# left of them when a copy drops the escape character.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|(?<![\w\[])\[[0-9;]{1,8}m")
# An eager op's error names the function it ran in before the message; and the empty op name.
_OP_NOISE = re.compile(r"\{\{function_node [^}]*\}\}\s*|\s+name: *$")
# Frames of libraries and of the interpreter itself, not the user's code.
_LIBRARY = re.compile(r"(site|dist)-packages|/lib/python\d|<frozen |\\lib\\|/usr/lib/|"
                      r"<__array_function__|/_pytest/|/IPython/core/")
_CALL = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*\(")
_KEYWORD = re.compile(r"[(,]\s*([A-Za-z_]\w*)\s*=(?!=)")
# Dotted names a code line spells (not an attribute of a call's result), and its imports.
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_FROM_IMPORT = re.compile(r"^\s*from\s+([\w.]+)\s+import\s+(.+)$")
_IMPORT = re.compile(r"^\s*import\s+(.+)$")
# Typographic quotes (Slack, word processors) around names in a quoted message.
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u00b4": "'", "`": "'"})
_NOISE = ("Traceback (most recent call last)", "During handling of the above exception",
          "The above exception was the direct cause")
# Wrappers around the error itself, as data: the wrapper's message, and the line where the
# wrapped error's message ends (None: at its end). Keras 2.9+ and 3
# (keras/src/utils/traceback_utils.py) print "Exception encountered when calling <layer>.",
# the layer's error, then the call's arguments; TensorFlow 2.9+ prints "Graph execution
# error:", where the failing node was defined (indented frames), "Node: '...'", then the op's
# message and its indented "[[{{node ...}}]]" line.
_WRAPPERS = (
    (re.compile(r"Exception encountered when calling .+"),
     re.compile(r"(?:Call )?[Aa]rguments received by ")),
    (re.compile(r"Graph execution error:?"), None),
)
_DEFINED_AT = re.compile(r"^(?:Detected at node .*|Node: .*)$")
# Log lines, read as their message: TensorFlow's C++ and absl's ("2024-03-01 10:22:31.123456:
# W tensorflow/core/common_runtime/bfc_allocator.cc:479] msg", "E0000 00:00:1712345678.123456
#   1234 cuda_dnn.cc:8310] msg") and Python logging's ("WARNING:tensorflow:msg").
_LOG = re.compile(
    r"^(?:\d{4}-\d\d-\d\d[ T][\d:.,]+:?\s+)?(?P<level>[IWEF])(?:\d{4} [\d:.]+\s+\d+)?\s+"
    r"[\w./\\-]+\.(?:cc|cpp|h|py):\d+\]\s*(?P<msg>.+)$"
    r"|^(?P<plevel>INFO|WARNING|ERROR|CRITICAL|FATAL):[\w.]+:\s*(?P<pmsg>.+)$")
_SEVERITY = {"I": 0, "INFO": 0, "W": 1, "WARNING": 1, "E": 2, "ERROR": 2, "F": 3, "CRITICAL": 3,
             "FATAL": 3}
# TensorFlow's status codes (tensorflow/core/protobuf/error_codes.proto), as C++ messages print
# them before the message, in both spellings ("INVALID_ARGUMENT: ", older "Invalid argument: "),
# after "OP_REQUIRES failed at kernel.cc:121 : " where a kernel failed. Each names the
# tf.errors class the Python side raises: InvalidArgumentError.
_CODES = ("CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
          "ALREADY_EXISTS", "PERMISSION_DENIED", "UNAUTHENTICATED", "RESOURCE_EXHAUSTED",
          "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
          "UNAVAILABLE", "DATA_LOSS")
_STATUS = re.compile(r"^(?:OP_REQUIRES failed at \S+ : )?(?P<code>%s): (?P<rest>.+)$" % "|".join(
    [*_CODES, *(c.replace("_", " ").capitalize() for c in _CODES)]))


@dataclass
class Frame:
    path: str
    line: int
    func: str
    code: str = ""
    marked: bool = False  # IPython's: the code is the line marked "---->", not the next one

    @property
    def user(self) -> bool:
        return not _LIBRARY.search(self.path.replace("\\", "/"))


@dataclass
class Pasted:
    error_type: str                 # "AttributeError" (the last dotted part)
    message: str                    # everything after "Type: ", continuation lines joined
    line: str                       # the error line as printed (type and message)
    frames: list[Frame] = field(default_factory=list)
    wrapper: str = ""               # "Exception encountered when calling Sequential.call()."

    @property
    def user_code(self) -> list[str]:
        """The user's own code lines, outermost first."""
        return [f.code for f in self.frames if f.user and f.code]

    def calls(self) -> list[str]:
        """Dotted names called in the user's last code line (then the earlier ones)."""
        out: list[str] = []
        for code in reversed(self.user_code):
            for name in _CALL.findall(code):
                if name not in out and name not in ("print", "len", "range", "super"):
                    out.append(name)
        return out

    def spelt(self) -> list[str]:
        """Dotted names the user's code lines spell, last line first: ``tf.a.b.C(...)`` gives
        ``tf.a.b.C``, ``from a.b import c, d`` gives ``a.b.c`` and ``a.b.d``, ``import a.b``
        gives ``a.b``. Python names only the first missing part of a path (``module
        'tensorflow' has no attribute 'estimator'``); the code line says the rest."""
        out: list[str] = []
        for code in reversed(self.user_code):
            code = code.split("#", 1)[0]
            if m := _FROM_IMPORT.match(code):
                parts = (p.split(" as ")[0].strip(" ()\\") for p in m.group(2).split(","))
                found = [f"{m.group(1)}.{p}" for p in parts if p.isidentifier()]
            elif m := _IMPORT.match(code):
                found = [p.split(" as ")[0].strip() for p in m.group(1).split(",")]
            else:
                found = _DOTTED.findall(code)
            out += [f for f in found if f not in out]
        return out

    def keywords(self) -> list[str]:
        """Keywords passed in the user's last code line that has any."""
        for code in reversed(self.user_code):
            found = _KEYWORD.findall(code)
            if found:
                return list(dict.fromkeys(found))
        return []


def normalize(text: str) -> str:
    """Slack's escaping and Markdown off: &gt; -> >, code fences and quote marks removed;
    colour codes and a common indent off."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = _ANSI.sub("", html.unescape(text.replace("\r\n", "\n").replace("\r", "\n")))
    lines = []
    for ln in text.split("\n"):
        ln = re.sub(r"^\s*>\s?", "", ln) if ln.lstrip().startswith(">") and not \
            ln.lstrip().startswith(">>>") else ln
        lines.append(ln.replace("```", ""))
    # A paste indented as a whole (quoted in a log, a Markdown block) reads as printed.
    return textwrap.dedent("\n".join(lines))


def straight(line: str) -> str:
    """A line's typographic and code quotes made straight, as Python prints them."""
    return line.translate(_QUOTES)


def _error_at(line: str) -> re.Match | None:
    m = _ERROR.search(line.strip())
    if m and (m.group(2) is not None or m.start() == 0):
        return m
    return None


def read(text: str, templates: Callable[[], Sequence[re.Pattern]] = tuple) -> Pasted | None:
    """The error in a paste, or None when it holds no error line. ``templates``: gives the
    messages known without their exception type (the error families' patterns), matched in a
    line that has none."""
    lines = normalize(text).split("\n")
    frames: list[Frame] = []
    found: tuple[int, re.Match] | None = None
    header_at = -2  # the line of the last Python frame's header: its code is the next one
    for i, ln in enumerate(lines):
        fm = _FRAME.match(ln)
        if fm:
            frames.append(Frame(fm["path"], int(fm["line"]), (fm["func"] or "").strip()))
            header_at = i
            continue
        im = _IPY_FRAME.match(ln)
        if im:
            frames.append(_ipython_frame(im))
            continue
        if frames and frames[-1].marked:
            am = _ARROW.match(ln)
            if am:
                if not frames[-1].code:
                    frames[-1].code, frames[-1].line = (am["code"] or "").strip(), int(am["line"])
                continue
            if _NUMBERED.match(ln):
                continue  # the lines IPython shows around the one that ran
        if i == header_at + 1 and ln.strip() and ln.startswith((" ", "\t")) \
                and not set(ln.strip()) <= set("^~ "):
            frames[-1].code = ln.strip()
            continue
        m = _error_at(ln)
        if m:
            found = (i, m)
    if found is None:
        return _bare(lines, frames, templates) or _logged(lines, frames)
    i, m = found
    message = (m.group(2) or "").strip()
    wrapper, inner = _unwrap(message, lines[i + 1:], len(lines[i]) - len(lines[i].lstrip()))
    if wrapper:
        message = inner
    else:
        # Continuation lines of a long message: up to a blank line, a log line or the next
        # traceback.
        for ln in lines[i + 1:]:
            if not ln.strip() or ln.strip().startswith(_NOISE) or _FRAME.match(ln) or \
                    _LOG.match(ln.strip()):
                break
            message += " " + ln.strip()
    message = _OP_NOISE.sub("", message).strip()
    error_type = m.group(1).rsplit(".", 1)[-1]
    return Pasted(error_type, message, f"{error_type}: {message}" if message else error_type,
                  frames, wrapper)


def status_error(message: str) -> tuple[str, str]:
    """(the tf.errors class a status code names, the message after it), or ("", message)."""
    m = _STATUS.match(message)
    if m is None:
        return "", message
    code = m["code"].upper().replace(" ", "_")
    return "".join(w.capitalize() for w in code.split("_")) + "Error", m["rest"].strip()


def _logged(lines: list[str], frames: list[Frame]) -> Pasted | None:
    """The most severe log line (the last of them), read as its message."""
    best: tuple[int, str] | None = None
    for ln in lines:
        m = _LOG.match(ln.strip())
        if m:
            level = _SEVERITY[m["level"] or m["plevel"]]
            if best is None or level >= best[0]:
                best = (level, (m["msg"] or m["pmsg"]).strip())
    if best is None:
        return None
    error_type, message = status_error(_OP_NOISE.sub("", best[1]).strip())
    return Pasted(error_type, message, f"{error_type}: {message}" if error_type else message,
                  frames)


def _ipython_frame(m: re.Match) -> Frame:
    path = m["path"] or m["cell"] or m["input"] or m["path7"]
    line = int(m["line"] or m["cline"] or 0)
    return Frame(path.strip(), line, (m["func"] or m["ifunc"] or m["func7"] or "").strip(),
                 marked=True)


def _unwrap(head: str, after: list[str], indent: int = 0) -> tuple[str, str]:
    """(the wrapper's message, the error it wraps) when ``head`` is a wrapper's, else ("", "").
    The wrapped message is the lines after it at the wrapper's own indent (``indent``: tf.function
    prints the error it caught "in user code" indented), past where the failing node was
    defined (frames, indented further), up to the wrapper's own end."""
    for start, end in _WRAPPERS:
        if not start.fullmatch(head):
            continue
        inner: list[str] = []
        for ln in after:
            text = ln.strip()
            if end is not None and end.match(text) or text.startswith(_NOISE) or \
                    _error_at(ln) is not None or _LOG.match(text):
                break
            if not text:
                if inner and end is None:
                    break
                continue
            if len(ln) - len(ln.lstrip()) > indent or _DEFINED_AT.match(text) or \
                    _FRAME.match(ln):
                continue
            inner.append(text)
        if inner:
            return head, " ".join(inner)
    return "", ""


def _bare(lines: list[str], frames: list[Frame],
          templates: Callable[[], Sequence[re.Pattern]]) -> Pasted | None:
    """The last line that quotes a known error message without its type (type unknown: "")."""
    quoted = [" ".join(straight(ln).split()) for ln in lines]
    quoted = [ln for ln in quoted if "'" in ln or '"' in ln]
    if not quoted:
        return None
    known = templates()
    for line in reversed(quoted):
        if any(t.search(line) for t in known):
            return Pasted("", line, line, frames)
    return None
