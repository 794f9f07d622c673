"""A Slack app installed in many workspaces: Bolt's OAuth flow with slack_sdk's SQLAlchemy
installation and state stores on the bot's own database (tables made by our Alembic migration
0006), called from the event loop through worker threads (the stores are synchronous, like
the rest of our database access)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_sdk.oauth.installation_store.async_installation_store import AsyncInstallationStore
from slack_sdk.oauth.installation_store.models.bot import Bot
from slack_sdk.oauth.installation_store.models.installation import Installation
from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
from slack_sdk.oauth.state_store.async_state_store import AsyncOAuthStateStore
from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore
from sqlalchemy import Engine

from bot.config import Settings

log = logging.getLogger(__name__)

# The fewest bot scopes that work (the manifest asks for the same).
BOT_SCOPES = (
    "chat:write",
    "commands",
    "users:read",
    "channels:history",
    "groups:history",
    "files:write",
)
STATE_EXPIRATION_S = 600


WriteGate = Callable[[], AbstractContextManager[None]]


def _no_gate() -> AbstractContextManager[None]:
    return nullcontext()


def _gated(gate: WriteGate, write: Callable[..., Any]) -> Callable[..., Any]:
    """`write` run inside the bot's write gate: on SQLite one writer at a time, the same turn the
    engine's units of work take, so an install never meets a 'database is locked'."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with gate():
            return write(*args, **kwargs)

    return run


class ThreadedInstallationStore(AsyncInstallationStore):
    """slack_sdk's SQLAlchemyInstallationStore for an AsyncApp: each call in a worker thread, each
    write inside the bot's write gate (the database's one writer on SQLite)."""

    def __init__(self, store: SQLAlchemyInstallationStore, gate: WriteGate = _no_gate) -> None:
        self.store = store
        self.gate = gate

    @property
    def logger(self) -> logging.Logger:
        return self.store.logger

    async def async_save(self, installation: Installation) -> None:
        await asyncio.to_thread(_gated(self.gate, self.store.save), installation)

    async def async_save_bot(self, bot: Bot) -> None:
        await asyncio.to_thread(_gated(self.gate, self.store.save_bot), bot)

    async def async_find_bot(
        self, *, enterprise_id: str | None, team_id: str | None, is_enterprise_install: bool | None = False
    ) -> Bot | None:
        return await asyncio.to_thread(
            self.store.find_bot,
            enterprise_id=enterprise_id,
            team_id=team_id,
            is_enterprise_install=is_enterprise_install,
        )

    async def async_find_installation(
        self,
        *,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None = None,
        is_enterprise_install: bool | None = False,
    ) -> Installation | None:
        return await asyncio.to_thread(
            self.store.find_installation,
            enterprise_id=enterprise_id,
            team_id=team_id,
            user_id=user_id,
            is_enterprise_install=is_enterprise_install,
        )

    async def async_delete_bot(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await asyncio.to_thread(_gated(self.gate, self.store.delete_bot), enterprise_id=enterprise_id, team_id=team_id)

    async def async_delete_installation(
        self, *, enterprise_id: str | None, team_id: str | None, user_id: str | None = None
    ) -> None:
        delete = _gated(self.gate, self.store.delete_installation)
        await asyncio.to_thread(delete, enterprise_id=enterprise_id, team_id=team_id, user_id=user_id)

    async def async_delete_all(self, *, enterprise_id: str | None, team_id: str | None) -> None:
        await asyncio.to_thread(_gated(self.gate, self.store.delete_all), enterprise_id=enterprise_id, team_id=team_id)


class ThreadedStateStore(AsyncOAuthStateStore):
    """slack_sdk's SQLAlchemyOAuthStateStore for an AsyncApp: each call in a worker thread, inside
    the bot's write gate (both calls write)."""

    def __init__(self, store: SQLAlchemyOAuthStateStore, gate: WriteGate = _no_gate) -> None:
        self.store = store
        self.gate = gate

    @property
    def logger(self) -> logging.Logger:
        return self.store.logger

    async def async_issue(self, *args: Any, **kwargs: Any) -> str:
        return await asyncio.to_thread(_gated(self.gate, self.store.issue), *args, **kwargs)

    async def async_consume(self, state: str) -> bool:
        return await asyncio.to_thread(_gated(self.gate, self.store.consume), state)


def oauth_settings(
    settings: Settings, engine: Engine, gate: WriteGate = _no_gate
) -> tuple[AsyncOAuthSettings, ThreadedInstallationStore]:
    """Bolt's OAuth settings for a distributed app, its stores on `engine` (the bot's database),
    their writes inside `gate` (the database's write gate)."""
    assert settings.slack_client_id is not None and settings.slack_client_secret is not None
    installations = ThreadedInstallationStore(
        SQLAlchemyInstallationStore(client_id=settings.slack_client_id, engine=engine, logger=log), gate
    )
    states = ThreadedStateStore(SQLAlchemyOAuthStateStore(STATE_EXPIRATION_S, engine, logger=log), gate)
    return (
        AsyncOAuthSettings(
            client_id=settings.slack_client_id,
            client_secret=settings.slack_client_secret.get_secret_value(),
            scopes=list(BOT_SCOPES),
            installation_store=installations,
            state_store=states,
            state_expiration_seconds=STATE_EXPIRATION_S,
        ),
        installations,
    )
