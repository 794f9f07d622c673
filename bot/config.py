"""Settings from the environment and .env: platform tokens under their usual names, the
bot's own settings as STUDYBOT_*. Secrets are SecretStr so they never print."""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# The databases the store speaks, as a URL's scheme shows them (sqlite:///..., postgresql+psycopg://...).
DATABASE_BACKENDS = ("sqlite", "postgresql")
DATABASE_EXAMPLES = "sqlite:///studybot.db or postgresql+psycopg://user:password@host/dbname"


def _not_a_folder(path: Path) -> Path | None:
    """The nearest existing ancestor of path when it is not a folder (a file in the way), else None."""
    for parent in path.expanduser().absolute().parents:
        if parent.exists():
            return None if parent.is_dir() else parent
    return None


def database_url_problem(url: str) -> str | None:
    """Why the store cannot open this URL (its form, its database, its driver, a SQLite file's
    folder), in words that finish "is not valid: ...", or None. Opens no connection."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"it must be a database URL such as {DATABASE_EXAMPLES}"
    if parsed.get_backend_name() not in DATABASE_BACKENDS:
        return f"the bot stores its data in SQLite or PostgreSQL, such as {DATABASE_EXAMPLES}"
    try:
        parsed.get_dialect().import_dbapi()
    except NoSuchModuleError:
        return f"{parsed.drivername} is not a driver SQLAlchemy knows: use {DATABASE_EXAMPLES}"
    except ImportError as exc:
        return (
            f"its driver ({exc.name or parsed.get_driver_name()}) is not installed: "
            "use postgresql+psycopg://... and pip install '.[postgres]'"
            if parsed.get_backend_name() == "postgresql"
            else f"its driver ({exc.name or parsed.get_driver_name()}) is not installed"
        )
    if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
        blocked = _not_a_folder(Path(parsed.database))
        if blocked is not None:
            return f"{blocked} is a file, not a folder, so the database file cannot be made under it"
    return None


# Link secrets the docs have shown as examples (docs/web.md once used change-me): whoever read
# them can forge links, so the bot refuses them whatever their length.
WEB_SECRET_EXAMPLES = ("change-me", "changeme", "secret", "your-secret-here", "test-web-secret-not-for-production")
WEB_SECRET_MIN_BYTES = 32
WEB_SECRET_HOWTO = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'


def web_secret_problem(secret: str) -> str | None:
    """Why a link secret is too weak to sign with (in words that finish "is not valid: ..."),
    or None. The secret itself is never part of the words."""
    if not secret:
        return None  # blank means unset: the page serves public communities only
    if secret.strip().lower() in WEB_SECRET_EXAMPLES:
        return f"it is an example from the docs, which anyone can read: generate one with {WEB_SECRET_HOWTO}"
    size = len(secret.encode())
    if size < WEB_SECRET_MIN_BYTES:
        return (
            f"it is {size} bytes long and must be at least {WEB_SECRET_MIN_BYTES}, "
            f"or links can be forged: generate one with {WEB_SECRET_HOWTO}"
        )
    return None


class Settings(BaseSettings):
    """The process's settings, read from STUDYBOT_* variables and .env (docs/configuration.md)."""

    # env_ignore_empty: a blank line copied from .env.example (SLACK_BOT_TOKEN=) means "not set".
    model_config = SettingsConfigDict(env_prefix="STUDYBOT_", env_file=".env", extra="ignore", env_ignore_empty=True)

    database_url: str = "sqlite:///studybot.db"
    questions_dir: Path = ROOT / "questions"
    timezone: str = "UTC"
    window_hours: int = Field(default=12, ge=1, le=48)
    log_level: str = "INFO"
    # torch threads of a demo's worker process (read by demos/ from the environment; default torch's own).
    demo_threads: int | None = Field(default=None, ge=1, le=1024)
    demo_timeout_s: int = Field(default=120, ge=5, le=3600)
    # Fork each demo from a warm process with torch imported (bot/worker/warm.py), or start each fresh.
    demo_warm: bool = True
    demo_out_dir: Path = Path("demo-out")
    # Demo jobs: where they run (a child process here, or Celery workers through Redis),
    # one per member every cooldown, at most this many waiting per community.
    worker: Literal["local", "celery"] = "local"
    redis_url: str = "redis://127.0.0.1:6379/0"
    celery_queue: str = "demos"
    demo_cooldown_s: float = Field(default=600.0, ge=0, le=86400)
    demo_max_waiting: int = Field(default=5, ge=1, le=100)
    # Adaptive practice: /quiz picks the question whose predicted chance of a right answer is
    # nearest this target, never one the member saw in the last practice_fresh_days days.
    practice_target: float = Field(default=0.7, gt=0.0, lt=1.0)
    practice_fresh_days: int = Field(default=30, ge=0, le=365)
    # Members' questions (/suggest): per member, at most this many waiting and this many a day.
    suggest_max_pending: int = Field(default=3, ge=1, le=100)
    suggest_per_day: int = Field(default=5, ge=1, le=100)
    demo_parallel: int = Field(default=1, ge=1, le=64)
    # Engine calls from Discord/Slack run in a thread pool of this size (the bridge).
    bridge_threads: int = Field(default=8, ge=1, le=64)
    # A channel post that fails is retried with backoff: this many tries in all, the first
    # wait this long, doubling up to the cap (6 tries span about 30 minutes).
    post_max_attempts: int = Field(default=6, ge=1, le=50)
    post_retry_base_s: float = Field(default=60.0, gt=0, le=3600)
    post_retry_max_s: float = Field(default=960.0, gt=0, le=86400)

    discord_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("DISCORD_TOKEN"))
    # Discord's REST API base (a rate-limit proxy in front of a big bot, or a fake in tests);
    # the gateway URL then comes from that API's /gateway/bot.
    discord_api_url: str = "https://discord.com/api/v10"
    # A guild id: slash commands sync there (at once) instead of globally (up to an hour).
    discord_guild: int | None = None
    # Seconds discord.py waits for GUILD_CREATEs before READY (tests shorten it).
    discord_guild_ready_timeout: float = Field(default=2.0, gt=0, le=60)
    # Sharding: run shards STUDYBOT_DISCORD_SHARD_IDS (comma-separated, default all) of
    # STUDYBOT_DISCORD_SHARD_COUNT in this process; processes on one database split the guilds
    # ((guild_id >> 22) % count), each scheduling and posting only its shards' guilds.
    discord_shard_count: int | None = Field(default=None, ge=1, le=65536)
    discord_shard_ids: str = ""

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError("it must be an IANA time zone such as UTC or Europe/Berlin") from None
        return value

    @field_validator("log_level")
    @classmethod
    def _log_level(cls, value: str) -> str:
        if value.strip().upper() not in LOG_LEVELS:
            raise ValueError(f"it must be one of {', '.join(LOG_LEVELS)}")
        return value.strip().upper()

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, value: str) -> str:
        problem = database_url_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("questions_dir")
    @classmethod
    def _questions_dir(cls, value: Path) -> Path:
        if not value.expanduser().is_dir():
            raise ValueError("it must be a folder of question files (the bank is in questions/)")
        return value

    @field_validator("demo_out_dir")
    @classmethod
    def _demo_out_dir(cls, value: Path) -> Path:
        blocked = value if value.exists() and not value.is_dir() else _not_a_folder(value)
        if blocked is not None:
            raise ValueError(f"{blocked} is a file, not a folder, so charts cannot be written there")
        return value

    @field_validator("discord_shard_ids")
    @classmethod
    def _shard_ids(cls, value: str) -> str:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if not all(p.isascii() and p.isdigit() and len(p) <= 6 for p in parts):  # no bot.core on a worker host
            raise ValueError("it must be a comma-separated list of shard numbers, such as 0,1")
        return ",".join(str(n) for n in sorted({int(p) for p in parts}))

    @model_validator(mode="after")
    def _shards_fit(self) -> Settings:
        ids = self.discord_shards()
        if ids and self.discord_shard_count is None:
            raise ValueError("STUDYBOT_DISCORD_SHARD_IDS needs STUDYBOT_DISCORD_SHARD_COUNT too")
        if ids and self.discord_shard_count is not None and max(ids) >= self.discord_shard_count:
            raise ValueError(f"shard ids run from 0 to {self.discord_shard_count - 1} (STUDYBOT_DISCORD_SHARD_COUNT)")
        return self

    def discord_shards(self) -> tuple[int, ...]:
        """The shard ids this process runs (all of the count when none are named)."""
        if self.discord_shard_ids:
            return tuple(int(p) for p in self.discord_shard_ids.split(","))
        return tuple(range(self.discord_shard_count)) if self.discord_shard_count else ()

    slack_bot_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET"))
    # Slack apps distributed to many workspaces (OAuth: /slack/install, /slack/oauth_redirect).
    slack_client_id: str | None = Field(default=None, validation_alias=AliasChoices("SLACK_CLIENT_ID"))
    slack_client_secret: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_CLIENT_SECRET"))
    # Where the Slack Web API is (tests point it at a fake); must end with a slash.
    slack_api_url: str = "https://slack.com/api/"
    # Slack user ids (comma-separated) allowed to run /studybot-config besides workspace admins and owners.
    slack_config_users: str = ""
    # HTTP mode (no SLACK_APP_TOKEN): where Slack's requests arrive (`studybot run --port` overrides).
    host: str = "0.0.0.0"
    port: int = Field(default=3000, ge=1, le=65535)
    # The study web page (leaderboards, a member's progress, the bank, demos, admin): served by
    # the bot process on this port when set (`studybot web --port N` serves it alone).
    web_port: int | None = Field(default=None, ge=1, le=65535)
    web_host: str = "0.0.0.0"
    # The page's public base URL, as people reach it (https://study.example.org); /score and
    # /config reply with signed links under it. Links are signed with the secret and expire.
    web_url: str | None = None
    web_secret: SecretStr | None = None
    web_link_hours: float = Field(default=168.0, gt=0, le=24 * 366)
    # The page closes a connection that has not sent a whole request's headers within this
    # many seconds (a half-sent request), or that sits idle this long after a response.
    web_keepalive_s: float = Field(default=15.0, gt=0, le=300)

    @field_validator("web_secret")
    @classmethod
    def _web_secret(cls, value: SecretStr | None) -> SecretStr | None:
        problem = None if value is None else web_secret_problem(value.get_secret_value())
        if problem is not None:
            raise ValueError(problem)
        return value
