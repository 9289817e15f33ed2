"""Hover as an editor feels it: `textDocument/hover` round trips to a real `session-lsp serve` over stdio, on a
transcript of `--big-mb` MB (100 by default), first on a quiet folder, then while `--files` files of the folder
(1,000 by default, the big transcript among them) are appended to, `--rate` lines a second, each a whole CLI row,
as live sessions grow. The folder is a copy of a generated one (`bench/make_projects.py`) with the big transcript
added; the server runs with its watcher and persistent index as an editor starts it. Prints p50/p99/max per phase
and how many files changed; it is not a test.

    .venv/bin/python -m bench.bench_hover_serve [--mb 300] [--big-mb 100] [--files 1000] [--rate 200]
                                                [--seconds 20] [--hovers-quiet 400]
"""

from __future__ import annotations

import argparse
import random
import shutil
import threading
import time
import uuid
from pathlib import Path

import orjson

from bench.baseline import favour_this_run
from bench.bench_serve import Launch
from bench.make_projects import add_folder_arguments, make_transcript, projects_for


def _row(path: Path, rnd: random.Random) -> bytes:
    row = {
        "parentUuid": None,
        "isSidechain": False,
        "type": "user",
        "uuid": str(uuid.UUID(int=rnd.getrandbits(128), version=4)),
        "timestamp": "2026-06-01T00:00:00.000Z",
        "sessionId": path.stem,
        "message": {"role": "user", "content": "x" * rnd.randint(100, 5000)},
    }
    return orjson.dumps(row) + b"\n"


def churn(paths: list[Path], rate: float, stop: threading.Event, changed: set[Path]) -> None:
    """Append a row to each of `paths` in turn (shuffled), `rate` lines a second, until `stop`."""
    rnd = random.Random(7)
    order = paths[:]
    rnd.shuffle(order)
    n = 0
    next_at = time.perf_counter()
    while not stop.is_set():
        path = order[n % len(order)]
        with open(path, "ab") as fh:
            fh.write(_row(path, rnd))
        changed.add(path)
        n += 1
        next_at += 1 / rate
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)


def _lines(path: Path) -> int:
    with open(path, "rb") as fh:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))


def hovers(
    launch: Launch, uri: str, lines: int, rnd: random.Random, *, count: int = 0, until: float = 0
) -> list[float]:
    """Hover at random lines one after another (as a pointer moving over the file): each round trip's seconds."""
    times: list[float] = []
    while (count and len(times) < count) or (until and time.perf_counter() < until):
        line = rnd.randrange(lines)
        t0 = time.perf_counter()
        ((_, answer),) = launch.calls(
            [("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": line, "character": 0}})]
        )
        times.append(time.perf_counter() - t0)
        if "error" in answer:
            raise RuntimeError(f"hover failed: {answer['error']}")
        time.sleep(0.005)
    return times


def _figures(name: str, times: list[float]) -> str:
    times = sorted(times)
    p50, p99 = times[len(times) // 2], times[min(len(times) - 1, int(len(times) * 0.99))]
    return (
        f"{name}: {len(times)} hovers, p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, max {times[-1] * 1000:.1f} ms"
    )


def main() -> None:
    print(favour_this_run())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(ap)
    ap.add_argument("--big-mb", type=int, default=100, help="size of the hovered transcript")
    ap.add_argument("--files", type=int, default=1000, help="files appended to during the churn phase")
    ap.add_argument("--rate", type=float, default=200, help="lines appended per second in all")
    ap.add_argument("--seconds", type=float, default=20, help="length of the churn phase")
    ap.add_argument("--hovers-quiet", type=int, default=400)
    args = ap.parse_args()
    source = projects_for(args)
    root = source.parent.parent / f"hover-serve-mb{args.mb}-big{args.big_mb}"
    if root.exists():
        shutil.rmtree(root)
    projects = root / "projects"
    shutil.copytree(source, projects)  # a copy: the churn appends to it
    big = make_transcript(root, args.big_mb, 11, compactions=True, cwd="/Users/me/code/hover-big")
    files = sorted(p for p in projects.rglob("*.jsonl") if p != big)
    if len(files) + 1 < args.files:
        raise SystemExit(f"the folder has {len(files) + 1} files; --files {args.files} needs a larger --mb")
    changing = [big, *random.Random(3).sample(files, args.files - 1)]
    lines = _lines(big)
    print(f"{big.name}: {big.stat().st_size / 2**20:.0f} MiB, {lines} lines; folder of {len(files) + 1} files")

    launch = Launch(projects, root / "cache")
    init = {
        "processId": None,
        "capabilities": {"window": {"workDoneProgress": True}},
        "initializationOptions": {"projectsDir": str(projects)},
    }
    launch.call("initialize", init)
    launch.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    launch.calls([("workspace/diagnostic", {"previousResultIds": []})])  # as an editor asks on start
    launch.wait_indexed()
    uri = big.as_uri()
    rnd = random.Random(1)
    first = hovers(launch, uri, lines, rnd, count=1)  # builds the file's view
    print(f"first hover (builds the view of the file): {first[0] * 1000:.0f} ms")
    quiet = hovers(launch, uri, lines, rnd, count=args.hovers_quiet)
    print(_figures("quiet", quiet))

    stop = threading.Event()
    changed: set[Path] = set()
    writer = threading.Thread(target=churn, args=(changing, args.rate, stop, changed), daemon=True)
    writer.start()
    try:
        busy = hovers(launch, uri, lines, rnd, until=time.perf_counter() + args.seconds)
    finally:
        stop.set()
        writer.join()
    print(f"churn: {len(changed)} files changed at {args.rate:.0f} lines/s in {args.seconds:.0f} s")
    print(_figures("under churn", busy))
    cpu = launch.close()
    print(f"server CPU over the run: {cpu:.1f} s")
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
