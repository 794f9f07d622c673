"""Deliverers: the only code that sends what the engine decided to post.

The engine writes a daily round, a reveal or a weekly leaderboard to the outbox in the same
transaction that decides it. A deliverer (one per running platform: an asyncio task on
Discord and Slack, a thread or a pass after each line in the console) claims due rows for a
short lease, sends each through the platform's `send`, and records the outcome through the
engine: the platform's message reference on success, a retry with backoff on a transient
failure (a 429 with its retry-after, a 5xx, a dropped connection), or giving up on a
permanent one (an unknown channel, a missing permission) where admins see it. Two
deliverers on one database never hold the same row at once, and a restart delivers what was
left undelivered. A post the platform took is recorded even when the database is away for
seconds (the record is retried well within the row's lease), since an unrecorded post is sent
again once its lease lapses."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from bot.core.engine import StudyEngine
from bot.core.errors import SendFailed, StoreUnavailable
from bot.core.values import ChannelRef, Delivery, Posted

log = logging.getLogger(__name__)

Send = Callable[[ChannelRef, Posted], "str | None"]
AsyncSend = Callable[[ChannelRef, Posted], Awaitable["str | None"]]
# Recording a post the platform took is tried this many times while the database is away,
# waiting 0.5, 1, 2, 4, 8 then 16 s between tries (about 30 s in all, well inside the outbox
# lease of 2 minutes, after which an unrecorded post would be sent a second time). A failed
# send is not retried here: the outbox schedules its next try (retry-after, backoff, giving up).
RECORD_TRIES = 7
RECORD_FIRST_WAIT_S = 0.5
RECORD_LONGEST_WAIT_S = 16.0


async def wake_or_timeout(wake: asyncio.Event, timeout_s: float) -> None:
    """Wait until `wake` is set or `timeout_s` has passed. Not `asyncio.wait_for`: on Python
    3.11 it can swallow a cancellation that arrives as the event is set, and a loop built on it
    then never stops (a task that ignores `Runtime.stop`)."""
    waiter = asyncio.ensure_future(wake.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout_s)
    finally:
        waiter.cancel()


def worker_name(platform: str) -> str:
    return f"{platform}:{socket.gethostname()[:24]}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Deliverer:
    """Delivers the outbox rows of one platform (and, for the console, one community; for a
    Discord shard, the communities `serves` accepts by id)."""

    def __init__(
        self,
        engine: StudyEngine,
        platform: str,
        community: str | None = None,
        batch: int = 20,
        serves: Callable[[str], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.platform = platform
        self.community = community
        self.batch = batch
        self.serves = serves
        self.worker = worker_name(platform)
        self.sent = 0
        self.failed = 0

    def _due(self) -> list[Delivery]:
        if self.serves is None:
            return self.engine.outbox.due_posts(self.platform, self.worker, self.community, self.batch)
        return self.engine.outbox.due_posts(self.platform, self.worker, self.community, self.batch, serves=self.serves)

    def _failure(self, item: Delivery, exc: BaseException) -> None:
        self.failed += 1
        if isinstance(exc, SendFailed):
            reason, permanent, retry_after = exc.reason, exc.permanent, exc.retry_after
        else:
            reason, permanent, retry_after = f"{type(exc).__name__}: {exc}", False, None
        gave_up = self.engine.outbox.delivery_failed(item.outbox_id, reason, permanent, retry_after)
        log.log(
            logging.WARNING if gave_up else logging.INFO,
            "posting %s to %s failed (try %s): %s%s",
            type(item.card).__name__,
            item.channel,
            item.attempts + 1,
            reason,
            "; gave up" if gave_up else "",
            exc_info=None if isinstance(exc, SendFailed) else exc,  # not a platform's own refusal: how it came
        )

    @staticmethod
    def _record_policy(item: Delivery) -> dict[str, Any]:
        """How recording `item` is retried (tenacity's Retrying and AsyncRetrying take the same
        arguments): only while the store is unavailable, then its error is raised as it came."""

        def unrecorded(state: RetryCallState) -> None:
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            log.warning(
                "post %s reached %s but the database is away; recording it again in %.1f s",
                item.outbox_id,
                item.channel,
                wait,
            )

        return {
            "retry": retry_if_exception_type(StoreUnavailable),
            "stop": stop_after_attempt(RECORD_TRIES),
            "wait": wait_exponential(multiplier=RECORD_FIRST_WAIT_S, max=RECORD_LONGEST_WAIT_S),
            "before_sleep": unrecorded,
            "reraise": True,
        }

    # ------------------------------------------------------------------ sync

    def deliver_due(self, send: Send) -> int:
        """One pass: send every due row; returns how many were sent."""
        done = 0
        for item in self._due():
            try:
                ref = send(item.channel, item.card)
            # Broad by design: whatever a platform's send raises is a failed post, recorded and
            # retried or given up; _failure logs the traceback of any error not a SendFailed.
            except Exception as exc:  # noqa: BLE001
                self._failure(item, exc)
                continue
            Retrying(**self._record_policy(item))(self.engine.outbox.delivered, item.outbox_id, ref)
            self.sent += 1
            done += 1
        return done

    # ----------------------------------------------------------------- async

    async def deliver_due_async(self, send: AsyncSend, run: Callable[..., Awaitable[object]]) -> int:
        """One pass on an event loop; engine calls go through `run` (the Bridge's) so the
        loop never waits on the database."""
        done = 0
        due = await run(self._due)
        assert isinstance(due, list)
        for item in due:
            try:
                ref = await send(item.channel, item.card)
            except Exception as exc:  # noqa: BLE001 - as in deliver_due: a failed post, logged by _failure
                await run(self._failure, item, exc)
                continue
            await AsyncRetrying(**self._record_policy(item))(run, self.engine.outbox.delivered, item.outbox_id, ref)
            self.sent += 1
            done += 1
        return done
