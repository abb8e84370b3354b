"""Stable addresses of KB things on the docs site. Shared by the site generator and every
command that prints a link, so a link can never point at an anchor the site lacks.

- a module's page:           api/<module>/            e.g. api/tf.nn/
- a class's or a module-level function's own page:
                             api/<name>/              e.g. api/tf.keras.Model/, api/tf.nn.softmax/
- a class member on its class's page:
                             api/<class>/#<anchor>    e.g. api/tf.keras.Model/#tf.keras.Model.fit
- a module-level constant:   api/<module>/#<anchor>   e.g. api/tf.dtypes/#tf.dtypes.float32

Addresses of the older layout (every symbol on its module page, api/tf.keras/#tf.keras.Model.fit)
keep working: the module page names each symbol's own page and tfdesk.js forwards there.
- a release's changes:       changes/<version>/       e.g. changes/2.16/
- the TF1 -> TF2 table:      migration/
- the release index:         releases/
"""
from __future__ import annotations

import re

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def anchor(name: str) -> str:
    """HTML id for a symbol: its dotted name, with anything unusual made safe."""
    return _UNSAFE.sub("-", name) or "-"


def module_page(module: str) -> str:
    return f"api/{anchor(module)}/"


def has_own_page(kind: str, parent: str | None, module: str) -> bool:
    """Classes (nested ones too) and module-level functions get a page of their own."""
    return kind == "class" or (kind == "function" and (parent in (None, module)))


def symbol_path(name: str, module: str, kind: str = "", parent: str | None = None) -> str:
    """Site-relative address of the symbol ``name`` (its KB ``module``, ``kind``, ``parent``)."""
    if name == module or kind == "module":
        return module_page(name)
    if has_own_page(kind, parent, module):
        return module_page(name)
    home = parent if parent and parent != module else module
    return f"{module_page(home)}#{anchor(name)}"


def sym_path(sym) -> str:
    """:func:`symbol_path` of a KB symbol row (a mapping with name, module, kind, parent)."""
    return symbol_path(sym["name"], sym["module"], sym["kind"], sym["parent"])


def release_page(version: str) -> str:
    return f"changes/{anchor(version)}/"


MIGRATION_PAGE = "migration/"
RELEASES_PAGE = "releases/"


def url(site_url: str, path: str) -> str:
    return site_url.rstrip("/") + "/" + path
