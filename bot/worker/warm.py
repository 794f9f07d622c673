"""A warm demo process per Python interpreter (bot/worker/zygote.py), started on the first demo
and kept: each demo is a child forked from it, with torch already imported. `WarmChild` reads
like the `subprocess.Popen` it replaces (pid, stdout, stderr, wait, poll), so
bot/worker/demo_process.py streams, times out and kills it as it did a fresh process. When the
warm process cannot start (no torch for that interpreter, a platform without fork or Unix
sockets), `spawn` returns None and the caller starts a fresh process as before."""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import select
import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import IO

from bot.config import ROOT

log = logging.getLogger(__name__)

#: What the warm process imports once: torch and the demos a worker runs, then (a trailing "?":
#: when installed) what the demos import as they start: torch._dynamo (FakeTensorMode and the
#: non-reentrant checkpoint pull it in, about 1.3 s), Hugging Face's GPT-2 (about 1.6 s) and
#: matplotlib. None of them starts a thread, so the process stays safe to fork.
PRELOAD = (
    "torch",
    "demos.checkpoint",
    "demos.estimate",
    "demos.plan",
    "torch._dynamo?",
    "transformers.models.gpt2.modeling_gpt2?",
    "matplotlib?",
)
START_S = 120.0  # at most this long for the warm process to import them
ANSWER_S = 10.0  # at most this long for it to fork a child and say its pid
ENV = {"MALLOC_ARENA_MAX": "2"}  # glibc reads it at start: every child inherits the setting


class WarmChild:
    """A demo child forked by the warm process: its pid (and process group), its output, and
    its exit code from the status pipe (a child killed by a signal writes none: -9)."""

    def __init__(self, pid: int, stdout: IO[str], stderr: IO[str], status: int) -> None:
        self.pid = pid
        self.stdout = stdout
        self.stderr = stderr
        self._status: int | None = status
        self._said = b""
        self._code: int | None = None

    def _read(self, timeout: float | None) -> None:
        """Read the status pipe until its line is complete or it closes (no line: killed)."""
        while self._code is None and self._status is not None:
            if timeout is not None and not select.select([self._status], [], [], timeout)[0]:
                return
            chunk = os.read(self._status, 64)
            self._said += chunk
            if chunk and not self._said.endswith(b"\n"):
                continue
            text = self._said.decode(errors="replace").strip()
            self._code = int(text) if text.lstrip("-").isdigit() else -9
            self.close()

    def wait(self) -> int:
        """Block until the child has said its exit code (or died without one: -9)."""
        self._read(None)
        assert self._code is not None
        return self._code

    def poll(self) -> int | None:
        """Its exit code if it has ended, else None, without blocking."""
        self._read(0)
        return self._code

    def close(self) -> None:
        """Let go of the status pipe (a run abandoned after its kill leaks nothing)."""
        if self._status is not None:
            os.close(self._status)
            self._status = None


class Zygote:
    """One warm process for one interpreter, reached on a Unix socket in a private folder."""

    def __init__(self, python: str) -> None:
        self.python = python
        self.folder = Path(tempfile.mkdtemp(prefix="studybot-warm-"))
        self.path = str(self.folder / "socket")
        self.log = self.folder / "stderr.log"  # its own warnings: a file, so no pipe ever fills
        with open(self.log, "w") as stderr:
            self.proc = subprocess.Popen(
                [python, "-m", "bot.worker.zygote", self.path, *PRELOAD],
                cwd=ROOT,
                stdin=subprocess.PIPE,  # its end of file (this process closed it, or ended) stops it
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, **ENV},
                start_new_session=True,
            )
        out = self.proc.stdout
        ready = out is not None and select.select([out], [], [], START_S)[0]
        line = out.readline().strip() if ready and out is not None else ""
        if line != "ready":
            why = self.log.read_text().strip().splitlines()[-1:]
            self.close()
            raise OSError(f"the warm demo process did not start: {why[0] if why else 'no answer'}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, module: str, args: tuple[str, ...], env: dict[str, str], address_space: int | None) -> WarmChild:
        """Fork a child running `module`'s main(args) with this environment and limit."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        status_r, status_w = os.pipe()
        request = {"module": module, "args": list(args), "env": env, "cwd": str(ROOT), "address_space": address_space}
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.settimeout(ANSWER_S)
                conn.connect(self.path)
                socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [out_w, err_w, status_w])
                answer = json.loads(conn.makefile("rb").readline() or b"{}")
        except (OSError, ValueError):
            for fd in (out_r, err_r, status_r):
                os.close(fd)
            raise
        finally:
            for fd in (out_w, err_w, status_w):
                os.close(fd)
        if not isinstance(answer.get("pid"), int):
            for fd in (out_r, err_r, status_r):
                os.close(fd)
            raise OSError(f"the warm demo process refused the demo: {answer.get('error', 'no answer')}")
        return WarmChild(answer["pid"], os.fdopen(out_r, "r"), os.fdopen(err_r, "r"), status_r)

    def close(self) -> None:
        if self.proc.stdin:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_zygotes: dict[str, Zygote | None] = {}
_lock = threading.Lock()
atexit.register(lambda: close_all())  # its folder goes with this process


def zygote_for(python: str) -> Zygote | None:
    """The warm process for `python`, started on first use and again if it died; None when it
    cannot start (the reason is logged once), so the caller starts a fresh process."""
    with _lock:
        if python in _zygotes:
            found = _zygotes[python]
            if found is None or found.alive():
                return found
            log.warning("the warm demo process for %s ended; starting another", python)
            found.close()
        try:
            _zygotes[python] = Zygote(python)
        except OSError as exc:
            log.warning("demos will start a fresh process each: %s", exc)
            _zygotes[python] = None
        return _zygotes[python]


def spawn(
    python: str, module: str, args: tuple[str, ...], env: dict[str, str], address_space: int | None
) -> WarmChild | None:
    """A demo child forked from `python`'s warm process, or None to start a fresh one."""
    zygote = zygote_for(python)
    if zygote is None:
        return None
    try:
        return zygote.spawn(module, args, env, address_space)
    except OSError as exc:
        log.warning("the warm demo process could not fork a demo (%s); starting a fresh process", exc)
        return None


def close_all() -> None:
    """Stop every warm process (tests, and a process's exit: their stdin closes with it anyway)."""
    with _lock:
        for zygote in _zygotes.values():
            if zygote is not None:
                zygote.close()
        _zygotes.clear()
