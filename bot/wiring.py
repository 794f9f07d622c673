"""The wiring: build the engine, its store and its policies from Settings. The CLI and every
platform import this module; nothing here imports a platform."""

from __future__ import annotations

from bot.config import Settings
from bot.core.bank import load_bank
from bot.core.engine import DeliveryPolicy, DemoPolicy, StudyEngine
from bot.core.practice import PracticePolicy, SuggestionPolicy
from bot.store.database import Database, upgrade
from bot.store.repository import SqlStore
from bot.web.links import make_links


def build_engine(settings: Settings) -> StudyEngine:
    """The bank (refusing a broken one), the upgraded database, the engine."""
    bank = load_bank(settings.questions_dir)
    upgrade(settings.database_url)
    return StudyEngine(
        SqlStore(Database(settings.database_url)),
        bank,
        default_timezone=settings.timezone,
        default_window_hours=settings.window_hours,
        delivery=DeliveryPolicy(
            max_attempts=settings.post_max_attempts,
            base_delay_s=settings.post_retry_base_s,
            max_delay_s=settings.post_retry_max_s,
        ),
        demos=DemoPolicy(cooldown_s=settings.demo_cooldown_s, max_waiting=settings.demo_max_waiting),
        links=make_links(settings),
        practice=PracticePolicy(target=settings.practice_target, fresh_days=settings.practice_fresh_days),
        suggestions=SuggestionPolicy(max_pending=settings.suggest_max_pending, per_day=settings.suggest_per_day),
    )
