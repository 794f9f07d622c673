"""The engine's use cases for demo jobs: a member's /demo request (validated, rate-limited,
queued), and what a runner reports (claimed, progress, finished, failed), each result
queued as a post in the channel that asked. bot/core/engine.py builds it as `engine.demos`."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from bot.core import wording
from bot.core.errors import InvalidInput
from bot.core.records import DemoJobRecord
from bot.core.rules.demo_request import parse_demo, parse_question_demo
from bot.core.rules.demo_result import progress_card
from bot.core.rules.text import clean_name
from bot.core.services.base import EngineBase, Shared
from bot.core.services.guesses import takes_guesses
from bot.core.units import UnitsOfWork, WithAnswers, WithCommunities, WithDemos, WithOutbox, WithSuggestions
from bot.core.values import ChannelRef, CommunityRef, DemoProgressCard, DemoQueued, DemoRequest, UserRef

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoPolicy:
    """Who may queue a demo: one per member every `cooldown_s`, at most `max_waiting` queued
    per community (one runs at a time per community)."""

    cooldown_s: float = 600.0
    max_waiting: int = 5


# A demo's failures that are the bot's own, not the member's: the bot restarted while it ran,
# the demo queue (Redis) could not be reached, the worker was lost, a bug of ours (an
# incident). Every other failure (the demo refused the run, it overran the time limit or its
# memory, it failed) was the member's attempt and counts for their cooldown.
BOT_FAILURES = ("restart", "unavailable", "worker", "bug")


def _rows(progress: str) -> int:
    """How many strategies a stored progress had measured."""
    try:
        data = json.loads(progress)
    except ValueError:
        return 0
    rows = data.get("rows") if isinstance(data, dict) else None
    return len(rows) if isinstance(rows, list) else 0


class DemoJobsPort(WithCommunities, WithAnswers, WithOutbox, WithDemos, WithSuggestions, Protocol):
    """The features DemoJobs's units of work touch."""


class DemoJobs(EngineBase[DemoJobsPort]):
    """/demo requests and what the demo runners report."""

    def __init__(self, shared: Shared, store: UnitsOfWork[DemoJobsPort], policy: DemoPolicy | None = None) -> None:
        super().__init__(shared, store)
        self.policy = policy or DemoPolicy()

    # ------------------------------------------------------------------- demos

    def request_demo(self, user: UserRef, channel: ChannelRef, text: str) -> DemoQueued:
        """Validate a `/demo ...` request and queue it. Refused, with a sentence: a member
        within their cooldown, a community whose queue is full."""
        return self._queue_demo(user, channel, parse_demo(text))

    def request_question_demo(self, user: UserRef, channel: ChannelRef, round_id: int) -> DemoQueued:
        """The "see it run" button under a reveal: queue the round's question's own demo for the
        member who clicked, under the same cooldown and queue rules as /demo. A round of another
        community (or none) reads as a stale button; an open round keeps its demo until the reveal."""
        with self.store.read() as tx:
            found = tx.answers.answer_context(
                round_id, user.user_id, user.platform, user.community_id, self._forget_key(user)
            )
            if found is None:  # no such round in this community
                raise InvalidInput(wording.STALE_BUTTON)
            row = found.round
            question = self._find(row.question_id, tx)
        if question is None or not question.demo:
            raise InvalidInput(wording.NO_QUESTION_DEMO)
        if row.kind == "daily" and row.closed_at is None:
            raise InvalidInput(wording.QUESTION_DEMO_NOT_REVEALED)
        return self._queue_demo(user, channel, parse_question_demo(question.demo))

    def _queue_demo(self, user: UserRef, channel: ChannelRef, request: DemoRequest) -> DemoQueued:
        now = self.now()
        name = clean_name(user.display_name)
        with self.store.write() as tx:
            community = self._community(tx, user)
            last = tx.demos.last_demo_at(community.id, user.user_id, BOT_FAILURES)
            cooldown = timedelta(seconds=self.policy.cooldown_s)
            if last is not None and now - last < cooldown:
                wait = int((last + cooldown - now).total_seconds()) + 1
                raise InvalidInput(wording.demo_too_soon(now - last, cooldown, timedelta(seconds=wait)))
            if tx.demos.demos_waiting(community.id) >= self.policy.max_waiting:
                raise InvalidInput(wording.demos_waiting(self.policy.max_waiting))
            job_id = tx.demos.add_demo(
                community.id, channel.channel_id, user.user_id, name, request.module, request.args, now
            )
            position = tx.demos.demo_position(job_id, community.id)
            queued = tx.demos.get_demo(job_id)
        log.info("queued demo %s (%s) for %s at position %s", job_id, request.module, channel, position)
        guesses = takes_guesses(request.module, request.args)
        return DemoQueued(
            job_id=job_id,
            number=queued.number if queued else 0,
            position=position,
            module=request.module,
            user=name,
            args=request.args,
            guesses=guesses,
        )

    def demo_message(self, job_id: int, message_ref: str) -> None:
        """The platform's reference of the message that announced a queued demo (to edit)."""
        with self.store.write() as tx:
            tx.demos.set_demo_ref(job_id, message_ref)

    def claim_demo(
        self, worker: str, backend: str, serves: Callable[[CommunityRef], bool] | None = None
    ) -> DemoJobRecord | None:
        """The next demo to run (one at a time per community), marked running; with `serves`,
        only of a community it accepts (a shard process runs its own guilds' demos)."""
        accepts = None if serves is None else (lambda platform, community: serves(CommunityRef(platform, community)))
        with self.store.write() as tx:
            return tx.demos.claim_demo(worker, backend, self.now(), accepts)

    def demo_progress(self, job_id: int, progress: dict[str, object]) -> DemoProgressCard | None:
        """Keep a running demo's progress (`total`, `info`, `rows`); the card shows it. Progress
        only moves forward: a report with fewer rows than the stored one, or one for a job that
        is no longer running (a late or replayed event), changes nothing and shows nothing."""
        rows = progress.get("rows")
        count = len(rows) if isinstance(rows, list) else 0
        with self.store.write() as tx:
            job = tx.demos.get_demo(job_id)
            if job is None or job.state != "running" or count < _rows(job.progress):
                return None
            tx.demos.set_demo_progress(job_id, json.dumps(progress))
            job = tx.demos.get_demo(job_id)
        return None if job is None else progress_card(job)

    def demo_finished(self, job_id: int, result: dict[str, object], chart_path: str | None) -> bool:
        """A demo's result: stored, and its post queued in the channel where it was asked."""
        return self._end_demo(job_id, "done", json.dumps(result), chart_path, None)

    def demo_failed(self, job_id: int, reason: str, kind: str | None = None) -> bool:
        """A demo that did not finish: the reason is stored and said in its channel; `kind`
        (bot/worker/demo_process.py) says whether it was the member's run, charged to their cooldown,
        or one of BOT_FAILURES (None, unknown: not charged)."""
        return self._end_demo(job_id, "failed", None, None, reason, kind)

    def _end_demo(
        self,
        job_id: int,
        state: str,
        result: str | None,
        chart_path: str | None,
        error: str | None,
        failure: str | None = None,
    ) -> bool:
        now = self.now()
        with self.store.write() as tx:
            if not tx.demos.finish_demo(job_id, state, now, result, chart_path, error, failure):
                return False
            job = tx.demos.get_demo(job_id)
            if job is not None:
                tx.outbox.enqueue(job.community_id, job.channel_id, "demo", str(job_id), now)
        log.info("demo %s %s%s", job_id, state, f": {error}" if error else "")
        return True

    def interrupted_demos(
        self,
        reason: str = wording.DEMO_INTERRUPTED,
        serves: Callable[[CommunityRef], bool] | None = None,
    ) -> int:
        """At start: demos left running by a process that stopped are failed, and their
        askers told in the channel (with `serves`, only its communities': another shard
        process's running demos are its own). Returns how many."""
        with self.store.read() as tx:
            running = [tx.demos.get_demo(job_id) for job_id in tx.demos.demo_ids(("running",))]
        mine = [
            job.id
            for job in running
            if job is not None and (serves is None or serves(CommunityRef(job.platform, job.community)))
        ]
        return sum(1 for job_id in mine if self.demo_failed(job_id, reason, "restart"))

    def demo_jobs(self, limit: int = 50) -> list[DemoJobRecord]:
        """The newest demo jobs, newest first (for `studybot jobs`)."""
        with self.store.read() as tx:
            return tx.demos.recent_demos(limit)
