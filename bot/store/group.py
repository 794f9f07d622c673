"""Group commit: concurrent units of work share one transaction (SqlStore uses it on SQLite;
on PostgreSQL, where a batch's statements are round trips made one after another by its one
leader, it measured no faster than a transaction each, bench/answers.py --postgres).

SQLite has one writer at a time, and each transaction costs a BEGIN IMMEDIATE, a COMMIT
(a WAL append) and SQLAlchemy's bookkeeping around them: more than the work of a first
answer itself. So a unit submitted while another transaction is being written waits in a
queue; whichever caller next becomes the leader takes everything queued and runs it in
ONE transaction, each unit inside its own SAVEPOINT. A unit that raises has its savepoint
rolled back (its writes undone) and its exception handed back to its own caller; the others
commit. Results are handed back only once the transaction has committed; if the commit
itself fails, every unit of the batch gets that error (nothing of it was stored).

There is no background thread: the leader is one of the callers, so nothing needs
starting or stopping, and with no concurrency a unit is simply one transaction."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Engine, event
from sqlalchemy.exc import DBAPIError

from bot.store import fast
from bot.store.database import Database, _unavailable
from bot.store.held import after_fork

T = TypeVar("T")

MAX_BATCH = 256


class _Slot(Generic[T]):
    __slots__ = ("unit", "done", "value", "error")

    def __init__(self, unit: Callable[[Connection], T]) -> None:
        self.unit = unit
        self.done = False
        self.value: T | None = None
        self.error: BaseException | None = None


class GroupCommit:
    """Units of work on `db` committed together when they arrive together (one leader per
    process at a time)."""

    def __init__(self, db: Database, max_batch: int = MAX_BATCH) -> None:
        self.db = db
        self.max_batch = max_batch
        self._queue: list[_Slot[Any]] = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()
        self._conn: Connection | None = None  # only the leader uses it
        self._parents: list[Connection] = []
        self._pid = os.getpid()
        self.transactions = 0  # committed batches, for tests and benchmarks
        self.units = 0
        after_fork(self, GroupCommit._forget)
        # Database.dispose() closes the kept connection too (the pool's dispose leaves a
        # checked-out one open); the listener holds the GroupCommit only weakly.
        ref = weakref.ref(self)

        def disposed(_engine: Engine) -> None:
            found = ref()
            if found is not None:
                found._disposed()

        event.listen(db.writer, "engine_disposed", disposed)

    def _disposed(self) -> None:
        if self._pid != os.getpid():  # the pools a forked child replaces: nothing to close
            self._forget()
        else:
            self.release()

    def release(self) -> None:
        """Close the kept writer connection once no batch is using it (the next batch opens one)."""
        with self._leader:
            conn, self._conn = self._conn, None
            if conn is not None:  # its pool may be gone already: the driver's connection closed now
                conn.invalidate()
                conn.close()

    def _forget(self) -> None:
        """In a forked child: the parent's connection and locks are the parent's."""
        if self._conn is not None:
            self._parents.append(self._conn)  # kept from the garbage collector's close
        self._conn = None
        self._pid = os.getpid()
        self._queue = []
        self._queue_lock = threading.Lock()
        self._leader = threading.Lock()

    def run(self, unit: Callable[[Connection], T]) -> T:
        """`unit(conn)` in a transaction shared with the units queued beside it; its result,
        or its exception, once that transaction has committed (or failed)."""
        slot: _Slot[T] = _Slot(unit)
        with self._queue_lock:
            self._queue.append(slot)
        with self._leader:  # a previous leader may have run this unit meanwhile
            while not slot.done:
                with self._queue_lock:
                    batch = self._queue[: self.max_batch]
                    del self._queue[: self.max_batch]
                self._commit(batch)
        if slot.error is not None:
            raise slot.error
        return slot.value  # type: ignore[return-value]

    @contextmanager
    def _connection(self) -> Iterator[Connection]:
        """The leader's writer connection. SQLite: kept between batches (checking one out of
        the pool and wrapping it cost more Python than a first answer's COMMIT). PostgreSQL:
        one from the pool per batch, so the pool's pre-ping replaces a connection a restarted
        server dropped before a batch fails on it."""
        if not self.db.is_sqlite:
            with self.db.writer.connect() as pooled:
                yield pooled
            return
        conn = self._conn
        if conn is None or conn.closed or conn.invalidated or conn.engine.pool is not self.db.writer.pool:
            if conn is not None:
                conn.close()
            conn = self._conn = self.db.writer.connect()
        yield conn

    def _commit(self, batch: list[_Slot[Any]]) -> None:
        alone = batch[0] if len(batch) == 1 else None
        try:
            with self.db.write_gate(), self._connection() as conn:
                try:
                    with conn.begin():
                        if alone is None:
                            self._units(conn, batch)
                        else:  # no savepoint: its failure rolls back the whole transaction
                            try:
                                alone.value = alone.unit(conn)
                            except Exception as exc:
                                alone.error = _as_unavailable(exc)
                                raise
                except DBAPIError as exc:
                    if conn.invalidated:
                        conn.close()
                    unavailable = _as_unavailable(exc)
                    if unavailable is exc:
                        raise
                    raise unavailable from exc
            self.transactions += 1
            self.units += len(batch)
        # Broad by design: the transaction failed, so nothing of the batch is stored, and each
        # waiting unit gets the error to raise in its own thread (handed over, not swallowed).
        except BaseException as exc:  # noqa: BLE001
            for slot in batch:
                slot.value = None
                if slot is not alone or slot.error is None:
                    slot.error = exc
        finally:
            for slot in batch:
                slot.done = True

    @staticmethod
    def _units(conn: Connection, batch: list[_Slot[Any]]) -> None:
        """Each unit of the batch in its own savepoint: one that raises is undone alone."""
        sql = fast.driver_sql
        for slot in batch:
            sql(conn, "SAVEPOINT unit")
            try:
                slot.value = slot.unit(conn)
            except Exception as exc:  # noqa: BLE001 - the unit's own error, raised again in its caller's thread
                sql(conn, "ROLLBACK TO SAVEPOINT unit")
                sql(conn, "RELEASE SAVEPOINT unit")
                slot.value = None
                slot.error = _as_unavailable(exc)
            else:
                sql(conn, "RELEASE SAVEPOINT unit")


def _as_unavailable(exc: Exception) -> BaseException:
    """A unit's database error as the write would have raised it on its own."""
    if isinstance(exc, DBAPIError):
        unavailable = _unavailable(exc, "write")
        if unavailable is not None:
            unavailable.__cause__ = exc
            return unavailable
    return exc
