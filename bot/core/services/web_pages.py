"""The engine's use cases for the study web page: the leaderboard, a member's progress, the
bank as study material, demos and the admin page, each one read-only unit of work (the
values come from bot/core/rules/pages.py). bot/core/engine.py builds it as `engine.web`."""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.errors import InvalidInput, NotFound
from bot.core.rules import pages, scoring
from bot.core.rules.calibration import calibration
from bot.core.rules.community import CommunityConfig
from bot.core.rules.text import clean_name
from bot.core.rules.timing import as_utc
from bot.core.services.base import EngineBase, Shared
from bot.core.services.boards import Boards, FlaggedTx, ScoreTx
from bot.core.services.fsrs_community import config_pair
from bot.core.services.outbox import AlertsTx, Outbox
from bot.core.units import UnitsOfWork, WithCommunities, WithFsrs, WithOutbox
from bot.core.values import (
    AdminPage,
    BankPage,
    CommunityRef,
    DemosPage,
    LeaderboardPage,
    LinkVersions,
    MemberPage,
    UserRef,
    WebCommunity,
)


class WebPagesPort(ScoreTx, AlertsTx, FlaggedTx, WithCommunities, WithOutbox, WithFsrs, Protocol):
    """The features WebPages's units of work touch."""


class WebPages(EngineBase[WebPagesPort]):
    """Read-only views for the study web page (bot/web). Who may see which is the web layer's
    rule; these only never show a question before its first reveal in the community."""

    def __init__(self, shared: Shared, store: UnitsOfWork[WebPagesPort], outbox: Outbox, boards: Boards) -> None:
        super().__init__(shared, store)
        self.outbox = outbox
        self.boards = boards

    def _web_config(self, tx: WebPagesPort, community: CommunityRef) -> tuple[WebCommunity, CommunityConfig]:
        config = tx.communities.find_community(community.platform, community.community_id)
        if config is None:
            raise NotFound(wording.NO_SUCH_COMMUNITY)
        return pages.web_community(community, config), config

    def link_current(self, community: CommunityRef, holder: str, admin: bool, versions: LinkVersions) -> bool:
        """Whether a signed link still opens: its community's version and its holder's (the
        member, or the admin an admin link names) are the stored ones. /forget-me, `/config
        web rotate` and an admin losing the right advance them, revoking every older link."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
            if config is None:
                return True  # the page's own call answers 404
            key = self._link_holder(community, holder, "admin" if admin else "member")
            return self._link_versions(tx, config.id, key) == versions

    def web_community(self, community: CommunityRef) -> WebCommunity | None:
        """The community a page is asked for, or None when the bot does not know it."""
        with self.store.read() as tx:
            config = tx.communities.find_community(community.platform, community.community_id)
        return None if config is None else pages.web_community(community, config)

    def leaderboard_page(
        self, community: CommunityRef, scope: str | None = None, page: int = 1, user_id: str | None = None
    ) -> LeaderboardPage:
        """One page of this week's board, an ISO week's (`scope` "2026-W48") or the all-time
        one (`scope` "all"); `user_id` marks that member's row."""
        week = None
        if scope and scope.strip().lower() != "all":
            try:
                week = scoring.parse_week(scope)
            except ValueError as exc:
                raise InvalidInput(str(exc)) from None
        elif scope:
            week = "all"
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            mine = tx.members.member_named(config.id, user_id) if user_id else None
            return pages.leaderboard_page(
                tx, web, config.id, self.now(), week, page, highlight=clean_name(mine.name) if mine else None
            )

    def member_page(self, community: CommunityRef, user_id: str) -> MemberPage:
        """A member's progress: points per week, accuracy per topic, streaks, reviews due, and
        the questions they missed with every choice's why."""
        now = self.now()
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            found = tx.members.member_named(config.id, user_id)
            if found is None:
                raise NotFound(wording.NOTHING_ANSWERED_YET)
            member_id, name = found.id, found.name
            history = pages.week_history(tx.boards.week_points(member_id), scoring.iso_week(now, config.timezone))
            topics = pages.topic_accuracy(tx.answers.question_outcomes(member_id), self.bank)
            missed = pages.missed_questions(tx.answers.missed_answers(member_id, pages.MISSED_LIMIT * 2), self.bank)
            upcoming = [due for question_id, due in tx.reviews.reviews(member_id) if self.bank.get(question_id)]
            user = UserRef(community.platform, community.community_id, user_id, name)
            score = self.boards.score_card(tx, user, config, member_id, now)  # in the same unit of work
        next_review = min(upcoming, default=None)
        next_review = None if next_review is None else as_utc(next_review)
        return MemberPage(web, score, history, topics, missed[: pages.MISSED_LIMIT], next_review)

    def bank_page(self, community: CommunityRef, topic: str | None = None, page: int = 1) -> BankPage:
        """The bank as study material: the questions revealed in this community, by topic."""
        if topic is not None and topic not in TOPICS:
            raise NotFound(wording.no_such_topic(topic))
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            shown = pages.shown_questions(tx, config.id, self.bank)
        shown_by_topic = Counter(q.topic for q in shown)
        in_bank_by_topic = Counter(q.topic for q in self.bank.questions)
        topics = tuple((t, shown_by_topic[t], in_bank_by_topic[t]) for t in TOPICS)
        chosen = [q for q in shown if topic is None or q.topic == topic]
        in_bank = len(self.bank.questions) if topic is None else in_bank_by_topic[topic]
        count = pages.pages_of(len(chosen), pages.BANK_PAGE)
        page = min(max(1, page), count)
        entries = tuple(pages.bank_entry(q) for q in chosen[(page - 1) * pages.BANK_PAGE : page * pages.BANK_PAGE])
        return BankPage(web, topics, topic, entries, page, count, in_bank - len(chosen))

    def demos_page(self, community: CommunityRef, limit: int = 20) -> DemosPage:
        """The community's newest demos with their results."""
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            jobs = tx.demos.community_demos(config.id, limit)
        return DemosPage(web, tuple(pages.demo_entry(job) for job in jobs))

    def demo_chart(self, community: CommunityRef, job_id: int) -> str | None:
        """The chart file of one of this community's demos, if it drew one."""
        with self.store.read() as tx:
            _, config = self._web_config(tx, community)
            job = tx.demos.get_demo(job_id)
        if job is None or job.community_id != config.id or job.state != "done":
            return None
        return job.chart_path

    def admin_page(self, community: CommunityRef) -> AdminPage:
        """What an admin should see in one place: settings, next runs, failed posts, demo
        jobs, and the questions the item analysis flags."""
        now = self.now()
        with self.store.read() as tx:
            web, config = self._web_config(tx, community)
            alerts = tuple(self.outbox.alerts(tx, tx.outbox.undelivered(config.id)))
            jobs = tx.demos.community_demos(config.id, 20)
            closes = tx.rounds.next_close(config.id)
            flagged = self.boards.flagged_lines(tx, config.id)
            community_calibration = calibration(tx.confidence.confidence_counts(community_id=config.id))
            fsrs = config_pair(tx, config.id)
        daily, weekly = pages.next_runs(config, now)
        closes = None if closes is None else as_utc(closes)
        return AdminPage(
            web,
            (*config.as_pairs(), fsrs),
            daily,
            closes,
            weekly,
            alerts,
            tuple(pages.demo_entry(job) for job in jobs),
            flagged,
            calibration=community_calibration,
        )
