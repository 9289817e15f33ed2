"""Ranking of full-text search (`storage.search`) when a word is common: only the newest matches
are ranked, so a query costs the same however many documents hold the word."""

from __future__ import annotations

import json
import os
from pathlib import Path

from storage.search import RANK_WINDOW, SearchIndex

OLD = "0a0a0a0a-0000-4000-8000-000000000001"
NEW = "0b0b0b0b-0000-4000-8000-000000000002"


def write_session(path: Path, prompts: list[str]) -> None:
    rows = []
    parent = None
    for n, text in enumerate(prompts):
        uuid = f"{path.stem[:8]}-0000-4000-8000-{n:012d}"
        rows.append({"parentUuid": parent, "type": "user", "uuid": uuid, "message": {"role": "user", "content": text}})
        parent = uuid
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_a_common_word_ranks_only_the_newest_matches(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-work"
    folder.mkdir(parents=True)
    old = folder / f"{OLD}.jsonl"
    write_session(old, ["zebra " * 40 + "stripes everywhere"])
    os.utime(old, (1_000_000, 1_000_000))
    new = folder / f"{NEW}.jsonl"
    index = SearchIndex.open(tmp_path / "cache")
    # a few matches: every one is ranked, the old prompt saying zebra 40 times comes first
    write_session(new, [f"one zebra in message {n}" for n in range(10)])
    index.update(tmp_path / "projects")
    hits = index.search("zebra", 5)
    assert hits[0].session_id == OLD and len(hits) == 5
    # more matches than the window: the old prompt is not among the newest ones, so not ranked
    write_session(new, [f"one zebra in message {n}" for n in range(RANK_WINDOW + 10)])
    index.update(tmp_path / "projects")
    hits = index.search("zebra", 5)
    assert len(hits) == 5 and all(h.session_id == NEW for h in hits)
    assert all(h.line >= 10 for h in hits)  # among the newest RANK_WINDOW rows of the new file
    # a rarer word still finds the old prompt; its snippet marks the word
    stripes = index.search("stripes", 5)
    assert [h.session_id for h in stripes] == [OLD] and stripes[0].snippet.endswith("zebra [stripes] everywhere")
    # a match only after folding diacritics still gets a marked snippet (FTS5's)
    write_session(new, ["the häufig word"])
    index.update(tmp_path / "projects")
    assert [h.snippet for h in index.search("haufig", 5)] == ["the [häufig] word"]
    index.close()
