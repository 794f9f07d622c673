"""Real services the tests start and stop themselves: a Redis server on a free port and a
`studybot worker` (Celery) process in its own process group."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def answering_pid(port: int) -> int | None:
    """The process id of the Redis server answering on 127.0.0.1:port (INFO server), or None."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"INFO server\r\n")
            data = b""
            while chunk := s.recv(65536):
                data += chunk
                found = re.search(rb"process_id:(\d+)\r\n", data)
                if found:
                    return int(found.group(1))
    except OSError:
        return None
    return None


class RedisServer:
    """Debian's redis-server on 127.0.0.1, nothing saved; `stop` and `start` again on the same
    port (a test takes Redis away and brings it back). Started only once this server itself
    answers on the port (its process id), never another test worker's Redis that took the port
    first; a first start then tries another free port."""

    def __init__(self, port: int | None = None) -> None:
        self.chosen = port is None
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        for _ in range(5):
            if self._start_on(self.port):
                self.chosen = False  # from now on the tests stop and start it on this port
                return self
            if not self.chosen:
                break
            self.port = free_port()
        raise AssertionError(f"redis-server did not start on 127.0.0.1:{self.port}")

    def _start_on(self, port: int) -> bool:
        binary = shutil.which("redis-server")
        assert binary is not None
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(200):
            if proc.poll() is not None:  # the port was taken
                return False
            if answering_pid(port) == proc.pid:
                self.proc = proc
                return True
            time.sleep(0.05)
        proc.kill()
        proc.wait(timeout=10)
        return False

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
            self.proc = None


def redis_or_skip(in_ci: bool, why: str) -> Iterator[RedisServer]:
    """A started RedisServer for a fixture; skipped with the reason locally when Debian's
    redis-server is missing, a failure under CI."""
    if shutil.which("redis-server") is None:
        if in_ci:
            pytest.fail("CI is set but redis-server is not installed: .ci/run must install it")
        pytest.skip(f"redis-server is not installed (apt-get install redis-server) to {why}")
    server = RedisServer().start()
    yield server
    server.stop()


def start_worker(
    redis_url: str, tmp_path: Path, timeout_s: int = 120, queues: str = "demos"
) -> subprocess.Popen[bytes]:
    """`studybot worker` on `queues`, once Celery says it is ready."""
    env = {
        **os.environ,
        "STUDYBOT_REDIS_URL": redis_url,
        "STUDYBOT_DEMO_TIMEOUT_S": str(timeout_s),
        "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'worker-unused.db'}",
    }
    log_path = tmp_path / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--queues", queues, "--concurrency", "1"],
        cwd=ROOT,
        env=env,
        stdout=log_path.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, so a test can kill it whole
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "ready." in log_path.read_text(errors="replace"):
            return worker
        if worker.poll() is not None:
            break
        time.sleep(0.2)
    kill_group(worker)
    raise AssertionError("the Celery worker did not start:\n" + log_path.read_text(errors="replace"))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
