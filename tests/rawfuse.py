"""A file system of one file, served over the kernel's FUSE protocol by a thread of the test process (for tests).

A real mount (`mount -t fuse`, root and `/dev/fuse` needed) whose single regular file `/<name>` fails the way a
network or FUSE file system can fail: `close(2)` of it returns EIO (the FLUSH reply), after the kernel has already
released the descriptor's number, and its byte-range locks answer what the test says (`setlk_error`). `on_flush`
runs in the serving thread while the closing thread waits in `close(2)` (another thread may be handed the number just
released then, as in a threaded server) and says what that close returns. No library: the protocol's few requests are answered here.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct
import threading
from collections.abc import Callable
from pathlib import Path

LOOKUP, FORGET, GETATTR, OPEN, READ, RELEASE, FLUSH, INIT = 1, 2, 3, 14, 15, 18, 25, 26
OPENDIR, RELEASEDIR, GETLK, SETLK, SETLKW, DESTROY, BATCH_FORGET = 27, 29, 31, 32, 33, 38, 42
POSIX_LOCKS = 1 << 1
IN_HEADER = struct.Struct("<IIQQIIII")
OUT_HEADER = struct.Struct("<IiQ")
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")
FILE_NODE = 2


def _attr(node: int) -> bytes:
    mode = (stat.S_IFDIR | 0o700) if node == 1 else (stat.S_IFREG | 0o600)
    return ATTR.pack(node, 0, 0, 0, 0, 0, 0, 0, 0, mode, 1 if node == FILE_NODE else 2, 0, 0, 0, 4096, 0)


class FailingFuse:
    """Mount at `mountpoint` a file system holding the file `name`: `on_flush(n)` runs at the `n`th close (from 1) of
    a descriptor of it and returns what that close returns (an errno, 0 for success; without it, EIO each time),
    `setlk_error` is what taking a byte-range lock on it returns."""

    def __init__(
        self,
        mountpoint: Path,
        name: str,
        *,
        setlk_error: int = 0,
        on_flush: Callable[[int], int] | None = None,
    ) -> None:
        self.mountpoint, self.name = mountpoint, name.encode()
        self.setlk_error, self.on_flush = setlk_error, on_flush
        self.flushes = 0
        self.dev = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
        libc = ctypes.CDLL(None, use_errno=True)
        options = f"fd={self.dev},rootmode=40000,user_id=0,group_id=0".encode()
        if libc.mount(b"sessionlspfuse", os.fsencode(mountpoint), b"fuse", 0, options) != 0:
            os.close(self.dev)
            raise OSError(ctypes.get_errno(), "mount -t fuse", str(mountpoint))
        self.thread = threading.Thread(target=self._serve, name="fuse", daemon=True)
        self.thread.start()

    @property
    def path(self) -> Path:
        return self.mountpoint / self.name.decode()

    def close(self) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.umount2(os.fsencode(self.mountpoint), 2)  # MNT_DETACH: the serving thread's read then ends
        self.thread.join(timeout=10)
        os.close(self.dev)

    def _reply(self, unique: int, error: int = 0, body: bytes = b"") -> None:
        try:
            os.write(self.dev, OUT_HEADER.pack(OUT_HEADER.size + len(body), -error, unique) + body)
        except OSError:
            pass  # the request was interrupted meanwhile

    def _serve(self) -> None:
        while True:
            try:
                request = os.read(self.dev, 1 << 20 | 4096)
            except OSError:
                return  # unmounted
            _, opcode, unique, node, *_ = IN_HEADER.unpack_from(request)
            arg = request[IN_HEADER.size :]
            if opcode in (FORGET, BATCH_FORGET):
                continue
            if opcode == DESTROY:
                self._reply(unique)
                return
            self._answer(opcode, unique, node, arg)

    def _answer(self, opcode: int, unique: int, node: int, arg: bytes) -> None:
        if opcode == INIT:
            major, minor, readahead, _flags = struct.unpack_from("<IIII", arg)
            body = struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), readahead, POSIX_LOCKS, 16, 12, 1 << 16, 1, 1, 0, 0)
            self._reply(unique, 0, body + b"\0" * (64 - len(body)))
        elif opcode == LOOKUP:
            if node == 1 and arg.rstrip(b"\0") == self.name:
                self._reply(unique, 0, struct.pack("<QQQQII", FILE_NODE, 0, 3600, 3600, 0, 0) + _attr(FILE_NODE))
            else:
                self._reply(unique, errno.ENOENT)
        elif opcode == GETATTR:
            self._reply(unique, 0, struct.pack("<QII", 3600, 0, 0) + _attr(node))
        elif opcode in (OPEN, OPENDIR):
            self._reply(unique, 0, struct.pack("<QII", 0, 0, 0))
        elif opcode == READ:
            self._reply(unique, 0, b"")
        elif opcode in (RELEASE, RELEASEDIR):
            self._reply(unique)
        elif opcode == FLUSH:
            self.flushes += 1
            self._reply(unique, errno.EIO if self.on_flush is None else self.on_flush(self.flushes))
        elif opcode == GETLK:
            self._reply(unique, 0, struct.pack("<QQII", 0, 0, 2, 0))  # F_UNLCK: free
        elif opcode in (SETLK, SETLKW):
            self._reply(unique, self.setlk_error)
        else:
            self._reply(unique, errno.ENOSYS)
