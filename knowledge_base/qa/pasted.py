"""A pasted error or traceback, read as a question.

People paste what their terminal or notebook printed: a whole traceback, or only its last
line, in Slack (HTML-escaped, inside code fences or quotes) or in a terminal (many lines).
:func:`read` finds, whatever the length of the paste:

- the error line (``AttributeError: module 'tensorflow' has no attribute 'Session'``), kept
  whole with any continuation lines (Keras wraps long messages);
- the user's own code lines of the traceback (frames outside site-packages and the
  interpreter's own files), the last of them being where their code called into TensorFlow;
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# "ValueError: ...", "tensorflow.python.framework.errors_impl.NotFoundError: ...",
# "keras.src.saving...ValueError: ..." and bare "StopIteration".
_ERROR = re.compile(r"(?:^|(?<=\s))((?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Warning)|"
                    r"StopIteration|KeyboardInterrupt|SystemExit))(?::\s?(.*))?$")
_FRAME = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)(?:, in (?P<func>.+))?\s*$')
# Frames of libraries and of the interpreter itself, not the user's code.
_LIBRARY = re.compile(r"(site|dist)-packages|/lib/python\d|<frozen |\\lib\\|/usr/lib/|"
                      r"<__array_function__|/_pytest/|/IPython/core/")
_CALL = re.compile(r"((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s*\(")
_KEYWORD = re.compile(r"[(,]\s*([A-Za-z_]\w*)\s*=(?!=)")
# Typographic quotes (Slack, word processors) around names in a quoted message.
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                         "\u00b4": "'", "`": "'"})
_NOISE = ("Traceback (most recent call last)", "During handling of the above exception",
          "The above exception was the direct cause")


@dataclass
class Frame:
    path: str
    line: int
    func: str
    code: str = ""

    @property
    def user(self) -> bool:
        return not _LIBRARY.search(self.path.replace("\\", "/"))


@dataclass
class Pasted:
    error_type: str                 # "AttributeError" (the last dotted part)
    message: str                    # everything after "Type: ", continuation lines joined
    line: str                       # the error line as printed (type and message)
    frames: list[Frame] = field(default_factory=list)

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

    def keywords(self) -> list[str]:
        """Keywords passed in the user's last code line that has any."""
        for code in reversed(self.user_code):
            found = _KEYWORD.findall(code)
            if found:
                return list(dict.fromkeys(found))
        return []


def normalize(text: str) -> str:
    """Slack's escaping and Markdown off: &gt; -> >, code fences and quote marks removed."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = html.unescape(text.replace("\r\n", "\n").replace("\r", "\n"))
    lines = []
    for ln in text.split("\n"):
        ln = re.sub(r"^\s*>\s?", "", ln) if ln.lstrip().startswith(">") and not \
            ln.lstrip().startswith(">>>") else ln
        lines.append(ln.replace("```", ""))
    return "\n".join(lines)


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
    for i, ln in enumerate(lines):
        fm = _FRAME.match(ln)
        if fm:
            frames.append(Frame(fm["path"], int(fm["line"]), (fm["func"] or "").strip()))
            continue
        if frames and not frames[-1].code and ln.strip() and ln.startswith((" ", "\t")) \
                and not set(ln.strip()) <= set("^~ "):
            frames[-1].code = ln.strip()
            continue
        m = _error_at(ln)
        if m:
            found = (i, m)
    if found is None:
        return _bare(lines, frames, templates)
    i, m = found
    message = (m.group(2) or "").strip()
    # Continuation lines of a wrapped message: up to a blank line or the next traceback.
    for ln in lines[i + 1:]:
        if not ln.strip() or ln.strip().startswith(_NOISE) or _FRAME.match(ln):
            break
        message += " " + ln.strip()
    error_type = m.group(1).rsplit(".", 1)[-1]
    return Pasted(error_type, message, f"{error_type}: {message}" if message else error_type,
                  frames)


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
