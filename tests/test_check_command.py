"""`session-lsp check`: JSON output, compiler-style listing, exit status, given paths."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from server.cli import main

CORPUS = Path(__file__).resolve().parent / "corpus"
SHOP = "-Users-me-shop"
PAR = "11111111-1111-4111-8111-111111111111"


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    dest = tmp_path / "projects"
    shutil.copytree(CORPUS / "claude-code-2.1.328" / "projects", dest)
    return dest


@pytest.mark.parametrize("corpus", sorted(p.parent.name for p in CORPUS.glob("*/projects")))
def test_shared_corpora_check_clean(corpus: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--projects-dir", str(CORPUS / corpus / "projects"), "--json"]) == 0
    diags = orjson.loads(capsys.readouterr().out)
    assert [d for d in diags if d["severity"] in ("error", "warning")] == []


def test_json_and_exit_status(projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(3, b"not json\n")
    path.write_bytes(b"".join(lines))
    assert main(["check", "--projects-dir", str(projects), "--json"]) == 1
    diags = orjson.loads(capsys.readouterr().out)
    assert diags == [
        {
            "path": str(path),
            "line": 4,
            "code": "invalid-json",
            "severity": "error",
            "message": diags[0]["message"],
            "related": [],
        }
    ]


def test_listing_with_paths(projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = projects / SHOP / f"{PAR}.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"type":"summary","summary":"s","leafUuid":"00000000-0000-4000-8000-000000000000"}\n')
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0]
        == f"{path}:58: warning: summary leafUuid 00000000-0000-4000-8000-000000000000 is in no file [dangling-leaf]"
    )
    assert out[-1] == "1 file(s) checked: 0 error(s), 1 warning(s), 0 information, 0 hint(s)"


def test_paths_resolve_links_in_files_not_given(projects: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = projects / "-Users-me-other" / "1c99f271-c426-49f7-9ae1-2b8728ab22c4.jsonl"
    lines = other.read_bytes().splitlines(keepends=True)
    e = orjson.loads(lines[4])
    e["parentUuid"] = "97990207" + "-0000-0000-0000-000000000000"
    target = next(
        orjson.loads(ln)["uuid"] for ln in (projects / SHOP / f"{PAR}.jsonl").read_bytes().splitlines()
        if b'"uuid":"97990207' in ln
    )  # fmt: skip
    e["parentUuid"] = target
    lines[4] = orjson.dumps(e) + b"\n"
    other.write_bytes(b"".join(lines))
    assert main(["check", str(other), "--json"]) == 0
    diags = orjson.loads(capsys.readouterr().out)
    assert [(d["line"], d["code"]) for d in diags] == [(5, "dangling-parent")]  # another project: no link
    moved = projects / SHOP / other.name
    other.rename(moved)
    assert main(["check", str(moved), "--json"]) == 0
    diags = orjson.loads(capsys.readouterr().out)
    assert [(d["line"], d["code"], d["severity"]) for d in diags] == [(5, "cross-file-parent", "warning")]
    assert diags[0]["related"][0]["path"].endswith(f"{PAR}.jsonl")


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check", str(tmp_path / "nope.jsonl")])
    assert exc.value.code == 2


def test_parallel_check_equals_in_process(projects: Path) -> None:
    from server.index import ProjectIndex
    from server.index.parallel import check_folder

    path = projects / SHOP / f"{PAR}.jsonl"
    with open(path, "ab") as fh:
        fh.write(b'{"type":"summary","summary":"s","leafUuid":"00000000-0000-4000-8000-000000000000"}\n{"x":')
    idx = ProjectIndex(projects)
    idx.scan()
    serial = [d.to_json() for d in idx.all_diagnostics()]
    parallel, n = check_folder(projects, workers=2)
    assert n == 5 and [d.to_json() for d in parallel] == serial
    assert {d["code"] for d in serial} == {"dangling-leaf", "torn-tail"}
