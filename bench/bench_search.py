"""Benchmark of full-text search (`storage.search`): building the index of a folder, catching up when
nothing changed (every file, as `session-lsp search` does; only the files a watcher saw change, as
the language server does: a copied session appearing and going), and queries once indexed
(p50/p95/max over a set of words, and the slowest word), with the index size. Prints figures; it is
not a test.

    .venv/bin/python bench/bench_search.py [--mb 300] [--seed 1] [--dir bench/out] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baseline import favour_this_run
from bench.make_projects import add_folder_arguments, projects_for  # noqa: E402
from storage.search import DB_NAME, SearchIndex  # noqa: E402

QUERIES = ["login", "auth/login", "error", "Read", "function", "test", "zzzznotthere", "config file", "the"]


def main() -> None:
    print(favour_this_run())
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(p)
    p.add_argument("--rounds", type=int, default=5, help="times each word is searched")
    args = p.parse_args()
    root = projects_for(args)
    size = sum(f.stat().st_size for f in root.rglob("*.jsonl"))
    with tempfile.TemporaryDirectory() as tmp:
        index = SearchIndex.open(Path(tmp))
        t0 = time.perf_counter()
        files = index.update(root)
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        index.update(root)
        again = time.perf_counter() - t0
        source = min(root.glob("*/*.jsonl"), key=lambda f: abs(f.stat().st_size - 2**20))  # about 1 MiB
        copy = source.with_name("0c0c0c0c-0000-4000-8000-00000000beef.jsonl")
        shutil.copyfile(source, copy)
        try:
            t0 = time.perf_counter()
            index.update_paths(root, [copy])
            appeared = time.perf_counter() - t0
        finally:
            copy.unlink()
        t0 = time.perf_counter()
        index.update_paths(root, [copy])
        went = time.perf_counter() - t0
        times: list[float] = []
        by_word: dict[str, list[float]] = {q: [] for q in QUERIES}
        for _ in range(args.rounds):
            for q in QUERIES:
                t0 = time.perf_counter()
                index.search(q, 50, projects_dir=root)
                took = time.perf_counter() - t0
                times.append(took)
                by_word[q].append(took)
        db = (Path(tmp) / DB_NAME).stat().st_size
        index.close()
    ms = sorted(t * 1000 for t in times)
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    slowest = max(QUERIES, key=lambda q: statistics.median(by_word[q]))
    print(f"folder: {size / 2**20:.0f} MiB, {files} files indexed")
    print(f"first index: {build:.2f} s; catching up, nothing changed: {again * 1000:.0f} ms")
    print(
        f"watched catch-up: a copy of a session ({source.stat().st_size / 2**20:.1f} MiB) appearing "
        f"{appeared * 1000:.0f} ms, going {went * 1000:.0f} ms"
    )
    print(
        f"query (50 hits), {len(times)} queries: p50 {statistics.median(ms):.1f} ms, "
        f"p95 {p95:.1f} ms, max {ms[-1]:.1f} ms"
    )
    print(f"slowest word: {slowest!r}, median {statistics.median(by_word[slowest]) * 1000:.1f} ms")
    print(f"index size: {db / 2**20:.0f} MiB ({db / size:.2f}x the folder)")


if __name__ == "__main__":
    main()
