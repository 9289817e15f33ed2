"""Our diagnostics in the LSP's JSON form: one `Diagnostic`, and the workspace report of every indexed file.

Built as plain JSON, not as lsprotocol objects that pygls's converter then walks: the first workspace report of
the 311 MiB bench folder (1,182 files) took 0.14 s to build and 0.09 s to convert each time it was sent or kept,
on the server's one core while the editor waited. The shape is LSP 3.17's (`Diagnostic`,
`WorkspaceFullDocumentDiagnosticReport`), fields left out when they have no value, as lsprotocol leaves them out.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from server.index.diagnostics import SEVERITY_RANK, Diagnostic
from server.index.store import ProjectIndex

SOURCE = "session-lsp"
WHOLE_LINE = 10**6
"""The end column of a range that covers the rest of its line (clients clamp it to the line's length)."""


def line_range(line: int, start: int = 0, end: int | None = None) -> dict[str, Any]:
    """The range of `line` (0-based) from column `start` to `end`, or to the line's end."""
    return {
        "start": {"line": line, "character": start},
        "end": {"line": line, "character": end if end is not None else WHOLE_LINE},
    }


def diagnostic_json(d: Diagnostic, uri_of: Callable[[Path], str]) -> dict[str, Any]:
    """One of our diagnostics as an LSP `Diagnostic`; `uri_of` names the files of its related places."""
    out: dict[str, Any] = {
        "range": line_range(d.line, d.start_char or 0, d.end_char),
        "message": d.message,
        "severity": SEVERITY_RANK[d.severity],
        "code": d.code,
        "source": SOURCE,
    }
    if d.related:
        out["relatedInformation"] = [
            {"location": {"uri": uri_of(r.path), "range": line_range(r.line)}, "message": r.message} for r in d.related
        ]
    return out


def workspace_report(files: Iterable[tuple[Path, list[Diagnostic]]], uri_of: Callable[[Path], str]) -> dict[str, Any]:
    """A `WorkspaceDiagnosticReport` of full reports, one for each file of `files` with diagnostics."""
    items = [
        {"uri": uri_of(path), "items": [diagnostic_json(d, uri_of) for d in diags], "version": None, "kind": "full"}
        for path, diags in files
        if diags
    ]
    return {"items": items}


def indexed_diagnostics(
    indexes: list[ProjectIndex], stop: threading.Event | None = None
) -> Iterator[tuple[Path, list[Diagnostic]]]:
    """Every file of the indexes (the projects folder's, the store mirrors'), in order, with its diagnostics; stops
    as soon as `stop` is set (the request was cancelled)."""
    for index in indexes:
        index.settle_all()
    files = sorted((path, index) for index in indexes for path in list(index.files))
    for path, index in files:
        if stop is not None and stop.is_set():
            return
        yield path, index.diagnostics(path)


def workspace_report_json(
    indexes: list[ProjectIndex], uri_of: Callable[[Path], str], stop: threading.Event | None = None
) -> bytes:
    """The `workspace/diagnostic` answer over the indexes, as the JSON sent (the server's handler, and the first
    index's process for the answer given before pygls loads)."""
    return json.dumps(workspace_report(indexed_diagnostics(indexes, stop), uri_of)).encode()


def document_report(items: list[dict[str, Any]]) -> dict[str, Any]:
    """A full `DocumentDiagnosticReport` of one file's diagnostics (`diagnostic_json` each)."""
    return {"kind": "full", "items": items}
