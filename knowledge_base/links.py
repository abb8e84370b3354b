"""Stable addresses of KB things on the docs site. Shared by the site generator and every
command that prints a link, so a link can never point at an anchor the site lacks.

- a module's page:           api/<module>/            e.g. api/tf.nn/
- a symbol on its page:      api/<module>/#<anchor>   e.g. api/tf.nn/#tf.nn.softmax
  (a class member lives on its class's module page: api/tf.keras/#tf.keras.Model.fit)
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


def symbol_path(name: str, page_module: str) -> str:
    """Site-relative address of ``name`` documented on the page of ``page_module``."""
    if name == page_module:
        return module_page(page_module)
    return f"{module_page(page_module)}#{anchor(name)}"


def release_page(version: str) -> str:
    return f"changes/{anchor(version)}/"


MIGRATION_PAGE = "migration/"
RELEASES_PAGE = "releases/"


def url(site_url: str, path: str) -> str:
    return site_url.rstrip("/") + "/" + path
