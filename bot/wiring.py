"""The composition root: the one place that builds what a process runs, from Settings. The
database (once, upgraded), its store, the engine and its feature services; for a running bot,
the bridge into the engine, the scheduler with the weekly FSRS fits, the demo-job runner and
the Runtime that hands each platform what it needs (the Slack installation store and the
Discord client use this same database). The CLI's one-shot commands take their scheduler and
deliverer from here too. Nothing else in bot/ constructs a Database, a store, an engine, a
scheduler, a demo runner or a Runtime (tests/test_composition_root.py holds that); a test
builds its own. Nothing here imports a platform."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.config import Settings
from bot.core.bank import load_bank
from bot.core.engine import DeliveryPolicy, DemoPolicy, StudyEngine
from bot.core.services.practice import PracticePolicy, SuggestionPolicy
from bot.store.database import Database, upgrade
from bot.store.repository import SqlStore
from bot.web.links import make_links

if TYPE_CHECKING:
    from bot.background.delivery import Deliverer
    from bot.background.schedule import StudyScheduler
    from bot.platforms.runtime import Runtime


def open_database(settings: Settings) -> Database:
    """The process's database, upgraded to the newest schema first."""
    upgrade(settings.database_url)
    return Database(settings.database_url)


def build_engine(settings: Settings, database: Database | None = None) -> StudyEngine:
    """The bank (refusing a broken one), the upgraded database (unless given), the engine."""
    bank = load_bank(settings.questions_dir)
    return StudyEngine(
        SqlStore(database or open_database(settings)),
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


def build_scheduler(
    engine: StudyEngine, platforms: tuple[str, ...] | None = None, community: str | None = None, fits: bool = False
) -> StudyScheduler:
    """The scheduler over these platforms (None: all) or one community; `fits`: with each
    community's weekly FSRS fit (a running bot's; a one-shot CLI command has none)."""
    from bot.background.fsrs_runs import WeeklyFits
    from bot.background.schedule import StudyScheduler

    return StudyScheduler(
        engine, platforms=platforms, community=community, weekly_fit=WeeklyFits(engine) if fits else None
    )


def build_deliverer(engine: StudyEngine, platform: str, community: str | None = None) -> Deliverer:
    """A deliverer for one platform's posts (the CLI's `schedule run` prints the console's)."""
    from bot.background.delivery import Deliverer

    return Deliverer(engine, platform, community)


def build_runtime(
    engine: StudyEngine,
    platforms: tuple[str, ...],
    settings: Settings | None = None,
    *,
    bridge_threads: int | None = None,
    deliver_every_s: float = 5.0,
) -> Runtime:
    """What the platforms of one process share: the bridge, the scheduler (with the weekly
    fits), and, with settings, the demo-job runner on the configured worker and the database
    the Slack installation store writes to. Tests build theirs without settings (no demo
    runner)."""
    from bot.background.bridge import Bridge
    from bot.background.demo_runner import DemoJobRunner, make_backend
    from bot.platforms.runtime import Runtime

    threads = bridge_threads or (settings.bridge_threads if settings is not None else 8)
    runner = None
    if settings is not None:
        backend = make_backend(
            settings.worker, settings.redis_url, settings.celery_queue, settings.demo_timeout_s, settings.demo_warm
        )
        runner = DemoJobRunner(engine, backend, settings.demo_out_dir, parallel=settings.demo_parallel)
    store = engine.store
    database = store.db if isinstance(store, SqlStore) else None
    return Runtime(
        engine,
        platforms,
        Bridge(threads),
        build_scheduler(engine, platforms, fits=True),
        demo_runner=runner,
        database=database,
        deliver_every_s=deliver_every_s,
    )
