"""The live index of a projects folder and its diagnostics (no LSP types here: the server wraps it)."""

from server.index.diagnostics import CATALOGUE, Diagnostic, Related
from server.index.filestate import FileState
from server.index.store import ChangeSet, ProjectIndex

__all__ = ["CATALOGUE", "ChangeSet", "Diagnostic", "FileState", "ProjectIndex", "Related"]
