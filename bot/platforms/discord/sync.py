"""The command tree synced with Discord only when it changed: its hash is kept in the database
for each target (a guild, or global), and a restart with the same commands syncs nothing
(Discord limits how often an application may write its commands)."""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

import discord
from discord.ext import commands

from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)


async def sync_commands(bot: commands.Bot, runtime: Runtime, guild_id: int | None) -> bool:
    """Sync the command tree when it changed since the last sync to the same target (the guild
    `guild_id`, its commands copied there from the global ones, or every guild); True if synced."""
    tree = bot.tree
    guild = discord.Object(id=guild_id) if guild_id else None
    if guild is not None:
        tree.copy_global_to(guild=guild)
    payload: list[dict[str, Any]] = [command.to_dict(tree) for command in tree.get_commands(guild=guild)]
    digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
    key = f"discord:commands:{bot.application_id}:{guild.id if guild else 'global'}"
    if await runtime.bridge.run(runtime.engine.platform_state, key) == digest:
        log.info("Discord: slash commands unchanged, not synced")
        return False
    await tree.sync(guild=guild)
    await runtime.bridge.run(runtime.engine.set_platform_state, key, digest)
    log.info("Discord: synced %s slash commands to %s", len(payload), guild.id if guild else "all guilds")
    return True
