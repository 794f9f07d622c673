"""The buttons a member answers with: a choice under a question, Sure / Unsure under the
answer's feedback, a guess under a queued checkpoint demo. Each is one engine call, answered
privately; an id that does not decode (an older release's, a tampered one) is answered as stale."""

from __future__ import annotations

from typing import Any

import discord

from bot.core.engine import StudyEngine
from bot.core.rules import choices as codec
from bot.core.rules.confidence_rules import decode_confidence
from bot.core.services.guesses import decode_guess
from bot.platforms.discord.guard import place
from bot.platforms.discord.replies import Replies


class AnswerButtons:
    """A choice, a confidence and a guess: each one engine call with the clicked id."""

    def __init__(self, replies: Replies, engine: StudyEngine) -> None:
        self.replies = replies
        self.engine = engine

    async def answer(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A choice under a question (`sb1:a:<round>:<choice>`): scored once."""
        if codec.decode_answer(custom_id) is None:
            return await self.replies.stale(interaction, custom_id)
        await self.replies.respond(interaction, self.engine.answers.click, place(interaction).user, custom_id)

    async def confidence(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """Sure / Unsure under an answer's feedback: recorded once, answered privately; a second
        press is told the first one stands."""
        if decode_confidence(custom_id) is None:
            return await self.replies.stale(interaction, custom_id)
        ask = self.engine.confidence.confidence_button
        await self.replies.respond(interaction, ask, place(interaction).user, custom_id)

    async def guess(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A guess on a queued checkpoint demo, answered privately."""
        if decode_guess(custom_id) is None:
            return await self.replies.stale(interaction, custom_id)
        await self.replies.respond(interaction, self.engine.guesses.guess_button, place(interaction).user, custom_id)
