"""What every command of the CLI shares: this invocation's Settings (loaded once), the engine,
bank or database opened from them or one sentence and an exit code, the check that a
--community is known, whole-number options in ASCII digits, and the process's logging."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from bot.config import Settings
from bot.core.bank import Bank, load_bank
from bot.core.engine import StudyEngine
from bot.core.errors import BankError, StoreUnavailable, StudyBotError
from bot.core.values import CommunityRef
from bot.settings_problems import load_settings
from bot.wiring import build_engine, open_database

if TYPE_CHECKING:
    from bot.store.database import Database

PLATFORMS = ("console", "discord", "slack")


def settings_of(ctx: typer.Context) -> Settings:
    """This invocation's Settings, read once: the root callback loads them through
    `load_settings` before any command runs (doctor and health, which report a bad setting
    themselves, load them here on first use); every command takes them from here."""
    root = ctx.find_root()
    if not isinstance(root.obj, Settings):
        root.obj = load_settings()
    return root.obj


def ascii_whole(low: int) -> Callable[[object], int]:
    """The parser of a whole-number option in ASCII digits, at least `low`: click's own int()
    also reads other scripts' digits (`--limit ٣` was 3)."""

    def parse(value: object) -> int:
        from bot.core.rules.numbers import ascii_int

        number = value if isinstance(value, int) else ascii_int(str(value).strip())
        if number is None or number < low:
            raise typer.BadParameter(f"{str(value)[:20]!r} is not a whole number of at least {low} in digits 0-9.")
        return number

    return parse


def fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(message, err=True)
    return typer.Exit(code)


def setup_logging(settings: Settings, quiet: bool = False) -> None:
    """Log to stderr; the console chat shows only warnings unless STUDYBOT_LOG_LEVEL is set."""
    level = "WARNING" if quiet and "log_level" not in settings.model_fields_set else settings.log_level.upper()
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr, force=True
    )
    logging.getLogger("alembic").setLevel(max(logging.WARNING, logging.getLogger().level))


def unreachable(exc: StoreUnavailable) -> typer.Exit:
    """A database that cannot be reached or upgraded at start: one line (the driver's reason has
    several), what to do, exit 2 like any other setting the bot cannot start with."""
    reason = exc.message.strip().splitlines()[0].rstrip(" .")
    return fail(f"{reason}: start the database server, or correct STUDYBOT_DATABASE_URL.", 2)


def engine_or_exit(settings: Settings, database: Database | None = None) -> StudyEngine:
    """The engine from bot/wiring.py (on `database` when given), or one sentence and an exit."""
    try:
        return build_engine(settings, database)
    except BankError as exc:
        raise fail(f"Refusing to start: {exc.message}") from None
    except StoreUnavailable as exc:
        raise unreachable(exc) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None


def database_or_exit(settings: Settings) -> Database:
    """The upgraded database from bot/wiring.py, or one sentence and an exit."""
    try:
        return open_database(settings)
    except StoreUnavailable as exc:
        raise unreachable(exc) from None
    except StudyBotError as exc:
        raise fail(exc.message) from None


def bank_or_exit(settings: Settings) -> Bank:
    try:
        return load_bank(settings.questions_dir)
    except BankError as exc:
        raise fail(exc.message) from None


def unknown_community(community: str, platform: str | None) -> str:
    """The sentence every command taking --community gives for one the bot does not know."""
    where = f" on {platform}" if platform else ""
    return (
        f"No community '{community[:60]}'{where}: a community appears with its first command there "
        "(`studybot schedule show` lists them)."
    )


def community_or_exit(engine: StudyEngine, community: str, platform: str | None) -> list[CommunityRef]:
    """The known communities with this id (on this platform when given), or exit 2 with a sentence."""
    found = [
        ref
        for ref, _ in engine.admin.communities()
        if ref.community_id == community and (platform is None or ref.platform == platform)
    ]
    if not found:
        raise fail(unknown_community(community, platform), 2)
    return found


def known_platform_or_exit(platform: str) -> None:
    """Exit 2 with a sentence for a --platform the bot has no adapter for."""
    if platform not in PLATFORMS:
        raise fail(f"Unknown platform '{platform[:30]}'; platforms: {', '.join(PLATFORMS)}.", 2)
