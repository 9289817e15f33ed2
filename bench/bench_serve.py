"""`serve` as an editor sees it, whole process: launch until `initialize` is answered, until the first
`sessions/list {partial: true}` is answered (partial while the first index runs), until a whole one is (asked
again after `sessions/didChange`, as the editors do), and until `workspace/diagnostic` (asked with the first
list, as an editor asks on start; it waits for the first index) covers every file; cold (an empty cache folder)
and warm (the next launches, nothing changed). Ratios are to a bare orjson parse of every line of the same files,
in this process. With `--before REV`, an older commit's cold launches side by side (the trees in turn,
`--cold-runs` each: best and median). Prints figures; it is not a test.

    .venv/bin/python -m bench.bench_serve [--mb 300] [--runs 3] [--projects DIR] [--before REV] [--cold-runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Any

import orjson

from bench.baseline import bare_parse, favour_this_run
from bench.bench_speed import OUT, REPO, Tree, before_tree, best, best_cpu
from bench.make_projects import add_folder_arguments, projects_for


def _frame(obj: dict[str, Any]) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read(out: IO[bytes]) -> dict[str, Any]:
    length = 0
    while True:
        line = out.readline()
        if not line:
            raise EOFError("the server closed its output")
        if not line.strip():
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    message: dict[str, Any] = orjson.loads(out.read(length))  # as fast as an editor's own JSON parser
    return message


class Launch:
    """One `session-lsp serve` process over stdio, timed from its launch."""

    def __init__(self, projects: Path, cache: Path, tree: Path = REPO) -> None:
        env = {k: v for k, v in os.environ.items() if k != "SESSION_LSP_NO_CACHE"}
        env.update(XDG_CACHE_HOME=str(cache), PYTHONPATH=str(tree))
        self.before = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.cli", "serve", "--stdio", "--projects-dir", str(projects)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tree,  # `-m` looks in the working folder first
        )
        self.next_id = 0
        self.indexed: float | None = None
        """Seconds since launch when the first index was complete (its progress ended, or without progress,
        the first `sessions/didChange`)."""

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(_frame(obj))
        self.proc.stdin.flush()

    def call(self, method: str, params: Any) -> tuple[float, dict[str, Any]]:
        """Seconds since launch when the answer came, and the answer; the server's own requests get null."""
        return self.calls([(method, params)])[0]

    def calls(self, requests: list[tuple[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
        """The requests sent at once, as an editor does (each answered when the server has it): when each answer
        came, and the answers, in the order asked."""
        first = self.next_id + 1
        for method, params in requests:
            self.next_id += 1
            self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        answers: dict[int, tuple[float, dict[str, Any]]] = {}
        assert self.proc.stdout is not None
        while len(answers) < len(requests):
            message = _read(self.proc.stdout)
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif self.indexed is None and (
                (message.get("method") == "$/progress" and message["params"]["value"].get("kind") == "end")
                or message.get("method") == "sessions/didChange"  # sent when the first index is complete
            ):
                self.indexed = time.perf_counter() - self.t0
            elif message.get("id") in range(first, self.next_id + 1) and "method" not in message:
                answers[message["id"]] = (time.perf_counter() - self.t0, message)
        return [answers[n] for n in range(first, self.next_id + 1)]

    def wait_indexed(self) -> None:
        """Read (answering the server's requests) until the first index is complete."""
        assert self.proc.stdout is not None
        while self.indexed is None:
            message = _read(self.proc.stdout)
            if "method" in message and "id" in message:
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
            elif (message.get("method") == "$/progress" and message["params"]["value"].get("kind") == "end") or (
                message.get("method") == "sessions/didChange"
            ):
                self.indexed = time.perf_counter() - self.t0

    def close(self) -> float:
        """Shut down and exit; the process's CPU seconds (its worker processes too)."""
        self.call("shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        self.proc.wait(timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return after.ru_utime + after.ru_stime - self.before.ru_utime - self.before.ru_stime


def one_launch(projects: Path, cache: Path, tree: Path = REPO) -> dict[str, float]:
    launch = Launch(projects, cache, tree)
    params = {
        "processId": os.getpid(),
        "capabilities": {"window": {"workDoneProgress": True}},
        "initializationOptions": {"projectsDir": str(projects)},
    }
    t_init, _ = launch.call("initialize", params)
    launch.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    # both at once, as an editor asks them on start (the diagnostics waiting for the first index, not the list)
    (t_list, listed), (t_diag, diags) = launch.calls(
        [("sessions/list", {"partial": True}), ("workspace/diagnostic", {"previousResultIds": []})]
    )
    partial_items = sum(1 for s in listed["result"]["sessions"] if s.get("partial"))
    t_whole, whole = t_list, listed
    while whole["result"].get("partial"):  # counts pending: list again once the first index is complete
        launch.wait_indexed()
        t_whole, whole = launch.call("sessions/list", {"partial": True})
    while True:  # the first answer counts when it equals the answer of the complete index
        t_again, again = launch.call("workspace/diagnostic", {"previousResultIds": []})
        if launch.indexed is not None and launch.indexed < t_again:
            break
        if "error" in again or time.perf_counter() - launch.t0 > 3600:
            raise RuntimeError(f"the server did not index the folder: {str(again)[:300]}")
        time.sleep(0.5)
    if again["result"] != diags["result"]:
        t_diag, diags = t_again, again
    cpu = launch.close()
    return {
        "initialize": t_init,
        "sessions/list, first": t_list,
        "sessions/list, whole": t_whole,
        "partial items": partial_items,
        "workspace/diagnostic": t_diag,
        "cpu": cpu,
        "sessions": len(listed["result"]["sessions"]),
        "files with diagnostics": len(diags["result"]["items"]),
    }


def main() -> None:
    print(favour_this_run())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(ap)
    ap.add_argument("--projects", type=Path, default=None, help="an existing projects folder instead of --mb")
    ap.add_argument("--runs", type=int, default=3, help="warm launches (the best is shown)")
    ap.add_argument("--before", default=None, help="cold launches of this older commit side by side (no warm ones)")
    ap.add_argument("--cold-runs", type=int, default=3, help="cold launches of each tree with --before")
    args = ap.parse_args()
    projects = (args.projects or projects_for(args)).resolve()  # the server takes only absolute folders
    files = sorted(projects.rglob("*.jsonl"))
    size = sum(f.stat().st_size for f in files)
    runs = 1 if size > 2**30 else args.runs  # one bare parse of a folder this size is long enough
    t_bare, c_bare = best(lambda: bare_parse(files), runs), best_cpu(lambda: bare_parse(files), runs)
    print(
        f"{projects}: {len(files)} files, {size / 2**20:.0f} MiB; bare orjson parse {t_bare:.2f} s, cpu {c_bare:.2f} s"
    )
    if args.before:
        side_by_side(projects, args.before, args.cold_runs, t_bare, c_bare)
        return
    cache = OUT / "cache-serve"
    shutil.rmtree(cache, ignore_errors=True)
    cold = one_launch(projects, cache)
    warm_runs = [one_launch(projects, cache) for _ in range(args.runs)]
    warm = {k: min(r[k] for r in warm_runs) for k in warm_runs[0]}
    print(f"{cold['sessions']:.0f} sessions, {cold['files with diagnostics']:.0f} files with diagnostics")
    print(
        f"partial items in the first sessions/list: cold {cold['partial items']:.0f}, warm {warm['partial items']:.0f}"
    )
    print(f"{'launch until answered':28}{'cold (empty cache)':>34}{'warm (best of ' + str(args.runs) + ')':>34}")
    for key in ("initialize", "sessions/list, first", "sessions/list, whole", "workspace/diagnostic"):
        cells = [f"{r[key]:.3f} s  {r[key] / t_bare:.3f}x" for r in (cold, warm)]
        print(f"{key:28}" + "".join(f"{c:>34}" for c in cells))
    cells = [f"{r['cpu']:.2f} s  {r['cpu'] / c_bare:.3f}x" for r in (cold, warm)]
    print(f"{'whole launch, cpu':28}" + "".join(f"{c:>34}" for c in cells))
    shutil.rmtree(cache, ignore_errors=True)


def side_by_side(projects: Path, rev: str, runs: int, t_bare: float, c_bare: float) -> None:
    """Cold launches of this tree and of `rev`, in turn: the best and the median of each figure."""
    trees = [Tree("now", REPO), before_tree(rev)]
    found: dict[str, list[dict[str, float]]] = {t.label: [] for t in trees}
    for _ in range(runs):
        for t in trees:
            shutil.rmtree(t.cache, ignore_errors=True)
            found[t.label].append(one_launch(projects, t.cache, t.root))
            shutil.rmtree(t.cache, ignore_errors=True)
    print(f"cold launches, {runs} of each tree in turn: best (median)")
    print(f"{'launch until answered':28}" + "".join(f"{t.label:>34}" for t in trees))
    for key, bare in (
        ("initialize", t_bare),
        ("sessions/list, first", t_bare),
        ("sessions/list, whole", t_bare),
        ("workspace/diagnostic", t_bare),
        ("cpu", c_bare),
    ):
        cells = []
        for t in trees:
            values = sorted(r[key] for r in found[t.label])
            best_, mid = values[0], values[len(values) // 2]
            cells.append(f"{best_:.2f} s {best_ / bare:.2f}x ({mid:.2f} s {mid / bare:.2f}x)")
        print(f"{'whole launch, ' + key if key == 'cpu' else key:28}" + "".join(f"{c:>34}" for c in cells))
    for t in trees:
        last = found[t.label][-1]
        files = last["files with diagnostics"]
        print(f"{t.label}: {last['sessions']:.0f} sessions, {files:.0f} files with diagnostics")


if __name__ == "__main__":
    main()
