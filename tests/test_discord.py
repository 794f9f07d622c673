"""The Discord adapter end to end: the real discord.py client logs into a fake Discord on
127.0.0.1 (tests/fakes/discord_server.py) and every assertion is about what reached it."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import discord
import pytest
import yarl

from bot.config import Settings
from bot.core import choices as codec
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, DemoFailedCard, DemoProgressCard, DemoResultCard, RevealCard
from bot.platforms.discord import build_bot
from bot.platforms.discord.app import StudyBot, send_failure
from bot.platforms.runtime import Runtime
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import TEST_BANK, FakeClock
from tests.fakes.discord_server import EPHEMERAL, FakeDiscord, snowflake, user

ORIGINAL_GATEWAY = discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY
ORIGINAL_BASE = discord.http.Route.BASE
ALICE = user(snowflake(), "alice")
BOB = user(snowflake(), "bob")
CAROL = user(snowflake(), "carol")
ADMIN = user(snowflake(), "admin")


@dataclass
class Running:
    bot: StudyBot
    runtime: Runtime
    task: asyncio.Task[None]

    @property
    def engine(self) -> StudyEngine:
        return self.runtime.engine

    async def stop(self) -> None:
        await self.bot.close()
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.runtime.stop()


@dataclass
class World:
    fake: FakeDiscord
    settings: Settings
    bank: Bank
    clock: FakeClock
    guild: str
    channel: str
    other_channel: str

    async def start(self) -> Running:
        engine = StudyEngine(SqlStore(Database(self.settings.database_url)), self.bank, clock=self.clock)
        runtime = Runtime(engine, ("discord",), deliver_every_s=0.2)
        bot = build_bot(self.settings, runtime)
        await bot.login("fake-token")
        task = asyncio.create_task(bot.connect(reconnect=False))
        await asyncio.wait_for(bot.study.ready.wait(), 10)
        await asyncio.sleep(0.05)
        assert not task.done(), task.exception()  # the gateway connection parsed everything so far
        await runtime.start(schedule=False)
        return Running(bot, runtime, task)

    async def slash(self, name: str, who: dict[str, Any], admin: bool = False, **options: Any) -> dict[str, Any]:
        typed = [{"name": k, "type": option_type(v), "value": v} for k, v in options.items()]
        interaction = await self.fake.slash(name, who, self.guild, self.channel, typed, admin=admin)
        return await self.fake.answered(interaction)


def option_type(value: object) -> int:
    return {bool: 5, int: 4, float: 10}.get(type(value), 3)


def text_of(message: dict[str, Any]) -> str:
    parts = [message.get("content") or ""]
    for embed in message.get("embeds") or []:
        parts += [embed.get("title") or "", embed.get("description") or ""]
    return "\n".join(parts)


def buttons(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for row in message.get("components", []) for c in row["components"]]


def right_choice(engine: StudyEngine, round_id: int) -> int:
    with engine.store.read() as tx:
        row = tx.get_round(round_id)
    question = engine.bank.get(row.question_id)
    assert question is not None
    order = codec.parse_order(row.choice_order, len(question.choices))
    return order.index(question.answer_index)


@pytest.fixture
async def world(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> AsyncIterator[World]:
    fake = await FakeDiscord().start()
    guild = fake.add_guild(channels=2)
    settings = Settings(
        database_url=sqlite_url,
        questions_dir=TEST_BANK,
        discord_token="fake-token",
        discord_api_url=fake.api,
        discord_guild_ready_timeout=0.2,
        _env_file=None,
    )
    yield World(fake, settings, test_bank, clock, guild["id"], guild["channels"][0], guild["channels"][1])
    await fake.stop()
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = ORIGINAL_GATEWAY
    discord.http.Route.BASE = ORIGINAL_BASE


async def open_round(world: World, running: Running) -> dict[str, Any]:
    """An admin sets this channel and posts today's round now; returns the posted question."""
    await world.slash("config", ADMIN, admin=True, setting="channel")
    confirm = await world.slash("config", ADMIN, admin=True, setting="post-now")
    assert "is open" in text_of(confirm)
    return await world.fake.wait_for(lambda: next(iter(world.fake.posts(world.channel)), None))


async def test_login_ready_and_commands_synced_once(world: World) -> None:
    running = await world.start()
    try:
        identify = world.fake.identifies[0]
        intents = discord.Intents._from_value(identify["intents"])
        assert intents.guilds and intents.guild_messages and not intents.message_content
        assert [target for target, _ in world.fake.command_syncs] == ["global"]
        names = {c["name"] for c in world.fake.command_syncs[0][1]}
        assert names == {"quiz", "review", "score", "leaderboard", "demo", "forget-me", "help", "config"}
        config = next(c for c in world.fake.command_syncs[0][1] if c["name"] == "config")
        assert int(config["default_member_permissions"]) == 1 << 5  # Manage Server
        assert config.get("contexts") == [0]  # guild only
    finally:
        await running.stop()
    again = await world.start()  # same database, same tree: no second sync
    try:
        assert len(world.fake.command_syncs) == 1
        assert again.bot.study.synced is False
    finally:
        await again.stop()


async def test_guild_sync_target(world: World) -> None:
    world.settings = world.settings.model_copy(update={"discord_guild": int(world.guild)})
    running = await world.start()
    try:
        assert [target for target, _ in world.fake.command_syncs] == [world.guild]
    finally:
        await running.stop()


async def test_daily_round_clicks_reveal_and_restart(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        assert post["embeds"][0]["title"].startswith("Daily question #")
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]
        assert ids == [codec.encode_answer(round_id, i) for i in range(len(ids))]
        assert "<t:" in post["embeds"][0]["description"]  # closing time as a Discord timestamp
        right = right_choice(running.engine, round_id)
        wrong = (right + 1) % len(ids)

        first = await fake.answered(await fake.click(post["id"], ids[right], ALICE))
        assert first["flags"] & EPHEMERAL
        assert first["embeds"][0]["title"].startswith("Correct!")
        again = await fake.answered(await fake.click(post["id"], ids[wrong], ALICE))  # double click
        assert again["flags"] & EPHEMERAL and "already answered" in again["content"]
        bob = await fake.answered(await fake.click(post["id"], ids[wrong], BOB))
        assert bob["embeds"][0]["title"].startswith("Not quite")

        card = await running.runtime.call(running.engine.close_round, round_id)
        assert isinstance(card, RevealCard) and card.question_ref == post["id"]
        running.runtime.wake()
        reveal = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if m["id"] != post["id"]])
        assert reveal[0]["embeds"][0]["title"].startswith(f"Answer to #{round_id}")
        edited = fake.messages[post["id"]]
        assert all(b["disabled"] for b in buttons(edited))
        labels = [b["label"] for b in buttons(edited)]
        assert labels[right].endswith("· 1") and labels[wrong].endswith("· 1")
        assert buttons(edited)[right]["style"] == discord.ButtonStyle.success.value
        assert "2 answers" in edited["embeds"][0]["description"]
    finally:
        await running.stop()

    restarted = await world.start()  # a new client on the same database: yesterday's buttons work
    try:
        late = await fake.answered(await fake.click(post["id"], ids[right], CAROL))
        assert late["flags"] & EPHEMERAL and "closed" in late["content"]
    finally:
        await restarted.stop()
    assert fake.violations == []


async def test_click_after_restart_on_open_round_scores(world: World) -> None:
    running = await world.start()
    post = await open_round(world, running)
    await running.stop()
    restarted = await world.start()
    try:
        custom_id = buttons(post)[0]["custom_id"]
        answer = await world.fake.answered(await world.fake.click(post["id"], custom_id, ALICE))
        assert answer["embeds"][0]["title"].startswith(("Correct!", "Not quite"))
        score = await world.slash("score", ALICE)
        assert "1 all time" in text_of(score) or "0 all time" in text_of(score)
        assert score["flags"] & EPHEMERAL
    finally:
        await restarted.stop()


async def test_text_reply_answers_by_direct_message(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        round_id = codec.decode_answer(buttons(post)[0]["custom_id"])[0]  # type: ignore[index]
        letter = "abcde"[right_choice(running.engine, round_id)]
        await fake.say(world.guild, world.channel, ALICE, f"<@{fake.app_id}> {letter}", reply_to=post["id"])
        dm = await fake.wait_for(lambda: [m for m in fake.messages.values() if m.get("_via") == "dm"])
        assert dm[0]["embeds"][0]["title"].startswith("Correct!")
        assert fake.dm_channels[dm[0]["channel_id"]] == ALICE["id"]
        # a message without a mention carries no content (no message-content intent): ignored
        await fake.say(world.guild, world.channel, BOB, "b")
        fake.closed_dms.add(CAROL["id"])
        await fake.say(world.guild, world.channel, CAROL, f"<@{fake.app_id}> {letter}")
        note = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if "direct messages" in m["content"]])
        assert "recorded" in note[0]["content"]
        assert not [m for m in fake.messages.values() if m.get("_via") == "dm" and "bob" in str(m)]
        with running.engine.store.read() as tx:
            assert sorted(tx.choice_counts(round_id).values()) == [2]
    finally:
        await running.stop()


async def test_slash_commands(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        quiz = await world.slash("quiz", ALICE, topic="fundamentals")
        assert quiz["flags"] & EPHEMERAL and quiz["embeds"][0]["title"].startswith("Practice question #")
        practice = await fake.answered(await fake.click(quiz["id"], buttons(quiz)[0]["custom_id"], ALICE))
        assert practice["embeds"][0]["title"].startswith(("Correct!", "Not quite"))
        bad_topic = await world.slash("quiz", ALICE, topic="astrology")
        assert "Unknown topic" in bad_topic["content"] and bad_topic["flags"] & EPHEMERAL

        review = await world.slash("review", ALICE)
        assert review["flags"] & EPHEMERAL
        board = await world.slash("leaderboard", ALICE, scope="all")
        assert board["embeds"][0]["title"] == "All-time leaderboard"
        bad_week = await world.slash("leaderboard", ALICE, scope="2026-W99")
        assert bad_week["flags"] & EPHEMERAL and bad_week["content"]

        ask = await world.slash("forget-me", ALICE)
        assert "forget-me confirm:True" in ask["content"]
        gone = await world.slash("forget-me", ALICE, confirm=True)
        assert gone["content"].startswith("Done:")

        refused = await world.slash("config", BOB, setting="pause")  # a plain member
        assert "Manage Server" in refused["content"]
        paused = await world.slash("config", ADMIN, admin=True, setting="pause")
        assert "paused: on" in text_of(paused)
        shown = await world.slash("config", ADMIN, admin=True)
        assert "paused: on" in text_of(shown)
        help_ = await world.slash("help", BOB)
        assert "/quiz" in help_["content"]
        dm = await fake.answered(
            await fake.interact(2, None, snowflake(), ALICE, {"id": snowflake(), "name": "score", "type": 1})
        )
        assert "server" in dm["content"]
    finally:
        await running.stop()
    assert fake.violations == []
    assert all(i.responses for i in fake.interactions.values())  # every interaction answered


async def test_rate_limited_post_is_retried_after_retry_after(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        fake.rate_limits.append(("POST", re.compile(rf"/channels/{world.channel}/messages"), 0.4))
        await open_round(world, running)
        posts = fake.requests("POST", rf"/channels/{world.channel}/messages")
        assert [c.status for c in posts] == [429, 200]
        assert posts[1].at - posts[0].at >= 0.4
        assert len(fake.posts(world.channel)) == 1
    finally:
        await running.stop()


async def test_missing_channel_is_given_up_and_shown_in_config(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        gone = snowflake()
        fake.unknown_channels.add(gone)
        await world.slash("config", ADMIN, admin=True, setting="channel", value=f"<#{gone}>")
        await world.slash("config", ADMIN, admin=True, setting="post-now")
        await fake.wait_for(lambda: fake.requests("POST", rf"/channels/{gone}/messages"))

        async def alerted() -> str:
            while True:
                shown = text_of(await world.slash("config", ADMIN, admin=True))
                if "gave up" in shown:
                    return shown
                await asyncio.sleep(0.1)

        shown = await asyncio.wait_for(alerted(), 10)
        assert f"channel {gone}" in shown and "Unknown Channel" in shown
        assert len(fake.requests("POST", rf"/channels/{gone}/messages")) == 1  # permanent: no retry
    finally:
        await running.stop()


async def test_guild_removed_pauses_community(world: World) -> None:
    running = await world.start()
    try:
        await world.slash("config", ADMIN, admin=True, setting="channel")
        await world.fake.remove_guild(world.guild)

        def paused() -> bool:
            return any(c.paused for ref, c in running.engine.communities() if ref.community_id == world.guild)

        await world.fake.wait_for(paused)
    finally:
        await running.stop()


async def test_demo_cards_render_and_progress_edits(world: World, tmp_path: Path) -> None:
    running = await world.start()
    fake = world.fake
    try:
        interaction = await fake.slash(
            "demo",
            ALICE,
            world.guild,
            world.channel,
            [{"name": "checkpoint", "type": 1, "options": [{"name": "layers", "type": 4, "value": 4}]}],
        )
        shown = await fake.answered(interaction)
        assert interaction.responses[0]["type"] == 5  # deferred at once
        assert not shown["flags"] & EPHEMERAL and "checkpoint" in shown["content"]
        # the queued message's id goes back to the engine, so progress can edit it
        await fake.wait_for(
            lambda: fake.requests("GET", rf"/webhooks/{fake.app_id}/{interaction.token}/messages/@original")
        )
        chart = tmp_path / "chart.png"
        chart.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 64)
        where = ChannelRef("discord", world.guild, world.channel)
        progress = DemoProgressCard(
            1, "demos.checkpoint", where, shown["id"], "peak memory", ("strategy", "peak"), (("none", "10 MiB"),), 1, 2
        )
        await running.runtime.demo_progress(progress)
        assert "1 of 2" in fake.messages[shown["id"]]["content"]
        result = DemoResultCard(
            "demos.checkpoint", "Peak memory", ("strategy", "peak"), (("none", "10"),), ("a note",), str(chart), 1.0
        )
        ref = await running.bot.study.send(where, result)
        posted = fake.messages[ref]
        assert posted["_files"][0].startswith("chart.png:") and posted["_files"][0].endswith("89504e470d0a1a0a")
        assert posted["embeds"][0]["image"]["url"] == "attachment://chart.png"
        failed = await running.bot.study.send(where, DemoFailedCard(2, "demos.checkpoint", "out of memory"))
        assert "did not finish" in fake.messages[failed]["content"]
    finally:
        await running.stop()
    assert fake.violations == []


def test_send_failure_classes() -> None:
    class Response:
        def __init__(self, status: int) -> None:
            self.status = status
            self.reason = "x"
            self.headers = {"Retry-After": "7"}

    assert send_failure(discord.NotFound(Response(404), {"code": 10003, "message": "Unknown Channel"})).permanent
    assert send_failure(discord.Forbidden(Response(403), {"code": 50013, "message": "Missing"})).permanent
    limited = send_failure(discord.RateLimited(12.5))
    assert not limited.permanent and limited.retry_after == 12.5
    assert not send_failure(discord.DiscordServerError(Response(503), "down")).permanent
    assert not send_failure(ConnectionResetError("reset")).permanent


async def test_studybot_run_discord_serves(world: World, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DISCORD_TOKEN": "fake-token",
        "STUDYBOT_DISCORD_API_URL": world.fake.api,
        "STUDYBOT_DATABASE_URL": world.settings.database_url,
        "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK),
        "STUDYBOT_DISCORD_GUILD_READY_TIMEOUT": "0.2",
    }
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        env.pop(name, None)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "run", "discord", env=env, cwd=tmp_path, stderr=asyncio.subprocess.PIPE
    )
    try:
        await world.fake.wait_for(lambda: world.fake.command_syncs and world.fake.identifies, timeout=60)
        answer = await world.fake.answered(
            await world.fake.slash("help", ALICE, world.guild, world.channel), timeout=15
        )
        assert "/quiz" in answer["content"]
        assert yarl.URL(world.fake.gateway).port == world.fake.port
    finally:
        process.terminate()
        _, err = await asyncio.wait_for(process.communicate(), 30)
    assert b"fake-token" not in err
