"""`serve --tcp NAME:PORT` listens on the one address NAME names, or refuses to start.

Where `localhost` names both `::1` and `127.0.0.1`, `serve --tcp localhost:PORT` checked that both are loopback
addresses but listened on the first only: any local user could listen on the other with the same port and receive
the `initialize` (and its token) of an editor connecting there. Now a name naming several addresses is refused,
naming the numeric forms to give, and the address is resolved once and bound as a number (never the name again).

The real server's refusal is shown in a private mount namespace whose `/etc/hosts` names `localhost` twice
(`unshare -m`, as root: the machine's own file is untouched); the decision itself (`choose_address`) is a plain
function of the resolved list, tested here on every shape of it.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TESTS
from lspwire import answer_to, initialize

from server.lsp.listen import choose_address
from storage.errors import InvalidArgument

ROOT = TESTS.parent
EXAMPLE = ROOT / "examples" / "projects"
TOKEN = "t0ken-for-the-test-" + "y" * 12
V6 = (socket.AF_INET6, ("::1", 7070, 0, 0))
V4 = (socket.AF_INET, ("127.0.0.1", 7070))


def test_a_name_naming_two_loopback_addresses_is_refused_with_the_numeric_forms() -> None:
    with pytest.raises(InvalidArgument) as caught:
        choose_address("localhost", 7070, [V6, V4])
    message = str(caught.value)
    assert "'localhost' names 2 addresses (::1, 127.0.0.1)" in message, message
    assert "--tcp [::1]:7070 or --tcp 127.0.0.1:7070" in message, message
    assert choose_address("localhost", 7070, [V4, V4]) == V4  # one address listed twice is one address
    assert choose_address("::1", 7070, [V6]) == V6
    with pytest.raises(InvalidArgument, match="loopback only"):
        choose_address("mixed", 7070, [V4, (socket.AF_INET, ("10.0.0.5", 7070))])
    with pytest.raises(InvalidArgument, match="no address"):
        choose_address("nothing", 7070, [])


def _serve(target: str, tmp_path: Path, *, prefix: list[str] | None = None) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "server.cli", "serve", "--tcp", target, "--projects-dir", str(EXAMPLE)]
    env = {**os.environ, "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"), "SESSION_LSP_TOKEN": TOKEN}
    return subprocess.Popen([*(prefix or []), *cmd], cwd=ROOT, stderr=subprocess.PIPE, text=True, env=env)


def test_a_numeric_ipv6_address_is_listened_on_as_given(tmp_path: Path) -> None:
    proc = _serve("[::1]:0", tmp_path)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        found = re.search(r"listening on \[::1\]:(\d+);", line)
        assert found, line
        conn = socket.create_connection(("::1", int(found.group(1))), timeout=10)
        conn.sendall(initialize(TOKEN))
        answer = answer_to(conn, 1)
        assert answer is not None and "capabilities" in answer["result"], answer
        conn.close()
    finally:
        proc.kill()
        proc.wait()


def _namespace_or_skip() -> str:
    """`unshare`, when this machine lets the test give a process its own mount namespace; skips (fails under CI)."""
    unshare = shutil.which("unshare")
    why = None
    if os.geteuid() != 0:
        why = "the test must run as root to give the server a hosts file of its own (unshare -m)"
    elif unshare is None:
        why = "unshare is missing (util-linux)"
    elif subprocess.run([unshare, "-m", "true"], capture_output=True, timeout=30).returncode != 0:
        why = "unshare -m is not permitted here"
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    assert unshare is not None
    return unshare


def test_serve_refuses_localhost_naming_both_loopback_addresses(tmp_path: Path) -> None:
    unshare = _namespace_or_skip()
    hosts = tmp_path / "hosts"
    hosts.write_text("::1 localhost\n127.0.0.1 localhost\n", encoding="ascii")
    with socket.socket() as probe:  # a port free on both addresses
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # the server's own mount namespace: /etc/hosts there names localhost twice (the machine's file is untouched)
    script = 'mount --bind "$0" /etc/hosts && exec "$@"'
    proc = _serve(f"localhost:{port}", tmp_path, prefix=[unshare, "-m", "sh", "-c", script, str(hosts)])
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        # before: it listened on ::1 alone, and another user could take 127.0.0.1 with the same port
        with socket.socket() as other:
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            other.bind(("127.0.0.1", port))
            other.listen()
            proc.kill()
            proc.communicate()
            pytest.fail(f"serve --tcp localhost:{port} started, and 127.0.0.1:{port} was free for anyone: bound it")
    assert proc.returncode == 2, err
    assert f"--tcp [::1]:{port} or --tcp 127.0.0.1:{port}" in err, err
    assert "session-lsp: listening on" not in err, err
