"""A server that removed the bot and invited it back: its rounds resume only when the removal
paused them, never when an admin had paused them before (issue 20)."""

from __future__ import annotations

from bot.core.engine import StudyEngine
from bot.core.values import CommunityRef
from tests.test_discord import ADMIN, World, world  # noqa: F401  (the fixture)


def paused(engine: StudyEngine, community: CommunityRef) -> bool:
    return next(config.paused for ref, config in engine.admin.communities() if ref == community)


def test_removal_pauses_and_the_return_resumes_only_what_it_paused(engine: StudyEngine) -> None:
    running = CommunityRef("discord", "1001")
    engine.admin.configure(running, "channel", "2001")
    engine.admin.bot_removed(running)
    assert paused(engine, running)
    engine.admin.bot_removed(running)  # the same removal seen twice changes nothing
    assert engine.admin.bot_returned(running).changed == "paused"
    assert not paused(engine, running)

    held = CommunityRef("discord", "1002")
    engine.admin.configure(held, "pause")
    engine.admin.bot_removed(held)
    card = engine.admin.bot_returned(held)
    assert paused(engine, held) and card.changed is None
    # once back, a later removal of a community running again is remembered afresh
    engine.admin.configure(held, "resume")
    engine.admin.bot_removed(held)
    engine.admin.bot_returned(held)
    assert not paused(engine, held)

    new = CommunityRef("discord", "1003")  # a first invitation: a community that runs
    engine.admin.bot_returned(new)
    assert not paused(engine, new)


async def invite_back(place: World) -> None:
    """GUILD_CREATE as Discord sends it when the bot joins a server: without `unavailable`
    (the start-up form carries `unavailable: false`, which discord.py reads as available again)."""
    joined = {k: v for k, v in place.fake.guild_create(place.guild).items() if k != "unavailable"}
    await place.fake.dispatch(place.guild, "GUILD_CREATE", joined)


async def test_discord_server_kicks_and_reinvites_the_bot(world: World) -> None:  # noqa: F811
    running = await world.start()
    fake = world.fake
    community = CommunityRef("discord", world.guild)
    try:
        await world.slash("config", ADMIN, admin=True, setting="channel")
        await fake.remove_guild(world.guild)
        await fake.wait_for(lambda: paused(running.engine, community))
        await invite_back(world)
        await fake.wait_for(lambda: not paused(running.engine, community))

        await world.slash("config", ADMIN, admin=True, setting="pause")  # an admin pauses it first
        key = f"removed:discord:{world.guild}"
        await fake.remove_guild(world.guild)
        await fake.wait_for(lambda: running.engine.platform_state(key) == "paused-before")
        await invite_back(world)
        await fake.wait_for(lambda: running.engine.platform_state(key) == "")  # the return is handled
        assert paused(running.engine, community)
    finally:
        await running.stop()
    assert fake.violations == []
