"""The agent's tools against a hostile working directory: symlinks out of the sandbox, FIFOs,
sockets, devices, runaway regular expressions, commands that never end, and a turn cancelled while
its tool runs. Real files, symlinks, FIFOs and processes; anything that could hang runs in a child
process or a daemon thread joined with a generous bound (a hang detector, not a speed assertion)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import scripted_api
from scripted_api import ScriptedModelServer, scripted_provider
from test_agent_support import rows

from server.agent.cancel import CancelToken
from server.agent.events import TurnEvent
from server.agent.loop import run_turn
from server.agent.request import TurnRequest
from server.agent.tools import ToolContext, make_tools
from server.agent.tools.runner import ToolCall, run_calls

HANG = 10.0
"""Seconds after which a call that has not come back is taken as hung."""
SECRET = "TOPSECRET-outside-the-sandbox"


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """proj/ is the working directory; outside/ and /etc are not. proj holds symlinks both ways."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\nroot:x:0:0\n")
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("import os\nprint('root of it')\n")
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "secret").symlink_to(outside / "secret.txt")
    (root / "ext").symlink_to(outside, target_is_directory=True)
    (root / "src" / "up").symlink_to("../../outside", target_is_directory=True)
    (root / "inner.py").symlink_to(root / "src" / "a.py")
    return root


def run_in_child(root: Path, calls: list[dict[str, Any]], *, enable: tuple[str, ...] = ()) -> dict[str, Any]:
    """Run tool calls through run_calls in a fresh Python process (bounded memory), so that a call
    that hangs, even while holding the GIL, fails the test instead of hanging it."""
    script = (
        "import json, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from pathlib import Path\n"
        "from server.agent.tools import ToolContext, make_tools\n"
        "from server.agent.tools.runner import ToolCall, run_calls\n"
        "root, calls, enable = json.loads(sys.argv[1])\n"
        "out = run_calls([ToolCall(c['id'], c['name'], c['input']) for c in calls], make_tools(enable), ToolContext(Path(root)))\n"
        "print(json.dumps({k: {'content': v.content, 'is_error': v.is_error} for k, v in out.items()}))\n"
    )
    arg = json.dumps([str(root), calls, list(enable)])
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, arg],
            capture_output=True,
            text=True,
            timeout=HANG,
            cwd=Path(__file__).parent.parent,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"the tool calls hung (no answer within {HANG} s): {calls}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def call(id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"id": id, "name": name, "input": tool_input}


def in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(fn()), daemon=True)
    thread.start()
    return thread, box


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def gone(pids: list[int]) -> bool:
    """Every pid has ended (polled for at most HANG seconds: a killed process takes a moment to go)."""
    end = time.monotonic() + HANG
    while any(alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


def wait_for_pids(path: Path, count: int) -> list[int]:
    end = time.monotonic() + HANG
    while time.monotonic() < end:
        if path.exists():
            pids = [int(x) for x in path.read_text().split()]
            if len(pids) >= count:
                return pids
        time.sleep(0.02)
    pytest.fail(f"the command did not write {count} pids to {path}")


FILL_SCRATCH = 'for i in $(seq 1000); do : > "$TMPDIR/f$i"; done'
"""A command's first step: 1000 files in its scratch folder, which take their time to remove."""


def assert_scratch_removed(told: Path) -> None:
    """The scratch folder whose path a command wrote to `told` (its `$TMPDIR`, printed first) is gone."""
    scratch = Path(told.read_text().strip())
    assert scratch.name.startswith("session-lsp-bash-"), scratch  # the call's own, not the test's TMPDIR
    assert not os.path.lexists(scratch), f"the Bash scratch folder was left behind: {sorted(os.listdir(scratch))[:5]}"


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """Pids a test started; whatever is still alive at the end is killed, so a failing run leaks nothing."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# -- 1. one sandbox rule for Read, Glob, Grep and LS -----------------------------------------------


def test_grep_glob_ls_never_reach_through_symlinks(sandbox: Path) -> None:
    out = run_in_child(
        sandbox,
        [
            call("grep", "Grep", pattern="root", output_mode="content"),
            call("grep-i", "Grep", pattern="topsecret", **{"-i": True}),
            call("glob", "Glob", pattern="*"),
            call("glob-deep", "Glob", pattern="**/*"),
            call("ls", "LS", path=str(sandbox)),
            call("ls-src", "LS", path="src"),
            call("read-in", "Read", file_path="inner.py"),
            call("read-out", "Read", file_path="secret"),
            call("grep-up", "Grep", pattern="root", path="src/up"),
        ],
    )
    grep = out["grep"]["content"]
    assert "root:x:0:0" not in grep and SECRET not in grep, grep
    # a symlink whose target is inside may be searched; the real file is found either way
    assert f"{sandbox / 'src' / 'a.py'}:print('root of it')" in grep.splitlines()
    assert out["grep-i"]["content"] == "No files found"
    for key in ("glob", "glob-deep"):
        names = {Path(p).name for p in out[key]["content"].splitlines()}
        assert names.isdisjoint({"passwd", "secret", "secret.txt"}), out[key]
        assert "inner.py" in names
    assert sorted(out["glob-deep"]["content"].splitlines()) == [
        str(sandbox / "inner.py"),
        str(sandbox / "src" / "a.py"),
    ]
    listed = out["ls"]["content"].splitlines()
    assert listed == [f"- {sandbox}/", "  - inner.py", "  - src/"], listed
    assert out["ls-src"]["content"].splitlines() == [f"- {sandbox / 'src'}/", "  - a.py"]
    assert out["read-in"]["content"].startswith("1\timport os")
    assert out["read-out"]["is_error"] and "outside the working directory" in out["read-out"]["content"]
    assert out["grep-up"]["is_error"] and "outside the working directory" in out["grep-up"]["content"]


def test_dotdot_absolute_and_braced_patterns_stay_inside(sandbox: Path) -> None:
    out = run_in_child(
        sandbox,
        [
            call("dotdot", "Glob", pattern="../outside/*"),
            call("brace", "Glob", pattern="{../outside/*,src/*.py}"),
            call("abs", "Glob", pattern=str(sandbox.parent / "outside" / "*")),
            call("abs-etc", "Glob", pattern="/etc/pass*"),
            call("abs-in", "Glob", pattern=str(sandbox / "src" / "*.py")),
            call("path-up", "Glob", pattern="*", path=".."),
            call("path-mid", "Glob", pattern="*", path="src/../.."),
            call("grep-glob", "Grep", pattern="root", glob="../outside/*"),
            call("ls-up", "LS", path="src/up/.."),
        ],
    )
    for key in ("dotdot", "abs", "abs-etc", "path-up", "path-mid", "ls-up"):
        assert out[key]["is_error"], (key, out[key])
        assert "outside the working directory" in out[key]["content"] or "'..'" in out[key]["content"], out[key]
    assert out["brace"]["is_error"] and "'..'" in out["brace"]["content"]
    assert out["abs-in"]["content"] == str(sandbox / "src" / "a.py")
    assert out["grep-glob"]["is_error"] and "'..'" in out["grep-glob"]["content"]


def test_path_swapped_for_a_symlink_after_the_check(sandbox: Path, tmp_path: Path) -> None:
    """The check passes on the real file; then the file (or the folder above it) becomes a symlink
    out. Opening what was checked must refuse what is there now."""
    ctx = ToolContext(sandbox)
    target = ctx.confine("src/a.py", must_exist=True)
    (sandbox / "src" / "a.py").unlink()
    (sandbox / "src" / "a.py").symlink_to(tmp_path / "outside" / "secret.txt")
    with pytest.raises(Exception) as caught:
        ctx.read_bytes(target)
    assert "outside the working directory" in str(caught.value) or "symbolic link" in str(caught.value)

    # a folder higher up swapped: the name opened is no symlink, the folder it is in is outside
    (sandbox / "deep" / "sub").mkdir(parents=True)
    (sandbox / "deep" / "sub" / "secret.txt").write_text("inside\n")
    (tmp_path / "outside" / "sub").mkdir()
    (tmp_path / "outside" / "sub" / "secret.txt").write_text(SECRET)
    checked = ctx.confine("deep/sub/secret.txt", must_exist=True)
    (sandbox / "deep").rename(sandbox / "deep-old")
    (sandbox / "deep").symlink_to(tmp_path / "outside", target_is_directory=True)
    with pytest.raises(Exception) as caught:
        ctx.read_bytes(checked)
    assert "outside the working directory" in str(caught.value)
    assert ctx.read_bytes(sandbox / "deep-old" / "sub" / "secret.txt") == b"inside\n"


# -- 2. nothing a tool reads can hang it ------------------------------------------------------------


def test_fifo_socket_and_device_are_refused(sandbox: Path) -> None:
    fifo = sandbox / "src" / "pipe"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(sandbox / "src" / "sock"))
    try:
        calls = [
            call("fifo", "Read", file_path="src/pipe"),
            call("sock", "Read", file_path="src/sock"),
            call("grep-fifo", "Grep", pattern="x", path="src/pipe"),
            call("grep-all", "Grep", pattern="print"),
            call("glob", "Glob", pattern="src/*"),
        ]
        if os.geteuid() == 0:  # a character device node (/dev/zero's numbers) inside the sandbox
            os.mknod(sandbox / "src" / "zero", stat.S_IFCHR | 0o600, os.makedev(1, 5))
            calls.append(call("dev", "Read", file_path="src/zero"))
        out = run_in_child(sandbox, calls)
    finally:
        sock.close()
    assert out["fifo"]["is_error"] and "FIFO" in out["fifo"]["content"], out["fifo"]
    assert out["sock"]["is_error"] and "socket" in out["sock"]["content"], out["sock"]
    assert out["grep-fifo"]["is_error"] and "FIFO" in out["grep-fifo"]["content"], out["grep-fifo"]
    assert out["grep-all"]["content"] == f"Found 2 files\n{sandbox / 'inner.py'}\n{sandbox / 'src' / 'a.py'}"
    assert out["glob"]["content"] == str(sandbox / "src" / "a.py")
    if "dev" in out:
        assert out["dev"]["is_error"] and "device" in out["dev"]["content"], out["dev"]


def test_fifo_swapped_in_after_the_check_is_refused(sandbox: Path) -> None:
    ctx = ToolContext(sandbox)
    checked = ctx.confine("src/a.py", must_exist=True)
    (sandbox / "src" / "a.py").unlink()
    os.mkfifo(sandbox / "src" / "a.py")
    thread, box = in_thread(lambda: _error_of(lambda: ctx.read_bytes(checked)))
    thread.join(HANG)
    if thread.is_alive():  # release the blocked reader before failing
        os.close(os.open(sandbox / "src" / "a.py", os.O_WRONLY | os.O_NONBLOCK))
        pytest.fail("reading a FIFO swapped in after the check hung")
    assert "FIFO" in box[0]


def _error_of(fn: Callable[[], Any]) -> str:
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the message is what is checked
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def test_runaway_regular_expression_is_bounded(sandbox: Path) -> None:
    (sandbox / "src" / "evil.txt").write_text("a" * 40 + "b\n")
    (sandbox / "src" / "fine.txt").write_text("aaaa\n")
    out = run_in_child(
        sandbox,
        [
            call("evil", "Grep", pattern="^(a+)+$", output_mode="content", **{"-n": True}),
            call("evil-glob", "Glob", pattern="**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/**/x"),
            call("lookbehind", "Grep", pattern="(?<=a)b"),
        ],
    )
    assert out["evil"]["content"] == f"{sandbox / 'src' / 'fine.txt'}:1:aaaa"
    assert out["evil-glob"]["content"] == "No files found"
    assert out["lookbehind"]["is_error"] and "RE2" in out["lookbehind"]["content"], out["lookbehind"]


# -- 3. every tool has a timeout --------------------------------------------------------------------


def test_bash_timeout_kills_the_whole_tree(tmp_path: Path, reaper: list[int]) -> None:
    """A command whose children outlive it (one even in its own session, holding the output open)."""
    pids_file, told = tmp_path / "pids", tmp_path / "tmpdir"
    command = f'echo "$TMPDIR" > {told}; '  # first: where its scratch folder is
    command += f"setsid sleep 600 & echo $! >> {pids_file}; sleep 600 & echo $! >> {pids_file}; "
    command += '(while :; do touch "$TMPDIR/x$RANDOM"; done) & wait'  # writing into the scratch folder as it goes
    ctx = ToolContext(tmp_path)
    thread, box = in_thread(
        lambda: run_calls([ToolCall("b", "Bash", {"command": command, "timeout": 700})], make_tools(["Bash"]), ctx)
    )
    reaper.extend(wait_for_pids(pids_file, 2))
    thread.join(HANG)
    assert not thread.is_alive(), "Bash did not come back after its 700 ms timeout"
    result = box[0]["b"]
    assert result.is_error and "timed out after 700 ms" in result.content, result.content
    assert gone(reaper), [p for p in reaper if alive(p)]
    assert_scratch_removed(told)


def test_bash_timeout_parameter_is_checked(tmp_path: Path) -> None:
    tools, ctx = make_tools(["Bash"]), ToolContext(tmp_path)
    calls = [
        ToolCall("neg", "Bash", {"command": "echo hi", "timeout": -5}),
        ToolCall("zero", "Bash", {"command": "echo hi", "timeout": 0}),
        ToolCall("ok", "Bash", {"command": "echo hi", "timeout": 5000}),
    ]
    out = run_calls(calls, tools, ctx)
    assert out["neg"].is_error and "timeout" in out["neg"].content
    assert out["zero"].is_error and "timeout" in out["zero"].content
    assert out["ok"].content == "hi"


def test_every_other_tool_times_out(sandbox: Path) -> None:
    """With no time left, each tool stops at its first check and says it timed out."""
    for i in range(200):
        (sandbox / "src" / f"m{i}.py").write_text(f"print({i})\n")
    tools = make_tools(["Edit", "Write"])
    ctx = ToolContext(sandbox, timeout=0)
    calls = [
        ToolCall("read", "Read", {"file_path": "src/a.py"}),
        ToolCall("glob", "Glob", {"pattern": "**/*.py"}),
        ToolCall("grep", "Grep", {"pattern": "print"}),
        ToolCall("ls", "LS", {"path": "src"}),
        ToolCall("edit", "Edit", {"file_path": "src/a.py", "old_string": "os", "new_string": "sys"}),
        ToolCall("write", "Write", {"file_path": "src/new.py", "content": "x"}),
    ]
    out = run_calls(calls, tools, ctx)
    for c in calls:
        assert out[c.id].is_error and f"{c.name} timed out after 0 s" in out[c.id].content, (c.id, out[c.id])
    assert (sandbox / "src" / "a.py").read_text() == "import os\nprint('root of it')\n"
    assert not (sandbox / "src" / "new.py").exists()


# -- 4. everything can be stopped -------------------------------------------------------------------


def test_run_calls_returns_when_stopped_while_a_tool_runs(tmp_path: Path, reaper: list[int]) -> None:
    pids_file = tmp_path / "pids"
    stop = threading.Event()
    calls = [
        ToolCall("s", "Bash", {"command": f"sleep 600 & echo $! > {pids_file}; wait"}),
        ToolCall("after", "Bash", {"command": f"echo ran >> {tmp_path / 'after'}"}),
    ]
    thread, box = in_thread(
        lambda: run_calls(calls, make_tools(["Bash"]), ToolContext(tmp_path), should_stop=stop.is_set)
    )
    reaper.extend(wait_for_pids(pids_file, 1))
    began = time.monotonic()
    stop.set()
    thread.join(HANG)
    assert not thread.is_alive(), "run_calls kept waiting for the tool after should_stop() turned true"
    print(f"run_calls returned {time.monotonic() - began:.3f} s after should_stop()")
    assert box[0] == {}  # the unfinished call is left out, the next one never started
    assert not (tmp_path / "after").exists()
    assert gone(reaper)


@pytest.fixture
def bash_model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedModelServer]:
    """The scripted test model, taught one more word for this test: `BASH <command>` -> a Bash call."""
    plain = scripted_api.plan_reply

    def plan(messages: list[Any]) -> tuple[str, list[dict[str, Any]]]:
        last = scripted_api._last_user(messages)
        blocks = scripted_api._blocks(last) if last else []
        texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
        asked = [t for t in texts if t.startswith("BASH ")]
        if asked:
            return "normal", [{"type": "tool_use", "id": "", "name": "Bash", "input": {"command": asked[-1][5:]}}]
        return plain(messages)

    monkeypatch.setattr(scripted_api, "plan_reply", plan)
    server = ScriptedModelServer(slow_interval=0.02)
    server.start()
    yield server
    server.stop()


def test_turn_cancelled_while_bash_runs(bash_model: ScriptedModelServer, tmp_path: Path, reaper: list[int]) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    pids_file = project / "pids"  # in the sandbox: a command writes nowhere else
    token = CancelToken()
    events: list[TurnEvent] = []
    request = TurnRequest(
        prompt=f'BASH {FILL_SCRATCH}; echo "$TMPDIR" > {project / "tmpdir"}; sleep 600 & echo $! > {pids_file}; wait',
        cwd=str(project),
        projects_dir=tmp_path / "config" / "projects",
        tools=("Bash",),
    )
    thread, box = in_thread(
        lambda: run_turn(
            request, on_event=events.append, cancel=token, provider=scripted_provider(base_url=bash_model.base_url)
        )
    )
    reaper.extend(wait_for_pids(pids_file, 1))
    began = time.monotonic()
    threading.Thread(target=token.cancel, name="canceller").start()
    thread.join(HANG)
    assert not thread.is_alive(), "run_turn did not return after the cancel"
    print(f"run_turn returned {time.monotonic() - began:.3f} s after the cancel")
    result = box[0]
    assert result.cancelled and result.stop_reason == "cancelled"
    assert gone(reaper), "the sleep started by Bash outlived the cancelled turn"
    assert_scratch_removed(project / "tmpdir")  # by the time run_turn returned
    body = rows(result.path)
    chain = [r for r in body if r.get("type") in ("user", "assistant")]
    use = chain[-3]["message"]["content"][0]
    assert use["type"] == "tool_use" and use["name"] == "Bash"
    rejected = chain[-2]["message"]["content"][0]
    assert rejected["tool_use_id"] == use["id"] and rejected["is_error"] is True
    assert chain[-2]["toolUseResult"] == "User rejected tool use"
    assert chain[-1]["message"]["content"] == [{"type": "text", "text": "[Request interrupted by user for tool use]"}]
    assert [e.kind for e in events if e.kind.startswith("tool")] == ["tool_call"]


def test_ctrl_c_stops_the_turn_command_while_bash_runs(
    bash_model: ScriptedModelServer, tmp_path: Path, reaper: list[int]
) -> None:
    """`session-lsp turn` in its own process, its Bash call running `sleep 600`, gets SIGINT."""
    project, projects = tmp_path / "shop", tmp_path / "config" / "projects"
    project.mkdir()
    pids_file = project / "pids"  # in the sandbox: a command writes nowhere else
    env = {**os.environ, "ANTHROPIC_API_KEY": "scripted-test-model-key", "ANTHROPIC_BASE_URL": bash_model.base_url}
    command = [sys.executable, "-m", "server.cli", "turn", "--new", "--provider", "anthropic", "--allow", "Bash"]
    command += ["--cwd", str(project), "--projects-dir", str(projects), "--json"]
    proc = subprocess.Popen(
        [
            *command,
            f'BASH {FILL_SCRATCH}; echo "$TMPDIR" > {project / "tmpdir"}; sleep 600 & echo $! > {pids_file}; wait',
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parent.parent,
    )
    reaper.append(proc.pid)
    reaper.extend(wait_for_pids(pids_file, 1))
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=HANG)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the turn command did not end after Ctrl-C")
    print(f"the turn command exited {time.monotonic() - began:.3f} s after SIGINT")
    assert proc.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["cancelled"] is True
    assert gone(reaper[1:]), "the sleep started by Bash outlived the command"
    assert_scratch_removed(project / "tmpdir")  # by the time the command exited
    last = [r for r in rows(result["path"]) if r.get("type") == "user"][-1]
    assert last["message"]["content"] == [{"type": "text", "text": "[Request interrupted by user for tool use]"}]


# -- 5. the scratch folder ($TMPDIR) goes with the call ----------------------------------------------


def scratch_call_in_child(tmp_path: Path, command: str) -> tuple[Path, int]:
    """Run one Bash call that first writes its `$TMPDIR` and its supervisor's pid (`$PPID`) to a file, in a child
    Python process that exits after the call (what the command left running ends with it, as with session-lsp);
    return the scratch folder and the supervisor's pid, once that supervisor is gone."""
    work = tmp_path / "work"
    work.mkdir()
    told = work / "told"
    out = run_in_child(work, [call("b", "Bash", command=f'echo "$TMPDIR $PPID" > {told}; {command}')], enable=("Bash",))
    assert not out["b"]["is_error"], out
    scratch, supervisor = told.read_text().split()
    assert Path(scratch).name.startswith("session-lsp-bash-"), scratch
    assert gone([int(supervisor)]), "the supervisor outlived the process that ran the call"
    return Path(scratch), int(supervisor)


def test_scratch_folder_removed_though_a_background_job_keeps_writing_into_it(tmp_path: Path) -> None:
    """A job left in the background writes into `$TMPDIR` without pause: before, the folder was removed under it
    when the call ended, and the files it made meanwhile kept the folder there for good."""
    scratch, _ = scratch_call_in_child(
        tmp_path,
        '(while :; do touch "$TMPDIR/x$RANDOM"; done) & '
        'while [ "$(ls "$TMPDIR" | wc -l)" -lt 300 ]; do sleep 0.01; done',
    )
    assert not os.path.lexists(scratch), f"left behind, holding {len(os.listdir(scratch))} files"


def test_scratch_folder_removal_follows_no_link(tmp_path: Path) -> None:
    """Links the command planted in its scratch folder, to a folder and a file outside, are removed as links:
    nothing they lead to is touched."""
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "keep.txt").write_text("keep\n")
    (outside / "deep" / "keep.txt").write_text("keep too\n")
    scratch, _ = scratch_call_in_child(
        tmp_path,
        f'ln -s {outside} "$TMPDIR/dir" && ln -s {outside}/keep.txt "$TMPDIR/file" && '
        f'mkdir "$TMPDIR/sub" && ln -s {outside}/deep "$TMPDIR/sub/deep" && ln -s / "$TMPDIR/root"',
    )
    assert not os.path.lexists(scratch)
    assert sorted(str(p.relative_to(outside)) for p in outside.rglob("*")) == ["deep", "deep/keep.txt", "keep.txt"]
    assert (outside / "keep.txt").read_text() == "keep\n" and (
        outside / "deep" / "keep.txt"
    ).read_text() == "keep too\n"


def test_no_scratch_folder_when_the_sandbox_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unconfined (`SESSION_LSP_BASH_SANDBOX=off`), a command gets the person's own `TMPDIR`, and session-lsp makes
    no scratch folder for it (before: one per call, made and removed unused)."""
    temp = tmp_path / "temp"
    temp.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("SESSION_LSP_BASH_SANDBOX", "off")
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again, as a process started with it would
    out = run_calls(
        [ToolCall("b", "Bash", {"command": f'echo "$TMPDIR"; ls -A {temp}'})], make_tools(["Bash"]), ToolContext(work)
    )
    assert out["b"].content == str(temp), out["b"].content  # nothing made in the temporary folder for the call
    assert list(temp.iterdir()) == []


def test_scratch_folder_stays_while_a_background_job_of_the_call_runs(tmp_path: Path, reaper: list[int]) -> None:
    """What a call leaves in the background still has its `$TMPDIR` after the call (before: removed under it as the
    call ended); the folder goes when the job ends, removed by the supervisor, the last of the tree."""
    go, seen, told = tmp_path / "go", tmp_path / "seen", tmp_path / "told"
    os.mkfifo(go)
    command = (
        f'echo "$TMPDIR $PPID" > {told}; '
        f'(read x < {go}; echo late > "$TMPDIR/f" && cp "$TMPDIR/f" {seen}) > /dev/null 2>&1 &'
    )
    out = run_calls([ToolCall("b", "Bash", {"command": command})], make_tools(["Bash"]), ToolContext(tmp_path))["b"]
    assert not out.is_error, out.content
    scratch, supervisor = told.read_text().split()
    reaper.append(int(supervisor))
    assert os.path.isdir(scratch), "the scratch folder was removed while a job of the call still ran"
    with open(go, "w") as fifo:  # the job goes on
        fifo.write("go\n")
    assert gone([int(supervisor)]), "the supervisor stayed after the job ended"
    assert seen.read_text() == "late\n"  # the job wrote into its $TMPDIR after the call had returned
    assert not os.path.lexists(scratch), "the supervisor left the scratch folder behind"


def test_a_deep_scratch_folder_is_removed(tmp_path: Path) -> None:
    """Folders nested 3000 deep in `$TMPDIR`: deeper than a recursive removal goes (before: RecursionError, the
    call failed and the folder stayed)."""
    made = "import os; os.chdir(os.environ['TMPDIR'])\nfor _ in range(3000): os.mkdir('d'); os.chdir('d')"
    command = f'echo "$TMPDIR" > {tmp_path / "told"}; python3 -c "{made}"'
    out = run_calls([ToolCall("b", "Bash", {"command": command})], make_tools(["Bash"]), ToolContext(tmp_path))["b"]
    assert not out.is_error, out.content
    assert_scratch_removed(tmp_path / "told")


def test_a_scratch_folder_made_unwritable_by_its_command_is_removed() -> None:
    """As a user no permission bypasses (`nobody`; root removes anything): the command took the rights off folders of
    its scratch folder, and off the folder itself (`chmod` is beyond Landlock). Before, its removal failed on them
    and the folder stayed."""
    import nobody

    setpriv, python = nobody.require()
    for work in nobody.shared_dir():
        nobody.give(work)
        told = work / "told"
        command = (
            f'echo "$TMPDIR" > {told}; cd "$TMPDIR" && mkdir -p shut/in open && touch shut/in/f open/g && '
            "chmod 000 shut/in && chmod 500 shut open && chmod 500 ."
        )
        script = (
            "import sys\nfrom pathlib import Path\n"
            "from server.agent.tools import ToolContext, make_tools\n"
            "from server.agent.tools.runner import ToolCall, run_calls\n"
            "out = run_calls([ToolCall('b', 'Bash', {'command': sys.argv[2]})], make_tools(['Bash']), "
            "ToolContext(Path(sys.argv[1])))['b']\n"
            "print(out.content)\nsys.exit(1 if out.is_error else 0)\n"
        )
        done = subprocess.run(
            [setpriv, f"--reuid={nobody.NOBODY}", f"--regid={nobody.NOBODY}", "--clear-groups", "--"]
            + [python, "-c", script, str(work), command],
            env=nobody.cli_env(work, {"TMPDIR": "/tmp"}),
            cwd="/",
            capture_output=True,
            text=True,
            timeout=HANG,
        )
        assert done.returncode == 0, (done.stdout, done.stderr)
        scratch = Path(told.read_text().strip())
        assert scratch.name.startswith("session-lsp-bash-"), scratch
        if os.path.lexists(scratch):
            subprocess.run(["chmod", "-R", "u+rwx", str(scratch)], check=False)  # root removes it, for a next run
            shutil.rmtree(scratch, ignore_errors=True)
            pytest.fail("the scratch folder whose rights its command took off was left behind")
