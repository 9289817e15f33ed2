"""How many bad lines of each kind a file keeps one by one: the reader (`storage.reader`) keeps a file's first ones
and counts the rest in one folded problem, and the diagnostics list as many per file and fold the rest alike
(`server.index.diagnostics`). A module of its own: the diagnostics are read where the line reader is not loaded."""

from __future__ import annotations

KEPT_PROBLEMS = 100
"""The bad lines of each kind (too long, or not a JSON object) kept one by one for a file: its first ones. Past them a
file's bad lines of that kind are only counted, in one folded problem (`more`, from its `line` to `last`), and a line
that cannot be an object (its first byte past JSON whitespace is not `{`) is not even parsed: 20 MB of `x` lines (a
log renamed, anything can land in the folder) kept 10 M problems, 5.4 GB, and took 157 s to check. Diagnostics list
as many of a kind per file (`server.index.diagnostics.MAX_OF_A_KIND`) and fold the rest the same way."""
