"""A demo's progress edits come from the shard process that holds its server (issue 20): two
Discord shard processes (two Runtimes, two real discord.py clients) on one database; each
runs only its own guilds' demos, so the process connected to the guild edits the queued
message as strategies finish, and a restart of one shard fails only its own running demos."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, text

from bot.background.demo_runner import DemoJobRunner, LocalBackend
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, UserRef
from bot.platforms.discord.app import shard_filter
from tests.fakes.discord_server import guild_id_for_shard
from tests.test_discord import ALICE, World, world  # noqa: F401  (world: the fixture)

SMALL = [
    {"name": "layers", "type": 4, "value": 2},
    {"name": "tokens", "type": 4, "value": 64},
    {"name": "width", "type": 4, "value": 16},
    {"name": "repeat", "type": 4, "value": 1},
    {"name": "strategies", "type": 3, "value": "none,block"},
]


def worker_of(database_url: str, job_id: int) -> str:
    sql = create_engine(database_url)
    with sql.connect() as conn:
        found = conn.execute(text("SELECT worker FROM demo_jobs WHERE id = :id"), {"id": job_id}).scalar_one()
    sql.dispose()
    return str(found)


async def test_the_shard_holding_the_guild_runs_its_demo_and_edits_its_message(
    world: World,  # noqa: F811
    tmp_path: Path,
) -> None:
    fake = world.fake
    one = fake.add_guild("Shard one", guild_id_for_shard(1, 2))
    fake.add_guild("Shard zero", guild_id_for_shard(0, 2))
    shard = {
        n: world.settings.model_copy(update={"discord_shard_count": 2, "discord_shard_ids": str(n)}) for n in (0, 1)
    }
    zero_process = await world.start(shard[0], demos=tmp_path / "zero")
    one_process = None
    try:
        channel = one["channels"][0]
        # a /demo of guild one, queued (as shard 1 queues it) with its announcement message
        member = UserRef("discord", one["id"], ALICE["id"], "alice")
        small = "checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block"
        queued = zero_process.engine.demos.request_demo(member, ChannelRef("discord", one["id"], channel), small)
        announced = fake.bot_message(channel, [])
        zero_process.engine.demos.demo_message(queued.job_id, announced["id"])

        # shard 0 is awake and idle, but guild one is not its own: it leaves the job queued
        runner_zero = zero_process.runtime.demo_runner
        assert runner_zero is not None
        runner_zero.wake()
        assert await runner_zero._claim_and_start(set()) is False
        assert zero_process.engine.demos.demo_jobs()[0].state == "queued"

        one_process = await world.start(shard[1], demos=tmp_path / "one")  # the guild's own shard
        runner_one = one_process.runtime.demo_runner
        assert runner_one is not None
        await fake.wait_for(lambda: zero_process.engine.demos.demo_jobs()[0].state == "done", timeout=120)
        assert worker_of(world.settings.database_url, queued.job_id) == runner_one.name
        shown = fake.messages[announced["id"]]  # edited in place by shard 1 as strategies finished
        assert any("1 of 2 measured" in (edit.get("content") or "") for edit in shown["_edits"])
        [result] = await fake.wait_for(lambda: [m for m in fake.posts(channel) if m["_files"]], timeout=30)
        assert result["guild_id"] == one["id"]
    finally:
        if one_process is not None:
            await one_process.stop()
        await zero_process.stop()
    assert fake.violations == []


async def test_a_shard_restart_fails_only_its_own_running_demos(engine: StudyEngine, tmp_path: Path) -> None:
    zero, one = guild_id_for_shard(0, 2), guild_id_for_shard(1, 2)
    for guild in (zero, one):  # a demo running in each shard's guild
        member = UserRef("discord", guild, "1001", "alice")
        engine.demos.request_demo(member, ChannelRef("discord", guild, "2002"), "checkpoint layers=2")
        assert engine.demos.claim_demo(f"process-of-{guild}", "local") is not None
    accepts = shard_filter(2, (0,))
    runner = DemoJobRunner(
        engine, LocalBackend(), tmp_path, serves=lambda ref: ref.platform == "discord" and accepts(ref.community_id)
    )
    await runner.start()  # shard 0 starting again: its own running demo failed, shard 1's left running
    assert {job.community: job.state for job in engine.demos.demo_jobs()} == {zero: "failed", one: "running"}
