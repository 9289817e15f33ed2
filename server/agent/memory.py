"""CLAUDE.md memory, loaded in the CLI's order, with `@path` imports.

Order (later files win, so they come later): managed (`/etc/claude-code/CLAUDE.md` and its
`.claude/rules/*.md`), user (`~/.claude/CLAUDE.md`, `~/.claude/rules/*.md`), then for every folder
from the filesystem root down to the working directory: `CLAUDE.md`, `.claude/CLAUDE.md`,
`.claude/rules/*.md`, `CLAUDE.local.md`. An `@path` (relative to the including file, `~/`, or
absolute) pulls a file in right after its includer, at most 5 levels deep, each file once;
`@` inside fenced code blocks or inline code is not an import.

An import by project memory (a folder's `CLAUDE.md`, `.claude/`, `CLAUDE.local.md`, the working
directory's or an ancestor's) whose file, every symlink resolved, is outside the working directory
is external: as the CLI 2.1.328 does, it is loaded only once the project's external imports were
approved in the CLI (`hasClaudeMdExternalIncludesApproved` in its `.claude.json`), so a checkout
cannot pull `~/.ssh/id_rsa` into what the model is sent. Managed and user memory import freely.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from storage.fileopen import read_small_opened
from storage.paths import config_home, is_inside

log = logging.getLogger(__name__)

MAX_IMPORT_DEPTH = 5
HEADER = (
    "Codebase and user instructions are shown below. Be sure to adhere to these instructions. "
    "IMPORTANT: These instructions OVERRIDE any default behavior and you MUST follow them exactly as written."
)
DESCRIPTIONS = {
    "Project": " (project instructions, checked into the codebase)",
    "Local": " (user's private project instructions, not checked in)",
    "Managed": " (organization-managed policy instructions)",
    "User": " (user's private global instructions for all projects)",
}
_IMPORT_RE = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_INLINE_CODE_RE = re.compile(r"`[^`]*`")
_TEXT_SUFFIXES = {"", ".md", ".txt", ".markdown", ".json", ".yaml", ".yml", ".toml", ".rst"}
MAX_MEMORY_BYTES = 32 * 1024 * 1024
"""Memory past what a Messages API request may carry (32 MB, all files together) is left out, not read: a checkout's
sparse `CLAUDE.md` of gigabytes, or hundreds of rule files just under the bound, took the process's memory at every
turn."""
PSEUDO_FILES = (Path("/proc"), Path("/sys"))
"""The kernel's files of processes and devices: a memory file or an import whose real path is in one is never read.
`/proc/self/environ` is the environment of the process reading it (the provider's key, the server's token, the
store's password), which a checkout's `CLAUDE.local.md` linked there put in the model's prompt and the transcript;
the real CLI does not load it. Decided on the real path of the file opened (`storage.fileopen.read_small_opened`), not
of the path looked at before: a folder on the way swapped for a link into one meanwhile is refused too, and a file
reached through `/proc/<pid>/fd/N` is read only when its real path still names it (never a deleted file or a memfd)."""


@dataclass(frozen=True)
class MemoryFile:
    path: Path
    kind: str
    """Managed, User, Project or Local."""
    content: str
    parent: Path | None = None
    """The file that imported this one, if any."""


def managed_path() -> Path:
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode/CLAUDE.md")
    return Path("/etc/claude-code/CLAUDE.md")


def import_paths(text: str, base: Path) -> list[Path]:
    """`@path` references outside code, resolved against `base` (the includer's folder)."""
    found: list[Path] = []
    fenced = False
    for line in text.splitlines():
        if _FENCE_RE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        for m in _IMPORT_RE.finditer(_INLINE_CODE_RE.sub("", line)):
            raw = m.group(1).replace("\\ ", " ").rstrip(".,;:)")
            if raw.startswith("@") or not raw or raw.startswith(("http:", "https:")):
                continue
            if raw.startswith("~/"):
                path = Path(os.path.expanduser(raw))
            elif raw.startswith("/"):
                path = Path(raw)
            else:
                path = base / raw
            found.append(path)
    return found


def _read(
    path: Path, limit: int = MAX_MEMORY_BYTES, inside: Path | None = None, own: Path | None = None
) -> tuple[Path, str] | None:
    """The real path and the text of the memory file `path`: None unless its name is a text file's and what was
    opened (`storage.fileopen.read_small_opened`: links followed, the decision made on the descriptor, a FIFO swapped
    in never waited on) is a regular file of at most `limit` bytes whose real path is outside the kernel's pseudo
    files (`PSEUDO_FILES`) and, with `inside`, inside that folder (or is `own`: a file reached by no link)."""
    if path.suffix.lower() not in _TEXT_SUFFIXES:
        return None

    def allowed(real: Path) -> bool:
        if any(is_inside(root, real) for root in PSEUDO_FILES):
            return False
        return inside is None or is_inside(inside, real) or real == own

    got = read_small_opened(path, limit, allowed)
    if got is None:
        if _larger_than(path, limit):
            log.warning("memory file %s is more than a request can still carry (%d bytes): left out", path, limit)
        return None
    real, data = got
    return real, data.decode("utf-8", errors="replace")


def _larger_than(path: Path, limit: int) -> bool:
    """Whether `path` is a regular file of more than `limit` bytes (why `read_small` gave nothing, when it is)."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size > limit


@dataclass
class _Loading:
    """What one `load_memory` has read: the real paths, and how many bytes all of them may still take (the memory
    of a turn goes in one request: `MAX_MEMORY_BYTES` in all, however many files a checkout holds)."""

    seen: set[str] = field(default_factory=set)
    left: int = MAX_MEMORY_BYTES


def _load(
    path: Path,
    kind: str,
    loading: _Loading,
    depth: int = 0,
    parent: Path | None = None,
    inside: Path | None = None,
    *,
    held: bool = False,
) -> list[MemoryFile]:
    """`path` and what it imports; an import whose real path is not inside `inside` (when given) is left out, so is
    a `held` file (one a folder of the working directory's path holds: its `CLAUDE.md`, `.claude/CLAUDE.md`,
    `.claude/rules/*.md`, `CLAUDE.local.md`; the folders are real) reached through a link out of `inside`, and a file
    that would take more than what is left of the bound."""
    if depth > MAX_IMPORT_DEPTH:
        return []
    # decided on the file opened, by its real path (no look at the path before: a folder on the way swapped for a link
    # meanwhile would mislead it, and made `os.path.realpath` raise): an import out of `inside` is external, not
    # approved; as the CLI 2.1.328, so is a rule file linked out of it (a checkout's `rules/style.md` -> ~/.ssh/id_rsa),
    # and here any file a folder holds (the CLI reads a `CLAUDE.md` -> ~/.ssh/id_rsa and sends the key: we do not),
    # while one reached by no link (an ancestor folder's own) is the folder's
    got = _read(path, loading.left, inside if depth or held else None, path if held else None)
    if got is None:
        return []
    real, text = got
    if str(real) in loading.seen:
        return []
    loading.seen.add(str(real))
    loading.left -= len(text.encode("utf-8", "surrogatepass"))
    out = [MemoryFile(path, kind, text, parent)]
    for child in import_paths(text, path.parent):
        out += _load(child, kind, loading, depth + 1, path, inside)
    return out


def external_imports_approved(cwd: Path) -> bool:
    """The CLI's answer for `cwd` to "allow external CLAUDE.md imports?": its `.claude.json`
    (`$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`), `projects[cwd]`."""
    folder = os.environ.get("CLAUDE_CONFIG_DIR")
    path = Path(folder) / ".claude.json" if folder else Path(os.path.expanduser("~")) / ".claude.json"
    got = _read(path)
    try:
        data = json.loads(got[1]) if got else None
    except ValueError:
        return False
    projects = data.get("projects") if isinstance(data, dict) else None
    project = projects.get(str(cwd)) if isinstance(projects, dict) else None
    return isinstance(project, dict) and project.get("hasClaudeMdExternalIncludesApproved") is True


def _rules(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in (folder / "rules").rglob("*.md") if p.is_file())
    except OSError:
        return []


def _folders_down_to(cwd: Path) -> list[Path]:
    real = Path(os.path.realpath(cwd))
    return [*reversed(real.parents), real]


def load_memory(cwd: str | Path, *, home: Path | None = None, managed: Path | None = None) -> list[MemoryFile]:
    """Every memory file for `cwd`, in the order the CLI puts them in the prompt."""
    seen = _Loading()
    out: list[MemoryFile] = []
    managed_file = managed or managed_path()
    out += _load(managed_file, "Managed", seen)
    for rule in _rules(managed_file.parent / ".claude"):
        out += _load(rule, "Managed", seen)
    user_home = home or config_home()
    out += _load(user_home / "CLAUDE.md", "User", seen)
    for rule in _rules(user_home):
        out += _load(rule, "User", seen)
    folders = _folders_down_to(Path(cwd))
    inside = None if external_imports_approved(folders[-1]) else folders[-1]
    for folder in folders:
        out += _load(folder / "CLAUDE.md", "Project", seen, inside=inside, held=True)
        out += _load(folder / ".claude" / "CLAUDE.md", "Project", seen, inside=inside, held=True)
        for rule in _rules(folder / ".claude"):
            out += _load(rule, "Project", seen, inside=inside, held=True)
        out += _load(folder / "CLAUDE.local.md", "Local", seen, inside=inside, held=True)
    return out


def render_memory(files: list[MemoryFile]) -> str:
    """The `claudeMd` text the CLI puts in the user context ("" when there is no memory)."""
    parts = [f"Contents of {f.path}{DESCRIPTIONS[f.kind]}:\n\n{f.content.strip()}" for f in files if f.content.strip()]
    return f"{HEADER}\n\n" + "\n\n".join(parts) if parts else ""
