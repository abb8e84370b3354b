"""The user guides as an oracle: the blocks of site_docs/ marked runnable, read from the Markdown.

A marker is an HTML comment on the line right above a fenced block (invisible on the site):

    <!-- guide: file NAME -->     the block is a file the reader saves as NAME
    <!-- guide: run -->           the block's commands are run, in order, in the reader's folder
    <!-- guide: run slow -->      the same, only in the slow test (training, pipelines)
    <!-- guide: run checkout -->  run in the checkout (the quick start's `make` targets)
    <!-- guide: output -->        what the command just before prints (claims checked below)

In a `console` block, lines starting with `$ ` are commands and the lines under one are what it
prints; in a `bash` block every line is a command (a comment is the shell's). A printed line is
a claim: it must appear in the output, in order, with runs of white space equal; `...` stands
for anything (a whole line of it, or part of one). See site_docs/contributing.md.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SITE_DOCS = REPO / "site_docs"
MARK = re.compile(r"^(?P<indent>\s*)<!--\s*guide:\s*(?P<words>[^>]*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)")
KINDS = {"file", "run", "output"}
RUN_FLAGS = {"slow", "checkout"}
SHELLS = {"bash", "sh", "console"}
ELLIPSIS = re.compile(r"\.\.\.|…")


class GuideError(ValueError):
    """A marker the harness cannot read: names the page and line."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the marker, 1-based
    kind: str
    args: tuple[str, ...]
    lang: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass
class Step:
    """One thing the reader does: save a file, or type a command and read what it prints."""
    where: str
    file: str | None = None
    text: str = ""  # the file's content, or the command
    claims: list[str] = field(default_factory=list)
    slow: bool = False
    checkout: bool = False


def nav_pages(mkdocs_yml: Path = REPO / "mkdocs.yml") -> list[Path]:
    """The hand-written pages in the order the site's navigation lists them."""
    import yaml

    class Loader(yaml.SafeLoader):
        pass
    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # !!python tags
    nav = yaml.load(mkdocs_yml.read_text(encoding="utf-8"), Loader=Loader)["nav"]
    out: list[Path] = []

    def walk(items):
        for item in items:
            value = next(iter(item.values())) if isinstance(item, dict) else item
            if isinstance(value, list):
                walk(value)
            elif isinstance(value, str) and (SITE_DOCS / value).is_file():
                out.append(SITE_DOCS / value)
    walk(nav)
    return out


def blocks(text: str, page: str) -> list[Block]:
    """The marked blocks of one page, in order. A marker must sit right above a fence."""
    lines = text.splitlines()
    out, i = [], 0
    while i < len(lines):
        m = MARK.match(lines[i])
        if not m:
            i += 1
            continue
        words = m["words"].split()
        if not words or words[0] not in KINDS:
            raise GuideError(f"{page}:{i + 1}: unknown marker {m['words']!r} "
                             f"(file NAME, run [slow] [checkout], output)")
        kind, args = words[0], tuple(words[1:])
        if kind == "file" and len(args) != 1:
            raise GuideError(f"{page}:{i + 1}: 'guide: file' names one file")
        if kind == "run" and set(args) - RUN_FLAGS:
            raise GuideError(f"{page}:{i + 1}: 'guide: run' takes {sorted(RUN_FLAGS)}, "
                             f"not {sorted(set(args) - RUN_FLAGS)}")
        if kind == "output" and args:
            raise GuideError(f"{page}:{i + 1}: 'guide: output' takes nothing")
        f = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not f:
            raise GuideError(f"{page}:{i + 1}: a guide marker must be right above a fenced block")
        indent, fence = f["indent"], f["fence"]
        body, j = [], i + 2
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
            j += 1
        if j == len(lines):
            raise GuideError(f"{page}:{i + 1}: the fenced block is never closed")
        lang = f["lang"]
        if kind == "run" and lang not in SHELLS:
            raise GuideError(f"{page}:{i + 1}: a runnable block is one of {sorted(SHELLS)}, "
                             f"not {lang or 'plain'!r}")
        out.append(Block(page, i + 1, kind, args, lang, "\n".join(body) + "\n"))
        i = j + 1
    return out


def _logical_lines(body: str) -> list[str]:
    """Lines with their `\\` continuations joined."""
    out, cur = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            cur += line.rstrip()[:-1] + " "
            continue
        out.append(cur + line)
        cur = ""
    if cur:
        out.append(cur)
    return out


def steps(marked: list[Block]) -> list[Step]:
    """What the reader does, in order: files saved, commands typed with what they print."""
    out: list[Step] = []
    for b in marked:
        if b.kind == "file":
            out.append(Step(b.where, file=b.args[0], text=b.body))
            continue
        if b.kind == "output":
            if not out or out[-1].file is not None:
                raise GuideError(f"{b.where}: 'guide: output' must follow a runnable block")
            out[-1].claims += b.body.splitlines()
            continue
        slow, checkout = "slow" in b.args, "checkout" in b.args
        for line in _logical_lines(b.body):
            if b.lang == "console":
                if line.startswith("$ "):
                    out.append(Step(b.where, text=line[2:].strip(), slow=slow, checkout=checkout))
                elif line.strip():
                    if not out or out[-1].where != b.where:
                        raise GuideError(f"{b.where}: output {line!r} before any `$ ` command")
                    out[-1].claims.append(line)
            elif line.strip() and not line.lstrip().startswith("#"):
                out.append(Step(b.where, text=line.strip(), slow=slow, checkout=checkout))
    return out


def guide_steps(pages: list[Path] | None = None) -> list[Step]:
    """Every page's steps, pages in navigation order."""
    out: list[Step] = []
    for p in pages if pages is not None else nav_pages():
        out += steps(blocks(p.read_text(encoding="utf-8"), str(p.relative_to(REPO))))
    return out


def _squash(text: str) -> str:
    return " ".join(text.split())


def unmet_claim(claims: list[str], output: str) -> str | None:
    """The first printed line the output does not bear out, else None. Claims hold in order;
    white space is compared as single spaces; `...` (or `…`) matches anything."""
    have, at = _squash(output), 0
    for claim in claims:
        for part in ELLIPSIS.split(_squash(claim)):
            part = part.strip()
            if not part:
                continue
            found = have.find(part, at)
            if found < 0:
                return claim
            at = found + len(part)
    return None


def reader_env(home: Path) -> dict[str, str]:
    """A new reader's shell: `tfdesk` on the PATH (`.venv/bin`, as the quick start says), a
    fresh TFDESK_HOME, no configuration or Slack credentials from the caller."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TFDESK_", "SLACK_", "PYTEST_", "COV_"))}
    env["PATH"] = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}"
    env["TFDESK_HOME"] = str(home)
    return env


@dataclass
class Outcome:
    step: Step
    rc: int
    output: str


def run_step(step: Step, work: Path, home: Path, timeout: float) -> Outcome:
    """Do one step as the reader would: save the file, or run the command in bash."""
    if step.file is not None:
        target = work / step.file
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(step.text, encoding="utf-8")
        return Outcome(step, 0, "")
    cwd = REPO if step.checkout else work
    p = subprocess.run(["bash", "-c", step.text], cwd=cwd, env=reader_env(home),
                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return Outcome(step, p.returncode, p.stdout)


def failure(o: Outcome) -> str | None:
    """Why a step did not do what its page says, else None."""
    tail = "\n".join(o.output.splitlines()[-25:])
    if o.rc != 0:
        return f"{o.step.where}: `{o.step.text}` exited {o.rc}:\n{tail}"
    claim = unmet_claim(o.step.claims, o.output)
    if claim is not None:
        return (f"{o.step.where}: `{o.step.text}` does not print what the page shows: "
                f"{claim!r}\n--- it printed:\n{tail}")
    return None


# Every command line the docs print, marked or not, is one tfdesk's own parser reads.
INLINE = re.compile(r"`((?:\.venv/bin/)?tfdesk [^`]+|/tf [^`]+)`")
PROMPTS = re.compile(r"^\s*(?:\$ |tfdesk> )?(?:[A-Z_]+=\S+ )*(?:\.venv/bin/)?(tfdesk |/tf )(.*)$")
SYNOPSIS = re.compile(r"\[|\||\.\.\.|…|<|\$\(")  # a usage line or an excerpt, not a command


def command_lines(text: str, page: str) -> list[tuple[str, str]]:
    """(where, the words after `tfdesk` or `/tf`) for each command a page prints: in inline
    code, and on the lines of its code blocks; usage lines (`[--flag]`, `A|B`) are left out."""
    out, fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        f = FENCE.match(line)
        if f and (fence is None or f["fence"].startswith(fence)):
            fence = None if fence else f["fence"]
            continue
        found = []
        if fence:
            m = PROMPTS.match(line)
            if m and not line.rstrip().endswith("\\"):
                found.append(m.group(2))
        else:
            found += [m.group(1).split(" ", 1)[1] for m in INLINE.finditer(line)]
        for words in found:
            words = re.sub(r"\s+#.*$", "", words).strip()
            if words and not SYNOPSIS.search(words) and not words.endswith("..."):
                out.append((f"{page}:{n}", words))
    return out
