"""File intake: what users share with tfdesk in Slack, checked before and while downloading.

A file is accepted by its name (a training script, a SavedModel archive or a Keras model),
then by its declared size, then byte by byte while it streams to disk: the first bytes must
look like the format the name promises and the count may never pass the limit, whatever
Slack declared. Nothing downloaded is ever executed here; it is handed to a command
(``convert`` / ``convert-model``) exactly as if typed in a terminal.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx

SCRIPT_LIMIT = 1024 * 1024          # the script converter's own limit
DEFAULT_MODEL_LIMIT_MB = 1024
CHUNK = 64 * 1024


class UploadError(Exception):
    """A file tfdesk will not take, with the reason in words for the user."""
    user_facing = True


@dataclass(frozen=True)
class FileKind:
    kind: str                 # "script" | "model"
    label: str                # words for messages
    magic: tuple[bytes, ...]  # accepted first bytes; () = text


# Rules as data: file name ending -> what it is and how its first bytes must look.
KINDS: dict[str, FileKind] = {
    ".py": FileKind("script", "Python training script", ()),
    ".zip": FileKind("model", "SavedModel archive (.zip)", (b"PK\x03\x04", b"PK\x05\x06")),
    ".tar.gz": FileKind("model", "SavedModel archive (.tar.gz)", (b"\x1f\x8b",)),
    ".tgz": FileKind("model", "SavedModel archive (.tgz)", (b"\x1f\x8b",)),
    ".keras": FileKind("model", "Keras model (.keras)", (b"PK\x03\x04",)),
    ".h5": FileKind("model", "Keras HDF5 model (.h5)", (b"\x89HDF\r\n\x1a\n",)),
    ".hdf5": FileKind("model", "Keras HDF5 model (.hdf5)", (b"\x89HDF\r\n\x1a\n",)),
}
# Named refusals that deserve more than "unsupported".
REFUSALS = {
    ".ipynb": "notebooks are not converted; export it as a .py script (File > Download > .py)",
    ".pb": "a bare .pb is not a SavedModel; zip or tar the whole SavedModel directory",
    ".tar": "upload the SavedModel directory as .tar.gz or .zip",
}
ACCEPTED = ".py, .zip, .tar.gz, .tgz, .keras, .h5"


def ending(name: str) -> str:
    lower = name.lower()
    if lower.endswith(".tar.gz"):
        return ".tar.gz"
    return Path(lower).suffix


def classify(name: str) -> FileKind:
    end = ending(name)
    if end in KINDS:
        return KINDS[end]
    if end in REFUSALS:
        raise UploadError(f"`{name}`: {REFUSALS[end]}.")
    raise UploadError(f"`{name}` is not a file tfdesk converts (accepted: {ACCEPTED}).")


def limit_for(kind: FileKind, model_limit_bytes: int) -> int:
    return SCRIPT_LIMIT if kind.kind == "script" else model_limit_bytes


def human(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def check_declared(name: str, size: int | None, model_limit_bytes: int) -> FileKind:
    """Before downloading: the name and the size Slack declares."""
    kind = classify(name)
    limit = limit_for(kind, model_limit_bytes)
    if size is not None and size > limit:
        raise UploadError(f"`{name}` is {human(size)}; a {kind.label} may be at most "
                          f"{human(limit)}.")
    if size == 0:
        raise UploadError(f"`{name}` is empty.")
    return kind


def check_first_bytes(name: str, kind: FileKind, head: bytes) -> None:
    """While downloading: the first chunk must be what the name says."""
    if head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        raise UploadError(f"Slack sent a login page instead of `{name}`: the app needs the "
                          "`files:read` scope (reinstall it from the manifest).")
    if kind.magic:
        if not head.startswith(kind.magic):
            raise UploadError(f"`{name}` does not look like a {kind.label}: its content is not "
                              "in that format.")
    elif b"\x00" in head:
        raise UploadError(f"`{name}` is binary, not a Python script.")


def safe_name(name: str) -> str:
    base = Path(name.replace("\\", "/")).name
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).lstrip(".")
    return base or "upload"


# Where the bot token may be sent: Slack's file host, over HTTPS.
SLACK_FILE_HOSTS = (("https", "files.slack.com", 443),)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    try:
        port = parts.port or {"https": 443, "http": 80}.get(parts.scheme)
    except ValueError:  # a port that is not a number
        port = None
    return parts.scheme.lower(), (parts.hostname or "").lower(), port


def file_hosts(api_url: str | None, extra: list[str] | tuple[str, ...] = ()
               ) -> tuple[tuple[str, str, int | None], ...]:
    """Slack's file host, plus the host serving the Web API when ``SLACK_API_URL`` points
    elsewhere (Enterprise Grid proxies, the local stand-in in tests), plus ``[slack]
    file_hosts`` (HTTPS host names, e.g. GovSlack's ``files.slack-gov.com``)."""
    named = tuple(("https", str(h).lower(), 443) for h in extra)
    return SLACK_FILE_HOSTS + named + ((_origin(api_url),) if api_url else ())


def check_download_url(url: str, name: str, allowed) -> None:
    """The token goes only to Slack's own file host: an event can name any URL, and an
    attacker's host would receive the bot token with the request."""
    if _origin(url) not in allowed:
        raise UploadError(f"`{name}`: the download link does not point at Slack's file host "
                          f"({urlsplit(url).hostname or 'no host'}); not downloaded.")


def download(url: str, token: str, dest: Path, name: str, kind: FileKind, limit: int,
             timeout: float = 60.0, allowed_hosts=SLACK_FILE_HOSTS) -> Path:
    """Stream ``url`` to ``dest`` with the bot token; partial files never stay behind.
    A redirect elsewhere is followed without the token (httpx drops ``Authorization`` when
    the origin changes), so it yields Slack's sign-in page, which is refused."""
    check_download_url(url, name, allowed_hosts)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    total = 0
    try:
        with httpx.stream("GET", url, headers={"Authorization": f"Bearer {token}"},
                          follow_redirects=True, timeout=timeout) as resp:
            if resp.status_code != 200:
                raise UploadError(f"could not download `{name}` from Slack "
                                  f"(HTTP {resp.status_code}).")
            declared = resp.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise UploadError(f"`{name}` is {human(int(declared))}; a {kind.label} may be "
                                  f"at most {human(limit)}.")
            head, checked = b"", False
            with open(part, "wb") as out:
                for chunk in resp.iter_bytes(CHUNK):
                    if not checked:
                        head += chunk[:64 - len(head)]
                        if len(head) >= 16:
                            check_first_bytes(name, kind, head)
                            checked = True
                    total += len(chunk)
                    if total > limit:
                        raise UploadError(f"`{name}` is over {human(limit)}, the limit for a "
                                          f"{kind.label}; download stopped.")
                    out.write(chunk)
            if total == 0:
                raise UploadError(f"`{name}` is empty.")
            if not checked:
                check_first_bytes(name, kind, head)
        part.replace(dest)
        return dest
    except httpx.HTTPError as exc:
        raise UploadError(f"could not download `{name}` from Slack: {exc}") from None
    finally:
        part.unlink(missing_ok=True)


# -- what the user asked for in words ----------------------------------------------------------
_TF_DISTRIBUTE = re.compile(r"tf[\s._-]?distribute|multi[\s_-]?worker|mirrored", re.I)
_HOROVOD = re.compile(r"horovod|hvd", re.I)
_MODEL_TARGETS = [("tf-trt", re.compile(r"tf[\s_-]?trt", re.I)),
                  ("tensorrt", re.compile(r"tensor[\s_-]?rt|\btrt\b", re.I)),
                  ("onnx", re.compile(r"onnx", re.I))]
_PRECISION = re.compile(r"\b(fp32|fp16|int8)\b", re.I)


def script_target(instruction: str) -> str:
    return ("tf-distribute" if _TF_DISTRIBUTE.search(instruction)
            and not _HOROVOD.search(instruction) else "horovod")


def converted_path(path: Path, target: str) -> Path:
    return path.with_name(f"{path.stem}.{target.replace('-', '_')}.py")


def script_argv(path: Path, target: str) -> list[str]:
    return ["convert", str(path), "--to", target, "-o", str(converted_path(path, target))]


def model_argv(path: Path, instruction: str) -> list[str]:
    argv = ["convert-model", str(path)]
    for target, pattern in _MODEL_TARGETS:
        if pattern.search(instruction):
            argv += ["--to", target]
            break
    m = _PRECISION.search(instruction)
    if m:
        argv += ["--precision", m.group(1).lower()]
    return argv
