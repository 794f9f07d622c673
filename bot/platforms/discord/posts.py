"""Posts the engine decided (daily rounds, reveals, leaderboards, demo results, a decision told
to a question's author), as the outbox delivers them: `send` returns the message id as the
post's reference, and turns discord.py's errors into the outbox's (bot.platforms.discord.errors).
The reveal also edits its question (buttons disabled, counts) through `RevealCard.question_ref`."""

from __future__ import annotations

import asyncio
import logging

import discord

from bot.core.errors import SendFailed
from bot.core.rules.numbers import ascii_int
from bot.core.values import ChannelRef, LeaderboardCard, Posted, QuestionCard, RevealCard, SuggestionDecided
from bot.platforms.discord import render as layout
from bot.platforms.discord.errors import send_failure

log = logging.getLogger(__name__)

READY_WAIT_S = 30.0


def snowflake(text: str) -> int | None:
    """A Discord id as the bot stores it (ASCII digits, at most 20), else None: `str.isdigit`
    is true for other scripts' digits, which `int` would read as another channel's id."""
    return ascii_int(text, 20)


class Posts:
    """The adapter's side of the outbox: one card posted (or a message edited) per call."""

    def __init__(self, bot: discord.Client, ready: asyncio.Event) -> None:
        self.bot = bot
        self.ready = ready

    async def wait_ready(self) -> None:
        try:
            await asyncio.wait_for(self.ready.wait(), READY_WAIT_S)
        except TimeoutError:
            raise SendFailed("not connected to Discord yet") from None

    async def send(self, channel: ChannelRef, card: Posted) -> str:
        """Post a card the engine queued; the message id is its reference."""
        await self.wait_ready()
        if snowflake(channel.channel_id) is None:
            raise SendFailed(f"'{channel.channel_id[:40]}' is not a Discord channel id", permanent=True)
        if isinstance(card, SuggestionDecided):  # to its author: channel_id is their user id
            return await self.tell_author(int(channel.channel_id), card)
        target = self.bot.get_partial_messageable(int(channel.channel_id), guild_id=int(channel.community_id))
        if isinstance(card, QuestionCard):
            reply = layout.daily_post(card)
        elif isinstance(card, LeaderboardCard):
            reply = layout.leaderboard(card, public=True)
        else:
            reply = layout.render(card)
        try:
            message = await target.send(**reply.kwargs())
        except Exception as exc:
            raise send_failure(exc) from exc
        if isinstance(card, RevealCard) and snowflake(card.question_ref or "") is not None:
            await self.edit_question(target, card)
        return str(message.id)

    async def tell_author(self, user_id: int, card: SuggestionDecided) -> str:
        """The decision on a member's question, by direct message; closed messages (50007) are
        permanent: given up where admins see it (/config)."""
        try:
            dm = await self.bot.create_dm(discord.Object(id=user_id))
            message = await dm.send(**layout.author_notice(card).kwargs())
        except Exception as exc:
            raise send_failure(exc) from exc
        return str(message.id)

    async def edit_question(self, target: discord.PartialMessageable, card: RevealCard) -> None:
        try:
            await target.get_partial_message(int(card.question_ref or 0)).edit(
                **layout.revealed_question(card).kwargs()
            )
        except discord.HTTPException:  # the reveal is posted; the old buttons answer "closed"
            log.warning("editing the question of round %s failed", card.round_id, exc_info=True)
