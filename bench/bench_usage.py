"""Benchmark of usage reading: the usage of every session (as `list --json` adds it) on a first run and
on later runs through the cache, and the folder report, as ratios to a bare orjson parse of every line
of the same files. Prints figures; it is not a test.

    .venv/bin/python bench/bench_usage.py [--mb 100] [--seed 1] [--dir /tmp/slsp-bench]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.baseline import bare_parse, favour_this_run  # noqa: E402
from bench.make_projects import add_folder_arguments, projects_for  # noqa: E402
from storage.sessions import list_sessions  # noqa: E402
from storage.usage import folder_responses, sessions_usage_json, total  # noqa: E402
from storage.usagecache import UsageCache, usage_cache_file  # noqa: E402


def timed(fn: Callable[[], object], repeat: int, before: Callable[[], None] = lambda: None) -> float:
    times = []
    for _ in range(repeat):
        before()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    print(favour_this_run())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(parser)
    parser.set_defaults(mb=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    projects = projects_for(args)
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="slsp-usage-bench-")
    cache = usage_cache_file()
    assert cache is not None
    files = sorted(projects.rglob("*.jsonl"))
    size = sum(f.stat().st_size for f in files)
    sessions = list_sessions(projects, count=False)

    def drop_cache() -> None:
        cache.unlink(missing_ok=True)

    bare = timed(lambda: bare_parse(files), args.repeat)
    first = timed(lambda: sessions_usage_json(sessions), args.repeat, drop_cache)
    sessions_usage_json(sessions)
    later = timed(lambda: sessions_usage_json(sessions), args.repeat)
    report = timed(lambda: folder_responses(projects), args.repeat)
    cached = UsageCache()
    folder_responses(projects, cache=cached)
    cached.save()
    report_later = timed(lambda: folder_responses(projects, cache=UsageCache()), args.repeat)
    u = total(folder_responses(projects))
    print(f"{projects}: {size / 2**20:.0f} MiB, {len(files)} files, {len(sessions)} sessions, {u.responses} responses")
    print(f"bare orjson parse of every line        {bare:7.3f} s  1x")
    print(f"usage of every session, first run       {first:7.3f} s  {first / bare:.2f}x")
    print(f"usage of every session, later runs      {later:7.3f} s  {later / bare:.2f}x")
    print(f"folder report, no cache                 {report:7.3f} s  {report / bare:.2f}x")
    print(f"folder report, later runs               {report_later:7.3f} s  {report_later / bare:.2f}x")
    print(f"cache file {cache.stat().st_size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
