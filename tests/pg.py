"""A real PostgreSQL server for tests: `initdb` and `pg_ctl` in a temporary folder, on loopback.

`PgServer` makes a cluster in a fresh folder, starts it on a free 127.0.0.1 port (trust
authentication, loopback only), and can kill it with SIGKILL (the postmaster and every backend,
as a crash would) and start it again. As root the server runs as the `postgres` user through
`runuser`. `unavailable()` is the reason a server cannot be had (None when it can); the
`pg_server` fixture fails under CI (`CI` set) and skips loudly elsewhere when it cannot start.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

RUN_AS = "postgres"


def pg_bin(name: str) -> str | None:
    """`initdb`/`pg_ctl`/`postgres` in $SLSP_PG_BINDIR when set, else on the PATH or in Debian's
    /usr/lib/postgresql/*/bin."""
    bindir = os.environ.get("SLSP_PG_BINDIR")
    if bindir:
        candidate = os.path.join(bindir, name)
        return candidate if os.access(candidate, os.X_OK) else None
    found = shutil.which(name)
    if found:
        return found
    for candidate in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def unavailable() -> str | None:
    for name in ("initdb", "pg_ctl"):
        if pg_bin(name) is None:
            return f"{name} not found (run scripts/setup.d/postgres.sh)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(RUN_AS)
        except KeyError:
            return f"running as root and there is no {RUN_AS!r} user to run the server"
        if shutil.which("runuser") is None:
            return "running as root and runuser is missing"
    return None


class PgServer:
    """One throwaway cluster. `url(dbname)` gives a libpq URL for it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="slsp-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = 0
        if os.geteuid() == 0:
            user = pwd.getpwnam(RUN_AS)
            os.chown(self.root, user.pw_uid, user.pw_gid)
        initdb = pg_bin("initdb") or "initdb"
        self._run(
            [initdb, "-D", str(self.data), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"]
        )

    def _run(self, cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", RUN_AS, "--", *cmd]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if proc.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}\n{log}")
        return proc

    def start(self) -> None:
        """Start on the port it had (a restart) or on a free one."""
        self.port = self.port or free_port()
        opts = f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root} -c fsync=off"
        pg_ctl = pg_bin("pg_ctl") or "pg_ctl"
        self._run([pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", opts, "-w", "-t", "60", "start"])

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self) -> None:
        """SIGKILL the postmaster and all its backends at once: a crash, no shutdown at all."""
        pid = self.postmaster_pid()
        if pid is None:
            return
        children = [p for p in _all_pids() if _ppid(p) == pid]
        for victim in [pid, *children]:
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(_alive(p) for p in [pid, *children]):
            time.sleep(0.05)
        # A killed postmaster may linger as a zombie (its parent, pg_ctl, is gone and nobody reaps
        # it); the next start would take it for a live server. It is dead: drop its pid file.
        if not _alive(pid):
            (self.data / "postmaster.pid").unlink(missing_ok=True)
            for name in (f".s.PGSQL.{self.port}.lock", f".s.PGSQL.{self.port}"):
                (self.root / name).unlink(missing_ok=True)

    def stop(self) -> None:
        if self.postmaster_pid() is not None and self.data.exists():
            try:
                self._run([pg_bin("pg_ctl") or "pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop"])
            except (RuntimeError, subprocess.TimeoutExpired):
                self.kill()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def _all_pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_server() -> PgServer:
    """A started server, or raise RuntimeError saying why there is none."""
    reason = unavailable()
    if reason:
        raise RuntimeError(f"POSTGRESQL NOT AVAILABLE: {reason}")
    server = PgServer()
    try:
        server.start()
    except BaseException:
        server.remove()
        raise
    return server
