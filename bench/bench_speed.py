"""Start-up, `list`, `check`, `chain` and index restarts as whole processes, as ratios to a bare orjson
parse of the same bytes, all from one run; with `--before REV`, the same commands of an older commit side
by side; with the real Claude Code CLI installed, its own resume of the big transcript (launch to first
request). Prints figures; it is not a test.

    .venv/bin/python -m bench.bench_speed [--mb 300] [--big-mb 150] [--runs 3] [--cold-runs 1] [--before REV]
        [--only list,check]

Each tree's modules are byte-compiled first, as installing a package does (this machine sets
PYTHONDONTWRITEBYTECODE, which would otherwise make every run compile them again).
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.baseline import bare_parse, favour_this_run
from bench.make_projects import add_folder_arguments, make_transcript, projects_for

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "out"


def best(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def best_cpu(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


class Tree:
    """A source tree whose `session-lsp` runs as `python -m server.cli`, with its own cache folder."""

    def __init__(self, label: str, root: Path) -> None:
        self.label, self.root = label, root
        self.cache = OUT / f"cache-{label}"
        self.cpu = 0.0
        self.answer = 0.0
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "server", "storage"], cwd=root, check=True, capture_output=True
        )

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "SESSION_LSP_NO_CACHE"}
        env.update(PYTHONPATH=str(self.root), XDG_CACHE_HOME=str(self.cache))
        return env

    def run(self, *args: str) -> float:
        """Wall seconds of one run, to its exit; to the end of its output (the answer whole: a command may store what
        it read after that) in `self.answer`; its CPU seconds (with its worker processes) in `self.cpu`."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "server.cli", *args], cwd=self.root, env=self.env(), stdout=subprocess.PIPE,
                stderr=err,
            )  # fmt: skip
            assert proc.stdout is not None
            while proc.stdout.read(1 << 20):
                pass
            self.answer = time.perf_counter() - t0
            proc.wait()
            elapsed = time.perf_counter() - t0
            err.seek(0)
            stderr = err.read()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        if proc.returncode not in (0, 1):
            raise RuntimeError(f"{self.label}: {args}: {stderr.decode()[-500:]}")
        return elapsed

    def best(self, runs: int, *args: str) -> float:
        """Best wall time of `runs`; `self.cpu` is the least CPU time of them."""
        walls, cpus = [], []
        for _ in range(runs):
            walls.append(self.run(*args))
            cpus.append(self.cpu)
        self.cpu = min(cpus)
        return min(walls)

    def forget(self) -> None:
        shutil.rmtree(self.cache, ignore_errors=True)


def before_tree(rev: str) -> Tree:
    dest = OUT / f"before-{rev}"
    if not (dest / "server" / "cli.py").is_file():
        dest.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(
            ["git", "archive", rev, "server", "storage"], cwd=REPO, capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)
    return Tree(rev, dest)


def real_cli_resume(transcript: Path, cwd: Path) -> tuple[float, float] | None:
    """Seconds from launching `claude -p ... --resume SID` to its first Messages request, offline, and the
    CPU seconds it used until then (it is killed as soon as the request arrives)."""
    sys.path.insert(0, str(REPO / "tests"))
    try:
        from realcli import claude_env, find_claude
    except ImportError:
        return None
    from scripted_api import ScriptedModelServer

    claude = find_claude()
    if claude is None:
        return None
    with tempfile.TemporaryDirectory(dir=OUT) as tmp, ScriptedModelServer() as model:
        config = Path(tmp) / "config"
        folder = config / "projects" / transcript.parent.name
        folder.mkdir(parents=True)
        os.link(transcript, folder / transcript.name)
        env = claude_env(config_dir=config, base_url=model.base_url, home=Path(tmp) / "home")
        (Path(tmp) / "home").mkdir()
        cmd = [str(claude), "-p", "hello", "--resume", transcript.stem, "--bare", "--tools", "Read"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        first = None
        while time.perf_counter() - t0 < 120:
            if model.requests:
                first = time.perf_counter() - t0
                break
            if proc.poll() is not None:
                break
            time.sleep(0.002)
        proc.kill()
        proc.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return None if first is None else (first, cpu)


def index_restart(projects: Path, runs: int) -> dict[str, float]:
    """In this process: a full index scan with diagnostics, then restarts from the database."""
    from server.index import ProjectIndex
    from storage.indexedlist import list_sessions_indexed
    from storage.sessions import list_sessions

    def scan(persist: bool) -> ProjectIndex:
        idx = ProjectIndex(projects, persist=persist)
        idx.scan()
        idx.all_diagnostics()
        idx.close()
        return idx

    out = {
        "list, reading every file": best(lambda: list_sessions(projects), runs),
        "scan + diagnostics, reading every file": best(lambda: scan(False), 1),
    }
    scan(True)
    gc.unfreeze()
    out["scan + diagnostics, restart"] = best(lambda: scan(True), runs)
    list_sessions_indexed(projects)
    out["list, restart"] = best(lambda: list_sessions_indexed(projects), runs)
    gc.unfreeze()
    return out


def held_bytes(idx: object) -> int:
    """Bytes an index holds for its files: line marks always, rows only where loaded."""
    from bench.bench_check_list import deep_size
    from server.index import ProjectIndex

    assert isinstance(idx, ProjectIndex)
    total = 0
    for state in idx.files.values():
        total += sys.getsizeof(state) + sys.getsizeof(state.line_marks) + sys.getsizeof(state.read)
        if getattr(state, "loaded", True):
            part = ProjectIndex(idx.projects_dir, persist=False)
            part.files = {state.path: state}
            total += deep_size(part) - sys.getsizeof(state.line_marks)
    return total


def index_memory(projects: Path) -> dict[str, float]:
    """Bytes per row: an index holding every row, and one restarted from the database (after diagnostics)."""
    from bench.bench_check_list import deep_size, rss
    from server.index import ProjectIndex

    gc.collect()
    base = rss()
    full = ProjectIndex(projects, persist=False)
    full.scan()
    gc.collect()
    rows = full.row_count()
    out = {"rows": float(rows), "all rows, counted": deep_size(full) / rows, "all rows, RSS": (rss() - base) / rows}
    del full
    gc.unfreeze()
    gc.collect()
    base = rss()
    warm = ProjectIndex(projects)
    warm.scan()
    warm.all_diagnostics()
    gc.collect()
    out["restarted, RSS"] = (rss() - base) / rows
    out["restarted, held"] = held_bytes(warm) / rows
    out["restarted, files with rows loaded"] = sum(1 for s in warm.files.values() if getattr(s, "loaded", True))
    out["files"] = len(warm.files)
    warm.close()
    return out


def main() -> None:
    print(favour_this_run())
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_folder_arguments(ap)
    ap.add_argument("--big-mb", type=int, default=150, help="size of the one big transcript for `chain`")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", default=None, help="also run this older commit's commands (e.g. a44094c)")
    ap.add_argument("--no-cli", action="store_true", help="skip the real CLI's resume")
    ap.add_argument(
        "--cold-runs", type=int, default=1, help="first runs (empty cache) of list, check and chain per tree"
    )
    ap.add_argument("--only", default="start,list,check,chain,index", help="rows to run (comma-separated)")
    args = ap.parse_args()
    only = set(args.only.split(","))
    os.environ["XDG_CACHE_HOME"] = str(OUT / "cache-bench")
    shutil.rmtree(OUT / "cache-bench", ignore_errors=True)
    projects = projects_for(args)
    big_root = OUT / f"big{args.big_mb}-seed{args.seed}"
    cwd = big_root / "cwd"
    cwd.mkdir(parents=True, exist_ok=True)
    cwd = cwd.resolve()
    found = sorted((big_root / "projects").glob("*/*.jsonl")) if (big_root / "projects").is_dir() else []
    if found or "chain" in only:
        big = found[0] if found else make_transcript(big_root, args.big_mb, args.seed, cwd=str(cwd))
    files = sorted(projects.rglob("*.jsonl"))
    total = sum(f.stat().st_size for f in files)
    trees = [Tree("now", REPO)] + ([before_tree(args.before)] if args.before else [])

    bare_parse(files)
    t_bare, c_bare = best(lambda: bare_parse(files), args.runs), best_cpu(lambda: bare_parse(files), args.runs)
    print(
        f"{projects}: {len(files)} files, {total / 2**20:.0f} MiB; bare orjson parse {t_bare:.2f} s, cpu {c_bare:.2f} s"
    )
    if "chain" in only:
        t_big, c_big = best(lambda: bare_parse([big]), args.runs), best_cpu(lambda: bare_parse([big]), args.runs)
        print(f"{big.name}: {big.stat().st_size / 2**20:.0f} MiB; bare orjson parse {t_big:.2f} s, cpu {c_big:.2f} s")
    print(f"\n{'whole process':44}" + "".join(f"{t.label:>44}" for t in trees))

    def row(name: str, cells: list[str]) -> None:
        print(f"{name:44}" + "".join(f"{c:>44}" for c in cells))

    for cmd in (["--help"], ["list", "--help"], ["chain", "--help"], ["check", "--help"], ["turn", "--help"]):
        if "start" not in only:
            break
        row(f"session-lsp {' '.join(cmd)}", [f"{t.best(args.runs, *cmd):.2f} s cpu {t.cpu:.2f}" for t in trees])
    print("(ratios: wall / bare parse wall, then cpu / bare parse cpu; cpu counts worker processes too)")
    folder = ["--projects-dir", str(projects)]
    for name, cmd, bare, bare_cpu in (
        ("list --json", ["list", "--json", *folder], t_bare, c_bare),
        ("check --json", ["check", "--json", *folder], t_bare, c_bare),
    ):
        if name.split()[0] not in only:
            continue
        firsts: dict[str, list[tuple[float, float]]] = {t.label: [] for t in trees}
        for _ in range(args.cold_runs):  # the trees in turn, so a change of load falls on both
            for t in trees:
                t.forget()
                firsts[t.label].append((t.run(*cmd), t.cpu))
        cold, warm = [], []
        for t in trees:
            walls, cpus = sorted(w for w, _ in firsts[t.label]), sorted(c for _, c in firsts[t.label])
            cell = f"{walls[0] / bare:.2f}x cpu {cpus[0] / bare_cpu:.2f}x"
            if len(walls) > 1:
                mid = len(walls) // 2
                cell += f" (median {walls[mid] / bare:.2f}x cpu {cpus[mid] / bare_cpu:.2f}x)"
            cold.append(cell)
            again = t.best(args.runs, *cmd)
            warm.append(f"{again / bare:.3f}x cpu {t.cpu / bare_cpu:.3f}x")
        row(f"{name}, first run" + (f" (best of {args.cold_runs})" if args.cold_runs > 1 else ""), cold)
        row(f"{name}, again (nothing changed)", warm)
    if "chain" in only:
        chain_rows(args, trees, big, cwd, t_big, c_big, row)
    if "index" in only:
        index_rows(projects, args.runs, t_bare)


def chain_rows(
    args: argparse.Namespace,
    trees: list[Tree],
    big: Path,
    cwd: Path,
    t_big: float,
    c_big: float,
    row: Callable[[str, list[str]], None],
) -> None:
    chain, first, chain_wall, chain_cpu = [], [], [], []
    command = ("chain", str(big), "--json", "--projects-dir", str(big.parent.parent))
    firsts: dict[str, list[tuple[float, float]]] = {t.label: [] for t in trees}
    answers: dict[str, list[float]] = {t.label: [] for t in trees}
    for _ in range(args.cold_runs):  # the trees in turn, so a change of load falls on both
        for t in trees:
            t.forget()  # an empty cache: the file is read (and its rows stored where the tree does that)
            firsts[t.label].append((t.run(*command), t.cpu))
            answers[t.label].append(t.answer)
    first_best: list[tuple[float, float]] = []
    for t in trees:
        walls, cpus = sorted(w for w, _ in firsts[t.label]), sorted(c for _, c in firsts[t.label])
        mid = len(walls) // 2
        first_best.append((walls[0], cpus[0]))
        cell = f"{walls[0]:.2f} s {walls[0] / t_big:.2f}x cpu {cpus[0] / c_big:.2f}x"
        first.append(cell + (f" (median {walls[mid]:.2f} s)" if len(walls) > 1 else ""))
        took = t.best(args.runs, *command)
        chain_wall.append(took)
        chain_cpu.append(t.cpu)
        chain.append(f"{took:.2f} s {took / t_big:.2f}x cpu {t.cpu / c_big:.2f}x")
    many = f" (best of {args.cold_runs})" if args.cold_runs > 1 else ""
    row(f"chain --json of the {args.big_mb} MB transcript, first run{many}", first)
    answer_best = [min(answers[t.label]) for t in trees]
    row(
        "  first run, its answer whole (output's end)",
        [f"{a:.2f} s {a / t_big:.2f}x (median {sorted(answers[t.label])[len(answers[t.label]) // 2]:.2f} s)"
         for a, t in zip(answer_best, trees)],
    )  # fmt: skip
    row(f"chain --json of the {args.big_mb} MB transcript, again", chain)
    resumes = [] if args.no_cli else [r for r in (real_cli_resume(big, cwd) for _ in range(args.runs)) if r]
    if resumes:
        real = (min(w for w, _ in resumes), min(c for _, c in resumes))
        row(
            f"  real CLI --resume, launch to 1st request (best of {len(resumes)})",
            [f"{real[0]:.2f} s cpu {real[1]:.2f}"],
        )
        row("  first run / real CLI", [f"{w / real[0]:.2f}x cpu {c / real[1]:.2f}x" for w, c in first_best])
        row("  first run's answer / real CLI", [f"{a / real[0]:.2f}x" for a in answer_best])
        row("  again / real CLI", [f"{w / real[0]:.2f}x cpu {c / real[1]:.2f}x" for w, c in zip(chain_wall, chain_cpu)])


def index_rows(projects: Path, runs: int, t_bare: float) -> None:
    print("\nindex restart (in this process; ratio to the bare parse)")
    for name, took in index_restart(projects, runs).items():
        print(f"  {name:42} {took:7.3f} s  {took / t_bare:.3f}x")
    mem = index_memory(projects)
    print(
        f"\nindex memory ({mem['rows']:.0f} rows): every row in memory {mem['all rows, counted']:.0f} bytes per row "
        f"counted, RSS {mem['all rows, RSS']:.0f}; restarted from the database, after all diagnostics: RSS "
        f"{mem['restarted, RSS']:.0f} bytes per row, {mem['restarted, held']:.0f} bytes per row held (line marks, "
        f"file states, rows of loaded files); rows loaded for {mem['restarted, files with rows loaded']:.0f} "
        f"of {mem['files']:.0f} files"
    )


if __name__ == "__main__":
    main()
