"""A file read in large pieces of whole lines, in time linear in its size however long one line is.

The readers that scan transcripts (rows, message counts, compact boundaries, usage) take the file a chunk at a
time and must not cut a line. Joining the unfinished line to each next chunk (`carry + block`) copies it again
at every chunk: a single line of 2 GB (a file nothing but one line, as a sparse file costs nothing to make) then
took minutes and several times its size in memory. Here an unfinished line is kept as a list of its blocks and
joined once, when its newline comes or the file ends: each byte is copied at most twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO


class WholeLines:
    """Iterate to get the pieces of `fh` from where it stands, each a run of whole lines ending with a newline
    (the first one starting with `carry`, the unfinished line a previous read left); then `rest` is what follows
    the last newline (b"" when the file ends with one, and always b"" unless `keep_rest`)."""

    def __init__(self, fh: BinaryIO, chunk: int, carry: bytes = b"", *, keep_rest: bool = True) -> None:
        self.fh = fh
        self.chunk = chunk
        self.rest = carry
        self.keep_rest = keep_rest

    def __iter__(self) -> Iterator[bytes]:
        parts = [self.rest] if self.rest else []
        self.rest = b""
        while block := self.fh.read(self.chunk):
            cut = block.rfind(b"\n") + 1
            if not cut:
                parts.append(block)  # still inside one line: kept, not joined to anything yet
                continue
            if parts:
                parts.append(block[:cut])
                piece = b"".join(parts)
                parts.clear()
            else:
                piece = block if cut == len(block) else block[:cut]
            if cut < len(block):
                parts.append(block[cut:])
            yield piece
        self.rest = b"".join(parts) if self.keep_rest else b""
