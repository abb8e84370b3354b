"""Stage the site (hand-written pages + generated ones) and run ``mkdocs build --strict``.

The project's ``site_docs/`` is copied to a staging folder and the generated pages are written
there, so a build never writes into the source tree and two builds never meet.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from knowledge_base.errors import KBError
from knowledge_base.site import mkdocs_hooks

# Where the hand-written command reference takes the generated one.
COMMANDS_MARKER = "<!-- tfdesk:commands -->"
# Links to tfdesk's web view in the docs' Markdown: [Runs](web:/runs). Built with [web] url they
# point there (and every page gets a header link, overrides/main.html); without one the words
# stay and the link goes, so nothing is broken under --strict.
WEB_LINK = re.compile(r"\[([^\]\n]+)\]\(web:(/[^)\s]*)\)")
OVERRIDES = Path(__file__).with_name("overrides")
# Files a MkDocs build leaves at the top of its site_dir; one of them marks a folder as a
# previous build that may be replaced.
_SITE_MARKS = ("sitemap.xml", "search", "404.html")


class SiteBuildError(KBError):
    """The site could not be built; the message says why (MkDocs' own words included)."""


@dataclass
class BuildResult:
    site_dir: Path
    seconds: float
    log: str


def web_links(text: str, web_url: str) -> str:
    """``[words](web:/path)`` as a link into the web view at ``web_url``, or as the words."""
    if not web_url:
        return WEB_LINK.sub(r"\1", text)
    base = web_url.rstrip("/")
    return WEB_LINK.sub(lambda m: f"[{m.group(1)}]({base}{m.group(2)})", text)


def stage(project_dir: Path, staging: Path, site_url: str, site_dir: Path,
          inserts: dict[str, str] | None = None, web_url: str = "") -> tuple[Path, Path]:
    """Copy ``mkdocs.yml`` and its docs into ``staging``; returns (docs_dir, config file).

    ``inserts`` maps a page (``commands.md``) to text that replaces its COMMANDS_MARKER;
    ``web_url`` is tfdesk's web view (``[web] url``), linked from the pages when given.
    """
    project_dir = Path(project_dir)
    src_cfg = project_dir / "mkdocs.yml"
    if not src_cfg.is_file():
        raise SiteBuildError(f"no mkdocs.yml in {project_dir}; the site is built from a "
                             "tfdesk source checkout")
    cfg = yaml.safe_load(src_cfg.read_text(encoding="utf-8"))
    src_docs = project_dir / cfg.get("docs_dir", "docs")
    if staging.exists():
        shutil.rmtree(staging)
    docs = staging / "docs"
    shutil.copytree(src_docs, docs, ignore=shutil.ignore_patterns(
        "api", "changes", "releases.md", "migration.md", "releases", "migration"))
    for page, text in (inserts or {}).items():
        path = docs / page
        src = path.read_text(encoding="utf-8") if path.is_file() else COMMANDS_MARKER
        if COMMANDS_MARKER not in src:
            src += "\n\n" + COMMANDS_MARKER
        path.write_text(src.replace(COMMANDS_MARKER, text), encoding="utf-8")
    for page in docs.rglob("*.md"):
        src = page.read_text(encoding="utf-8")
        if "](web:" in src:
            page.write_text(web_links(src, web_url), encoding="utf-8")
    if web_url:
        cfg.setdefault("extra", {})["web_url"] = web_url
        cfg["theme"] = {**cfg.get("theme", {}), "custom_dir": str(OVERRIDES)}
    # Paths in the config are relative to mkdocs.yml, which now lives in the staging folder.
    # Our own hooks come from this installed package, so a copied project finds them too.
    ours = Path(mkdocs_hooks.__file__).resolve()
    cfg["hooks"] = [str(ours)] + [str((project_dir / h).resolve()) for h in cfg.get("hooks", [])
                                  if Path(h).name != ours.name]
    cfg["docs_dir"] = str(docs)
    cfg["site_dir"] = str(site_dir)
    cfg["site_url"] = site_url
    out_cfg = staging / "mkdocs.yml"
    out_cfg.write_text(yaml.safe_dump(cfg, sort_keys=False, allow_unicode=True),
                       encoding="utf-8")
    return docs, out_cfg


def check_site_dir(site_dir: Path) -> None:
    """MkDocs empties its site_dir: refuse a folder that holds anything but a former build."""
    site_dir = Path(site_dir)
    if site_dir.is_file():
        raise SiteBuildError(f"{site_dir} is a file; give --out a folder")
    if site_dir.is_dir() and any(site_dir.iterdir()) and not any(
            (site_dir / m).exists() for m in _SITE_MARKS):
        raise SiteBuildError(f"{site_dir} is not empty and does not hold a built site; "
                             "choose an empty folder so nothing in it is lost")


def run_mkdocs(config_file: Path, site_dir: Path, strict: bool = True,
               timeout: float = 1800) -> BuildResult:
    check_site_dir(site_dir)
    cmd = [sys.executable, "-m", "mkdocs", "build", "--clean", "-f", str(config_file),
           "-d", str(site_dir)]
    if strict:
        cmd.append("--strict")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SiteBuildError(f"mkdocs build ran longer than {timeout:.0f} s") from None
    log = (proc.stdout or "") + (proc.stderr or "")
    if proc.returncode != 0:
        problems = [ln for ln in log.splitlines() if "WARNING" in ln or "ERROR" in ln
                    or "Error" in ln or "Aborted" in ln]
        tail = "\n".join((problems or log.splitlines())[-15:])
        raise SiteBuildError(f"mkdocs build --strict failed:\n{tail}")
    return BuildResult(Path(site_dir), time.perf_counter() - t0, log)
