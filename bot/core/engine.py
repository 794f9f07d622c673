"""StudyEngine: the feature services built once and wired to each other, plus the few calls
that belong to no feature. Each service takes the services it needs in its constructor; this
is the one place they are put together (the process's composition root, bot/wiring.py, builds
the engine from Settings). It never sends anything: what must be posted in a channel is
written to the outbox in the same unit of work as the decision, and a platform's deliverer
sends it (bot/background/delivery.py).

The services, each in the module named for what it holds: answers.py (a click, a line of
text), rounds.py (the daily round, scoring, the reveal), daily_batch.py (rounds due together),
confidence.py, guesses.py, practice.py (/quiz, /review, members' questions), boards.py
(scores, the Home, leaderboards), streak_repair.py, fsrs_community.py, outbox.py,
web_pages.py, community_admin.py (/config, /forget-me, export), demo_jobs.py,
schedule_reads.py, anki_export.py, opened_views.py."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from bot.core import wording
from bot.core.bank import Bank
from bot.core.errors import InvalidInput
from bot.core.ports import Links
from bot.core.services.anki_export import AnkiExport
from bot.core.services.answers import Answers
from bot.core.services.base import Shared, SharedView
from bot.core.services.boards import Boards
from bot.core.services.community_admin import CommunityAdmin
from bot.core.services.confidence import Confidence
from bot.core.services.daily_batch import DailyBatch
from bot.core.services.demo_jobs import DemoJobs, DemoPolicy
from bot.core.services.fsrs_community import CommunityFsrs
from bot.core.services.guesses import Guesses
from bot.core.services.opened_views import OpenedViews
from bot.core.services.outbox import DeliveryPolicy, Outbox
from bot.core.services.practice import Practice, PracticePolicy, SuggestionPolicy
from bot.core.services.rounds import Rounds
from bot.core.services.schedule_reads import ScheduleReads
from bot.core.services.streak_repair import Streaks
from bot.core.services.web_pages import WebPages
from bot.core.units import Store
from bot.core.values import Notice

__all__ = ["DeliveryPolicy", "DemoPolicy", "StudyEngine", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class StudyEngine(SharedView):
    """The study bot's rules, as feature services: `engine.rounds.open_daily(...)`,
    `engine.answers.click(...)`, `engine.boards.leaderboard(...)`. Each service method is one
    use case and one unit of work."""

    def __init__(
        self,
        store: Store,
        bank: Bank,
        clock: Callable[[], datetime] = utcnow,
        default_timezone: str = "UTC",
        default_window_hours: int = 12,
        delivery: DeliveryPolicy | None = None,
        forget_salt: str = "studybot",
        demos: DemoPolicy | None = None,
        links: Links | None = None,
        practice: PracticePolicy | None = None,
        suggestions: SuggestionPolicy | None = None,
    ) -> None:
        shared = Shared(store, bank, clock, default_timezone, default_window_hours, forget_salt, links)
        self.shared = shared
        self.store = store  # the whole store: each service below is handed it as its own narrow port
        self.fsrs = CommunityFsrs(shared, store)
        self.streaks = Streaks(shared, store)
        self.guesses = Guesses(shared, store)
        self.practice = Practice(shared, store, practice, suggestions)
        self.boards = Boards(shared, store, self.streaks, self.practice)
        self.rounds = Rounds(shared, store, self.practice, self.fsrs, self.streaks)
        self.dailies = DailyBatch(shared, store, self.rounds)
        self.confidence = Confidence(shared, store, self.fsrs, self.rounds)
        self.answers = Answers(self.rounds, self.confidence, self.boards)
        self.outbox = Outbox(shared, store, self.rounds, self.boards, self.practice, self.guesses, delivery)
        self.web = WebPages(shared, store, self.outbox, self.boards)
        self.admin = CommunityAdmin(shared, store, self.rounds, self.outbox, self.boards, self.practice)
        self.demos = DemoJobs(shared, store, demos)
        self.schedule = ScheduleReads(shared, store)
        self.anki = AnkiExport(shared, store)
        self.views = OpenedViews(shared, store)

    # ------------------------------------------------------ what services share
    # bank, clock, the defaults and now() come from SharedView, as every service's do

    @property
    def links(self) -> Links | None:
        return self.shared.links

    @links.setter
    def links(self, links: Links | None) -> None:
        self.shared.links = links

    @property
    def delivery(self) -> DeliveryPolicy:
        return self.outbox.delivery

    # ---------------------------------------------------------- text commands

    def refuse_option(self, command: str, text: str, allowed: tuple[str, ...]) -> Notice:
        """A text command given an option it does not take (`/review foo`): one sentence."""
        raise InvalidInput(wording.unknown_option(command, text, allowed))

    # ---------------------------------------------------------- platform state

    def platform_state(self, key: str) -> str | None:
        """What an adapter stored under `key` (the command tree's hash last synced), if anything."""
        with self.store.read() as tx:
            return tx.platform.state_get(key)

    def set_platform_state(self, key: str, value: str) -> None:
        with self.store.write() as tx:
            tx.platform.state_put(key[:100], value[:500], self.now())
