"""How fast `sessions/conversation` opens the biggest session of a generated projects folder.

Prints, for the largest file: a bare orjson parse of every line, the last page (what a client
asks for first), a page further back (`before`), and every item at once. Figures, not a test.

    .venv/bin/python -m bench.bench_conversation --mb 300     # the big file is about a quarter
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import orjson

from bench.baseline import favour_this_run
from bench.make_projects import add_folder_arguments, projects_for
from server.features.conversation import MAX_LIMIT, conversation
from storage.transcript import Transcript


def bare_parse(path: Path) -> float:
    t0 = time.perf_counter()
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                orjson.loads(line)
    return time.perf_counter() - t0


def timed(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    print(favour_this_run())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(parser)
    parser.add_argument("--limit", type=int, default=200)
    args = parser.parse_args()
    projects = projects_for(args)
    path = max(projects.glob("*/*.jsonl"), key=lambda p: p.stat().st_size)
    size = path.stat().st_size / 2**20
    base = bare_parse(path)
    print(f"{path.name}: {size:.1f} MiB")
    print(f"bare orjson parse of every line     {base:7.2f} s   1x")
    last_t, last = timed(lambda: conversation(path, limit=args.limit))
    print(f"last page ({len(last['items'])} items)              {last_t:7.2f} s   {last_t / base:.2f}x")
    before = last["items"][0]["id"]
    prev_t, prev = timed(lambda: conversation(path, limit=args.limit, before=before))
    print(f"the page before it ({len(prev['items'])} items)     {prev_t:7.2f} s   {prev_t / base:.2f}x")
    all_t, everything = timed(lambda: conversation(path, limit=MAX_LIMIT))
    more = " (more exist)" if everything["hasMore"] else ""
    print(f"{len(everything['items'])} items at once{more}          {all_t:7.2f} s   {all_t / base:.2f}x")
    loaded = Transcript.load(path)  # as the server's live index holds it
    idx_t, _ = timed(lambda: conversation(path, limit=args.limit, transcript=loaded))
    print(f"last page, transcript already indexed {idx_t:7.2f} s   {idx_t / base:.2f}x")


if __name__ == "__main__":
    main()
