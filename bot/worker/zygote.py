"""The warm demo process: `python -m bot.worker.zygote SOCKET MODULE...` imports torch and the
demo modules once (a MODULE ending in "?" only if installed), then forks one child per demo, so
a request pays for its own work and not for the interpreter's start and the imports (about 1.6 s
for torch alone on a 2-core machine).

Each request arrives on a Unix socket as one JSON line (the demo module, its arguments, its
environment, its working directory, its address-space limit) with three file descriptors
passed beside it (SCM_RIGHTS): the child's stdout, its stderr and a status pipe. The child
starts its own session (so a time-out kills its whole process group, as with a fresh process),
sets its RLIMIT_AS, takes the descriptors as 1 and 2, runs the demo's `main(argv)` and writes
its exit code to the status pipe before it exits; a child killed by a signal writes nothing.
The server answers each request with the child's pid and reaps children as they end. It stays
free of Python threads (numpy's OpenBLAS starts its own pool when torch is imported; it registers
fork handlers for that), and it never runs a torch operation (no intra-op pool, no CUDA
context) before forking: each child starts those itself.
Each job is a fresh fork of the same untouched process, so nothing one demo leaves behind
(caches, globals, memory) reaches the next."""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
import select
import shutil
import signal
import socket
import sys
import traceback
from typing import Any

MAX_REQUEST = 1 << 20  # bytes of one request's JSON line
READY = "ready"


def serve(path: str, modules: list[str]) -> None:
    """Import `modules`, say READY on stdout, and fork a child per request until stdin closes
    (the parent that started this is gone) or the socket is removed."""
    for name in modules:
        try:
            importlib.import_module(name.removesuffix("?"))
        except ImportError:
            if not name.endswith("?"):  # an optional one may be missing
                raise
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print(READY, flush=True)
    watch = os.dup(0)  # stdin: its end of file means the parent is gone
    while True:
        readable, _, _ = select.select([listener.fileno(), watch], [], [])
        if watch in readable and not os.read(watch, 1):
            break
        if listener.fileno() in readable:
            conn, _ = listener.accept()
            with conn:
                _one(conn, listener, watch)
    listener.close()
    shutil.rmtree(os.path.dirname(path), ignore_errors=True)  # its private folder: socket and log


def _one(conn: socket.socket, listener: socket.socket, watch: int) -> None:
    """Read one request and fork its child; answer with the child's pid (or an error line)."""
    fds: list[int] = []
    try:
        data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 3)
        request: dict[str, Any] = json.loads(data.decode())
        if len(fds) != 3:
            raise ValueError(f"expected 3 file descriptors, got {len(fds)}")
    except (OSError, ValueError) as exc:
        _refuse(conn, str(exc), fds)
        return
    try:
        pid = os.fork()
    except OSError as exc:  # no memory or process slot left: this demo fails, the server stays
        _refuse(conn, f"fork failed: {exc.strerror}", fds)
        return
    if pid == 0:  # the child: never returns
        listener.close()
        os.close(watch)
        conn.close()
        _child(request, fds)
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # the client gone: its child's pipes close with it, and it ends
        conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")


def _refuse(conn: socket.socket, why: str, fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)
    with contextlib.suppress(OSError):  # a client gone already is no reason to stop serving
        conn.sendall(json.dumps({"error": why}).encode() + b"\n")


def _child(request: dict[str, Any], fds: list[int]) -> None:
    out, err, status = fds
    code = 1
    try:
        os.set_inheritable(status, False)  # a process the demo starts must not hold its end open
        os.setsid()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (null, out, err):
            os.close(fd)
        limit = request.get("address_space")
        if isinstance(limit, int) and limit > 0:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in dict(request.get("env") or {}).items()})
        os.chdir(str(request.get("cwd") or "."))
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own stdout
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        logging.basicConfig(level=os.environ.get("STUDYBOT_DEMO_LOG", "WARNING"), stream=sys.stderr, force=True)
        module = importlib.import_module(str(request["module"]))
        args = [str(a) for a in request.get("args", [])]
        sys.argv = [str(getattr(module, "__file__", request["module"])), *args]  # as `python -m` sets it
        code = int(module.main(args))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the child reports anything on its stderr, as a process would
        traceback.print_exc()
        code = 1
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            os.write(status, f"{code}\n".encode())
        os._exit(code)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2:])
