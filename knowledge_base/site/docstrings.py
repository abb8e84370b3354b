"""Docstrings rendered the way mkdocstrings renders them: parsed, not dumped.

griffe (the parser mkdocstrings is built on) splits a Google-style docstring into sections
without importing anything; Args/Returns/Raises/Attributes become tables, prose is Markdown
(markdown-it, raw HTML off, so a docstring cannot inject markup), code fences and ``>>>``
examples are highlighted with Pygments using the CSS classes Material already styles, and
inline code that names a symbol the KB knows becomes a link to its page.
"""
from __future__ import annotations

import logging
import re
from typing import Callable

from griffe import Docstring, Parser
from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonConsoleLexer, PythonLexer, get_lexer_by_name
from pygments.util import ClassNotFound

from knowledge_base.site.markup import esc, fence_safe
from knowledge_base.site.params import Param

# griffe reports docstring oddities (wrong indentation, unknown parameters) through logging;
# TensorFlow's docstrings have thousands and none of them stop a page from rendering.
logging.getLogger("griffe").setLevel(logging.CRITICAL)

# Returns the href of a known symbol's page (relative to the page being written), or None.
Linker = Callable[[str], "str | None"]

_FORMATTER = HtmlFormatter(nowrap=True)
# Source comments that leaked into docstrings ("# pylint: disable=line-too-long"): never docs.
_PYLINT = re.compile(r"#\s*pylint:\s*[\w-]+=[\w,-]+")
_DOCTEST_START = re.compile(r"^(\s*)>>> ")
_TF_NAME = re.compile(r"^tf(\.[A-Za-z_][A-Za-z0-9_]*)+$")


def _lexer(lang: str):
    if lang in ("", "python", "py", "python3"):
        return PythonLexer()
    if lang in ("pycon", "doctest"):
        return PythonConsoleLexer()
    try:
        return get_lexer_by_name(lang)
    except ClassNotFound:
        return None


def code_block(code: str, lang: str = "python") -> str:
    """Highlighted code, in the markup Material styles (``div.highlight > pre > code``)."""
    lexer = _lexer(lang)
    body = highlight(code, lexer, _FORMATTER) if lexer else esc(code)
    cls = f' class="language-{esc(lang)}"' if lang else ""
    return f'<div class="highlight"><pre><code{cls}>{body.rstrip()}</code></pre></div>'


def _fence_doctests(text: str) -> str:
    """Wrap runs of ``>>>`` examples (with their output, up to a blank line) in pycon fences,
    which is how TensorFlow's docstrings are shown on tensorflow.org."""
    out: list[str] = []
    lines = text.split("\n")
    i, in_fence = 0, False
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        m = None if in_fence else _DOCTEST_START.match(line)
        if not m:
            out.append(line)
            i += 1
            continue
        indent = len(m.group(1))
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i][indent:] if lines[i][:indent].isspace() else lines[i].lstrip())
            i += 1
        out += ["", "```pycon", *block, "```", ""]
    return "\n".join(out)


class Renderer:
    """Renders docstrings to HTML for one site build; ``linker`` resolves ``tf.…`` names."""

    def __init__(self) -> None:
        self.md = MarkdownIt("commonmark", {"html": False})
        self.md.enable("table")
        self.md.add_render_rule("fence", lambda _r, tokens, idx, options, env: code_block(
            tokens[idx].content, (tokens[idx].info or "python").strip().split()[0].lower()))
        # A docstring never sets the page's headings (a "# comment" in it became the title of
        # tf.function): a heading renders as a section label; an image is linked, not loaded.
        self.md.add_render_rule("heading_open", lambda _r, tokens, idx, options, env:
                                '<p class="tfd-section">')
        self.md.add_render_rule("heading_close", lambda _r, tokens, idx, options, env: "</p>")
        self.md.add_render_rule("image", lambda _r, tokens, idx, options, env: _image_link(
            tokens[idx]))
        self._linker: Linker | None = None
        # markdown-it binds render rules to its renderer: a closure keeps ours on self.
        self.md.add_render_rule("code_inline",
                                lambda _r, tokens, idx, options, env:
                                self._render_code_inline(tokens, idx))

    def _render_code_inline(self, tokens, idx) -> str:
        content = tokens[idx].content
        html = f"<code>{esc(content)}</code>"
        name = content.strip().rstrip("()")
        if self._linker and _TF_NAME.match(name):
            href = self._linker(name)
            if href:
                return f'<a href="{esc(href)}">{html}</a>'
        return html

    def markdown(self, text: str, linker: Linker | None = None) -> str:
        self._linker = linker
        try:
            return fence_safe(self.md.render(_fence_doctests(_PYLINT.sub("", text))))
        finally:
            self._linker = None

    def inline(self, text: str, linker: Linker | None = None) -> str:
        """One line (a summary) as inline HTML: code, links and emphasis, no block."""
        self._linker = linker
        try:
            return fence_safe(self.md.renderInline(_PYLINT.sub("", text or "")))
        finally:
            self._linker = None

    def docstring(self, text: str, linker: Linker | None = None,
                  params: list[Param] | None = None, init_doc: str | None = None) -> str:
        """The whole docstring body as HTML sections (empty string for nothing to show).

        With ``params`` (the signature's), the Args table has a row for every parameter, in
        signature order with its default, described where the docstring describes it: a class
        whose constructor arguments are undocumented still lists them. ``init_doc``: a
        class's ``__init__`` docstring, whose Args describe the parameters when the class
        docstring has none (tf.GradientTape documents them there).
        """
        sections = _sections(text)
        if sections is None:
            parts = [self.markdown(text, linker)]
        else:
            parts, merged = [], False
            for s in sections:
                if params is not None and _kind(s) == "parameters" and not merged:
                    parts.append(self.params_table(s.value, params, linker))
                    merged = True
                else:
                    parts.append(self._section(s, linker))
            if params and not merged:
                at = 1 if sections and _kind(sections[0]) == "text" else 0
                parts.insert(at, self.params_table(_init_args(init_doc), params, linker))
        body = "".join(p for p in parts if p)
        return f'<div class="tfd-doc">{body}</div>' if body else ""

    def params_table(self, documented, params: list[Param], linker: Linker | None) -> str:
        """Args: each row carries ``data-tfd-param`` (the release selector marks the rows a
        release's signature lacks)."""
        docs = {d.name.lstrip("*"): d.description for d in documented}
        rows, seen = [], set()
        for p in params:
            seen.add(p.name)
            desc = docs.get(p.name)
            if desc is None and p.stars:
                continue  # *args / **kwargs nobody described
            rows.append((p.name, p.stars + p.name, p.default, desc))
        rows += [(n, n, None, d) for n, d in docs.items() if n not in seen]
        body = "".join(
            f'<tr data-tfd-param="{esc(key)}"><td><code>{esc(label)}</code></td>'
            f'<td>{f"<code>{esc(default)}</code>" if default is not None else ""}</td>'
            f'<td>{self.markdown(desc, linker) if desc else _UNDESCRIBED}</td></tr>'
            for key, label, default, desc in rows)
        if not body:
            return ""
        return ('<p class="tfd-section">Args</p><div class="tfd-args"><table><thead><tr>'
                '<th>Name</th><th>Default</th><th>Description</th></tr></thead>'
                f'<tbody>{body}</tbody></table></div>')

    def _section(self, s, linker: Linker | None) -> str:
        kind = _kind(s)
        if kind == "text":
            return self.markdown(s.value, linker)
        if kind in ("parameters", "other parameters", "attributes"):
            title = {"parameters": "Args", "other parameters": "Other args",
                     "attributes": "Attributes"}[kind]
            rows = [(p.name, p.description) for p in s.value]
            return self._table(title, ("Name", "Description"), rows, linker, code_first=True)
        if kind in ("returns", "yields", "receives"):
            title = kind.capitalize()
            rows = [(getattr(r, "name", "") or _annotation(r), r.description) for r in s.value]
            if all(not a for a, _ in rows):
                return (f'<p class="tfd-section">{title}</p>' +
                        "".join(self.markdown(d, linker) for _, d in rows))
            return self._table(title, ("", "Description"), rows, linker, code_first=True)
        if kind in ("raises", "warns"):
            title = kind.capitalize()
            rows = [(_annotation(r), r.description) for r in s.value]
            return self._table(title, ("Exception", "Description"), rows, linker, code_first=True)
        if kind == "examples":
            out = ['<p class="tfd-section">Examples</p>']
            for sub_kind, sub in s.value:
                sk = sub_kind.value if hasattr(sub_kind, "value") else str(sub_kind)
                out.append(code_block(sub, "pycon") if sk == "examples"
                           else self.markdown(sub, linker))
            return "".join(out)
        if kind == "admonition":
            adm = s.value
            title = s.title or getattr(adm, "annotation", "") or "Note"
            return (f'<div class="admonition note tfd-admonition"><p class="admonition-title">'
                    f'{esc(title)}</p>{self.markdown(adm.description or "", linker)}</div>')
        if kind == "deprecated":
            return (f'<div class="admonition warning"><p class="admonition-title">Deprecated</p>'
                    f'{self.markdown(getattr(s.value, "description", "") or "", linker)}</div>')
        value = getattr(s, "value", "")
        return self.markdown(value if isinstance(value, str) else str(value), linker)

    def _table(self, title: str, head: tuple[str, str], rows, linker, code_first: bool) -> str:
        body = "".join(
            f'<tr><td>{f"<code>{esc(a)}</code>" if code_first and a else esc(a)}</td>'
            f'<td>{self.markdown(d or "", linker)}</td></tr>' for a, d in rows)
        th = "".join(f"<th>{esc(h)}</th>" for h in head)
        # A table without a class gets Material's own table style; the div carries ours.
        return (f'<p class="tfd-section">{esc(title)}</p><div class="tfd-args"><table>'
                f'<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>')


_UNDESCRIBED = '<span class="tfd-undoc">not described in the docstring</span>'


def _sections(text: str | None) -> list | None:
    """griffe's sections of a Google-style docstring; None for one it cannot read (prose)."""
    text = (text or "").strip("\n")
    if not text.strip():
        return []
    try:
        return Docstring(_dedent(text), lineno=1).parse(Parser.google, warnings=False)
    except Exception:  # noqa: BLE001 - a docstring griffe cannot read is prose
        return None


def _init_args(init_doc: str | None) -> list:
    """The Args an ``__init__`` docstring describes (none when it cannot be read)."""
    return next((s.value for s in _sections(init_doc) or () if _kind(s) == "parameters"), [])


def _kind(section) -> str:
    return section.kind.value if hasattr(section.kind, "value") else str(section.kind)


def _image_link(token) -> str:
    """An image in a docstring, as a link to it: the site loads nothing from other hosts."""
    src = token.attrGet("src") or ""
    alt = "".join(c.content for c in token.children or []) or "image"
    return f'<a class="tfd-image" href="{esc(src)}">[image: {esc(alt)}]</a>'


def _annotation(item) -> str:
    a = getattr(item, "annotation", None)
    return str(a) if a else ""


def _dedent(text: str) -> str:
    """Docstrings from wheels keep their source indentation after the first line."""
    lines = text.split("\n")
    rest = [ln for ln in lines[1:] if ln.strip()]
    indent = min((len(ln) - len(ln.lstrip()) for ln in rest), default=0)
    return "\n".join([lines[0].strip()] + [ln[indent:] for ln in lines[1:]])
