"""Where Claude Code keeps its files: config home, project folders, session and subagent files."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from storage.projectroots import confine

MAX_FOLDER_UNITS = 200
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")
AGENT_ID_RE = re.compile(r"[A-Za-z0-9_-]+")
AGENT_FILE_RE = re.compile(r"^agent-(?P<id>[A-Za-z0-9_-]+)\.jsonl\Z")


def config_home() -> Path:
    """`$CLAUDE_CONFIG_DIR`, else `~/.claude`, NFC-normalised."""
    raw = os.environ.get("CLAUDE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".claude")
    return Path(unicodedata.normalize("NFC", raw))


def default_projects_dir() -> Path:
    return config_home() / "projects"


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def djb2_utf16(text: str) -> int:
    """djb2 over UTF-16 code units as signed 32-bit (`h = (h*31 + unit) | 0`, from 0)."""
    h = 0
    for unit in _utf16_units(text):
        h = (h * 31 + unit) & 0xFFFFFFFF
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    if n == 0:
        return "0"
    out = []
    while n:
        n, r = divmod(n, 36)
        out.append(digits[r])
    return "".join(reversed(out))


def _escape_units(text: str) -> str:
    """Every UTF-16 unit outside [A-Za-z0-9] becomes `-` (so one astral char gives two dashes)."""
    out = []
    for unit in _utf16_units(text):
        ch = chr(unit) if unit < 0xD800 or unit > 0xDFFF else "-"
        out.append(ch if ch.isascii() and ch.isalnum() else "-")
    return "".join(out)


def project_folder_name(cwd: str) -> str:
    """The folder name the CLI uses for a working directory (already a realpath)."""
    path = unicodedata.normalize("NFC", cwd)
    escaped = _escape_units(path)
    if len(escaped) <= MAX_FOLDER_UNITS:
        return escaped
    return f"{escaped[:MAX_FOLDER_UNITS]}-{base36(abs(djb2_utf16(path)))}"


def resolve_cwd(cwd: str | os.PathLike[str]) -> str:
    try:
        return os.path.realpath(cwd)
    except OSError:
        return os.path.abspath(cwd)


def candidate_project_dirs(projects_dir: Path, cwd: str) -> list[Path]:
    """Project folders that may hold sessions of `cwd`: the exact name, and for long paths any
    folder with the same 200-unit prefix (older CLIs used another hash suffix)."""
    confine(projects_dir)
    name = project_folder_name(cwd)
    found = []
    exact = projects_dir / name
    if exact.is_dir():
        found.append(exact)
    if len(name) > MAX_FOLDER_UNITS:
        prefix = name[: MAX_FOLDER_UNITS + 1]
        try:
            entries = sorted(projects_dir.iterdir())
        except OSError:
            entries = []
        for entry in entries:
            if entry != exact and entry.name.startswith(prefix) and decodable(entry.name) and entry.is_dir():
                found.append(entry)
    return found


def is_session_file(path: Path) -> bool:
    """`<uuid>.jsonl` (its name's stem a uuid and its suffix `.jsonl`, from the name's string: on every file at
    each start, pathlib's `suffix` and `stem` cost more than the match)."""
    name = path.name
    return name.endswith(".jsonl") and bool(UUID_RE.match(name[:-6]))


def decodable(path: Path | str) -> bool:
    """`path` is valid UTF-8, as its bytes are on disk. A name holding another byte (0x80, 0xff: a synced folder, an
    archive from elsewhere) comes into Python with a lone surrogate in it, which SQLite, JSON and `file://` URIs
    cannot carry. The real CLI never writes such a name (a project folder is its cwd with every unit outside
    [A-Za-z0-9] made `-`, `project_folder_name`; a session or subagent file is named by a uuid), so such a file or
    folder is no session, subagent or project folder: discovery never lists it, nor anything below it."""
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def real_root(projects_dir: Path | str) -> Path:
    """The projects folder's real path (it may itself be a symlink, e.g. `~/.claude` elsewhere)."""
    return Path(os.path.realpath(os.path.expanduser(os.fspath(projects_dir))))


def is_inside(root: Path, real: Path) -> bool:
    """`real` is `root` or below it (both already real paths)."""
    return real == root or root in real.parents


def stays_inside(root: Path | str, path: Path | str) -> bool:
    """`path`, every symlink resolved, is inside `root` resolved: the rule of `storage.access`, also
    for what discovery may list and read, so a symlinked project folder, session or subagent file
    that points elsewhere is never read (nor listed, indexed or searched)."""
    return is_inside(real_root(root), Path(os.path.realpath(path)))


def linked_below(root: Path, path: Path) -> bool:
    """Some folder on the way from `root` (itself excluded) to `path`, or `path` itself, is a symlink:
    only then can `path` lead out, so `stays_inside` need not resolve it (one `lstat` per level
    instead). False for a path that is not below `root`."""
    try:
        names = path.relative_to(root).parts
    except ValueError:
        return False
    for depth in range(1, len(names) + 1):
        if root.joinpath(*names[:depth]).is_symlink():
            return True
    return False


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if decodable(e.name)), key=lambda e: e.name)
    except OSError:
        return []


def _is(entry: os.DirEntry[str], kind: str) -> bool:
    try:
        return entry.is_dir() if kind == "dir" else entry.is_file()
    except OSError:
        return False


def iter_project_dirs(projects_dir: Path) -> Iterator[Path]:
    """The project folders of a projects folder (a symlink among them only if it stays inside). Their files are
    read only through `storage.confined` from now on."""
    confine(projects_dir)
    for entry in _entries(projects_dir):
        if _is(entry, "dir") and (not entry.is_symlink() or stays_inside(projects_dir, Path(entry.path))):
            yield Path(entry.path)


def iter_session_files(project_dir: Path) -> Iterator[Path]:
    """Session transcripts directly inside a project folder (UUID names only), never through a
    symlink leading out of the projects folder (the project folder's parent)."""
    root = project_dir.parent
    confine(root)
    if project_dir.is_symlink() and not stays_inside(root, project_dir):
        return
    for entry in _entries(project_dir):
        path = Path(entry.path)
        if is_session_file(path) and _is(entry, "file"):
            if not entry.is_symlink() or stays_inside(root, path):
                yield path


@dataclass(frozen=True)
class SubagentFile:
    agent_id: str
    path: Path
    meta_path: Path | None


def subagent_files(session_file: Path) -> list[SubagentFile]:
    """`<sessionId>/subagents/[<subdir>/]agent-<id>.jsonl`, plus legacy flat `agent-*.jsonl`
    files beside sessions are found by `legacy_agent_files`."""
    root = session_file.with_suffix("") / "subagents"
    found: list[SubagentFile] = []
    if not root.is_dir():
        return found
    projects = session_file.parent.parent
    confine(projects)
    if not stays_inside(projects, root):  # one resolve per session: a folder on the way may be a link
        return found
    # rglob never enters a linked folder below `root`: only a linked file itself needs resolving
    for path in sorted(root.rglob("agent-*.jsonl")):
        m = AGENT_FILE_RE.match(path.name)
        if not m or not decodable(path.relative_to(root)) or (path.is_symlink() and not stays_inside(projects, path)):
            continue
        meta = path.with_name(f"agent-{m['id']}.meta.json")
        found.append(SubagentFile(m["id"], path, meta if meta.exists() else None))
    return found


def legacy_agent_files(project_dir: Path) -> list[Path]:
    """Flat `agent-*.jsonl` files that older CLIs wrote beside the sessions."""
    confine(project_dir.parent)
    try:
        return sorted(
            p
            for p in project_dir.glob("agent-*.jsonl")
            if decodable(p.name) and p.is_file() and stays_inside(project_dir.parent, p)
        )
    except OSError:
        return []
