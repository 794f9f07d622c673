"""Long-lived SQLite reader connections, one per thread that reads.

Checking a connection out of SQLAlchemy's pool and making a Connection around it costs
about 50 us of Python per read, more than the hot path's one SQLite query (a repeat click).
Worker threads (the bridge's, asyncio's default executor) live as long as the process, so
each keeps one reader Connection instead. Only SQLite: a PostgreSQL connection kept idle
would skip the pool's pre-ping, and a restarted server would fail a read it could serve.

A thread's connection is lent to one read at a time (a read nested in another takes one from
the pool as before); one that was invalidated or closed is replaced; at most `limit` are
held, so the pool always has connections left for everyone else."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy import Connection, Engine

HELD_LIMIT = 8

Owner = TypeVar("Owner")


def after_fork(owner: Owner, reset: Callable[[Owner], None]) -> None:
    """Call `reset(owner)` in a child process forked while `owner` lives (to forget, without
    closing, connections and locks that belong to the parent)."""
    ref = weakref.ref(owner)

    def run() -> None:
        found = ref()
        if found is not None:
            reset(found)

    os.register_at_fork(after_in_child=run)


class _Local(threading.local):
    conn: Connection | None = None
    busy = False
    pid = 0


class HeldReaders:
    """Each thread's own reader Connection on `engine`, up to `limit` threads."""

    def __init__(self, engine: Engine, limit: int = HELD_LIMIT) -> None:
        self.engine = engine
        self.limit = limit
        self._local = _Local()
        self._held: list[tuple[threading.Thread, Connection]] = []
        self._parents: list[Connection] = []
        self._in_use: set[int] = set()  # ids of the held connections lent to a read right now
        self._doomed: set[int] = set()  # of those, the ones close() left to their read to close
        self._lock = threading.Lock()
        after_fork(self, HeldReaders._forget)

    def _forget(self) -> None:
        """In a forked child: the parent's connections are the parent's (not closed here)."""
        self._lock = threading.Lock()
        self._parents = [conn for _, conn in self._held]  # kept from the garbage collector's close
        self._held = []
        self._in_use, self._doomed = set(), set()

    def _take(self) -> Connection | None:
        local = self._local
        if local.pid not in (0, os.getpid()):  # inherited by a fork: the parent's, left alone
            local.conn, local.busy, local.pid = None, False, 0
        if local.busy:  # nested in this thread's own read
            return None
        conn = local.conn
        if conn is None or conn.closed or conn.invalidated:
            if conn is not None:
                self._drop(conn)
            conn = local.conn = self._connect()
            if conn is None:
                return None
            local.pid = os.getpid()
        local.busy = True
        with self._lock:
            self._in_use.add(id(conn))
        return conn

    def _connect(self) -> Connection | None:
        with self._lock:
            if len(self._held) >= self.limit:  # make room: connections of threads that ended
                for thread, conn in [h for h in self._held if not h[0].is_alive()]:
                    conn.close()
                    self._held.remove((thread, conn))
            if len(self._held) >= self.limit:
                return None
            conn = self.engine.connect()
            self._held.append((threading.current_thread(), conn))
            return conn

    def _drop(self, conn: Connection) -> None:
        conn.close()
        with self._lock:
            self._held = [h for h in self._held if h[1] is not conn]
        self._local.conn = None

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read on this thread's held connection (or a pooled one when it has none to
        lend): its transaction, if a Core statement began one, ends with the read."""
        conn = self._take()
        if conn is None:
            with self.engine.connect() as pooled:
                yield pooled
                if pooled.in_transaction():
                    pooled.commit()
            return
        try:
            yield conn
            if conn.in_transaction():
                conn.commit()
        except BaseException:
            if conn.invalidated:
                self._drop(conn)
            elif conn.in_transaction():
                try:
                    conn.rollback()
                except Exception:  # noqa: BLE001 - the read's own error is the one to raise
                    self._drop(conn)
            raise
        finally:
            self._local.busy = False
            with self._lock:
                self._in_use.discard(id(conn))
                doomed = id(conn) in self._doomed
                self._doomed.discard(id(conn))
            if doomed:  # close() came while this read ran: closed now that nothing uses it
                self._local.conn = None
                conn.invalidate()
                conn.close()

    def close(self) -> None:
        """Close every held connection (each thread opens a new one on its next read). One
        that another thread is reading on is closed by that read when it ends: closing a
        SQLite connection under a running statement crashes the process."""
        with self._lock:
            held, self._held = self._held, []
            idle = [conn for _, conn in held if id(conn) not in self._in_use]
            self._doomed |= {id(conn) for _, conn in held if id(conn) in self._in_use}
        for conn in idle:  # the driver's connection closed now, not left to the collector
            conn.invalidate()
            conn.close()
