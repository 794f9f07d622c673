"""A server's settings and the bot's place in it: /config (Manage Server: declared to Discord by
`default_permissions` and checked again by the guard when it runs) with its autocomplete, and the
bot removed from or invited back to a guild (its community paused or resumed)."""

from __future__ import annotations

import logging
import re
from functools import cache
from typing import Any
from zoneinfo import available_timezones

import discord
from discord import app_commands

from bot.core.bank import TOPICS
from bot.core.engine import StudyEngine
from bot.core.values import CommunityRef, Problem
from bot.platforms.discord.commands import Choice, matching
from bot.platforms.discord.guard import place
from bot.platforms.discord.render import PLATFORM
from bot.platforms.discord.replies import Replies
from bot.platforms.discord.text import COMMANDS, OPTIONS
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

_CHANNEL = re.compile(r"^<#([0-9]+)>$")  # ASCII digits: \d takes any script's
SETTINGS = ("show", "channel", "time", "timezone", "window", "topics", "pause", "resume", "post-now", "web")
# The members' questions: the queue (decided by its buttons), or by number (`value`: N [NOTE]), and
# `remove` with a question id.
QUEUE_WORDS = ("suggestions", "approve", "note", "reject", "remove")


@cache
def zones() -> tuple[str, ...]:
    """Every IANA time zone name, read once."""
    return tuple(sorted(available_timezones()))


async def setting_values(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
    """/config's value, completed for the setting chosen."""
    setting = getattr(interaction.namespace, "setting", None)
    if setting == "timezone":
        return matching(zones(), current)
    if setting == "topics":
        return matching(("all", *TOPICS), current.rsplit(",", 1)[-1])
    if setting == "window":
        return matching(tuple(str(h) for h in (6, 8, 12, 24, 48)), current)
    if setting == "web":
        return matching(("private", "public", "rotate"), current)
    return []


class Admin:
    """/config, and the guild's community paused or resumed as the bot leaves or comes back."""

    def __init__(self, replies: Replies, runtime: Runtime) -> None:
        self.replies = replies
        self.runtime = runtime
        self.engine: StudyEngine = runtime.engine

    def register(self, tree: app_commands.CommandTree[Any]) -> None:
        opt, engine = OPTIONS, self.engine

        @tree.command(name="config", description=COMMANDS["config"])
        @app_commands.guild_only()
        @app_commands.default_permissions(manage_guild=True)
        @app_commands.describe(setting=opt["setting"], value=opt["value"])
        @app_commands.choices(setting=[Choice(name=s, value=s) for s in (*SETTINGS, *QUEUE_WORDS)])
        @app_commands.autocomplete(value=setting_values)
        async def config(
            interaction: discord.Interaction[Any], setting: str = "show", value: str | None = None
        ) -> None:
            here = place(interaction)  # Manage Server, checked by the guard: the answer may carry their link
            if setting == "channel":
                text = (value or "").strip()
                mention = _CHANNEL.match(text)
                value = mention.group(1) if mention else (text or here.channel.channel_id)
            ask = engine.admin.configure
            await self.replies.respond(interaction, ask, here.community, setting, value, here.user, here.user)

    async def guild_changed(self, guild: discord.Guild, removed: bool) -> None:
        """Removed from a guild: its community is paused (nothing deleted); invited back:
        resumed, unless an admin had paused it before the removal."""
        method = self.engine.admin.bot_removed if removed else self.engine.admin.bot_returned
        result = await self.runtime.call(method, CommunityRef(PLATFORM, str(guild.id)))
        if isinstance(result, Problem):
            what = "left" if removed else "joined"
            log.warning("guild %s %s, but recording it failed: %s", guild.id, what, result.text)
