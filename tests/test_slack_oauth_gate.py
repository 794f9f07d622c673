"""Slack's OAuth stores write through the bot's one database inside its write gate (SQLite has one
writer: an install arriving while a round is scored must wait its turn, not meet 'database is
locked'). The stores are slack_sdk's SQLAlchemy ones on a real SQLite file."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from slack_sdk.oauth.installation_store.models.installation import Installation

from bot.config import Settings
from bot.platforms.slack.oauth import oauth_settings
from bot.store.database import Database
from tests.conftest import migrated_sqlite


def test_installs_and_states_are_written_inside_the_databases_write_gate(tmp_path: Path) -> None:
    database = Database(migrated_sqlite(tmp_path / "bot.db"))
    turns: list[str] = []

    @contextmanager
    def gate() -> Iterator[None]:
        with database.write_gate():  # the real gate, watched
            turns.append("write")
            yield

    settings = Settings(_env_file=None, SLACK_CLIENT_ID="1.2", SLACK_CLIENT_SECRET="s")  # type: ignore[call-arg]
    oauth, installations = oauth_settings(settings, database.writer, gate)
    installations.store.create_tables()  # slack_sdk's own tables, as the bot's first install makes them
    oauth.state_store.store.metadata.create_all(database.writer)  # type: ignore[union-attr]

    async def run() -> tuple[bool, Installation | None]:
        await installations.async_save(
            Installation(app_id="A1", team_id="T1", user_id="U1", bot_token="xoxb-1", bot_id="B1", bot_user_id="UB")
        )
        state = await oauth.state_store.async_issue()
        consumed = await oauth.state_store.async_consume(state)
        found = await installations.async_find_installation(enterprise_id=None, team_id="T1")
        return consumed, found

    consumed, found = asyncio.run(run())
    try:
        assert consumed and found is not None and found.bot_token == "xoxb-1"
        # the save (installation and bot rows) and the state's issue and consume each took the gate;
        # the read did not
        assert len(turns) == 3
    finally:
        database.dispose()
