"""`ProjectIndex`: the live index of a projects folder, its cross-file links and diagnostics."""

from __future__ import annotations

import functools
import gc
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from server.index.checks import Pending, SessionReport, check_session
from server.index.diagnostics import Diagnostic, bounded
from server.index.filestate import APPENDED, MISSING, RELOADED, UNCHANGED, FileState
from server.index.links import resolve
from server.index.ranges import locate
from server.index.saved import (
    StoredFileState,
    key_text,
    legacy_ids,
    report_from_json,
    report_to_json,
    restore_file,
    row_uuids,
    save_files,
    stamps,
)
from storage.fileopen import NotARegularFile, why_not_regular
from storage.folderstamp import settled
from storage.indexdb import APPENDED as INDEX_APPENDED
from storage.indexdb import DAMAGE, SAME, Identity, IndexDB, compare
from storage.paths import AGENT_FILE_RE, decodable, is_session_file, linked_below, stays_inside
from storage.projectroots import confine
from storage.rows import Row
from storage.sessions import SessionInfo, read_session_info

SessionKey = tuple[Path, str]
log = logging.getLogger(__name__)
LEADS_OUT = "a symlink leading out of the projects folder"
COMMIT_EVERY = 0.5
"""Seconds between commits of the checks `all_diagnostics` stores (one transaction per session costs more than
the checks; holding the database longer would keep other processes waiting)."""


@dataclass
class ChangeSet:
    """What an update changed: files re-read, files gone, sessions touched, and `diagnostics`:
    other files whose diagnostics may have changed through a cross-file link."""

    changed: set[Path] = field(default_factory=set)
    removed: set[Path] = field(default_factory=set)
    session_ids: set[str] = field(default_factory=set)
    diagnostics: set[Path] = field(default_factory=set)
    root: str | None = None
    """"gone" when the projects folder went away, "back" when it (re)appeared and was read again."""

    def merge(self, other: ChangeSet) -> None:
        self.changed |= other.changed
        self.removed |= other.removed
        self.session_ids |= other.session_ids
        self.diagnostics |= other.diagnostics
        self.root = other.root or self.root

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed or self.diagnostics or self.root)


def norm(path: Path | str) -> Path:
    return Path(os.path.abspath(path))


def tracked_kind(path: Path) -> str | None:
    """'session', 'subagent', 'legacy-agent' (flat `agent-*.jsonl`), 'meta' (`.meta.json`), or None (also for a
    path that is not valid UTF-8: `storage.paths.decodable`)."""
    name = path.name
    if not decodable(path):
        return None
    if name.endswith(".meta.json"):
        return "meta" if name.startswith("agent-") else None
    if not name.endswith(".jsonl"):
        return None
    if is_session_file(path):
        return "session"
    if AGENT_FILE_RE.match(name):
        return "subagent" if "subagents" in path.parts else "legacy-agent"
    return None


@functools.lru_cache(maxsize=1 << 16)
def session_key(path: Path) -> SessionKey:
    """(project folder, session id) for a session or subagent file; a legacy agent file is its own. Kept for the
    files seen last (asked several times per file at every start, each time building paths anew)."""
    if is_session_file(path):
        return path.parent, path.stem
    parts = path.parts
    if "subagents" in parts:
        i = len(parts) - 1 - parts[::-1].index("subagents")
        session_dir = Path(*parts[:i])
        return session_dir.parent, session_dir.name
    return path.parent, "legacy:" + path.name


class ProjectIndex:
    """Per file: identity, offset read, line marks, link rows; per session: checks; across files:
    uuid lookups and the links that cross files. Thread-safe through `lock`.

    With `persist` (the default; off under SESSION_LSP_NO_CACHE) files and session checks are kept in the
    persistent index database: a file the database holds unchanged is not read again, an appended one is
    read from the stored offset, and `scan` stores what it read."""

    def __init__(self, projects_dir: Path | str, *, persist: bool = True) -> None:
        self.projects_dir = norm(projects_dir)
        confine(self.projects_dir)  # its files are read only through `storage.confined`: no link out is followed
        self.persist_enabled = persist
        self._db: IndexDB | None = None
        self._db_opened = False
        self._db_damaged = False
        self._unsaved: set[Path] = set()
        self._dropped: set[Path] = set()
        self._uuids_stored: set[Path] = set()
        """Files whose uuid table in the database is that of their rows now (stored, or restored unchanged)."""
        self._commit_every: float | None = None
        """While set (`all_diagnostics`), stored checks are committed at most this often, not one by one."""
        self._last_commit = 0.0
        self.files: dict[Path, FileState] = {}
        self.lock = threading.RLock()
        self._members: dict[SessionKey, set[Path]] = {}
        self._reports: dict[SessionKey, SessionReport] = {}
        self._resolved: dict[SessionKey, dict[Path, list[Diagnostic]]] = {}
        self.fallback_lookup: Callable[[str], list[tuple[Path, int]]] | None = None
        """Consulted for a uuid that no indexed file holds (`check` on a few files uses it)."""
        self.named: set[Path] = set()
        """Files tracked whatever their name (`check FILE` checks what it is given)."""
        self.skipped: dict[Path, str] = {}
        self.scan_bytes: tuple[int, int] = (0, 0)
        """(bytes read, bytes to read) of the scan under way, for progress reports."""
        """Entries named like transcripts that are not regular files (FIFOs, symlink loops, ...)."""

    def skip(self, path: Path, why: str) -> None:
        """Note an entry that is never read; logged once per path."""
        if path not in self.skipped:
            log.info("skipped %s: %s", path, why)
        self.skipped[path] = why

    # ---- discovery and updates -------------------------------------------------------------
    def discover(self) -> Iterator[Path]:
        """Every tracked transcript under the projects folder that is a regular file (the others
        are noted in `skipped`)."""
        try:
            projects = sorted(
                (e for e in os.scandir(self.projects_dir) if decodable(e.name) and _is_dir(e)), key=lambda e: e.name
            )
        except OSError:
            return
        # a path is resolved (`stays_inside`) only where a link may be on its way: resolving every file
        # would cost a syscall per folder level on each start
        for proj in projects:
            root = Path(proj.path)
            if proj.is_symlink() and not self._inside(root):
                continue
            try:
                entries = sorted(os.scandir(root), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                p = Path(entry.path)
                if tracked_kind(p) in ("session", "legacy-agent"):
                    if self._regular(p, linked=entry.is_symlink()):
                        yield p
                elif decodable(entry.name) and _is_dir(entry) and (root / entry.name / "subagents").is_dir():
                    subagents = root / entry.name / "subagents"
                    if (entry.is_symlink() or subagents.is_symlink()) and not self._inside(subagents):
                        continue
                    # rglob never enters a linked folder below `subagents`: only a linked file needs resolving
                    for sub in sorted(subagents.rglob("agent-*.jsonl")):
                        if tracked_kind(sub) == "subagent" and self._regular(sub, linked=sub.is_symlink()):
                            yield sub

    def _why_not_read(self, path: Path, *, linked: bool = True) -> str | None:
        """Why a tracked path is never read: not a regular file, or (when a link may be on its `linked` way)
        leading out of the projects folder once resolved (`storage.paths.stays_inside`)."""
        why = why_not_regular(path)
        if why is None and linked and not stays_inside(self.projects_dir, path):
            why = LEADS_OUT
        return why

    def _inside(self, folder: Path) -> bool:
        """A linked folder whose files may be read: it resolves inside the projects folder (else noted)."""
        if stays_inside(self.projects_dir, folder):
            return True
        self.skip(folder, LEADS_OUT)
        return False

    def _regular(self, path: Path, *, linked: bool = True) -> bool:
        why = self._why_not_read(path, linked=linked)
        if why is not None:
            self.skip(path, why)
        return why is None

    def scan(
        self,
        progress: Callable[[int, int], None] | None = None,
        paths: Iterable[Path] | None = None,
        *,
        discovered: bool = False,
    ) -> None:
        """Read every transcript (or only `paths`) from where the index stopped. Files found by discovery (all
        of them, or `paths` when `discovered` says they were) are not resolved again for links; named ones are.
        With the database, the whole scan first reads the sessions it does not hold on worker processes and
        stores them (`server.index.fill`): every file is then restored from it, its rows left there."""
        todo = [norm(p) for p in paths] if paths is not None else list(self.discover())
        linked = paths is not None and not discovered
        sizes = [file_size(p) for p in todo]
        total_bytes = sum(sizes)
        self.scan_bytes = (0, total_bytes)
        enabled = gc.isenabled()
        gc.disable()  # millions of long-lived rows: collections would only walk them again
        try:
            filled = self._fill(todo, sizes, progress) if paths is None else set()
            done_files, done_bytes = len(filled), self.scan_bytes[0]
            for i, path in enumerate(todo):
                with self.lock:
                    try:
                        self._update(path, ChangeSet(), linked=linked)
                    except OSError as exc:  # vanished or unreadable since it was found
                        self.skip(path, exc.strerror or str(exc))
                if path in filled:
                    continue  # counted as the workers read it
                done_files += 1
                done_bytes += sizes[i]
                self.scan_bytes = (done_bytes, total_bytes)
                if progress is not None:
                    progress(done_files, len(todo))
        finally:
            if enabled:
                gc.enable()
            gc.freeze()
        self.persist()

    def _fill(self, todo: list[Path], sizes: list[int], progress: Callable[[int, int], None] | None) -> set[Path]:
        """Read the sessions of `todo` the database holds nothing of (none of their files indexed or stored,
        every one settled) on worker processes, and store them; the files stored, counted in `scan_bytes`."""
        db = self._database()
        if db is None or not todo:
            return set()
        with self.lock:
            known = set(self.files)
        try:
            stored = db.rowset_identities()
        except DAMAGE:
            self._rebuild_db()
            return set()
        groups: dict[SessionKey, list[Path]] = {}
        for p in todo:
            groups.setdefault(session_key(p), []).append(p)
        cold = [p for members in groups.values() if _cold(members, known, stored) for p in members]
        if not cold:
            return set()
        size_of = dict(zip(todo, sizes))
        done = [0, 0]

        def step(paths: list[Path]) -> None:
            done[1] += sum(size_of.get(p, 0) for p in paths)
            self.scan_bytes = (done[1], self.scan_bytes[1])
            for _ in paths:  # file by file, as the in-process scan reports (a caller may report every n-th)
                done[0] += 1
                if progress is not None:
                    progress(done[0], len(todo))

        from server.index.fill import fill_first  # its workers build indexes of their own

        try:  # the listing is stored after the index's part, while this index goes on
            saved = fill_first(db, self.projects_dir, cold, progress=step).saved
        except DAMAGE:
            self._rebuild_db()
            return set()
        except (OSError, BrokenProcessPool) as exc:  # a worker died (out of memory?): read them here instead
            log.warning("reading the folder on worker processes failed (%s): reading it here", exc)
            return set()
        return set(cold) if saved else set()

    def persist(self) -> None:
        """Store the files read since the last call (and forget removed ones) in the index database."""
        with self.lock:
            db = self._database()
            if db is None or not (self._unsaved or self._dropped):
                return
            try:
                stored = save_files(db, [self.files[p] for p in sorted(self._unsaved) if p in self.files])
                db.drop_rowsets(str(p) for p in self._dropped)
                db.drop_uuids(str(p) for p in self._dropped)
                if not db.commit():
                    return  # another process held the database: keep everything in memory, try again later
            except DAMAGE:
                self._rebuild_db()
                stored = []
            for state in stored:  # their rows are in the database now: read them back when needed
                self._uuids_stored.add(state.path)
                if isinstance(state, StoredFileState):
                    state.unload(self._loader(state.path))
            self._unsaved.difference_update(s.path for s in stored)  # files too fresh to store wait for next time
            self._dropped.clear()

    def _rebuild_db(self) -> None:
        """The database was found damaged: start a new one, and take every row back from the files."""
        with self.lock:
            if self._db is not None:
                self._db = self._db.rebuild()
            for state in list(self.files.values()):
                if isinstance(state, StoredFileState):
                    state.load()
                    self._unsaved.add(state.path)

    def _database(self) -> IndexDB | None:
        if self._db_damaged:
            self._db_damaged = False
            self._rebuild_db()
        if not self._db_opened:
            self._db_opened = True
            self._db = IndexDB.open() if self.persist_enabled else None
        return self._db

    def close(self) -> None:
        """Store what is unsaved and close the database (the index stays usable, without it)."""
        self.persist()
        with self.lock:
            if self._db is not None:
                self._db.close()
            self._db, self.persist_enabled = None, False

    def update_file(self, path: Path | str) -> ChangeSet:
        """Read the appended bytes of one file (re-read it if replaced or shrunk; drop it if gone)."""
        changes = ChangeSet()
        with self.lock:
            self._update(norm(path), changes)
        return changes

    def remove_file(self, path: Path | str) -> ChangeSet:
        changes = ChangeSet()
        with self.lock:
            self._remove(norm(path), changes)
        return changes

    def _update(self, path: Path, changes: ChangeSet, *, linked: bool = True) -> None:
        kind = tracked_kind(path) or ("named" if path in self.named else None)
        if kind is None:
            return
        if kind == "meta":
            jsonl = path.with_name(path.name[: -len(".meta.json")] + ".jsonl")
            self._touch_session(session_key(jsonl), changes)
            return
        state = self.files.get(path)
        restored = False
        if state is None:
            why = self._why_not_read(path, linked=linked)
            if why is not None:
                if os.path.lexists(path):
                    self.skip(path, why)
                return
            state = self._restore(path)
            restored = state is not None
            state = state or (StoredFileState(path) if self.persist_enabled else FileState(path))
            self.files[path] = state
            key = session_key(path)
            self._members.setdefault(key, set()).add(path)
            if kind in ("subagent", "legacy-agent"):
                self._touch_agent_users(key[0], None, changes)
        elif linked_below(self.projects_dir, path) and not stays_inside(self.projects_dir, path):
            self.skip(path, LEADS_OUT)  # it, or a folder on its way, was swapped for a link out since it was read
            self._remove(path, changes)
            return
        try:
            how = state.refresh()
        except NotARegularFile as exc:  # replaced by a FIFO, a folder, ...
            self.skip(path, str(exc))
            how = MISSING
        if how == MISSING:
            self._remove(path, changes)
            return
        if how == UNCHANGED and restored:
            how = RELOADED  # new to this index all the same (and its rows stay in the database)
            self._uuids_stored.add(path)
        elif how == UNCHANGED:
            return
        else:
            self._unsaved.add(path)
            self._uuids_stored.discard(path)
        changes.changed.add(path)
        if state.session_id:
            changes.session_ids.add(state.session_id)
        key = session_key(path)
        self._touch_session(key, changes)
        self._touch_links(key, None if how == RELOADED else path, changes)
        if how not in (APPENDED, RELOADED):  # pragma: no cover - refresh returns one of the four
            raise AssertionError(how)

    def _remove(self, path: Path, changes: ChangeSet) -> None:
        if tracked_kind(path) == "meta":
            self._touch_session(session_key(path.with_name(path.name[:-10] + ".jsonl")), changes)
            return
        state = self.files.pop(path, None)
        if state is None:
            # a folder went away: drop every file under it
            prefix = str(path) + os.sep
            for p in [p for p in self.files if str(p).startswith(prefix)]:
                self._remove(p, changes)
            return
        changes.removed.add(path)
        self._unsaved.discard(path)
        self._uuids_stored.discard(path)
        self._dropped.add(path)
        if state.session_id:
            changes.session_ids.add(state.session_id)
        key = session_key(path)
        if tracked_kind(path) in ("subagent", "legacy-agent"):
            self._touch_agent_users(key[0], state.agent_id or "", changes)
        members = self._members.get(key)
        if members is not None:
            members.discard(path)
            if not members:
                del self._members[key]
        self._touch_session(key, changes)
        self._touch_links(key, None, changes)

    def _touch_session(self, key: SessionKey, changes: ChangeSet) -> None:
        self._reports.pop(key, None)
        self._resolved.pop(key, None)
        changes.diagnostics.update(self._members.get(key, ()))

    def _touch_agent_users(self, project: Path, gone: str | None, changes: ChangeSet) -> None:
        """An agent file came (`gone` None) or went (`gone` its agent id): checked sessions of the
        folder that miss an agent, or started the one gone, are checked again (a fork copy finds
        its source's agents)."""
        for key, report in list(self._reports.items()):
            if key[0] != project:
                continue
            if gone is None:
                touched = any(d.code == "missing-subagent" for d in report.diagnostics)
            else:
                main = self.files.get(project / f"{key[1]}.jsonl")
                touched = main is not None and any(r.spawned_agent == gone for r in main.transcript.rows)
            if touched:
                self._touch_session(key, changes)

    def _touch_links(self, key: SessionKey, appended: Path | None, changes: ChangeSet) -> None:
        """Sessions with unresolved links may resolve differently now: re-resolve them."""
        new_ids: set[str] | None = None
        if appended is not None:
            new_ids = set(self.files[appended].transcript.nodes)
        for other, report in self._reports.items():
            if other == key or other not in self._resolved or not report.pending:
                continue
            if new_ids is None or any(p.target in new_ids for p in report.pending):
                self._resolved.pop(other, None)
                changes.diagnostics.update(self._members.get(other, ()))

    # ---- queries ---------------------------------------------------------------------------
    def file_for_session(self, session_id: str) -> Path | None:
        with self.lock:
            for key, members in self._members.items():
                if key[1] == session_id:
                    main = key[0] / f"{session_id}.jsonl"
                    if main in members:
                        return main
            return None

    def find_uuid(self, uuid: str) -> list[tuple[Path, Row]]:
        """Every row with this uuid, across files."""
        with self.lock:
            stored = self._stored_homes(uuid)
            out = []
            for path, state in self.files.items():
                if isinstance(state, StoredFileState) and not state.loaded and path not in stored:
                    continue  # rows in the database, and none with this uuid
                row = state.transcript.nodes.get(uuid)
                if row is not None:
                    out.append((path, row))
            return out

    def homes(self, uuid: str) -> list[tuple[Path, int]]:
        """(file, 0-based line) of every row `find_uuid` finds, without loading any file's rows: those whose
        rows are in the database are looked up in its uuid tables (stored with them)."""
        return self.homes_many([uuid]).get(uuid, [])

    def homes_many(self, uuids: Collection[str]) -> dict[str, list[tuple[Path, int]]]:
        """`homes` of each of `uuids` found, in one scan of the stored uuid tables and one pass over the files."""
        if not uuids:
            return {}
        with self.lock:
            stored = self._stored_lines(uuids)
            wanted = set(uuids)
            out: dict[str, list[tuple[Path, int]]] = {}
            for path, state in self.files.items():
                if isinstance(state, StoredFileState) and not state.loaded:
                    for uuid, line in stored.get(path, ()):
                        out.setdefault(uuid, []).append((path, line))
                    continue
                nodes = state.transcript.nodes
                for uuid in wanted if len(wanted) <= len(nodes) else wanted.intersection(nodes):
                    row = nodes.get(uuid)
                    if row is not None:
                        out.setdefault(uuid, []).append((path, row.line))
            return out

    def _stored_homes(self, uuid: str) -> set[Path]:
        """Files whose rows are in the database and hold `uuid` (looked up there, not loaded)."""
        return set(self._stored_lines([uuid]))

    def _stored_lines(self, uuids: Collection[str]) -> dict[Path, list[tuple[str, int]]]:
        """File -> (uuid, line) of its stored rows with one of `uuids` (empty when no file's rows are left in the
        database)."""
        if not uuids or not any(isinstance(s, StoredFileState) and not s.loaded for s in self.files.values()):
            return {}
        db = self._database()
        if db is None:
            return {}
        try:
            found = db.homes_many(uuids)
        except DAMAGE:
            self._rebuild_db()
            return {}
        out: dict[Path, list[tuple[str, int]]] = {}
        for uuid, homes in found.items():
            for p, line in homes:
                out.setdefault(Path(p), []).append((uuid, line))
        return out

    def children_of(self, uuid: str) -> list[tuple[Path, Row]]:
        """Rows whose parentUuid, logicalParentUuid, leafUuid or forkedFrom is `uuid`, across files."""
        with self.lock:
            out: list[tuple[Path, Row]] = []
            homes = {path for path, _ in self.find_uuid(uuid)}
            for path in homes:
                out.extend((path, r) for r in self.files[path].children().get(uuid, ()))
                for row in self.files[path].transcript.rows:
                    if uuid in (row.logical_parent, row.leaf_uuid) and row.parent != uuid:
                        out.append((path, row))
            for report in self._all_reports():
                for p in report.pending:
                    if p.target == uuid and p.path not in homes and p.path in self.files:
                        pending_row = self._row_at(p.path, p.line)
                        if pending_row is not None:
                            out.append((p.path, pending_row))
            return out

    def subagent_files(self, session_file: Path | str) -> list[Path]:
        with self.lock:
            key = session_key(norm(session_file))
            return sorted(p for p in self._members.get(key, ()) if self.files[p].is_subagent)

    def agent_call(self, agent_file: Path | str) -> tuple[Path, Row] | None:
        """The Agent tool call that spawned a subagent file (by its result's agentId)."""
        with self.lock:
            state = self.files.get(norm(agent_file))
            if state is None or state.agent_id is None or state.session_id is None:
                return None
            main = session_key(state.path)[0] / f"{state.session_id}.jsonl"
            main_state = self.files.get(main)
            if main_state is None:
                return None
            rows = main_state.transcript.rows
            wanted = {t for r in rows if r.spawned_agent == state.agent_id for t in r.tool_result_ids}
            for row in rows:
                if wanted.intersection(row.tool_use_ids):
                    return main, row
            return None

    def diagnostics(self, path: Path | str, *, ranges: bool = True) -> list[Diagnostic]:
        """Diagnostics of one file (computed for its whole session on first use, then cached)."""
        p = norm(path)
        with self.lock:
            if p not in self.files:
                return []
            out = list(self._session_diagnostics(session_key(p)).get(p, ()))
            marks = self.files[p].line_marks.copy() if ranges else None  # the index's thread reads on into these
        if marks is not None:
            locate(p, out, marks)
        return out

    def all_diagnostics(self) -> list[Diagnostic]:
        with self.lock:
            out: list[Diagnostic] = []
            self.settle_all()
            for key in list(self._members):
                for diags in self._session_diagnostics(key).values():
                    out.extend(diags)
            return sorted(out, key=Diagnostic.sort_key)

    def settle_all(self) -> None:
        """Settle the links of every session not settled yet, with one lookup of all their targets: a lookup per
        session passes over every file each time (the 311 MiB bench folder's 522 sessions, 1,182 files, restored:
        file-by-file diagnostics took 0.32 s CPU so, 0.18 s after this)."""
        with self.lock:
            self._commit_every = COMMIT_EVERY
            try:
                todo = [k for k in list(self._members) if k not in self._resolved]
                found = self.lookup_many({p.target for k in todo for p in self._report(k).pending})
                for key in todo:
                    self._session_diagnostics(key, found)
            finally:
                self._commit_every = None
                self._commit()

    def sessions(self) -> list[SessionInfo]:
        """Session summaries from the head and tail of each main file (no full reads)."""
        with self.lock:
            mains = [p for p, s in self.files.items() if not s.is_subagent and s.session_id]
        out = []
        for p in mains:
            try:
                out.append(read_session_info(p))
            except OSError:
                continue
        out.sort(key=lambda s: s.modified_ts, reverse=True)
        return out

    def row_count(self) -> int:
        with self.lock:
            return sum(len(s.transcript.rows) for s in self.files.values())

    # ---- internals -------------------------------------------------------------------------
    def lookup(self, uuid: str) -> list[tuple[Path, int]]:
        return self.lookup_many([uuid]).get(uuid, [])

    def lookup_many(self, uuids: Collection[str]) -> dict[str, list[tuple[Path, int]]]:
        """`homes_many`, with `fallback_lookup` asked for each uuid no indexed file holds."""
        found = self.homes_many(uuids)
        if self.fallback_lookup is not None:
            for uuid in uuids:
                if uuid not in found:
                    found[uuid] = self.fallback_lookup(uuid)
        return found

    def _all_reports(self) -> list[SessionReport]:
        return [self._report(k) for k in list(self._members)]

    def _restore(self, path: Path) -> FileState | None:
        db = self._database()
        if db is None:
            return None
        try:
            return restore_file(db, path, self._loader(path))
        except DAMAGE:
            self._rebuild_db()
            return None

    def _loader(self, path: Path) -> Callable[[], tuple[bytes, bytes] | None]:
        """What a stored state calls to get its rows back; holds the index weakly (no cycle to keep it alive)."""
        ref = weakref.ref(self)

        def load() -> tuple[bytes, bytes] | None:
            index = ref()
            return index._stored_blob(path) if index is not None else None

        return load

    def _stored_blob(self, path: Path) -> tuple[bytes, bytes] | None:
        """A file's stored state (for `StoredFileState`); takes no index lock, so loading cannot deadlock."""
        db = self._db
        if db is None:
            return None
        try:
            return db.rowset_rows(str(path))
        except DAMAGE:
            self._db_damaged = True  # rebuilt by the next call that holds the index lock
            return None

    def _report(self, key: SessionKey) -> SessionReport:
        report = self._reports.get(key)
        if report is None:
            members = [self.files[p] for p in sorted(self._members.get(key, ()))]
            stamp = self._stamp(key, members)
            report = self._stored_report(key, stamp)
            if report is None:
                main = next((s for s in members if not s.is_subagent and s.path.stem == key[1]), None)
                subs = [s for s in members if s is not main]
                report = check_session(main, subs, self._agent_ids(key, subs))
                self._store_report(key, stamp, report)
            self._reports[key] = report
        return report

    def _stamp(self, key: SessionKey, members: list[FileState]) -> list[Any] | None:
        """The members' identities, when every member is read to the end of the file as it is now: each file's
        identity the one it had when read (a file replaced since, even by one of the same size and mtime, has checks
        of its own that these are not)."""
        if self._database() is None:
            return None
        for s in members:
            if s.read.tail or s.size != s.read.offset:
                return None
        stamp = stamps([s.path for s in members], legacy_ids(key[0]))
        if stamp is None or any(row[1:] != s.identity for row, s in zip(stamp[0], members)):
            return None
        return stamp

    def _stored_report(self, key: SessionKey, stamp: list[Any] | None) -> SessionReport | None:
        if stamp is None or self._db is None:
            return None
        try:
            found = self._db.session(key_text(key))
            return report_from_json(found[1]) if found is not None and found[0] == stamp else None
        except DAMAGE:
            self._rebuild_db()
            return None

    def _store_report(self, key: SessionKey, stamp: list[Any] | None, report: SessionReport) -> None:
        if stamp is None or self._db is None:
            return
        try:
            self._db.put_sessions([(key_text(key), stamp, report_to_json(report))])
            for path in self._members.get(key, ()):
                if path not in self._uuids_stored:
                    self._db.put_uuids(str(path), row_uuids(self.files[path]))
                    self._uuids_stored.add(path)
            if self._commit_every is None or time.monotonic() - self._last_commit >= self._commit_every:
                self._commit()
        except DAMAGE:
            self._rebuild_db()

    def _commit(self) -> None:
        self._last_commit = time.monotonic()
        if self._db is not None:
            try:
                if not self._db.commit():
                    self._uuids_stored.clear()  # the batch was dropped (database busy): store them again later
            except DAMAGE:
                self._rebuild_db()

    def _agent_ids(self, key: SessionKey, subs: list[FileState]) -> AgentFiles:
        ids = {s.agent_id for s in subs if s.agent_id}
        ids.update(legacy_ids(key[0]))  # legacy flat agent files beside the sessions, as the session's stamp lists them
        return AgentFiles(key[0], ids)

    def _session_diagnostics(
        self, key: SessionKey, found: dict[str, list[tuple[Path, int]]] | None = None
    ) -> dict[Path, list[Diagnostic]]:
        """The session's diagnostics by file; its links settled with `found` (`lookup_many` of every target, taken
        before) or in one lookup of its own."""
        resolved = self._resolved.get(key)
        if resolved is None:
            report = self._report(key)
            homes = found if found is not None else self.lookup_many({p.target for p in report.pending})
            diags = report.diagnostics + resolve(report.pending, lambda u: homes.get(u, []), self.file_for_session)
            resolved = {p: [] for p in self._members.get(key, ())}
            for d in bounded(diags):  # sorted
                resolved.setdefault(d.path, []).append(d)
            self._resolved[key] = resolved
        return resolved

    def _row_at(self, path: Path, line: int) -> Row | None:
        for row in self.files[path].transcript.rows:
            if row.line == line:
                return row
        return None


class AgentFiles:
    """Agent ids that have a transcript: the session's own, else any session's of the project folder.
    A `--fork-session` copy keeps its source's Agent results, whose files stay under the source."""

    def __init__(self, project: Path, own: set[str]) -> None:
        self.project = project
        self.own = own

    def __contains__(self, agent_id: object) -> bool:
        if agent_id in self.own:
            return True
        if not isinstance(agent_id, str) or not agent_id:
            return False
        return find_agent_file(self.project, agent_id) is not None


def find_agent_file(project: Path, agent_id: str) -> Path | None:
    """`<session>/subagents/[..]/agent-<id>.jsonl` of any session in `project`, else None; a session folder or
    `subagents` folder linked out of the projects folder is not searched (as discovery never enters one)."""
    name = f"agent-{agent_id}.jsonl"
    try:
        sessions = sorted((e.path, e.is_symlink()) for e in os.scandir(project) if _is_dir(e))
    except OSError:
        return None
    for folder, linked in sessions:
        root = Path(folder) / "subagents"
        if (linked or root.is_symlink()) and not stays_inside(project.parent, root):
            continue
        if root.is_dir():
            for hit in sorted(root.rglob(name)):
                if why_not_regular(hit) is None:
                    return hit
    return None


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """`is_dir` that takes a symlink loop for what it is: not a folder."""
    try:
        return entry.is_dir()
    except OSError:
        return False


__all__ = ["ChangeSet", "ProjectIndex", "Pending", "norm", "session_key", "tracked_kind"]


def _cold(members: list[Path], known: set[Path], stored: dict[str, Identity]) -> bool:
    """Whether a session is best read on workers: none of its files indexed, some not restorable from the
    database (absent, or changed other than by appends), and every one settled (else it may change again)."""
    if any(p in known for p in members):
        return False
    restorable = True
    for p in members:
        try:
            st = os.stat(p)
        except OSError:
            return False
        if not settled(st):
            return False
        identity = stored.get(str(p))
        if identity is None or compare(identity, p, st) not in (SAME, INDEX_APPENDED):
            restorable = False
    return not restorable


def file_size(path: Path) -> int:
    """The size of a file now; 0 when it cannot be told (gone, unreadable)."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
