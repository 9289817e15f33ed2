"""A file's uuid table packed into two blobs, and the scan that finds uuids in many such packs.

The index database keeps, per file, every uuid with the line of the row it resolves to. Stored as one SQL row per
uuid with an index by uuid, the first index of a folder spent most of its storing time inserting rows; packed, a
file's table is a single row: `keys`, the 16 bytes of each uuid written in the canonical form the CLI writes
(36 characters, lowercase hex, dashes at 8, 13, 18 and 23), and `lines`, a little-endian unsigned 32-bit line for
each, in the same order. Any other uuid string (a damaged or crafted file's), and a uuid whose line does not fit in
32 bits (past 4,294,967,295 lines), is kept apart, as text with its line (`odd`).

A lookup scans the packs: a few uuids are searched for as bytes, a match counted only where a key starts; for many,
the first 8 bytes of every key are compared with the wanted ones in C (a set's `isdisjoint` over a memoryview),
and only a file with a hit is looked at key by key, each whole 16 bytes compared. Either way keys that share a
prefix with a wanted uuid, or bytes across two keys, never give a wrong answer. `Packs` is every file's pack, which a
database connection keeps between lookups.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import compress, count

KEY_BYTES = 16
MAX_LINE = 0xFFFFFFFF
"""The highest line a pack holds; a uuid on a later line is kept with the odd ones."""
FEW = 24
"""Up to this many wanted uuids, each is searched for in a pack as bytes (`bytes.find`, its hits at a key's start
kept); past it, the first 8 bytes of every key are compared with a set of them (in the 311 MB folder's 87k
uuids one `find` took 0.45 ms, the set's pass 11-15 ms)."""
_DASHES = (8, 13, 18, 23)
_CANONICAL_LEN = 36


@dataclass(frozen=True, slots=True)
class UuidPack:
    """One file's (uuid, line) pairs: the canonical uuids packed, the others as they are."""

    keys: bytes
    lines: bytes
    odd: tuple[tuple[str, int], ...] = ()

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self.pairs())

    def pairs(self) -> list[tuple[str, int]]:
        """The (uuid, line) pairs back, the packed ones first."""
        hexed = self.keys.hex()
        lines = unpack_lines(self.lines)
        out = [(_dashed(hexed, i * 2 * KEY_BYTES), line) for i, line in enumerate(lines)]
        out.extend(self.odd)
        return out


def canonical_key(uuid: str) -> bytes | None:
    """The 16 bytes of a uuid in the CLI's canonical form; None for any other string."""
    if len(uuid) != _CANONICAL_LEN or any(uuid[i] != "-" for i in _DASHES):
        return None
    bare = uuid.replace("-", "")
    try:
        key = bytes.fromhex(bare)
    except ValueError:
        return None
    return key if len(key) == KEY_BYTES and key.hex() == bare else None


def pack(pairs: Iterable[tuple[str, int]]) -> UuidPack:
    """Pack a file's (uuid, line) pairs. The canonical uuids are converted together (one `fromhex` and one check
    for the whole file); only when some uuid is not canonical is each looked at on its own."""
    pairs = list(pairs)
    uuids = [u for u, _ in pairs]
    joined = "".join(uuids)
    n = len(pairs)
    lengths = set(map(len, uuids))  # each one's, not only the total: a 35- and a 37-character uuid join as two of 36
    fits = not pairs or max(line for _, line in pairs) <= MAX_LINE
    if fits and lengths <= {_CANONICAL_LEN} and all(joined[i::_CANONICAL_LEN] == "-" * n for i in _DASHES):
        bare = joined.replace("-", "")
        try:
            keys = bytes.fromhex(bare)
        except ValueError:
            keys = b""
        if len(keys) == n * KEY_BYTES and keys.hex() == bare:
            return UuidPack(keys, pack_lines(line for _, line in pairs))
    packed = bytearray()
    lines: list[int] = []
    odd: list[tuple[str, int]] = []
    for uuid, line in pairs:
        key = canonical_key(uuid)
        if key is None or not 0 <= line <= MAX_LINE:
            odd.append((uuid, line))
        else:
            packed += key
            lines.append(line)
    return UuidPack(bytes(packed), pack_lines(lines), tuple(odd))


def pack_lines(lines: Iterable[int]) -> bytes:
    out = array("I", lines)
    if sys.byteorder == "big":
        out.byteswap()
    return out.tobytes()


def unpack_lines(blob: bytes) -> array[int]:
    out = array("I")
    out.frombytes(blob)
    if sys.byteorder == "big":
        out.byteswap()
    return out


@dataclass(frozen=True, slots=True)
class Wanted:
    """The canonical uuids a scan looks for: 16-byte key -> uuid, and the first 8 bytes of each key as the integers
    a native memoryview of 'Q' gives."""

    keys: dict[bytes, str]
    prefixes: frozenset[int]

    @classmethod
    def of(cls, uuids: Iterable[str]) -> Wanted:
        keys = {key: u for u in uuids if (key := canonical_key(u)) is not None}
        return cls(keys, frozenset(memoryview(key).cast("Q")[0] for key in keys))


def find(keys: bytes, wanted: Wanted) -> Iterator[tuple[str, int]]:
    """(uuid, index in the pack) of every key of `keys` among `wanted`. Exact: a key that only shares its first
    8 bytes with a wanted one is not found."""
    if len(keys) % KEY_BYTES:
        raise ValueError(f"a uuid pack of {len(keys)} bytes")
    if len(wanted.keys) <= FEW:
        for key, uuid in wanted.keys.items():
            at = keys.find(key)
            while at >= 0:
                if at % KEY_BYTES == 0:
                    yield uuid, at // KEY_BYTES
                at = keys.find(key, at + 1)
        return
    firsts = memoryview(keys).cast("Q")[::2]
    if wanted.prefixes.isdisjoint(firsts):
        return
    for i in compress(count(), map(wanted.prefixes.__contains__, firsts)):
        hit = wanted.keys.get(keys[i * KEY_BYTES : (i + 1) * KEY_BYTES])
        if hit is not None:
            yield hit, i


class Packs:
    """Every file's pack by file id, as a lookup scans them (kept between lookups, and changed file by file)."""

    def __init__(self, rows: Iterable[tuple[int, bytes, bytes]]) -> None:
        """From (file id, keys, lines) of each file; a pack whose keys and lines disagree is damage (ValueError)."""
        self.files: dict[int, tuple[bytes, array[int]]] = {}
        for file, keys, lines in rows:
            self.put(file, keys, lines)

    def put(self, file: int, keys: bytes, lines: bytes) -> None:
        if len(keys) % KEY_BYTES or len(lines) % 4 or len(keys) // KEY_BYTES != len(lines) // 4:
            raise ValueError(f"the uuid pack of file {file}: {len(keys)} bytes of keys, {len(lines)} of lines")
        self.files[file] = (keys, unpack_lines(lines))

    def find(self, wanted: Wanted) -> Iterator[tuple[str, int, int]]:
        """(uuid, file id, line) of every stored key among `wanted`."""
        for file, (keys, lines) in self.files.items():
            for uuid, i in find(keys, wanted):
                yield uuid, file, lines[i]


def _dashed(hexed: str, at: int) -> str:
    h = hexed[at : at + 2 * KEY_BYTES]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
