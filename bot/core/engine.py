"""StudyEngine: one method per use case; plain values in, cards out. It never sends anything:
what must be posted in a channel is written to the outbox in the same unit of work as the
decision, and a platform's deliverer sends it (bot/delivery.py).

The use cases live in mixins named for what they hold, all on EngineBase (engine_base.py):
rounds.py (daily round, answers, reveal), practice.py (/quiz, /review, members' questions),
boards.py (scores, leaderboards), outbox.py, web_pages.py, community_admin.py (/config,
/forget-me, export), demo_jobs.py and anki_export.py (decks for Anki). This module composes
them and sets their attributes."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

from bot.core import wording
from bot.core.anki_export import AnkiExportMixin
from bot.core.bank import Bank, Question
from bot.core.boards import BoardsMixin
from bot.core.community_admin import CommunityAdminMixin
from bot.core.confidence import ConfidenceMixin
from bot.core.daily_batch import DailyBatchMixin
from bot.core.demo_jobs import DemoJobsMixin, DemoPolicy
from bot.core.errors import InvalidInput
from bot.core.fsrs_community import FsrsMixin
from bot.core.guesses import GuessesMixin
from bot.core.opened_views import OpenedViewsMixin
from bot.core.outbox import DeliveryPolicy, OutboxMixin
from bot.core.ports import Links, Store
from bot.core.practice import PracticeMixin, PracticePolicy, SuggestionPolicy
from bot.core.rounds import RoundsMixin
from bot.core.schedule_reads import ScheduleReadsMixin
from bot.core.streak_repair import StreakRepairMixin
from bot.core.values import Notice
from bot.core.web_pages import WebPagesMixin

__all__ = ["DeliveryPolicy", "DemoPolicy", "StudyEngine", "utcnow"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# A mixin that declares a method another one defines (its "Provided by" lines) comes after
# the one defining it, so that the engine's methods keep their full signatures for mypy.
class StudyEngine(
    FsrsMixin,
    StreakRepairMixin,
    GuessesMixin,
    PracticeMixin,
    BoardsMixin,
    RoundsMixin,
    DailyBatchMixin,
    ConfidenceMixin,
    OutboxMixin,
    WebPagesMixin,
    CommunityAdminMixin,
    DemoJobsMixin,
    ScheduleReadsMixin,
    AnkiExportMixin,
    OpenedViewsMixin,
):
    """The study bot's rules. Each public method is one use case and one unit of work."""

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
        self.store = store
        self.bank = bank
        self.clock = clock
        self.default_timezone = default_timezone
        self.default_window_hours = default_window_hours
        self.delivery = delivery or DeliveryPolicy()
        self.forget_salt = forget_salt
        self.demos = demos or DemoPolicy()
        self.links = links  # signs links to the web page (/score, /config), when it has a URL
        self.practice = practice or PracticePolicy()
        self.suggestion_policy = suggestions or SuggestionPolicy()
        self._member_questions: dict[str, tuple[Question, int]] = {}  # approved members' questions
        self._fsrs_memo: dict[int, tuple[float, tuple[float, ...] | None]] = {}  # fitted FSRS parameters

    # ---------------------------------------------------------- text commands

    def refuse_option(self, command: str, text: str, allowed: tuple[str, ...]) -> Notice:
        """A text command given an option it does not take (`/review foo`): one sentence."""
        raise InvalidInput(wording.unknown_option(command, text, allowed))

    # ---------------------------------------------------------- platform state

    def platform_state(self, key: str) -> str | None:
        """What an adapter stored under `key` (the command tree's hash last synced), if anything."""
        with self.store.read() as tx:
            return tx.state_get(key)

    def set_platform_state(self, key: str, value: str) -> None:
        with self.store.write() as tx:
            tx.state_put(key[:100], value[:500], self.now())
