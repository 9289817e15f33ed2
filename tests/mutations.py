"""Seeded damage of the kinds real projects folders get, applied to real transcripts (for tests).

Each mutation takes a transcript's bytes and a seeded `random.Random` and returns the damaged bytes
and the 1-based numbers of the lines a reader must report as malformed (None when the mutation does
not apply to that transcript, e.g. no multi-byte character to cut). The same name, source and seed
always give the same bytes: the recorded oracle (tests/corpus/mutations) keeps only their sha256.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CHAIN = {"user", "assistant", "system", "attachment", "progress"}
HUGE = 5 * 1024 * 1024
"""Bytes of the huge line: several MB, beyond any read buffer a reader might assume."""


@dataclass
class Mutated:
    data: bytes
    bad_lines: list[int] = field(default_factory=list)
    """1-based lines that are not rows (invalid JSON or not an object); blank lines are not bad."""


Mutation = Callable[[bytes, random.Random], "Mutated | None"]


def _lines(data: bytes) -> list[bytes]:
    """The file's lines without their newlines (a clean source ends in one)."""
    lines = data.split(b"\n")
    return lines[:-1] if lines and lines[-1] == b"" else lines


def _join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def _entry(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _dump(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()


def _chain_rows(lines: list[bytes], *, middle: bool = True) -> list[int]:
    """Indexes of conversation rows with a uuid; with `middle`, neither the first nor the last."""
    found = [i for i, line in enumerate(lines) if (e := _entry(line)) and e.get("type") in CHAIN and e.get("uuid")]
    return found[1:-1] if middle and len(found) > 2 else found


def _edit_row(data: bytes, rng: random.Random, edit: Callable[[dict[str, Any]], None]) -> Mutated | None:
    lines = _lines(data)
    rows = _chain_rows(lines)
    if not rows:
        return None
    at = rng.choice(rows)
    entry = _entry(lines[at])
    assert entry is not None
    edit(entry)
    lines[at] = _dump(entry)
    return Mutated(_join(lines))


def _multibyte_at(line: bytes) -> int | None:
    """Offset of the first byte of the first multi-byte character of `line`."""
    for i, byte in enumerate(line):
        if byte >= 0xC0:
            return i
    return None


def torn_tail(data: bytes, rng: random.Random) -> Mutated | None:
    lines = _lines(data)
    last = lines[-1]
    cut = rng.randrange(1, len(last) - 1)
    return Mutated(_join(lines[:-1]) + last[:cut], [len(lines)])


def cut_multibyte_tail(data: bytes, rng: random.Random) -> Mutated | None:
    """The file ends inside a multi-byte character: a write torn between its bytes."""
    lines = _lines(data)
    candidates = [i for i in range(1, len(lines)) if _multibyte_at(lines[i]) is not None]
    if not candidates:
        return None
    at = rng.choice(candidates)
    cut = _multibyte_at(lines[at])
    assert cut is not None
    return Mutated(_join(lines[:at]) + lines[at][: cut + 1], [at + 1])


def cut_multibyte_middle(data: bytes, rng: random.Random) -> Mutated | None:
    """A middle line cut inside a multi-byte character, the rest of the file after it."""
    lines = _lines(data)
    candidates = [i for i in range(1, len(lines) - 1) if _multibyte_at(lines[i]) is not None]
    if not candidates:
        return None
    at = rng.choice(candidates)
    cut = _multibyte_at(lines[at])
    assert cut is not None
    lines[at] = lines[at][: cut + 1]
    return Mutated(_join(lines), [at + 1])


def _body_spot(lines: list[bytes], rng: random.Random) -> tuple[int, int] | None:
    """A line and the offset just inside one of its text bodies (`"text":"` or `"content":"`)."""
    spots = []
    for i in _chain_rows(lines):
        for key in (b'"text":"', b'"content":"'):
            pos = lines[i].find(key)
            if pos >= 0:
                spots.append((i, pos + len(key)))
                break
    return rng.choice(spots) if spots else None


def _insert_in_body(data: bytes, rng: random.Random, insert: bytes, bad: bool) -> Mutated | None:
    lines = _lines(data)
    spot = _body_spot(lines, rng)
    if spot is None:
        return None
    at, pos = spot
    lines[at] = lines[at][:pos] + insert + lines[at][pos:]
    return Mutated(_join(lines), [at + 1] if bad else [])


def raw_nul(data: bytes, rng: random.Random) -> Mutated | None:
    """A raw NUL byte inside a string: a control character JSON does not allow unescaped."""
    return _insert_in_body(data, rng, b"before\x00after ", bad=True)


def escaped_nul(data: bytes, rng: random.Random) -> Mutated | None:
    return _insert_in_body(data, rng, b"before\\u0000after ", bad=False)


def invalid_utf8(data: bytes, rng: random.Random) -> Mutated | None:
    return _insert_in_body(data, rng, b"bad \xff\xc3( bytes ", bad=False)


def duplicate_row(data: bytes, rng: random.Random) -> Mutated | None:
    """A middle row written again at the end of the file, byte for byte (same uuid)."""
    lines = _lines(data)
    rows = _chain_rows(lines)
    if not rows:
        return None
    return Mutated(_join([*lines, lines[rng.choice(rows)]]))


def duplicate_row_changed(data: bytes, rng: random.Random) -> Mutated | None:
    """A middle row written again right after itself with another text (same uuid, new value)."""
    lines = _lines(data)
    spot = _body_spot(lines, rng)
    if spot is None:
        return None
    at, pos = spot
    lines.insert(at + 1, lines[at][:pos] + b"REWRITTEN " + lines[at][pos:])
    return Mutated(_join(lines))


def swap_rows(data: bytes, rng: random.Random) -> Mutated | None:
    lines = _lines(data)
    rows = _chain_rows(lines)
    if len(rows) < 2:
        return None
    k = rng.randrange(len(rows) - 1)
    a, b = rows[k], rows[k + 1]
    lines[a], lines[b] = lines[b], lines[a]
    return Mutated(_join(lines))


def shuffle_rows(data: bytes, rng: random.Random) -> Mutated | None:
    lines = _lines(data)
    rng.shuffle(lines)
    return Mutated(_join(lines))


def dangling_parent(data: bytes, rng: random.Random) -> Mutated | None:
    nowhere = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", nowhere))


def delete_middle_row(data: bytes, rng: random.Random) -> Mutated | None:
    lines = _lines(data)
    rows = _chain_rows(lines)
    if not rows:
        return None
    del lines[rng.choice(rows)]
    return Mutated(_join(lines))


def crlf(data: bytes, rng: random.Random) -> Mutated | None:
    return Mutated(data.replace(b"\n", b"\r\n"))


def bom(data: bytes, rng: random.Random) -> Mutated | None:
    return Mutated(b"\xef\xbb\xbf" + data)


def empty_lines(data: bytes, rng: random.Random) -> Mutated | None:
    lines = _lines(data)
    for blank in (b"", b"   ", b"\t", b""):
        lines.insert(rng.randrange(len(lines) + 1), blank)
    return Mutated(_join(lines))


def _insert_lines(data: bytes, rng: random.Random, extra: list[bytes], bad: bool) -> Mutated:
    lines = _lines(data)
    marked: list[tuple[bytes, bool]] = [(line, False) for line in lines]
    for line in extra:
        marked.insert(rng.randrange(1, len(marked) + 1), (line, bad))
    return Mutated(_join([line for line, _ in marked]), [i + 1 for i, (_, b) in enumerate(marked) if b])


def huge_row(data: bytes, rng: random.Random) -> Mutated | None:
    """A valid row of a type the CLI does not know, several MB long."""
    row = _dump({"type": "x-huge-blob", "data": "x" * HUGE, "timestamp": "2025-01-01T00:00:00.000Z"})
    return _insert_lines(data, rng, [row], bad=False)


def huge_garbage(data: bytes, rng: random.Random) -> Mutated | None:
    """Several MB that are not JSON (a binary blob pasted into the folder's file)."""
    blob = bytes(rng.randrange(32, 127) for _ in range(4096)) * (HUGE // 4096)
    return _insert_lines(data, rng, [b"{" + blob], bad=True)


def not_objects(data: bytes, rng: random.Random) -> Mutated | None:
    """Valid JSON that is not an object: an array, numbers, a string, null, true."""
    extra = [b'["user","assistant"]', b"42", b"-1.5e3", b'"a string row"', b"null", b"true"]
    return _insert_lines(data, rng, extra, bad=True)


def uuid_number(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("uuid", rng.randrange(1, 10**9)))


def parent_object(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", {"uuid": e.get("parentUuid")}))


def parent_number(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", 7))


def parent_array(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", [e.get("parentUuid")]))


def parent_empty_array(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", []))


def parent_empty_object(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", {}))


def parent_huge_number_lenient(data: bytes, rng: random.Random) -> Mutated | None:
    """A `parentUuid` beyond 64 bits on a line that only a lenient reader takes (an invalid UTF-8 byte)."""
    lines = _lines(data)
    spot = _body_spot(lines, rng)
    if spot is None:
        return None
    at, pos = spot
    entry = _entry(lines[at])
    assert entry is not None
    line = lines[at][:pos] + b"\xff " + lines[at][pos:]
    lines[at] = line.replace(
        b'"parentUuid":' + json.dumps(entry.get("parentUuid")).encode(), b'"parentUuid":' + b"9" * 30, 1
    )
    return Mutated(_join(lines))


def parent_true(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", True))


def parent_empty(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", ""))


def parent_false(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", False))


def parent_zero(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("parentUuid", 0))


def parent_missing(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.pop("parentUuid", None))


def uuid_object(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("uuid", {"uuid": e.get("uuid")}))


def type_number(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("type", 5))


def timestamp_number(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("timestamp", 1764000000000))


def sidechain_string(data: bytes, rng: random.Random) -> Mutated | None:
    return _edit_row(data, rng, lambda e: e.__setitem__("isSidechain", "true"))


def message_string(data: bytes, rng: random.Random) -> Mutated | None:
    """A conversation row whose `message` is a string instead of an object."""
    return _edit_row(data, rng, lambda e: e.__setitem__("message", "just a string"))


def _some_uuid(data: bytes, rng: random.Random) -> str:
    lines = _lines(data)
    entry = _entry(lines[rng.choice(_chain_rows(lines))])
    assert entry is not None
    return str(entry["uuid"])


def summary_first(data: bytes, rng: random.Random) -> Mutated | None:
    """A summary row at the top naming a middle row as its leaf."""
    row = _dump({"type": "summary", "summary": "A summary up front", "leafUuid": _some_uuid(data, rng)})
    return Mutated(row + b"\n" + data)


def summary_middle(data: bytes, rng: random.Random) -> Mutated | None:
    row = _dump({"type": "summary", "summary": "A summary in the middle", "leafUuid": _some_uuid(data, rng)})
    return _insert_lines(data, rng, [row], bad=False)


def custom_title_odd(data: bytes, rng: random.Random) -> Mutated | None:
    """Custom titles first, in the middle, and one without a session id."""
    sid = _session_id(data)
    first = _dump({"type": "custom-title", "customTitle": "title at the top", "sessionId": sid})
    middle = _dump({"type": "custom-title", "customTitle": "title in the middle", "sessionId": sid})
    bare = _dump({"type": "custom-title", "customTitle": "title without a session"})
    out = _insert_lines(first + b"\n" + data, rng, [middle, bare], bad=False)
    return Mutated(out.data)


def dangling_last_prompt(data: bytes, rng: random.Random) -> Mutated | None:
    """A `last-prompt` row at the end whose leaf is no row of the file."""
    nowhere = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    row = {"type": "last-prompt", "lastPrompt": "gone", "leafUuid": nowhere, "sessionId": _session_id(data)}
    return Mutated(data + _dump(row) + b"\n")


def metadata_only(data: bytes, rng: random.Random) -> Mutated | None:
    """Only the rows that are not conversation: titles, summaries, prompts, snapshots."""
    lines = [line for line in _lines(data) if (e := _entry(line)) is not None and e.get("type") not in CHAIN]
    sid = _session_id(data)
    lines.append(_dump({"type": "custom-title", "customTitle": "only metadata", "sessionId": sid}))
    lines.append(_dump({"type": "summary", "summary": "nothing to resume", "leafUuid": _some_uuid(data, rng)}))
    return Mutated(_join(lines))


def _session_id(data: bytes) -> str | None:
    for line in _lines(data):
        entry = _entry(line)
        if entry and entry.get("sessionId"):
            return str(entry["sessionId"])
    return None


MUTATIONS: dict[str, Mutation] = {
    "torn-tail": torn_tail,
    "cut-multibyte-tail": cut_multibyte_tail,
    "cut-multibyte-middle": cut_multibyte_middle,
    "raw-nul": raw_nul,
    "escaped-nul": escaped_nul,
    "invalid-utf8": invalid_utf8,
    "duplicate-row": duplicate_row,
    "duplicate-row-changed": duplicate_row_changed,
    "swap-rows": swap_rows,
    "shuffle-rows": shuffle_rows,
    "dangling-parent": dangling_parent,
    "delete-middle-row": delete_middle_row,
    "crlf": crlf,
    "bom": bom,
    "empty-lines": empty_lines,
    "huge-row": huge_row,
    "huge-garbage": huge_garbage,
    "not-objects": not_objects,
    "uuid-number": uuid_number,
    "parent-object": parent_object,
    "parent-number": parent_number,
    "parent-array": parent_array,
    "parent-true": parent_true,
    "parent-empty-array": parent_empty_array,
    "parent-empty-object": parent_empty_object,
    "parent-huge-number-lenient": parent_huge_number_lenient,
    "parent-empty": parent_empty,
    "parent-false": parent_false,
    "parent-zero": parent_zero,
    "parent-missing": parent_missing,
    "uuid-object": uuid_object,
    "type-number": type_number,
    "timestamp-number": timestamp_number,
    "sidechain-string": sidechain_string,
    "message-string": message_string,
    "summary-first": summary_first,
    "summary-middle": summary_middle,
    "custom-title-odd": custom_title_odd,
    "dangling-last-prompt": dangling_last_prompt,
    "metadata-only": metadata_only,
}


COMBINABLE = (
    "torn-tail cut-multibyte-tail cut-multibyte-middle raw-nul escaped-nul invalid-utf8 duplicate-row "
    "duplicate-row-changed swap-rows shuffle-rows dangling-parent delete-middle-row crlf bom empty-lines "
    "not-objects uuid-number parent-object parent-number parent-array parent-true parent-empty parent-false "
    "parent-zero parent-missing uuid-object type-number timestamp-number sidechain-string message-string "
    "summary-first summary-middle custom-title-odd dangling-last-prompt"
).split()
"""Mutations a combination draws from, fixed so that a new mutation leaves the recorded combinations as
they are (the 5 MB lines and the metadata-only file stand alone)."""


def unreadable_lines(data: bytes) -> list[int]:
    """1-based lines that are not rows when read as the CLI reads (UTF-8 with replacement, then strict
    JSON): for combinations, whose damaged lines move as later mutations insert and delete lines."""
    bad = []
    for n, line in enumerate(data.removeprefix(b"\xef\xbb\xbf").split(b"\n"), 1):
        text = line.decode("utf-8", "replace")
        if not text.strip():
            continue
        try:
            value = json.loads(text)
        except ValueError:
            bad.append(n)
            continue
        if not isinstance(value, dict):
            bad.append(n)
    return bad


def combination(data: bytes, rng: random.Random) -> Mutated | None:
    """Three mutations drawn from `COMBINABLE`, one after the other (a folder that had a bad year)."""
    for name in rng.sample(COMBINABLE, 3):
        out = MUTATIONS[name](data, rng)
        if out is not None:
            data = out.data
    return Mutated(data, unreadable_lines(data))


MUTATIONS.update({f"combination-{n}": combination for n in range(1, 9)})


def case_id(source_sid: str, mutation: str) -> str:
    """The session id a mutated copy is resumed under (a fresh id per source and mutation)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"session-lsp-mutation:{source_sid}:{mutation}"))


def mutate(source: bytes, source_sid: str, mutation: str) -> Mutated | None:
    """`mutation` applied to `source` with its seed, renamed to the case's session id."""
    rng = random.Random(f"{source_sid}:{mutation}")
    out = MUTATIONS[mutation](source, rng)
    if out is None:
        return None
    return Mutated(out.data.replace(source_sid.encode(), case_id(source_sid, mutation).encode()), out.bad_lines)
