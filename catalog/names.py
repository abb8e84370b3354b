"""Validation of names, tags, versions and references (``model:3``)."""
from __future__ import annotations

import re

from catalog.errors import InvalidInput

NAME_MAX = 64
TAG_MAX = 32
# Letters, digits, '.', '_' and '-', starting with a letter or digit. No ':' (it separates a
# version), no '/' or spaces (names appear in paths, URLs and Slack text).
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
TAG_RE = re.compile(r"[a-z0-9][a-z0-9._-]*")


def check_name(name: str, what: str = "name") -> str:
    if not isinstance(name, str) or not name:
        raise InvalidInput(f"{what} must not be empty")
    if len(name) > NAME_MAX:
        raise InvalidInput(f"{what} {name[:20]!r}... is {len(name)} characters long; "
                           f"the limit is {NAME_MAX}")
    if not NAME_RE.fullmatch(name):
        bad = sorted({c for c in name if not re.fullmatch(r"[A-Za-z0-9._-]", c)})
        detail = (f"characters {''.join(bad)!r} are not allowed" if bad
                  else "it must start with a letter or digit")
        raise InvalidInput(f"{what} {name!r} is not valid: {detail} "
                           "(use letters, digits, '.', '_' and '-')")
    return name


def check_tags(tags) -> list[str]:
    """Accepts a list or a comma-separated string; returns lower-cased, de-duplicated tags."""
    if tags is None:
        return []
    if isinstance(tags, str):
        tags = [tags]
    out: list[str] = []
    for item in tags:
        for tag in str(item).split(","):
            tag = tag.strip().lower()
            if not tag:
                continue
            if len(tag) > TAG_MAX or not TAG_RE.fullmatch(tag):
                raise InvalidInput(f"tag {tag!r} is not valid: up to {TAG_MAX} of "
                                   "a-z, 0-9, '.', '_' and '-'")
            if tag not in out:
                out.append(tag)
    return out


def split_ref(ref: str, what: str = "model") -> tuple[str, int | None]:
    """``name`` or ``name:VERSION`` -> (name, version or None for the latest)."""
    name, sep, version = ref.partition(":")
    check_name(name, f"{what} name")
    if not sep:
        return name, None
    if not version.isdigit() or int(version) < 1:
        raise InvalidInput(f"{what} version in {ref!r} must be a positive number, e.g. {name}:1")
    return name, int(version)
