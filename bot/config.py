"""Settings from the environment and .env: platform tokens under their usual names, the
bot's own settings as STUDYBOT_*. Secrets are SecretStr so they never print."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

ROOT = Path(__file__).resolve().parent.parent


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="STUDYBOT_", env_file=".env", extra="ignore")

    database_url: str = "sqlite:///studybot.db"
    questions_dir: Path = ROOT / "questions"
    timezone: str = "UTC"
    window_hours: int = Field(default=12, ge=1, le=48)
    log_level: str = "INFO"
    demo_timeout_s: int = Field(default=120, ge=5, le=3600)
    demo_out_dir: Path = Path("demo-out")

    discord_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("DISCORD_TOKEN"))
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_BOT_TOKEN"))
    slack_app_token: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_APP_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias=AliasChoices("SLACK_SIGNING_SECRET"))
