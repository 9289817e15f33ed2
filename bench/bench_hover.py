"""Hover latency (p50/p99) on the biggest session of a projects folder while other sessions and that one
grow: the index kept live by its watcher, views rebuilt as the server rebuilds them (when the file's offset
moved; grown on append, or in full with `--rebuild`). In this process; prints figures, it is not a test.

    .venv/bin/python -m bench.bench_hover [--mb 100] [--seconds 10] [--rate 50] [--rebuild]
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
import uuid
from pathlib import Path

import orjson

from bench.baseline import favour_this_run
from bench.make_projects import add_folder_arguments, projects_for
from server.features.hover import hover_markdown
from server.features.outline import row_at_line
from server.features.tree import TreeView
from server.index import ProjectIndex
from server.index.watcher import IndexWatcher


def churn(paths: list[Path], rate: float, stop: threading.Event, written: list[int]) -> None:
    """Append whole user rows to `paths` in turn, `rate` lines a second, as a live CLI would."""
    rnd = random.Random()
    while not stop.is_set():
        path = rnd.choice(paths)
        row = {
            "parentUuid": None,
            "isSidechain": False,
            "type": "user",
            "uuid": str(uuid.UUID(int=rnd.getrandbits(128), version=4)),  # fresh in every run, as the CLI's are
            "timestamp": "2026-06-01T00:00:00.000Z",
            "sessionId": path.stem,
            "message": {"role": "user", "content": "x" * rnd.randint(100, 5000)},
        }
        with open(path, "ab") as fh:
            fh.write(orjson.dumps(row) + b"\n")
        written[0] += 1
        time.sleep(1 / rate)


def main() -> None:
    print(favour_this_run())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(ap)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--rate", type=float, default=50, help="lines appended per second")
    ap.add_argument("--rebuild", action="store_true", help="rebuild each view in full (as before views grew)")
    args = ap.parse_args()
    grow = not args.rebuild
    source = projects_for(args)
    work = source.parent / "hover-projects"  # a copy: the churn appends to it
    if not work.is_dir():
        import shutil

        shutil.copytree(source, work)
    os.environ.setdefault("XDG_CACHE_HOME", str(source.parent.parent / "cache-hover"))
    idx = ProjectIndex(work)  # with the persistent index, as the server runs
    watcher = IndexWatcher(idx, lambda changes: None, debounce=0.0)
    watcher.start(scan=True)
    files = sorted(idx.files, key=lambda p: idx.files[p].size, reverse=True)
    big = files[0]
    stop = threading.Event()
    written = [0]
    writer = threading.Thread(target=churn, args=(files[:5], args.rate, stop, written), daemon=True)
    views: dict[Path, tuple[int, TreeView]] = {}
    rnd = random.Random(1)
    times: list[float] = []
    writer.start()
    end = time.perf_counter() + args.seconds
    try:
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            with idx.lock:  # the watcher grows the same transcript in place: read it under the index's lock
                state = idx.files[big]
                cached = views.get(big)
                if cached is None or cached[0] != state.offset or not cached[1].covers(state.transcript):
                    view = cached[1].grown(state.transcript) if cached is not None and grow else None
                    cached = (state.offset, view or TreeView.of(state.transcript))
                    views[big] = cached
                view = cached[1]
                row = row_at_line(view, rnd.randrange(state.line_count))
                if row is not None:
                    hover_markdown(big, view, row)
            times.append(time.perf_counter() - t0)
            time.sleep(0.005)
    finally:
        stop.set()
        writer.join()
        watcher.stop()
    times.sort()
    p50, p99 = times[len(times) // 2], times[int(len(times) * 0.99)]
    print(
        f"{big.name}: {state.size / 2**20:.0f} MiB, {state.line_count} lines; {written[0]} lines appended "
        f"to 5 sessions at {args.rate:.0f}/s during {args.seconds:.0f} s"
    )
    print(
        f"hover: {len(times)} requests, p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
