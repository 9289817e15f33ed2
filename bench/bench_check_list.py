"""Benchmark `check` and `list` against a bare orjson parse of every line of the same files.

    python -m bench.bench_check_list [--mb 300] [--seed 1] [--dir bench/out] [--runs 3]

Prints CPU-time ratios (stable on a shared machine) and wall-clock ratios (best of --runs,
interleaved), the time from an append to an updated index (watcher included), and index memory
per row.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from bench.baseline import bare_parse, favour_this_run
from bench.make_projects import add_folder_arguments, projects_for
from server.index import ProjectIndex
from server.index.parallel import check_folder
from server.index.watcher import IndexWatcher
from storage.sessions import list_sessions


def transcript_files(projects: Path) -> list[Path]:
    return sorted(p for p in projects.rglob("*.jsonl"))


def run_check(projects: Path, jobs: int) -> int:
    """What `session-lsp check` does on a whole folder (`jobs` worker processes; 1: in-process)."""
    diags, _ = check_folder(projects, jobs)
    gc.unfreeze()
    return len(diags)


def run_list(projects: Path) -> int:
    return len(list_sessions(projects))


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    gc.collect()
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def deep_size(idx: ProjectIndex) -> int:
    """Bytes held by rows, their strings and tuples, uuid maps and line tables (shared strings once)."""
    seen: set[int] = set()
    total = 0

    def add(obj: object) -> None:
        nonlocal total
        if obj is None or isinstance(obj, bool) or id(obj) in seen:
            return
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, tuple):
            for x in obj:
                add(x)

    for state in idx.files.values():
        t = state.transcript
        total += sys.getsizeof(t.rows) + sys.getsizeof(t.nodes) + sys.getsizeof(state.line_marks)
        for row in t.rows:
            add(row)
            for name in row.__slots__:
                value = getattr(row, name)
                if not isinstance(value, int):
                    add(value)
    return total


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def append_latency(projects: Path, samples: int = 20) -> tuple[float, float, float]:
    """(median s from append to updated index, median s to fresh diagnostics, rows indexed)."""
    idx = ProjectIndex(projects)
    done = []
    w = IndexWatcher(idx, lambda c: done.append(time.perf_counter()), debounce=0.0)
    w.start()
    big = max(idx.files.values(), key=lambda s: s.size).path
    sid = big.stem
    lat, dlat = [], []
    try:
        for i in range(samples):
            line = orjson.dumps({"type": "tag", "tag": f"bench {i}", "sessionId": sid}) + b"\n"
            done.clear()
            t0 = time.perf_counter()
            with open(big, "ab") as fh:
                fh.write(line)
            end = t0 + 5
            while time.perf_counter() < end and idx.files[big].offset != big.stat().st_size:
                time.sleep(0.0005)
            lat.append(time.perf_counter() - t0)
            t1 = time.perf_counter()
            idx.diagnostics(big)
            dlat.append(time.perf_counter() - t1)
            time.sleep(0.05)
    finally:
        w.stop()
    lat.sort()
    dlat.sort()
    return lat[len(lat) // 2], dlat[len(dlat) // 2], float(idx.files[big].size)


def main() -> None:
    print(favour_this_run())
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(p)
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args()
    projects = projects_for(args)
    files = transcript_files(projects)
    total = sum(f.stat().st_size for f in files)
    print(f"{projects}: {len(files)} transcript files, {total / 2**20:.0f} MiB")
    bare_parse(files)  # warm the page cache

    base = rss()
    idx = ProjectIndex(projects)
    idx.scan()
    rows = idx.row_count()
    gc.collect()
    per_row = (rss() - base) / max(rows, 1)
    deep = deep_size(idx) / max(rows, 1)
    lines = sum(s.line_count for s in idx.files.values())
    del idx
    gc.unfreeze()
    gc.collect()

    jobs = os.cpu_count() or 1
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.runs):
        for name, fn in (
            ("bare", lambda: bare_parse(files)),
            ("check -j1", lambda: run_check(projects, 1)),
            (f"check -j{jobs}", lambda: run_check(projects, jobs)),
            ("list", lambda: run_list(projects)),
        ):
            cpu, wall = measure(fn)
            old = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(old[0], cpu), min(old[1], wall))
    bcpu, bwall = best["bare"]
    print(f"bare orjson parse of {lines} lines: cpu {bcpu:.2f} s, wall {bwall:.2f} s")
    print("(cpu: this process only, so not meaningful for -j>1; wall: best of the runs)")
    for name in ("check -j1", f"check -j{jobs}", "list"):
        cpu, wall = best[name]
        print(f"{name:10} cpu {cpu:.2f} s = {cpu / bcpu:.2f}x   wall {wall:.2f} s = {wall / bwall:.2f}x")
    print(f"index memory: {deep:.0f} bytes per row counted ({rows} rows); RSS growth {per_row:.0f} bytes per row")
    lat, dlat, size = append_latency(projects)
    print(f"append -> updated index (watcher, debounce 0): median {lat * 1000:.1f} ms")
    print(f"then diagnostics of that {size / 2**20:.0f} MiB file: median {dlat * 1000:.0f} ms")


if __name__ == "__main__":
    main()
