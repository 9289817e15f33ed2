"""A file read in large pieces of whole lines, in time linear in its size and in memory bounded however long
one line is.

The readers that scan transcripts (rows, message counts, compact boundaries, usage, search) take the file a chunk
at a time and must not cut a line. Joining the unfinished line to each next chunk (`carry + block`) copies it again
at every chunk: a single line of 2 GB (a file nothing but one line, as a sparse file costs nothing to make) then
took minutes. Here an unfinished line is kept as a list of its blocks and joined once, when its newline comes:
each byte is copied at most twice.

A line longer than `MAX_LINE_BYTES` is not kept at all: once it grows past the bound its blocks are dropped as they
come, and the readers get a `LongLine` (where it starts, how long it is) in its place, so they report it and the
lines after it keep their exact numbers and offsets. Before, such a line was held whole (a 1 GiB line took 2 to 5 GB
of memory in each reader), so any file dropped into the projects folder could make the server use gigabytes.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, cast

MAX_LINE_BYTES = 128 * 1024 * 1024
"""The most bytes of one line (its newline left out) that any reader keeps; a longer line is not read.

Chosen from what real files hold and what the real CLI reads. Real transcripts have single lines of tens of MB
(cumulative progress rows, spec section 6): they must load, and 128 MiB is above any of them. The CLI 2.1.328 is a
Bun (JavaScriptCore) program, not Node: it holds each line whole and reads it as a string, so it reads far longer
lines than Node/V8 could (2^29-24 units). Found by resuming with the real CLI (a scripted model on loopback) a file
whose third line is a progress row that the next rows hang from: a row of 600 MiB, 1.17 GiB, 1.94 GiB and exactly
2^31-1 bytes was read (the chain went through it; the CLI took 2 to 2.4 times the line in memory, 4.4 GB for the
last), one of exactly 2^31 bytes of ASCII was skipped and every other line still read (the chain stopped at the
row after it, as at a missing parent); a row of 2^31 + 1 MiB bytes of two-byte characters (1.07 G UTF-16 units)
was read. So the CLI's bound is on the line as a JavaScript string, 2^31-1 UTF-16 units; past it the line is
skipped like a line that does not parse, with the rest of the file read; a line of NUL bytes (600 MiB, 2.06 GiB)
is skipped as one that does not parse, the rest read too. Reading up to the CLI's bound would take gigabytes for
each file the server reads, as it does the CLI; we keep at most this bound of a line (a reader then peaks at about
150 MB) and report a longer one (`line-too-long`): for lines between the two bounds, and only there, what we read
differs from what the CLI reads.
"""

GROWTH = 64 * 1024
"""The least a piece read into an array asks for past the file's size as it was: bytes appended meanwhile."""

OVER_LIMIT = f"over the {MAX_LINE_BYTES >> 20} MiB a line may have"
"""How a message says a line is too long to read."""


@dataclass(frozen=True, slots=True)
class LongLine:
    """A line longer than the bound, not read: its first byte's offset in the file and its length in bytes (its
    newline left out; when it is still unfinished at the end of the file, its length so far)."""

    offset: int
    length: int


class WholeLines:
    """Iterate to get the pieces of `fh` from where it stands, each a run of whole lines ending with a newline
    (the first one starting with `carry`, the unfinished line a previous read left) or a `LongLine` in place of a
    line longer than `limit`; then `rest` is what follows the last newline (b"" when the file ends with one, and
    always b"" unless `keep_rest`), or `long_rest` the `LongLine` it is when it is longer than `limit` (its bytes
    are not kept: `rest` is then b""). `chunk` must not be over `limit`: a line that fits in one block is kept."""

    def __init__(
        self, fh: BinaryIO, chunk: int, carry: bytes = b"", *, keep_rest: bool = True, limit: int = MAX_LINE_BYTES
    ) -> None:
        if chunk > limit:
            raise ValueError(f"a chunk of {chunk} bytes is over the line limit of {limit}")
        self.fh = fh
        self.chunk = chunk
        self.limit = limit
        self.rest = b""
        self.long_rest: LongLine | None = None
        self.keep_rest = keep_rest
        self._parts: list[bytes | bytearray] = []
        self._held = 0
        """Bytes of the unfinished line so far (also those dropped once it is over the limit)."""
        self._line_at = fh.tell() - len(carry)
        """The file offset of the unfinished line's first byte."""
        self._grow(carry)

    def __iter__(self) -> Iterator[bytes | LongLine]:
        return cast("Iterator[bytes | LongLine]", self._pieces(None))  # without arrays, every piece is bytes

    def arrays(self) -> Iterator[bytes | bytearray | LongLine]:
        """The same pieces, those read whole as bytearrays: each a new one, never changed once given. An unfinished
        line of at most a chunk and the next block are read into one array, whose end is cut off in place, so each
        byte is copied once more at most, where a piece of bytes takes two more copies of each block (cut at the
        last newline, joined to the line before). A longer unfinished line is kept as its blocks, as by iterating."""
        return self._pieces(getattr(self.fh, "readinto", None))

    def _pieces(self, readinto: Callable[[memoryview], int | None] | None) -> Iterator[bytes | bytearray | LongLine]:
        at = self.fh.tell()
        while True:
            if self._held > self.limit:
                at = self._past_holes(at)
            if readinto is not None and self._held <= self.chunk and self._held + self.chunk <= self.limit:
                array = self._read_array(readinto, at)
                if array is None:
                    break
                got = len(array) - self._held
                yield from self._take_array(array, self._line_at if self._held else at)
                at += got
                continue
            block = self.fh.read(self.chunk)
            if not block:
                break
            yield from self._take(block, at)
            at += len(block)
        self._finish()

    def _finish(self) -> None:
        if self._held > self.limit:
            self.long_rest = LongLine(self._line_at, self._held)
        elif self.keep_rest:
            self.rest = b"".join(self._parts)
        self._drop()

    def _past_holes(self, at: int) -> int:
        """Where to read on in a line that is over the limit (its bytes only counted): past the hole at `at`, if
        the file has one there. A hole reads as NUL bytes, none of them a newline, so it is all of it part of the
        line: counted without reading it. A sparse file costs nothing to make; one of 16 GB (4 KB on disk) kept
        the server's first index and its full listing waiting 47 s, 3 s a GB, whichever way it was read."""
        try:
            fd = self.fh.fileno()
            underneath = os.lseek(fd, 0, os.SEEK_CUR)  # where a buffered reader left the descriptor: put back
            size = os.fstat(fd).st_size  # before: what is appended meanwhile is read, not counted
            try:
                data = os.lseek(fd, at, os.SEEK_DATA)
            except OSError as exc:
                if exc.errno != errno.ENXIO:  # no SEEK_DATA here: read it all
                    data = at
                else:
                    data = max(at, size)  # a hole up to the end (or the end itself)
            finally:
                os.lseek(fd, underneath, os.SEEK_SET)
        except (AttributeError, OSError, io.UnsupportedOperation):
            return at
        if isinstance(self.fh, FileSpan) and self.fh.end is not None:
            data = min(data, self.fh.end)  # a span's reader reads no further than its end
        if data > at:
            self._held += data - at
            self.fh.seek(data)
        return max(data, at)

    def _take(self, block: bytes, at: int) -> Iterator[bytes | LongLine]:
        """The pieces that `block`, read at file offset `at`, completes; what is left of it starts the next line."""
        pos = 0
        if self._held:
            nl = block.find(b"\n")
            if nl < 0:
                self._grow(block)  # still inside one line: kept (not joined to anything yet), or counted only
                return
            line: bytes | LongLine
            if self._held + nl > self.limit:
                line = LongLine(self._line_at, self._held + nl)
            else:
                self._parts.append(block[: nl + 1])
                line = b"".join(self._parts)  # that line alone: the lines after it are the block's own
            self._drop()  # before the line is given: its blocks are not held while it is read
            yield line
            pos = nl + 1
        cut = block.rfind(b"\n") + 1
        if cut > pos:
            yield block if pos == 0 and cut == len(block) else block[pos:cut]
            pos = cut
        if pos < len(block):
            self._line_at = at + pos
            self._grow(block[pos:] if pos else block)

    def _read_array(self, readinto: Callable[[memoryview], int | None], at: int) -> bytearray | None:
        """The unfinished line and the next chunk read after it (from file offset `at`), in one new array; None at
        the end of the file. The array is sized to what the file holds (a new one is zeroed first), at least
        `GROWTH` bytes for what is appended meanwhile."""
        want = self.chunk
        with contextlib.suppress(AttributeError, OSError, io.UnsupportedOperation):
            want = min(want, max(os.fstat(self.fh.fileno()).st_size - at, GROWTH))
        array = bytearray(self._held + want)
        with memoryview(array) as view:
            pos = 0
            for part in self._parts:
                view[pos : pos + len(part)] = part
                pos += len(part)
            with view[pos:] as free:
                got = readinto(free)
        if not got:
            return None
        del array[pos + got :]
        return array

    def _take_array(self, array: bytearray, at: int) -> Iterator[bytearray]:
        """The whole lines of `array` (the unfinished line's bytes and a chunk read after them, starting at file offset
        `at`), in place; what follows its last newline starts the next unfinished line."""
        self._drop()
        cut = array.rfind(b"\n") + 1
        if cut < len(array):
            self._line_at = at + cut
            self._grow(array[cut:] if cut else array)
            if not cut:
                return
            del array[cut:]
        yield array

    def _grow(self, data: bytes | bytearray) -> None:
        """Add `data` to the unfinished line: kept while the line is within the limit, else only counted."""
        if not data:
            return
        self._held += len(data)
        if self._held > self.limit:
            self._parts.clear()
        else:
            self._parts.append(data)

    def _drop(self) -> None:
        self._parts = []
        self._held = 0


class FileSpan:
    """Bytes `start` to `end` (None: to the end of the file) of an open descriptor, read with `pread` at a position
    of this reader's own: two readers of one descriptor (a forked process's and its parent's, which share the
    descriptor's offset) never move each other's place. Its `fileno` lets `WholeLines` size its arrays by the file
    and skip the holes of a line too long to keep (`SEEK_DATA` moves the shared offset, which no reader of a span
    uses, and never past the span's end): without it a sparse line was read byte by byte, 9 s for one of 4 GiB
    where the skip takes 0.3 s."""

    def __init__(self, fd: int, start: int, end: int | None = None) -> None:
        self.fd = fd
        self.pos = start
        self.end = end

    def fileno(self) -> int:
        return self.fd

    def tell(self) -> int:
        return self.pos

    def seek(self, pos: int) -> int:
        self.pos = pos
        return pos

    def _room(self, want: int) -> int:
        return want if self.end is None else max(0, min(want, self.end - self.pos))

    def read(self, size: int) -> bytes:
        data = os.pread(self.fd, self._room(size), self.pos) if self._room(size) else b""
        self.pos += len(data)
        return data

    def readinto(self, view: memoryview) -> int:
        room = self._room(len(view))
        got = os.preadv(self.fd, [view[:room]], self.pos) if room else 0
        self.pos += got
        return got


def each_line(fh: BinaryIO, chunk: int) -> Iterator[bytes | LongLine]:
    """Every line of `fh` from where it stands, without its newline (the unfinished last one too), or a `LongLine`
    in place of one longer than `MAX_LINE_BYTES`: for readers that take a file line by line."""
    lines = WholeLines(fh, chunk)
    for piece in lines:
        if isinstance(piece, LongLine):
            yield piece
        else:
            yield from piece.split(b"\n")[:-1]
    if lines.long_rest is not None:
        yield lines.long_rest
    elif lines.rest:
        yield lines.rest
