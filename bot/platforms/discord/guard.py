"""The one guard every slash command, button and form of the adapter passes, written once:

- where: `place(interaction)` is the member and the channel, or `Refused(GUILD_ONLY)` outside a
  server; `admin_of(interaction)` is their server when they have Manage Server, else
  `Refused(NEEDS_MANAGE_SERVER)` (a queue's buttons and forms can be used by whoever sees them).
- which commands need what: as each command (or its group) declares it to Discord, by
  `guild_only` and `default_permissions(manage_guild=True)`; `Guard.check` enforces both before
  the command runs (Discord's own check can be changed by a server's admins). A member without
  Manage Server gets the engine's refusal, which also stops an admin link of theirs opening.
- failures: `Guard.failed` answers whatever a command, button or form raised with one private
  sentence (a refusal's own, else wording.BUG with an incident id logged with the traceback).

`StudyTree` is discord.py's command tree with this guard as its check and its error handler;
clicks and forms reach it through `DiscordApp.handle`."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import discord
from discord import app_commands

from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, CommunityRef, UserRef
from bot.platforms.discord.render import PLATFORM
from bot.platforms.discord.replies import Replies
from bot.platforms.discord.text import GUILD_ONLY, NEEDS_MANAGE_SERVER

log = logging.getLogger(__name__)


class Refused(app_commands.CheckFailure):
    """An interaction answered with one private sentence and nothing else."""

    def __init__(self, sentence: str) -> None:
        super().__init__(sentence)
        self.sentence = sentence


@dataclass(frozen=True)
class Place:
    """Who used a command, button or form of a server, and in which channel."""

    user: UserRef
    channel: ChannelRef

    @property
    def community(self) -> CommunityRef:
        return CommunityRef(PLATFORM, self.user.community_id)


def place(interaction: discord.Interaction[Any]) -> Place:
    """The member and the channel of an interaction in a server; Refused anywhere else."""
    if interaction.guild_id is None or interaction.channel_id is None:
        raise Refused(GUILD_ONLY)
    guild = str(interaction.guild_id)
    user = UserRef(PLATFORM, guild, str(interaction.user.id), interaction.user.display_name)
    return Place(user, ChannelRef(PLATFORM, guild, str(interaction.channel_id)))


def admin_of(interaction: discord.Interaction[Any]) -> CommunityRef:
    """The server of a member with Manage Server (checked when used); Refused for anyone else."""
    if interaction.guild_id is None or not interaction.permissions.manage_guild:
        raise Refused(NEEDS_MANAGE_SERVER)
    return CommunityRef(PLATFORM, str(interaction.guild_id))


def declared(command: app_commands.Command[Any, ..., Any] | app_commands.ContextMenu) -> tuple[bool, bool]:
    """(guild only, Manage Server) as a command, or the group it belongs to, declares them."""
    top = command.root_parent if isinstance(command, app_commands.Command) else None
    guild_only = command.guild_only or (top is not None and top.guild_only)
    permissions = (top or command).default_permissions
    return guild_only, permissions is not None and permissions.manage_guild


class Guard:
    """The checks before a slash command and the one answer to anything that fails."""

    def __init__(self, replies: Replies, engine: StudyEngine) -> None:
        self.replies = replies
        self.engine = engine

    async def check(self, interaction: discord.Interaction[Any]) -> bool:
        """Before a slash command runs: a server's command outside one is refused (raised, so
        `failed` answers it); one needing Manage Server, used without it, gets the engine's
        refusal. An autocomplete is never stopped: it cannot be answered with a sentence."""
        command = interaction.command
        if interaction.type is not discord.InteractionType.application_command or command is None:
            return True
        guild_only, needs_admin = declared(command)
        if not guild_only:
            return True
        here = place(interaction)
        if needs_admin and not interaction.permissions.manage_guild:
            refuse = self.engine.admin.config_refused
            await self.replies.respond(interaction, refuse, here.user, NEEDS_MANAGE_SERVER)
            return False
        return True

    async def failed(self, interaction: discord.Interaction[Any], error: BaseException) -> None:
        """Whatever a command, button or form raised, answered with one private sentence."""
        cause = error.original if isinstance(error, app_commands.CommandInvokeError) else error
        if isinstance(cause, Refused):
            await self.replies.refuse(interaction, cause.sentence)
            return
        incident = uuid.uuid4().hex[:8]
        log.error("interaction %s failed (incident %s)", interaction.id, incident, exc_info=cause)
        await self.replies.refuse(interaction, wording.BUG.format(incident=incident))


class StudyTree(app_commands.CommandTree[Any]):
    """discord.py's command tree, guarded: `guard` is set when the adapter is built."""

    guard: Guard

    async def interaction_check(self, interaction: discord.Interaction[Any], /) -> bool:
        return await self.guard.check(interaction)

    async def on_error(self, interaction: discord.Interaction[Any], error: app_commands.AppCommandError, /) -> None:
        await self.guard.failed(interaction, error)
