"""The Discord adapter end to end: the real discord.py client logs into a fake Discord on
127.0.0.1 (tests/fakes/discord_server.py) and every assertion is about what reached it."""

from __future__ import annotations

import asyncio
import base64
import logging
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

from bot.background.demo_runner import DemoJobRunner, LocalBackend
from bot.config import Settings
from bot.core import wording
from bot.core.bank import Bank
from bot.core.engine import DeliveryPolicy, StudyEngine
from bot.core.rules import choices as codec
from bot.core.rules.suggestion_buttons import decode_draft
from bot.core.values import (
    ChannelRef,
    CommunityRef,
    DemoFailedCard,
    DemoProgressCard,
    DemoResultCard,
    QuestionCard,
    RevealCard,
    SuggestionForm,
    SuggestionReceived,
    UserRef,
)
from bot.platforms.discord import build_bot, render
from bot.platforms.discord import replies as replies_module
from bot.platforms.discord.app import ShardedStudyBot, StudyBot, guild_shard, send_failure
from bot.platforms.discord.text import ANSWER_FORBIDDEN
from bot.platforms.runtime import Runtime
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.wiring import build_runtime
from tests.conftest import TEST_BANK, FakeClock
from tests.fakes.discord_server import EPHEMERAL, FakeDiscord, guild_id_for_shard, snowflake, user
from tests.test_suggestions import CHOICES, PROMPT, REF, TRAP, WHYS, good_form

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

    async def start(
        self,
        settings: Settings | None = None,
        schedule: bool = False,
        delivery: DeliveryPolicy | None = None,
        demos: Path | None = None,
    ) -> Running:
        """A bot process: its own engine and Runtime on the shared database (`schedule`: the
        scheduler runs, catch-up first; `demos`: a local demo-job runner writing charts there)."""
        settings = settings or self.settings
        engine = StudyEngine(SqlStore(Database(settings.database_url)), self.bank, clock=self.clock, delivery=delivery)
        runtime = build_runtime(engine, ("discord",), deliver_every_s=0.2)
        if demos is not None:
            runtime.demo_runner = DemoJobRunner(
                engine,
                LocalBackend(timeout_s=300),
                demos,
                on_progress=runtime.demo_progress,
                on_finished=runtime.wake,
                poll_s=0.2,
            )
        bot = build_bot(settings, runtime)
        await bot.login("fake-token")
        task = asyncio.create_task(bot.connect(reconnect=False))
        await asyncio.wait_for(bot.study.ready.wait(), 10)
        # The fake sends this connection's guilds last: once the bot holds every one, it has
        # parsed everything sent so far, and the connection is still up.
        announced = self.fake.announced[-1]
        await self.fake.wait_for(lambda: task.done() or {str(g.id) for g in bot.guilds} == announced)
        assert not task.done(), task.exception()
        assert {str(g.id) for g in bot.guilds} == announced
        await runtime.start(schedule=schedule)
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
        row = tx.rounds.get_round(round_id)
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


async def open_round(world: World, _running: Running) -> dict[str, Any]:
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
        assert names == {"quiz", "review", "score", "leaderboard", "demo", "forget-me", "help", "config", "suggest"}
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

        card = await running.runtime.call(running.engine.rounds.close_round, round_id)
        assert isinstance(card, RevealCard) and card.question_ref == post["id"]
        running.runtime.wake()
        reveal = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if m["id"] != post["id"]])
        assert reveal[0]["embeds"][0]["title"].startswith(f"Answer to #{round_id}")
        # the buttons are disabled (and counted) by an edit that may land just after the reveal's post
        def disabled() -> dict[str, Any] | None:
            message = fake.messages[post["id"]]
            return message if all(b["disabled"] for b in buttons(message)) else None

        edited = await fake.wait_for(disabled)
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
        await fake.say(world.guild, world.channel, CAROL, f"<@{fake.app_id}> daily {letter}")
        note = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if "direct messages" in m["content"]])
        assert "recorded" in note[0]["content"]
        assert not [m for m in fake.messages.values() if m.get("_via") == "dm" and "bob" in str(m)]
        with running.engine.store.read() as tx:
            assert sorted(tx.answers.choice_counts(round_id).values()) == [2]
    finally:
        await running.stop()


async def test_daily_quiz_a_a_by_mention_never_spends_the_daily_answer(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        round_id = codec.decode_answer(buttons(post)[0]["custom_id"])[0]  # type: ignore[index]
        quiz = await world.slash("quiz", ALICE, topic="fundamentals")
        assert quiz["flags"] & EPHEMERAL and "Practice question #" in text_of(quiz)

        def dms() -> list[dict[str, Any]]:
            return [m for m in fake.messages.values() if m.get("_via") == "dm"]

        await fake.say(world.guild, world.channel, ALICE, f"<@{fake.app_id}> a")  # the practice question
        first = await fake.wait_for(lambda: dms() or None)
        assert "This answered your practice question #" in text_of(first[0])
        await fake.say(world.guild, world.channel, ALICE, f"<@{fake.app_id}> a")  # not the daily round
        told = await fake.wait_for(
            lambda: [m for m in fake.posts(world.channel) if "A bare letter answers only" in (m["content"] or "")]
        )
        assert f"To answer daily round #{round_id}, use its buttons, reply to its post" in told[0]["content"]
        with running.engine.store.read() as tx:
            assert tx.answers.choice_counts(round_id) == {}
        await fake.say(world.guild, world.channel, ALICE, f"<@{fake.app_id}> a", reply_to=post["id"])
        second = await fake.wait_for(lambda: dms()[1:] or None)
        assert f"This answered daily round #{round_id}; a daily answer is final." in text_of(second[0])
        with running.engine.store.read() as tx:
            assert sum(tx.answers.choice_counts(round_id).values()) == 1
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
        assert "/quiz" in help_["content"] and "/suggest" in help_["content"]
        assert "/config suggestions" in help_["content"]
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
            return any(c.paused for ref, c in running.engine.admin.communities() if ref.community_id == world.guild)

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
        assert interaction.responses[0]["type"] == 4  # queued at once, in the channel
        assert not shown["flags"] & EPHEMERAL and "checkpoint" in shown["content"]
        # the queued message's id goes back to the engine, so progress can edit it
        await fake.wait_for(
            lambda: fake.requests("GET", rf"/webhooks/{fake.app_id}/{interaction.token}/messages/@original")
        )
        chart = tmp_path / "chart.png"
        chart.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 64)
        where = ChannelRef("discord", world.guild, world.channel)
        progress = DemoProgressCard(
            1,
            1,
            "demos.checkpoint",
            where,
            shown["id"],
            "peak memory",
            ("strategy", "peak"),
            (("none", "10 MiB"),),
            1,
            2,
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
        failed = await running.bot.study.send(where, DemoFailedCard(2, 2, "demos.checkpoint", "out of memory"))
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


FAKE_TOKEN = base64.b64encode(b"1234567890123456789").decode().rstrip("=") + ".GhIjKl.Zm9vYmFyYmF6cXV4cXV1eGNvcmdl"


async def test_studybot_run_discord_serves(world: World, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "DISCORD_TOKEN": FAKE_TOKEN,  # shaped like a bot token: `run` checks the shape first
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
    assert FAKE_TOKEN.encode() not in err


# ------------------------------------------------------------------ shards


def daily_posts(fake: FakeDiscord, channel: str) -> list[dict[str, Any]]:
    return [m for m in fake.posts(channel) if m["embeds"] and m["embeds"][0]["title"].startswith("Daily question")]


async def test_two_shards_on_one_database_post_each_guilds_round_once(world: World) -> None:
    fake = world.fake
    zero = fake.add_guild("Shard zero", guild_id_for_shard(0, 2))
    one = fake.add_guild("Shard one", guild_id_for_shard(1, 2))
    setup = StudyEngine(SqlStore(Database(world.settings.database_url)), world.bank, clock=world.clock)
    for guild in (zero, one):  # both guilds post at 09:00 UTC, the clock's time: due at start
        setup.admin.configure(CommunityRef("discord", guild["id"]), "channel", guild["channels"][0])
    shard = {
        n: world.settings.model_copy(update={"discord_shard_count": 2, "discord_shard_ids": str(n)}) for n in (0, 1)
    }
    zero_ch, one_ch = zero["channels"][0], one["channels"][0]

    first = await world.start(shard[0], schedule=True)
    try:
        assert isinstance(first.bot, ShardedStudyBot) and fake.identifies[-1]["shard"] == [0, 2]
        assert {g.id for g in first.bot.guilds} == {int(g) for g in fake.guilds if guild_shard(int(g), 2) == 0}
        await fake.wait_for(lambda: daily_posts(fake, zero_ch))
        # shard 0 neither schedules nor delivers guild one's round, even when one is waiting
        assert await first.runtime.bridge.run(first.runtime.scheduler.tick) == []
        opened = await first.runtime.call(
            first.engine.rounds.open_daily, ChannelRef("discord", one["id"], one_ch)
        )  # as `studybot schedule run` would, in any process
        assert isinstance(opened, QuestionCard)
        assert await first.runtime.deliver_now("discord") == 0
        assert fake.requests("POST", rf"/channels/{one_ch}/messages") == []

        second = await world.start(shard[1], schedule=True)
        try:
            assert fake.identifies[-1]["shard"] == [1, 2]
            post = (await fake.wait_for(lambda: daily_posts(fake, one_ch)))[0]
            # a click in guild one reaches shard 1's connection and is answered there
            answer = await fake.answered(await fake.click(post["id"], buttons(post)[0]["custom_id"], ALICE))
            assert answer["embeds"][0]["title"].startswith(("Correct!", "Not quite"))
            await second.runtime.deliver_now("discord")
        finally:
            await second.stop()
    finally:
        await first.stop()

    before = len(fake.requests("POST", r"/channels/\d+/messages"))
    again = await world.start(shard[0], schedule=True)  # a restart of shard 0: catch-up posts nothing new
    try:
        await again.runtime.deliver_now("discord")
        assert len(fake.requests("POST", r"/channels/\d+/messages")) == before
    finally:
        await again.stop()
    assert len(daily_posts(fake, zero_ch)) == 1 and len(daily_posts(fake, one_ch)) == 1
    for channel in (zero_ch, one_ch):  # every post (round, Monday's leaderboard) once, in its own guild
        titles = [m["embeds"][0]["title"] for m in fake.posts(channel) if m["embeds"]]
        assert len(titles) == len(set(titles))
    assert all(m["guild_id"] == zero["id"] for m in fake.posts(zero_ch))
    assert fake.violations == []


def test_shard_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="SHARD_COUNT"):
        Settings(discord_shard_ids="1", _env_file=None)
    with pytest.raises(ValueError, match="from 0 to 1"):
        Settings(discord_shard_count=2, discord_shard_ids="0,2", _env_file=None)
    settings = Settings(discord_shard_count=4, discord_shard_ids=" 3,1", _env_file=None)
    assert settings.discord_shards() == (1, 3)
    assert Settings(discord_shard_count=2, _env_file=None).discord_shards() == (0, 1)


# ------------------------------------------------------- demos, end to end


async def test_demo_checkpoint_and_estimate_on_the_local_back_end(world: World, tmp_path: Path) -> None:
    running = await world.start(demos=tmp_path / "charts")
    fake = world.fake
    small = [
        {"name": "layers", "type": 4, "value": 2},
        {"name": "tokens", "type": 4, "value": 64},
        {"name": "width", "type": 4, "value": 16},
        {"name": "repeat", "type": 4, "value": 1},
        {"name": "strategies", "type": 3, "value": "none,block"},
    ]
    checkpoint = [{"name": "checkpoint", "type": 1, "options": small}]
    try:
        interaction = await fake.slash("demo", ALICE, world.guild, world.channel, checkpoint)
        queued = await fake.answered(interaction)
        assert [r["type"] for r in interaction.responses] == [4]
        assert not queued["flags"] & EPHEMERAL and "(checkpoint) for alice" in queued["content"]

        [result] = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if m["_files"]], timeout=120)
        name, size, head = result["_files"][0].split(":")
        assert head == "89504e470d0a1a0a" and int(size) > 1000  # a PNG chart, attached
        assert result["embeds"][0]["image"]["url"] == f"attachment://{name}"
        table = result["embeds"][0]["description"]
        assert "none" in table and "block" in table
        shown = fake.messages[queued["id"]]  # the queued message, edited as strategies finished
        assert shown["_edits"] and "2 of 2 measured" in shown["content"]
        assert any("1 of 2 measured" in (edit.get("content") or "") for edit in shown["_edits"])

        refused = await fake.answered(await fake.slash("demo", ALICE, world.guild, world.channel, checkpoint))
        assert refused["flags"] & EPHEMERAL and "one per member every" in refused["content"]

        estimate = [
            {
                "name": "estimate",
                "type": 1,
                "options": [
                    {"name": "preset", "type": 3, "value": "gpt2-small"},
                    {"name": "batch", "type": 4, "value": 1},
                    {"name": "seq", "type": 4, "value": 128},
                ],
            }
        ]
        asked = await fake.answered(await fake.slash("demo", BOB, world.guild, world.channel, estimate))
        assert not asked["flags"] & EPHEMERAL and "(estimate) for bob" in asked["content"]
        posts = await fake.wait_for(lambda: fake.posts(world.channel)[1:], timeout=120)
        assert "gpt2-small" in text_of(posts[0]) and not posts[0]["_files"]
        assert len([m for m in fake.posts(world.channel) if m["_files"]]) == 1
    finally:
        await running.stop()
    assert fake.violations == []
    assert all(len(i.responses) == 1 for i in fake.interactions.values())


# ---------------------------------------------------------- autocomplete


async def test_autocomplete_topics_presets_and_time_zones(world: World) -> None:
    running = await world.start()
    fake = world.fake

    async def choices(name: str, options: list[dict[str, Any]], admin: bool = False) -> list[str]:
        interaction = await fake.autocomplete(
            name, ADMIN if admin else ALICE, world.guild, world.channel, options, admin
        )
        answer = await fake.answered(interaction)
        assert [r["type"] for r in interaction.responses] == [8]
        return [c["value"] for c in answer["choices"]]

    def typed(option: str, value: str) -> dict[str, Any]:
        return {"name": option, "type": 3, "value": value, "focused": True}

    try:
        assert await choices("quiz", [typed("topic", "mem")]) == ["memory-anatomy"]
        every = await choices("quiz", [typed("topic", "")])
        assert 1 < len(every) <= 25 and "fundamentals" in every
        presets = [{"name": "estimate", "type": 1, "options": [typed("preset", "gpt2")]}]
        assert await choices("demo", presets) == ["gpt2-small", "gpt2-medium", "gpt2-large", "hf-gpt2"]
        zone = [{"name": "setting", "type": 3, "value": "timezone"}, typed("value", "europe/be")]
        found = await choices("config", zone, admin=True)
        assert "Europe/Berlin" in found and all(z.lower().startswith("europe/be") for z in found)
        many = await choices("config", [{"name": "setting", "type": 3, "value": "timezone"}, typed("value", "")])
        assert len(many) == 25
    finally:
        await running.stop()
    assert fake.violations == []


# --------------------------------------------------------------- bad input


async def test_tampered_button_and_unknown_round_get_one_private_sentence(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]
        bad = [
            f"sb1:a:{round_id}:x",  # tampered: not a choice number
            f"sb1:a:0{round_id}:0",  # tampered: a leading zero
            f"sb1:a:{round_id}:0:extra",
            codec.encode_answer(round_id + 1000, 0),  # a round that does not exist
        ]
        if len(ids) < 5:
            bad.append(codec.encode_answer(round_id, len(ids)))  # a choice the round does not have
        forged = fake.bot_message(world.channel, bad)
        said = {}
        for custom_id in bad:
            interaction = await fake.click(forged["id"], custom_id, ALICE)
            answer = await fake.answered(interaction)
            assert [r["type"] for r in interaction.responses] == [4]
            assert answer["flags"] & EPHEMERAL and not answer["embeds"] and not answer["components"]
            said[custom_id] = answer["content"]
        missing = wording.NOT_THIS_COMMUNITYS_QUESTION  # a tampered id is no number a member knows
        expected = {custom_id: wording.STALE_BUTTON for custom_id in bad[:3]} | {bad[3]: missing}
        if len(bad) > 4:
            expected[bad[4]] = "Choose one of " + ", ".join("ABCDE"[: len(ids)]) + "."
        assert said == expected
        with running.engine.store.read() as tx:
            assert sum(tx.answers.choice_counts(round_id).values()) == 0  # nothing scored
        score = await world.slash("score", ALICE)
        assert "0 all time" in text_of(score)
        # the real button still scores once afterwards
        first = await fake.answered(await fake.click(post["id"], ids[0], ALICE))
        assert first["embeds"][0]["title"].startswith(("Correct!", "Not quite"))
        with running.engine.store.read() as tx:
            assert sum(tx.answers.choice_counts(round_id).values()) == 1
    finally:
        await running.stop()
    assert fake.violations == []


async def test_a_click_or_select_the_bot_cannot_read_gets_the_stale_sentence(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """An older release's button, a hand-made id, another app's id, a select: each answered at
    once (an initial response, within Discord's 3 s) with one private sentence, logged at debug."""
    caplog.set_level(logging.DEBUG, logger=replies_module.__name__)
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        round_id = codec.decode_answer(buttons(post)[0]["custom_id"])[0]  # type: ignore[index]
        clicks = ["abc", "sb1:zz:1", f"sb1:a:{round_id}", "sb1:sq:x:approve", "sb1:sq:7:promote"]
        selects = (codec.encode_answer(round_id, 0), "menu")
        old = fake.bot_message(world.channel, clicks, selects=selects)
        used = [await fake.click(old["id"], custom_id, ALICE) for custom_id in clicks]
        used += [await fake.choose(old["id"], custom_id, ["1"], ALICE) for custom_id in selects]
        for interaction in used:
            answer = await fake.answered(interaction)
            assert [r["type"] for r in interaction.responses] == [4]
            assert answer["flags"] & EPHEMERAL and not answer["embeds"] and not answer["components"]
            assert answer["content"] == wording.STALE_BUTTON
        await asyncio.wait_for(running.bot.study.settled(), 10)
        logged = [r for r in caplog.records if "is not one this bot can read" in r.getMessage()]
        assert [r.levelno for r in logged] == [logging.DEBUG] * len(used)
        assert sorted(str(r.args[1]) for r in logged) == sorted(i.payload["data"]["custom_id"] for i in used)  # type: ignore[index]
        assert answers_in(running, round_id) == 0
        # the round's own buttons still work
        first = await fake.answered(await fake.click(post["id"], buttons(post)[0]["custom_id"], ALICE))
        assert first["embeds"][0]["title"].startswith(("Correct!", "Not quite"))
        assert answers_in(running, round_id) == 1
    finally:
        await running.stop()
    assert fake.violations == []


async def test_a_command_or_click_failing_in_the_adapter_gets_one_sentence_with_its_incident(
    world: World, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure between the engine's answer and Discord (here: the card cannot be drawn) is
    answered at once by the one guard, privately, in one sentence naming the incident the log
    keeps the traceback under: never "This interaction failed". What the engine did stands."""
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]

        def undrawable(_card: object) -> None:
            raise RuntimeError("this card cannot be drawn")

        monkeypatch.setattr(render, "render", undrawable)
        score = await fake.slash("score", ALICE, world.guild, world.channel)
        score_answer = await fake.answered(score)  # one after the other: the log's incidents in this order
        click = await fake.click(post["id"], ids[0], ALICE)
        used, said = [score, click], [score_answer, await fake.answered(click)]
        monkeypatch.undo()
        incidents = [
            re.search(r"incident ([0-9a-f]{8})", r.getMessage()) for r in caplog.records if r.exc_info is not None
        ]
        found = [m.group(1) for m in incidents if m is not None]
        assert len(found) == 2
        for interaction, answer, incident in zip(used, said, found, strict=True):
            assert [r["type"] for r in interaction.responses] == [4]
            assert answer["flags"] & EPHEMERAL and not answer["embeds"] and not answer["components"]
            assert answer["content"] == wording.BUG.format(incident=incident)
        assert answers_in(running, round_id) == 1  # the click's answer was scored before the drawing failed
        again = await fake.answered(await fake.click(post["id"], ids[1], ALICE))
        assert "already answered" in again["content"]
    finally:
        await running.stop()
    assert fake.violations == []


def answers_in(running: Running, round_id: int) -> int:
    with running.engine.store.read() as tx:
        return sum(tx.answers.choice_counts(round_id).values())


CALLBACK = r"/interactions/\d+/[^/]+/callback"


async def test_interactions_from_a_guild_never_seen_are_answered(world: World) -> None:
    """A guild whose GUILD_CREATE never came (joined while down, a lost event): an interaction
    from it means the bot is there, so it is answered as anywhere; its community is made on
    first use, and its round's buttons score once."""
    running = await world.start()
    fake = world.fake
    try:
        new = fake.add_guild("Never seen")  # after READY: no GUILD_CREATE reaches the bot
        gid, cid = new["id"], new["channels"][0]
        assert running.bot.get_guild(int(gid)) is None

        async def slash(name: str, who: dict[str, Any], admin: bool = False, **options: Any) -> dict[str, Any]:
            typed = [{"name": k, "type": option_type(v), "value": v} for k, v in options.items()]
            return await fake.answered(await fake.slash(name, who, gid, cid, typed, admin=admin))

        score = await slash("score", ALICE)
        assert score["flags"] & EPHEMERAL and "0 all time" in text_of(score)
        assert "Manage Server" in (await slash("config", BOB, setting="channel"))["content"]
        await slash("config", ADMIN, admin=True, setting="channel")
        assert "is open" in text_of(await slash("config", ADMIN, admin=True, setting="post-now"))
        post = await fake.wait_for(lambda: next(iter(fake.posts(cid)), None))
        assert post["guild_id"] == gid
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]
        first = await fake.answered(await fake.click(post["id"], ids[0], ALICE))
        assert first["flags"] & EPHEMERAL and first["embeds"][0]["title"].startswith(("Correct!", "Not quite"))
        again = await fake.answered(await fake.click(post["id"], ids[1], ALICE))
        assert "already answered" in again["content"]
        assert answers_in(running, round_id) == 1
        assert CommunityRef("discord", gid) in {ref for ref, _ in running.engine.admin.communities()}
    finally:
        await running.stop()
    assert fake.violations == []
    assert all(len(i.responses) == 1 for i in fake.interactions.values())


async def test_missing_permissions_while_a_member_waits(
    world: World, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discord answers 403 Missing Permissions (50013): the answer stands once, the member is told
    privately where an interaction is open, a log line says what failed."""
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]

        # a click whose answer Discord refuses: told privately, scored once
        fake.refuse("POST", CALLBACK)
        click = await fake.click(post["id"], ids[0], ALICE)
        told = await fake.answered(click)
        assert told["content"] == ANSWER_FORBIDDEN and told["flags"] & EPHEMERAL
        assert [c.status for c in fake.requests("POST", rf"/interactions/{click.id}/[^/]+/callback")] == [403, 200]
        again = await fake.answered(await fake.click(post["id"], ids[1], ALICE))
        assert "already answered" in again["content"]
        assert answers_in(running, round_id) == 1

        # deferred (a slow call), then the edit refused: a private follow-up
        monkeypatch.setattr(replies_module, "ACK_WITHIN_S", 0.0)
        fake.refuse("PATCH", rf"/webhooks/{fake.app_id}/[^/]+/messages/@original")
        slow = await fake.click(post["id"], ids[0], BOB)
        [followup] = await fake.wait_for(lambda: slow.followups)
        assert followup["content"] == ANSWER_FORBIDDEN and followup["flags"] & EPHEMERAL
        assert [r["type"] for r in slow.responses] == [5]
        monkeypatch.setattr(replies_module, "ACK_WITHIN_S", 2.0)
        assert answers_in(running, round_id) == 2

        # a text reply: direct messages closed and the channel forbidden; nobody waits on an
        # interaction, so the log says it, and the answer counts once
        fake.closed_dms.add(CAROL["id"])
        fake.forbidden_channels.add(world.channel)
        letter = "abcde"[right_choice(running.engine, round_id)]
        for _ in range(2):
            await fake.say(world.guild, world.channel, CAROL, f"<@{fake.app_id}> {letter}", reply_to=post["id"])
        refused = await fake.wait_for(
            lambda: (r := fake.requests("POST", rf"/channels/{world.channel}/messages")[1:]) and len(r) == 2 and r
        )
        assert {c.status for c in refused} == {403}
        assert answers_in(running, round_id) == 3
        assert any("answering message" in r.getMessage() and "50013" in r.getMessage() for r in caplog.records)
        late = await fake.answered(await fake.click(post["id"], ids[0], CAROL))
        assert "already answered" in late["content"]
        assert answers_in(running, round_id) == 3

        # /demo: the queued message may not be posted; the member is told, the job stays queued
        fake.forbidden_channels.discard(world.channel)
        checkpoint = [{"name": "checkpoint", "type": 1, "options": [{"name": "layers", "type": 4, "value": 2}]}]
        fake.refuse("POST", CALLBACK)
        demo = await fake.slash("demo", ALICE, world.guild, world.channel, checkpoint)
        shown = await fake.answered(demo)
        assert shown["content"] == ANSWER_FORBIDDEN and shown["flags"] & EPHEMERAL
        assert not fake.requests("GET", rf"/webhooks/{fake.app_id}/{demo.token}/messages/@original")
        refused_demo = await fake.answered(await fake.slash("demo", ALICE, world.guild, world.channel, checkpoint))
        assert "one per member every" in refused_demo["content"]  # the first one was queued
        assert any("answering interaction" in r.getMessage() and "50013" in r.getMessage() for r in caplog.records)
    finally:
        await running.stop()
    assert fake.violations == []


async def test_deleted_channel_for_an_interaction_follow_up(
    world: World, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The channel goes while the answer is computed: the deferred answer's edit gets 404 Unknown
    Channel (10003); nobody is left to tell, the log says it, the answer counts once."""
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]
        monkeypatch.setattr(replies_module, "ACK_WITHIN_S", 0.0)
        fake.unknown_channels.add(world.channel)
        click = await fake.click(post["id"], ids[0], ALICE)
        edit = rf"/webhooks/{fake.app_id}/{click.token}/messages/@original"
        [refused] = await fake.wait_for(lambda: fake.requests("PATCH", edit))
        assert refused.status == 404
        await fake.wait_for(
            lambda: any("answering interaction" in r.getMessage() and "10003" in r.getMessage() for r in caplog.records)
        )
        await asyncio.wait_for(running.bot.study.settled(), 10)  # the click's handler has returned
        assert [r["type"] for r in click.responses] == [5] and not click.followups
        assert not fake.requests("POST", rf"/webhooks/{fake.app_id}/{click.token}")
        assert [c.status for c in fake.requests("PATCH", edit)] == [404]
        assert answers_in(running, round_id) == 1

        monkeypatch.setattr(replies_module, "ACK_WITHIN_S", 2.0)
        again = await fake.answered(await fake.click(post["id"], ids[1], ALICE))  # the bot is still up
        assert "already answered" in again["content"]
        assert answers_in(running, round_id) == 1
    finally:
        await running.stop()
    assert fake.violations == []


async def test_server_error_on_posting_is_retried_by_the_outbox(world: World) -> None:
    running = await world.start(delivery=DeliveryPolicy(base_delay_s=30.0))
    fake = world.fake
    path = rf"/channels/{world.channel}/messages"

    def waiting() -> list[Any]:
        with running.engine.store.read() as tx:
            return [r for r in tx.outbox.undelivered(None) if r.state == "pending" and r.attempts == 1]

    try:
        fake.failures.append(("POST", re.compile(path), 503))  # discord.py does not retry a 503 itself
        await world.slash("config", ADMIN, admin=True, setting="channel")
        await world.slash("config", ADMIN, admin=True, setting="post-now")
        [row] = await fake.wait_for(waiting)
        assert "503" in (row.last_error or "")
        assert await running.runtime.deliver_now("discord") == 0  # not due before its backoff
        assert [c.status for c in fake.requests("POST", path)] == [503]
        world.clock.advance(seconds=31)
        running.runtime.wake()
        await fake.wait_for(lambda: fake.posts(world.channel))
        assert [c.status for c in fake.requests("POST", path)] == [503, 200]
        await running.runtime.deliver_now("discord")
        assert len(fake.posts(world.channel)) == 1
        with running.engine.store.read() as tx:
            assert tx.outbox.undelivered(None) == []

        other = rf"/channels/{world.other_channel}/messages"
        fake.failures.append(("POST", re.compile(other), 500))  # discord.py retries a 500 after a second
        await world.slash("config", ADMIN, admin=True, setting="channel", value=f"<#{world.other_channel}>")
        world.clock.advance(hours=24)  # one daily round a community a day: the next day's, in the new channel
        opened = await world.slash("config", ADMIN, admin=True, setting="post-now")
        assert "is open" in text_of(opened)
        await fake.wait_for(lambda: fake.posts(world.other_channel), timeout=15)
        await running.runtime.deliver_now("discord")
        assert [c.status for c in fake.requests("POST", other)] == [500, 200]
        assert len(fake.posts(world.other_channel)) == 1
    finally:
        await running.stop()
    assert fake.violations == []


# ------------------------------------------------------ members' questions


SECOND_PROMPT = "In a study group's notebook, which call wraps one block so its activations are recomputed in backward?"
SECOND_CHOICES = (
    "torch.utils.checkpoint.checkpoint on the block",
    "torch.no_grad around the whole forward pass here",
    "torch.cuda.empty_cache after every block",
)
SECOND_WHYS = (
    "checkpoint runs the block without keeping its activations and runs it again during backward.",
    "no_grad keeps no graph at all, so nothing can be trained through the block afterwards.",
    "empty_cache only returns cached memory to the driver; the activations are still kept.",
)


def first_part(**changes: str) -> dict[str, str]:
    return {
        "topic": "fundamentals",
        "level": "1",
        "prompt": PROMPT,
        "choices": "\n".join(CHOICES),
        "correct": "A",
    } | changes


def second_part(**changes: str) -> dict[str, str]:
    return {"whys": "\n".join(WHYS), "trap": TRAP, "refs": REF} | changes


def dms_to(fake: FakeDiscord, who: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        m for m in fake.messages.values() if m.get("_via") == "dm" and fake.dm_channels[m["channel_id"]] == who["id"]
    ]


async def suggest_first(world: World, who: dict[str, Any], values: dict[str, str]) -> dict[str, Any]:
    """/suggest and its first form, submitted: the private answer."""
    fake = world.fake
    opened = await fake.slash("suggest", who, world.guild, world.channel)
    return await fake.answered(await fake.submit(opened, values))


async def test_suggest_through_both_forms_to_the_daily_round(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        opened = await fake.slash("suggest", ALICE, world.guild, world.channel)
        form = await fake.opened_form(opened)
        assert [r["type"] for r in opened.responses] == [9]
        assert [row["components"][0]["custom_id"] for row in form["components"]] == list(render.FIRST_FIELDS)
        kept = await fake.answered(await fake.submit(opened, first_part()))
        assert kept["flags"] & EPHEMERAL and "First part kept" in kept["content"] and CHOICES[1] in kept["content"]
        [button] = buttons(kept)
        draft = decode_draft(button["custom_id"])
        assert draft is not None and button["label"] == wording.SUGGEST_CONTINUE

        click = await fake.click(kept["id"], button["custom_id"], ALICE)
        second = await fake.opened_form(click)
        assert second["custom_id"] == button["custom_id"] and len(second["components"]) == 5
        optional = {
            r["components"][0]["custom_id"]: r["components"][0].get("required", True) for r in second["components"]
        }
        assert optional == {"whys": True, "trap": True, "explain": False, "hint": False, "refs": True}
        thanks = await fake.answered(await fake.submit(click, second_part()))
        assert thanks["flags"] & EPHEMERAL and "question #1 is waiting" in thanks["content"]  # the guild's first

        queue = await world.slash("config", ADMIN, admin=True, setting="suggestions")
        assert queue["flags"] & EPHEMERAL and "waiting: 1" in queue["content"]
        assert PROMPT[:60] in text_of(queue) and "by alice" in text_of(queue)
        ids = [b["custom_id"] for b in buttons(queue)]
        assert ids == [f"sb1:sq:{draft}:approve", f"sb1:sq:{draft}:note", f"sb1:sq:{draft}:reject"]

        refused = await fake.answered(await fake.click(queue["id"], ids[0], BOB))  # a member: refused
        assert refused["flags"] & EPHEMERAL and "Manage Server" in refused["content"]
        assert dms_to(fake, ALICE) == []
        approved = await fake.answered(await fake.click(queue["id"], ids[0], ADMIN, admin=True))
        assert approved["flags"] & EPHEMERAL and f"#{draft} approved" in approved["content"]
        [told] = await fake.wait_for(lambda: dms_to(fake, ALICE))
        assert "was approved" in told["content"]
        again = await fake.answered(await fake.click(queue["id"], ids[2], ADMIN, admin=True))
        assert "already decided" in again["content"]

        post = await open_round(world, running)  # the guild's daily round asks it first
        assert PROMPT in post["embeds"][0]["description"]
        lines = post["embeds"][0]["description"].splitlines()
        right = next(i for i, b in enumerate(buttons(post)) if f"{b['label']}) {CHOICES[0]}" in lines)
        answer = await fake.answered(await fake.click(post["id"], buttons(post)[right]["custom_id"], BOB))
        assert answer["embeds"][0]["title"].startswith("Correct!")
        round_id = codec.decode_answer(buttons(post)[0]["custom_id"])[0]  # type: ignore[index]
        await running.runtime.call(running.engine.rounds.close_round, round_id)
        running.runtime.wake()
        reveal = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if m["id"] != post["id"]])
        assert "Question written by alice" in text_of(reveal[0])
    finally:
        await running.stop()
    assert fake.violations == []
    assert all(len(i.responses) == 1 for i in fake.interactions.values())


async def test_suggest_refusals_name_the_field_privately(world: World) -> None:
    running = await world.start()
    fake = world.fake
    try:
        topic = await suggest_first(world, ALICE, first_part(topic="astrology"))
        assert topic["flags"] & EPHEMERAL and [b["label"] for b in buttons(topic)] == [wording.SUGGEST_RETRY]
        assert "was not sent" in topic["content"] and "topic: 'astrology' is not a topic" in topic["content"]
        right = await suggest_first(world, ALICE, first_part(correct="E"))
        assert right["flags"] & EPHEMERAL and "right choice:" in right["content"]

        kept = await suggest_first(world, ALICE, first_part())
        [button] = buttons(kept)
        click = await fake.click(kept["id"], button["custom_id"], ALICE)
        hint = "Think about what the backward pass needs from the forward."
        typed = second_part(whys="\n".join(WHYS[:2]), hint=hint, explain="Recomputation reruns the same forward.")
        short = await fake.answered(await fake.submit(click, typed))
        assert short["flags"] & EPHEMERAL and "why of choice C:" in short["content"]
        [retry] = buttons(short)  # the refusal carries the button that opens the second form again
        assert retry["custom_id"] == button["custom_id"]
        again = await fake.click(short["id"], retry["custom_id"], ALICE)
        reopened = await fake.opened_form(again)  # filled in with what was typed, the hint included
        shown = {r["components"][0]["custom_id"]: r["components"][0].get("value") for r in reopened["components"]}
        assert shown["hint"] == hint and shown["trap"] == TRAP and shown["explain"] == typed["explain"]
        thanks = await fake.answered(await fake.submit(again, second_part(hint=hint)))
        assert "is waiting for the admins" in thanks["content"]

        forged = fake.bot_message(world.channel, ["sb1:sg:x"])  # a tampered continue button
        expired = await fake.answered(await fake.click(forged["id"], "sb1:sg:x", ALICE))
        assert expired["content"] == wording.STALE_BUTTON and expired["flags"] & EPHEMERAL
    finally:
        await running.stop()
    assert fake.violations == []


async def test_a_prompt_refused_at_the_second_form_reopens_the_first_form_and_keeps_the_second(
    world: World,
) -> None:
    """The same prompt reaches the bank between Alice's two forms: the second form is refused on
    the prompt (a first-form field), its button opens the FIRST form filled in with what she
    typed, and after she fixes the prompt her second form opens again with the whys, trap and
    hint she had typed there."""
    running = await world.start()
    fake = world.fake
    try:
        kept = await suggest_first(world, ALICE, first_part())
        [button] = buttons(kept)
        click = await fake.click(kept["id"], button["custom_id"], ALICE)
        # meanwhile Bob's question with the same prompt is sent and approved
        bob = running.engine.practice.suggest(
            UserRef("discord", world.guild, BOB["id"], "bob"),
            ChannelRef("discord", world.guild, world.channel),
            good_form(  # the same prompt, in Bob's own words otherwise
                whys=(
                    "Bob's why: the rerun computes the same values, so the learned weights do not move at all.",
                    "Bob's why: nothing about the weights is approximated when a layer is run a second time.",
                    "Bob's why: every layer still runs in the forward pass; only its saved outputs are dropped.",
                ),
                trap="Bob's trap: reading a memory technique as a change to the model's mathematics.",
            ),
        )
        assert isinstance(bob, SuggestionReceived)
        running.engine.practice.decide_suggestion(CommunityRef("discord", world.guild), bob.suggestion_id, "approve")
        hint = "Think about what the backward pass needs from the forward."
        refused = await fake.answered(await fake.submit(click, second_part(hint=hint)))
        assert refused["flags"] & EPHEMERAL and "prompt" in refused["content"].lower()
        [retry] = buttons(refused)
        assert retry["custom_id"].startswith("sb1:sf:")  # the first form's button, not the second's
        again = await fake.click(refused["id"], retry["custom_id"], ALICE)
        first = await fake.opened_form(again)
        shown = {r["components"][0]["custom_id"]: r["components"][0].get("value") for r in first["components"]}
        assert shown["prompt"] == PROMPT and shown["choices"] == "\n".join(CHOICES)
        fixed = first_part(
            prompt="During backward, what must a checkpointed block do before its weights get gradients?",
            choices="Recompute what it dropped\nRead its activations from disk\nSkip its weights this step",
        )
        kept_again = await fake.answered(await fake.submit(again, fixed))
        [resume] = buttons(kept_again)  # the first part is kept; the second form opens filled in
        reopen = await fake.click(kept_again["id"], resume["custom_id"], ALICE)
        second = await fake.opened_form(reopen)
        typed = {r["components"][0]["custom_id"]: r["components"][0].get("value") for r in second["components"]}
        assert typed["whys"] == "\n".join(WHYS) and typed["trap"] == TRAP and typed["hint"] == hint
        thanks = await fake.answered(await fake.submit(reopen, second_part(hint=hint)))
        assert "is waiting for the admins" in thanks["content"], thanks["content"]
        queue = running.engine.practice.suggestion_queue(CommunityRef("discord", world.guild))
        assert [item.prompt for item in queue.items] == [fixed["prompt"]]
    finally:
        await running.stop()
    assert fake.violations == []


async def test_queue_note_and_reject_by_buttons_tell_the_author(world: World) -> None:
    running = await world.start()
    fake = world.fake
    engine = running.engine
    where = ChannelRef("discord", world.guild, world.channel)
    alice = UserRef("discord", world.guild, ALICE["id"], "alice")
    try:
        first = await running.runtime.call(
            engine.practice.suggest,
            alice,
            where,
            SuggestionForm("fundamentals", "1", PROMPT, CHOICES, WHYS, "A", TRAP, refs=(REF,)),
        )
        second = await running.runtime.call(
            engine.practice.suggest,
            alice,
            where,
            SuggestionForm("fundamentals", "2", SECOND_PROMPT, SECOND_CHOICES, SECOND_WHYS, "A", TRAP, refs=(REF,)),
        )
        assert isinstance(first, SuggestionReceived) and isinstance(second, SuggestionReceived), (first, second)

        interaction = await fake.slash(
            "config", ADMIN, world.guild, world.channel, [{"name": "setting", "type": 3, "value": "suggestions"}], True
        )
        queue = await fake.answered(interaction)
        assert "waiting: 2" in queue["content"]
        [more] = await fake.wait_for(lambda: interaction.followups)  # each further suggestion: its own message
        assert more["flags"] & EPHEMERAL and SECOND_PROMPT[:50] in text_of(more)
        note_id = f"sb1:sq:{first.suggestion_id}:note"

        member = await fake.click(queue["id"], note_id, BOB)  # a member: no form
        assert "Manage Server" in (await fake.answered(member))["content"] and member.modal is None
        opened = await fake.click(queue["id"], note_id, ADMIN, admin=True)
        form = await fake.opened_form(opened)
        assert form["custom_id"] == note_id and len(form["components"]) == 1
        taken = await fake.answered(await fake.submit(opened, {"note": "Shorten it"}, who=BOB))  # not an admin
        assert "Manage Server" in taken["content"]
        sent = await fake.answered(await fake.submit(opened, {"note": "Name the layer it recomputes."}, admin=True))
        assert f"#{first.suggestion_id} sent back" in sent["content"]
        [told] = await fake.wait_for(lambda: dms_to(fake, ALICE))
        assert "sent back by the admins: Name the layer it recomputes." in told["content"]

        fake.closed_dms.add(ALICE["id"])
        reject = f"sb1:sq:{second.suggestion_id}:reject"
        click = await fake.click(more["id"], reject, ADMIN, admin=True)
        rejected = await fake.answered(click)
        assert f"#{second.suggestion_id} rejected" in rejected["content"]
        # her messages are closed (50007): the outbox gives the decision's message up where admins see it
        community = CommunityRef("discord", world.guild)
        [alert] = await fake.wait_for(lambda: running.engine.outbox.undelivered(community))
        assert f"decision on suggestion #{second.suggestion_id}" in alert and "Cannot send messages" in alert
        empty = await world.slash("config", ADMIN, admin=True, setting="suggestions")
        assert empty["content"] == "No suggested questions are waiting." and not buttons(empty)
    finally:
        await running.stop()
    assert fake.violations == []


async def test_a_debug_run_never_writes_an_interaction_token_or_a_signed_link(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    """discord.py at DEBUG logs each request's URL and body (an interaction's callback URL holds
    its token, a /score reply a signed link) and each gateway event (the interaction's token):
    with the process at DEBUG, none of them reaches the log."""
    from tests.test_command_parity import SignedLinks

    caplog.set_level(logging.DEBUG)  # the whole process at DEBUG, as STUDYBOT_LOG_LEVEL=DEBUG sets it
    running = await world.start()
    running.engine.links = SignedLinks()
    try:
        quiz = await world.slash("quiz", ALICE)
        await world.fake.answered(await world.fake.click(quiz["id"], buttons(quiz)[0]["custom_id"], ALICE))
        score = await world.slash("score", ALICE)
        assert f"/s/member-{ALICE['id']}/me" in text_of(score)  # the link was sent
    finally:
        await running.stop()
    tokens = [i.token for i in world.fake.interactions.values()]
    assert len(tokens) >= 3
    # the fake Discord's own server logs its requests through aiohttp.access: Discord's side, not ours
    ours = [r for r in caplog.records if not r.name.startswith(("tests.", "aiohttp.access"))]
    assert any(r.name.startswith("discord") for r in ours)  # discord.py did log
    text = "\n".join(r.getMessage() for r in ours)
    assert not [t for t in tokens if t in text] and f"member-{ALICE['id']}" not in text


async def test_a_second_quiz_says_which_unanswered_question_it_replaces(world: World) -> None:
    running = await world.start()
    try:
        first = await world.slash("quiz", ALICE)
        second = await world.slash("quiz", ALICE)
        number = re.search(r"Practice question #(\d+)", text_of(first))
        assert number is not None, text_of(first)
        assert f"This replaces your unanswered question #{number.group(1)}" in text_of(second)
        late = await world.fake.answered(await world.fake.click(first["id"], buttons(first)[0]["custom_id"], ALICE))
        assert "closed" in text_of(late)  # the replaced one takes no answer now
    finally:
        await running.stop()


def test_holding_the_libraries_logs_keeps_a_quiet_process_quiet() -> None:
    """The hold never makes a library louder than the process: at WARNING (the console's quiet
    default) discord.py's INFO lines stay out; at DEBUG they are held at INFO."""
    from bot.platforms.discord.logs import keep_secrets_out

    root = logging.getLogger()
    before = root.level
    try:
        root.setLevel(logging.WARNING)
        keep_secrets_out()
        assert not logging.getLogger("discord.client").isEnabledFor(logging.INFO)
        root.setLevel(logging.DEBUG)
        keep_secrets_out()
        assert logging.getLogger("discord.http").isEnabledFor(logging.INFO)
        assert not logging.getLogger("discord.http").isEnabledFor(logging.DEBUG)
    finally:
        root.setLevel(before)
