"""Safe HTML fragments for generated pages, and writing pages that MkDocs will render.

Generated pages are Markdown files whose bodies are raw HTML blocks: everything that came
from a wheel (names, signatures, docstrings) is escaped here, so a docstring with an
unbalanced ``<div>`` or a stray code fence cannot break the page around it. Backticks and
tildes are escaped too, because Markdown preprocessors (fenced code) run before raw HTML
blocks are set aside.
"""
from __future__ import annotations

import html
import json
import posixpath
from pathlib import Path

# Material's search plugin skips elements carrying this attribute (and strips it from the
# page afterwards). Docstrings, signatures and tables stay out of the index; names and
# summaries go in, which keeps the index small enough for a fast first search.
# Generated pages skip Material's per-page search parsing (see mkdocs_hooks.py), so the
# attribute is not needed there; kept as a name for blocks that may move to Markdown pages.
NOSEARCH = ""

_EXTRA = str.maketrans({"`": "&#96;", "~": "&#126;", "\r": "", "\x00": ""})


def esc(text: object) -> str:
    """Escape any text for use inside raw HTML in a Markdown page."""
    return html.escape(str(text), quote=True).translate(_EXTRA)


def fence_safe(html_text: str) -> str:
    """Rendered HTML with backticks and tildes as entities (see the module docstring)."""
    return html_text.translate(_EXTRA)


def esc_code(text: object) -> str:
    """Escape text whose `backticked` parts are code (the KB's event details)."""
    parts = str(text).split("`")
    if len(parts) % 2 == 0:  # unbalanced: treat as plain text
        return esc(text)
    return "".join(f"<code>{esc(p)}</code>" if i % 2 else esc(p) for i, p in enumerate(parts))


def rel(from_page: str, to: str) -> str:
    """Relative URL (not escaped) from a page's address (``api/tf.nn/``) to a site path."""
    to_path, _, frag = to.partition("#")
    base = posixpath.dirname(from_page.rstrip("/") + "/x")
    target = posixpath.relpath(to_path or ".", base) if to_path else "."
    if to_path.endswith("/") and not target.endswith("/"):
        target += "/"
    return target + (f"#{frag}" if frag else "")


def link(from_page: str, to: str, text: str, cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return f'<a href="{esc(rel(from_page, to))}"{c}>{esc(text)}</a>'


def badge(text: str, kind: str, title: str = "") -> str:
    t = f' title="{esc(title)}"' if title else ""
    return f'<span class="tfd-badge tfd-{kind}"{t}>{esc(text)}</span>'


def front_matter(title: str, **meta) -> str:
    # JSON strings are valid YAML scalars: odd titles cannot break the front matter. The theme
    # writes the title into the page unescaped (h1, <title>, nav): escape it here.
    lines = [f"title: {json.dumps(html.escape(title, quote=False))}"]
    for key, value in meta.items():
        lines.append(f"{key}: {json.dumps(value)}")
    return "---\n" + "\n".join(lines) + "\n---\n\n"


def page_file(docs_dir: Path, page: str) -> Path:
    """Markdown source for a directory-style page address (``api/tf.nn/``)."""
    page = page.strip("/")
    return docs_dir / (f"{page}/index.md" if page else "index.md")


def write_page(docs_dir: Path, page: str, title: str, blocks: list[str], **meta) -> int:
    """Write one page; blocks are raw HTML blocks, separated by blank lines. Returns bytes."""
    path = page_file(docs_dir, page)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {"tfdesk_raw": True, "search": {"exclude": True}, **meta}
    text = front_matter(title, **meta) + "\n\n".join(blocks) + "\n"
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


def chunk(blocks: list[str], budget: int) -> list[list[str]]:
    """Group blocks (each kept whole) into runs of at most ``budget`` bytes."""
    runs: list[list[str]] = [[]]
    size = 0
    for b in blocks:
        n = len(b.encode("utf-8")) + 2
        if runs[-1] and size + n > budget:
            runs.append([])
            size = 0
        runs[-1].append(b)
        size += n
    return runs
