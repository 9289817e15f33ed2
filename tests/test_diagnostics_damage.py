"""Damaged copies of real CLI sessions: each damage is found with the right code on the right line."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from server.index import ProjectIndex

CORPUS = Path(__file__).resolve().parent / "corpus" / "claude-code-2.1.328" / "projects"
SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"  # READ, resumes, parallel reads
AGENT = "22222222-2222-4222-8222-222222222222"  # subagent, /compact


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS, dest)
    return dest


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def entry(line: bytes) -> dict:
    return orjson.loads(line)


def dump(e: dict) -> bytes:
    return orjson.dumps(e) + b"\n"


def check(projects: Path, name: str) -> list[tuple[int, str, str]]:
    idx = ProjectIndex(projects)
    idx.scan()
    return [(d.line + 1, d.code, d.severity) for d in idx.diagnostics(projects / SHOP / name)]


def problems(diags: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
    return [d for d in diags if d[2] in ("error", "warning")]


def find(lines: list[bytes], pred) -> int:  # type: ignore[no-untyped-def]
    return next(i for i, ln in enumerate(lines) if pred(entry(ln)))


def test_healthy_corpus_has_no_errors_or_warnings(projects: Path) -> None:
    idx = ProjectIndex(projects)
    idx.scan()
    bad = [d for d in idx.all_diagnostics() if d.severity in ("error", "warning")]
    assert bad == []
    assert len(idx.files) == 5


def test_deleted_middle_row_is_a_dangling_parent(projects: Path) -> None:
    path = projects / SHOP / f"{AGENT}.jsonl"
    lines = lines_of(path)
    gone = find(lines, lambda e: e.get("uuid", "").startswith("ec0ed3ec"))
    child = find(lines, lambda e: (e.get("parentUuid") or "").startswith("ec0ed3ec"))
    del lines[gone]
    write(path, lines)
    assert problems(check(projects, path.name)) == [(child, "dangling-parent", "warning")]


def test_cycle(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    later = entry(lines[find(lines, lambda e: e.get("uuid", "").startswith("19cd0017"))])["uuid"]
    at = find(lines, lambda e: e.get("uuid", "").startswith("2ef13d9c"))
    e = entry(lines[at])
    e["parentUuid"] = later  # 2ef13d9c -> 19cd0017 -> 2ef13d9c
    lines[at] = dump(e)
    write(path, lines)
    assert problems(check(projects, path.name)) == [(at + 1, "parent-cycle", "error")]


def test_garbage_line(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    lines.insert(10, b'{"type":"user","uuid":garbage\n')
    write(path, lines)
    assert problems(check(projects, path.name)) == [(11, "invalid-json", "error")]


def test_duplicated_row(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    at = find(lines, lambda e: e.get("uuid", "").startswith("04e5cfb1"))
    lines.insert(len(lines), lines[at])
    write(path, lines)
    assert problems(check(projects, path.name)) == [(len(lines), "duplicate-uuid", "warning")]


def test_tool_result_with_unknown_id(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    at = find(lines, lambda e: e.get("uuid", "").startswith("1aaa446d"))
    lines[at] = lines[at].replace(b"toolu_fac4cc1e4d644ddaa822", b"toolu_00000000000000000000")
    write(path, lines)
    diags = check(projects, path.name)
    assert problems(diags) == [(at + 1, "orphan-tool-result", "warning")]
    use = find(lines, lambda e: "toolu_fac4cc1e4d644ddaa822" in str(e.get("message")))
    assert (use + 1, "unanswered-tool-use", "information") in diags


def test_half_written_last_line(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    lines.append(lines[5][: len(lines[5]) // 2])
    write(path, lines)
    assert problems(check(projects, path.name)) == [(len(lines), "torn-tail", "warning")]


def test_unterminated_but_complete_last_line_is_fine(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    assert problems(check(projects, path.name)) == []


def test_missing_subagent(projects: Path) -> None:
    agent_dir = projects / SHOP / AGENT / "subagents"
    for p in agent_dir.iterdir():
        p.unlink()
    lines = lines_of(projects / SHOP / f"{AGENT}.jsonl")
    call = find(lines, lambda e: "toolu_0eef9045fa7c432da593" in str(e.get("message", {}).get("content", ""))
                and e["type"] == "assistant")  # fmt: skip
    assert problems(check(projects, f"{AGENT}.jsonl")) == [(call + 1, "missing-subagent", "warning")]


def test_subagent_file_is_clean_and_resolves_against_its_session(projects: Path) -> None:
    idx = ProjectIndex(projects)
    idx.scan()
    sub = next((projects / SHOP / AGENT / "subagents").glob("agent-*.jsonl"))
    assert idx.diagnostics(sub) == []
    call = idx.agent_call(sub)
    assert call is not None and call[0].name == f"{AGENT}.jsonl"


def test_dangling_summary_leaf_and_unknown_type_and_session_id(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    lines.append(dump({"type": "summary", "summary": "x", "leafUuid": "00000000-0000-4000-8000-000000000000"}))
    lines.append(dump({"type": "brand-new-thing", "sessionId": PAR}))
    lines.append(dump({"type": "brand-new-thing", "sessionId": PAR}))
    lines.append(dump({"type": "tag", "tag": "x", "sessionId": "99999999-9999-4999-8999-999999999999"}))
    write(path, lines)
    diags = check(projects, path.name)
    n = len(lines)
    assert (n - 3, "dangling-leaf", "warning") in diags
    assert [d for d in diags if d[1] == "unknown-type"] == [(n - 2, "unknown-type", "information")]
    assert (n, "session-id-mismatch", "hint") in diags


def test_parent_only_in_a_fork_copy_is_cross_file(projects: Path) -> None:
    """`--fork-session` copies rows with their uuids: the parent is then found in the fork."""
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    gone = find(lines, lambda e: e.get("uuid", "").startswith("2ef13d9c"))
    child = find(lines, lambda e: (e.get("parentUuid") or "").startswith("2ef13d9c"))
    del lines[gone]
    write(path, lines)
    assert (child, "cross-file-parent", "warning") in check(projects, path.name)


@pytest.mark.parametrize("folder", [SHOP, "-Users-me-other"])
def test_cross_file_parent_has_related_location(projects: Path, folder: str) -> None:
    """A parent in another file of the same project folder is a warning (resume stops there), with
    that file as related information; one in another project's file is not a link at all."""
    other = projects / SHOP / f"{PAR}.jsonl"
    target = entry(lines_of(other)[find(lines_of(other), lambda e: e.get("uuid", "").startswith("97990207"))])
    path = projects / folder / "1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
    if folder == SHOP:
        (projects / "-Users-me-other" / path.name).rename(path)
    lines = lines_of(path)
    at = find(lines, lambda e: e.get("type") == "user")
    e = entry(lines[at])
    e["parentUuid"] = target["uuid"]
    lines[at] = dump(e)
    write(path, lines)
    idx = ProjectIndex(projects)
    idx.scan()
    diags = idx.diagnostics(path)
    if folder != SHOP:
        assert [(d.line, d.code, d.severity) for d in diags] == [(at, "dangling-parent", "warning")]
        return
    assert [(d.line, d.code, d.severity) for d in diags] == [(at, "cross-file-parent", "warning")]
    assert diags[0].related[0].path == other
    assert diags[0].start_char is not None and diags[0].end_char == diags[0].start_char + 38
    assert (path, e["uuid"]) in {(p, r.uuid) for p, r in idx.children_of(target["uuid"])}


def test_rewind_branch_is_information(projects: Path) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = lines_of(path)
    old = entry(lines[find(lines, lambda e: e.get("uuid", "").startswith("43176b70"))])
    prompt = entry(lines[find(lines, lambda e: e.get("uuid", "").startswith("80c5a128"))])
    prompt.update(uuid="0a0a0a0a-0000-4000-8000-000000000001", parentUuid=old["parentUuid"])
    reply = entry(lines[find(lines, lambda e: e.get("uuid", "").startswith("97990207"))])
    reply.update(uuid="0a0a0a0a-0000-4000-8000-000000000002", parentUuid=prompt["uuid"])
    leaf = {"type": "last-prompt", "lastPrompt": "again", "leafUuid": reply["uuid"], "sessionId": PAR}
    lines += [dump(prompt), dump(reply), dump(leaf)]
    write(path, lines)
    diags = check(projects, path.name)
    assert problems(diags) == []
    branch = find(lines, lambda e: e.get("uuid") == old["uuid"])
    assert (branch + 1, "unreachable-branch", "information") in diags
