"""Benchmark of the read side: `list` and a full chain rebuild of every session, as ratios to a
bare orjson parse of every line of the same files. Prints figures; it is not a test.

    .venv/bin/python bench/bench_read.py [--mb 300] [--seed 1] [--dir bench/out]
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baseline import bare_parse, favour_this_run  # noqa: E402
from bench.make_projects import add_folder_arguments, projects_for  # noqa: E402
from storage.paths import iter_project_dirs, iter_session_files  # noqa: E402
from storage.resume import resume  # noqa: E402
from storage.sessions import list_sessions  # noqa: E402


def rebuild_all(files: list[Path]) -> int:
    messages = 0
    for f in files:
        messages += len(resume(f).messages)
    return messages


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    times = []
    result: object = None
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    print(favour_this_run())
    ap = argparse.ArgumentParser(description=__doc__)
    add_folder_arguments(ap)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    projects = projects_for(args)
    root = projects.parent
    files = [f for d in iter_project_dirs(projects) for f in iter_session_files(d)]
    total = sum(f.stat().st_size for f in files)
    sizes = sorted(f.stat().st_size for f in files)
    print(
        f"{len(files)} session files, {total / 2**20:.1f} MiB; median {sizes[len(sizes) // 2] / 1024:.0f} KiB, "
        f"p90 {sizes[int(len(sizes) * 0.9)] / 1024:.0f} KiB, p99 {sizes[int(len(sizes) * 0.99)] / 1024:.0f} KiB"
    )
    bare_parse(files)  # warm the page cache
    t_parse, rows = timed(lambda: bare_parse(files), args.repeat)
    cache = root / "cache"
    os.environ["XDG_CACHE_HOME"] = str(cache)

    def cold_list() -> object:
        shutil.rmtree(cache, ignore_errors=True)
        return list_sessions(projects)

    t_cold, _ = timed(cold_list, args.repeat)
    t_list, listed = timed(lambda: list_sessions(projects), args.repeat)
    t_chain, msgs = timed(lambda: rebuild_all(files), max(1, args.repeat - 1))
    print(f"bare orjson parse : {t_parse:7.3f} s  ({rows} lines, {total / 2**20 / t_parse:.0f} MiB/s)")
    print(f"list, first run   : {t_cold:7.3f} s  ratio {t_cold / t_parse:.3f}x  (counts every message marker)")
    print(f"list              : {t_list:7.3f} s  ratio {t_list / t_parse:.3f}x  ({len(listed)} sessions)")  # type: ignore[arg-type]
    print(f"chain, every file : {t_chain:7.3f} s  ratio {t_chain / t_parse:.3f}x  ({msgs} API messages)")


if __name__ == "__main__":
    main()
