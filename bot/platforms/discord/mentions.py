"""Text answers on Discord: a message that mentions the bot (Discord delivers its content
without the privileged message-content intent) is one engine call, `engine.answers.line`,
answering the round of the question it replies to, if any; the feedback goes by direct message
(no buttons there: they need the server), or as a reply when the member's messages are closed."""

from __future__ import annotations

import logging
import re

import discord

from bot.core.engine import StudyEngine
from bot.core.values import AnswerFeedback, Card, ChannelRef, UserRef
from bot.platforms.discord import render as layout
from bot.platforms.discord.errors import send_failure
from bot.platforms.discord.render import PLATFORM
from bot.platforms.discord.text import FEEDBACK_DMS_CLOSED
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

_MENTION = re.compile(r"<@!?([0-9]+)>")  # ASCII digits: \d takes any script's


class Mentions:
    """The messages mentioning the bot, answered."""

    def __init__(self, runtime: Runtime, bot: discord.Client) -> None:
        self.runtime = runtime
        self.engine: StudyEngine = runtime.engine
        self.bot = bot

    async def on_message(self, message: discord.Message) -> None:
        me = self.bot.user
        if message.author.bot or me is None or message.guild is None:
            return
        if not any(user.id == me.id for user in message.mentions):
            return
        text = _MENTION.sub(lambda m: "" if m.group(1) == str(me.id) else m.group(0), message.content).strip()
        if not text:
            return
        user = UserRef(PLATFORM, str(message.guild.id), str(message.author.id), message.author.display_name)
        channel = ChannelRef(PLATFORM, str(message.guild.id), str(message.channel.id))
        reference = message.reference
        reply_to = str(reference.message_id) if reference is not None and reference.message_id else None
        result = await self.runtime.call(self.engine.answers.line, user, channel, text, reply_to=reply_to)
        if result is None:
            return
        try:
            await self.answer(message, result)
        except discord.HTTPException as exc:  # no interaction is open: the log is all there is
            log.warning(
                "answering message %s in channel %s failed (what it asked for stands): %s",
                message.id,
                message.channel.id,
                send_failure(exc),
                exc_info=True,
            )

    @staticmethod
    async def answer(message: discord.Message, result: Card) -> None:
        """The engine's card: feedback by direct message, anything else as a reply."""
        reply = layout.render(result)
        if isinstance(result, AnswerFeedback):
            if reply.embed is not None:  # by DM: no buttons (they need the server)
                reply.view = None
                reply.embed.remove_footer()
            try:
                await message.author.send(**reply.kwargs())
                return
            except discord.Forbidden:
                reply = layout.Reply(content=FEEDBACK_DMS_CLOSED)
        await message.reply(**reply.kwargs(), mention_author=False)
