"""Whatever lands in the projects folder under a transcript's name: random bytes (a core dump, an archive renamed),
a run of millions of blank lines. The folder still loads, and what we say of such a file stays bounded.

Before `diagnostics.bounded`, 20 MB of random bytes gave 82,051 diagnostics (one per bad line): `check` printed them
all and the server answered `workspace/diagnostic` with 19 MB of JSON for that one file. Now each file gives at most
`MAX_OF_A_KIND` of one code, then one that says how many more follow and up to which line; the counts still count
them all. Blank lines are taken as a run (20 MB of newlines took 42 s to check, 0.95 s now: bench figure, not a test).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from conftest import line_starts
from rawlsp import RawServer
from turnproc import ROOT

from server.index.diagnostics import MAX_OF_A_KIND
from storage.linemarks import LineMarks
from storage.reader import read_transcript

SID = "0b8f5f7e-5b7c-4d7e-9c1a-2f3e4d5c6b7a"
GOOD = "5c1d8e2a-7b3f-4a6c-9d0e-1f2a3b4c5d6e"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server.cli", *args], capture_output=True, text=True, cwd=ROOT)


def _row(uuid: str, parent: str | None, text: str) -> bytes:
    return (
        json.dumps(
            {
                "type": "user",
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": GOOD,
                "message": {"role": "user", "content": text},
            }
        ).encode()
        + b"\n"
    )


def _folder(tmp_path: Path, garbage: bytes) -> tuple[Path, Path, int]:
    """A project holding one well-formed session with a dangling parent, and `garbage` under a session's name; the
    number of bad lines the reader finds in the garbage."""
    project = tmp_path / "projects" / "-home-x"
    project.mkdir(parents=True)
    (project / f"{GOOD}.jsonl").write_bytes(_row("u1", None, "hi") + _row("u2", "gone", "on"))
    bad = project / f"{SID}.jsonl"
    bad.write_bytes(garbage)
    return tmp_path / "projects", bad, sum(p.more or 1 for p in read_transcript(bad).problems)


def test_random_bytes_give_a_bounded_report_that_counts_every_bad_line(tmp_path: Path) -> None:
    projects, bad, n_bad = _folder(tmp_path, random.Random(7).randbytes(2 << 20))
    assert n_bad > 3 * MAX_OF_A_KIND  # the case: thousands of bad lines

    done = _run("check", "--json", "--projects-dir", str(projects))
    assert done.returncode == 1, done.stderr
    diags = json.loads(done.stdout)
    mine = [d for d in diags if d["path"] == str(bad) and d["code"] == "invalid-json"]
    listed = [d for d in mine if "more" not in d]
    folded = [d for d in mine if "more" in d]
    assert len(listed) == MAX_OF_A_KIND and len(folded) == 1, len(mine)
    assert folded[0]["more"] == n_bad - MAX_OF_A_KIND
    assert folded[0]["line"] > max(d["line"] for d in listed)
    assert folded[0]["related"][0]["line"] >= folded[0]["line"]
    assert any(d["path"].endswith(f"{GOOD}.jsonl") and d["code"] == "dangling-parent" for d in diags)

    text = _run("check", "--projects-dir", str(projects))  # from the index database this time
    assert f"{n_bad - MAX_OF_A_KIND:,} more like this in this file" in text.stdout
    errors = sum(1 + d.get("more", 0) for d in diags if d["severity"] == "error")
    assert errors >= n_bad and f" {errors} error(s)" in text.stdout.splitlines()[-1], text.stdout.splitlines()[-1]
    again = _run("check", "--json", "--projects-dir", str(projects))
    assert json.loads(again.stdout) == diags

    with RawServer() as server:
        server.initialize(projects)
        report = server.call("workspace/diagnostic", {"previousResultIds": []}, timeout=60)["result"]["items"]
        items = {Path(item["uri"]).name: item["items"] for item in report}
        served = [d for d in items[bad.name] if d["code"] == "invalid-json"]
        assert len(served) == MAX_OF_A_KIND + 1 and len(items[bad.name]) < MAX_OF_A_KIND + 5
        assert [d["message"] for d in served if "more like this" in d["message"]] == [folded[0]["message"]]
        assert "dangling-parent" in [d["code"] for d in items[f"{GOOD}.jsonl"]]


def test_many_rows_with_the_same_link_problem_are_folded_after_the_links_are_settled(tmp_path: Path) -> None:
    """Dangling parents are settled against the whole folder, after the session's own checks: folded there too."""
    project = tmp_path / "projects" / "-home-x"
    project.mkdir(parents=True)
    n = 3 * MAX_OF_A_KIND
    path = project / f"{GOOD}.jsonl"
    path.write_bytes(b"".join(_row(f"u{i}", f"gone-{i}", "x") for i in range(n)))
    done = _run("check", "--json", "--projects-dir", str(tmp_path / "projects"))
    dangling = [d for d in json.loads(done.stdout) if d["code"] == "dangling-parent"]
    assert len(dangling) == MAX_OF_A_KIND + 1
    assert [d.get("more", 0) for d in dangling].count(n - MAX_OF_A_KIND) == 1
    assert dangling[-1]["line"] == MAX_OF_A_KIND + 1 and dangling[-1]["related"][0]["line"] == n


def test_runs_of_blank_lines_keep_every_line_number_and_offset(tmp_path: Path) -> None:
    """Blank lines taken as a run: each still has its line and offset, and the rows after them theirs."""
    rng = random.Random(11)
    path = tmp_path / f"{SID}.jsonl"
    for _ in range(200):
        parts: list[bytes] = []
        for i in range(rng.randrange(1, 8)):
            parts.append(b"\n" * rng.choice([0, 1, 2, rng.randrange(3, 5000)]))
            parts.append(rng.choice([_row(f"u{i}", None, "x"), b"  \n", b"{bad\n", b"\r\n"]))
        parts.append(b"\n" * rng.randrange(3))
        data = b"".join(parts)
        path.write_bytes(data)
        marks = LineMarks()
        read = read_transcript(path, marks=marks)
        starts = [0] + [i + 1 for i, byte in enumerate(data) if byte == 10][:-1] if data else []
        assert line_starts(path, marks) == starts
        lines = data.split(b"\n")
        assert [(r.line, r.offset) for r in read.rows] == [
            (n, starts[n]) for n, text in enumerate(lines) if text.startswith(b'{"type"')
        ]
        assert [p.line for p in read.problems] == [n for n, text in enumerate(lines) if text == b"{bad"]
