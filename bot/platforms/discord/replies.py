"""How an interaction is answered: within Discord's 3 seconds, once, and privately when the
answer is a refusal. Every feature's commands, buttons and forms answer through `Replies`.

- `respond`: one engine call through the Runtime, its card rendered as the answer; a call still
  running after `ACK_WITHIN_S` is deferred first and answered by editing the deferred message.
- `refuse`: one private sentence (the guard's refusals, a stale button, a failure).
- What the engine did stands when Discord refuses the answer: the member is told privately where
  they still wait, and the log says it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord

from bot.core import wording
from bot.core.values import SuggestionRefused
from bot.platforms.discord import render as layout
from bot.platforms.discord.errors import send_failure
from bot.platforms.discord.text import ANSWER_FAILED, ANSWER_FORBIDDEN
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

ACK_WITHIN_S = 2.0  # defer an interaction whose engine call is still running after this


async def in_time(task: asyncio.Future[Any]) -> bool:
    """Whether `task` is done within ACK_WITHIN_S (read at each call: a test shortens it)."""
    done, _ = await asyncio.wait({task}, timeout=ACK_WITHIN_S)
    return bool(done)


class Replies:
    """Answers to interactions, for every feature of the adapter."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    async def respond(
        self,
        interaction: discord.Interaction[Any],
        call: Callable[..., Any],
        *args: Any,
        defer: bool = False,
        ephemeral: bool | None = True,
        after: Callable[[object], Awaitable[None]] | None = None,
        again: str | None = None,
    ) -> object:
        """One engine call for one interaction, answered in time: deferred first when `defer`
        or when the call takes longer than ACK_WITHIN_S; the card rendered as the answer (and
        its further messages as follow-ups). `ephemeral=None`: the card decides (a public card
        in the channel, a refusal privately). `again`: a refused form's answer carries the
        button that opens that form again."""
        deferred = defer and await self.defer(interaction, ephemeral)
        task = asyncio.ensure_future(self.runtime.call(call, *args))
        if not deferred and not await in_time(task):
            deferred = await self.defer(interaction, ephemeral)
        result = await task  # a failed defer still lets the call finish: what it does is never lost
        reply = layout.render(result)
        if isinstance(result, SuggestionRefused) and (result.retry_id or again):
            reply.view = layout.retry_view(result.retry_id or again or "")
        try:
            await self._send(interaction, reply, deferred, ephemeral)
        except discord.HTTPException as exc:
            # what the engine did stands (an answer scored once, a demo queued); the member is told privately
            log.warning(
                "answering interaction %s in channel %s failed: %s",
                interaction.id,
                interaction.channel_id,
                send_failure(exc),
                exc_info=True,
            )
            await self.tell_privately(interaction, exc)
            return result
        if after is not None:
            await after(result)
        return result

    @staticmethod
    async def _send(
        interaction: discord.Interaction[Any], reply: layout.Reply, deferred: bool, ephemeral: bool | None
    ) -> None:
        """The rendered card as the interaction's answer: the deferred message edited, or the
        initial response; its further messages as follow-ups."""
        private = not reply.public if ephemeral is None else ephemeral
        if deferred and ephemeral is None and not reply.public:
            # deferred in the channel, answered privately: the "thinking" message goes
            await interaction.delete_original_response()
            await interaction.followup.send(**reply.kwargs(), ephemeral=True)
        elif deferred:
            kwargs = reply.kwargs()
            if "files" in kwargs:
                kwargs["attachments"] = kwargs.pop("files")
            kwargs.pop("allowed_mentions", None)
            if "view" not in kwargs:
                kwargs["view"] = None
            await interaction.edit_original_response(**kwargs, allowed_mentions=discord.AllowedMentions.none())
        else:
            await interaction.response.send_message(**reply.kwargs(), ephemeral=private)
        for extra in reply.extra:
            await interaction.followup.send(**extra.kwargs(), ephemeral=private)

    async def defer(self, interaction: discord.Interaction[Any], ephemeral: bool | None) -> bool:
        """Defer an interaction ("thinking"); False when Discord refused (logged), and the answer
        is then tried as an initial response."""
        try:
            await interaction.response.defer(ephemeral=ephemeral is not False, thinking=True)
        except discord.HTTPException as exc:
            log.warning("deferring interaction %s failed: %s", interaction.id, send_failure(exc))
            return False
        return True

    async def tell_privately(self, interaction: discord.Interaction[Any], exc: discord.HTTPException) -> None:
        """After Discord refused an interaction's answer: one private sentence where the member
        still waits (forbidden to post there: which permissions; else: try again). Nothing when
        the interaction, its token or its channel is gone: no one waits there any more."""
        if not isinstance(exc, discord.NotFound):
            forbidden = isinstance(exc, discord.Forbidden)
            await self._say(interaction, ANSWER_FORBIDDEN if forbidden else ANSWER_FAILED)

    async def refuse(self, interaction: discord.Interaction[Any], text: str) -> None:
        """One private sentence (shown as written: no markdown, no mentions)."""
        await self._say(interaction, layout.safe(text))

    @staticmethod
    async def _say(interaction: discord.Interaction[Any], text: str) -> None:
        """Private text: the interaction's answer, or a follow-up once it has one."""
        kwargs: dict[str, Any] = {"ephemeral": True, "allowed_mentions": discord.AllowedMentions.none()}
        try:
            if interaction.response.is_done():
                await interaction.followup.send(text, **kwargs)
            else:
                await interaction.response.send_message(text, **kwargs)
        except discord.HTTPException:
            log.warning("answering interaction %s privately failed", interaction.id, exc_info=True)

    async def stale(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A component the bot cannot read: one private sentence at once, never "This interaction failed"."""
        log.debug("interaction %s: component id %r is not one this bot can read", interaction.id, custom_id[:100])
        await self.refuse(interaction, wording.STALE_BUTTON)

    async def open_form(self, interaction: discord.Interaction[Any], modal: discord.ui.Modal) -> None:
        """A modal as the interaction's answer (a form cannot answer a form: see suggestions)."""
        try:
            await interaction.response.send_modal(modal)
        except discord.HTTPException:
            log.warning("opening a form for interaction %s failed", interaction.id, exc_info=True)
