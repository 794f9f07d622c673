"""The members' questions on Discord.

- /suggest: a first modal (topic, level, prompt, choices, the right one) kept as a draft, then a
  button opening the second (the whys, the trap, a reference): a modal cannot answer a modal. A
  refused form's answer carries a button opening it again, filled in with what was typed.
- The admins' queue (/config suggestions) decides by buttons, a note by a one-input modal;
  Manage Server is checked when they are used (guard.admin_of). The decision is answered by
  editing the queue item's own message; the author is told by direct message through the outbox.

Every submit and click is one engine call."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord
from discord import app_commands

from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.rules.suggestion_buttons import QUEUE_PREFIX, RETRY_PREFIX, SUGGEST_PREFIX, decode_decision, decode_draft
from bot.core.values import CommunityRef, Problem, SuggestionForm
from bot.platforms.discord import render as layout
from bot.platforms.discord.errors import send_failure
from bot.platforms.discord.guard import Refused, admin_of, place
from bot.platforms.discord.replies import Replies, in_time
from bot.platforms.discord.text import COMMANDS
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)


def modal_values(data: dict[str, Any]) -> dict[str, str]:
    """A modal submit's values by input id: action rows of text inputs (and labels, the newer
    layout, holding one component each)."""
    found: dict[str, str] = {}
    for row in data.get("components") or []:
        if not isinstance(row, dict):
            continue
        inner = row.get("components") or ([row["component"]] if isinstance(row.get("component"), dict) else [])
        for component in inner:
            if isinstance(component, dict) and isinstance(component.get("custom_id"), str):
                found[component["custom_id"]] = str(component.get("value") or "")
    return found


def lines_of(text: str) -> tuple[str, ...]:
    """A multi-line input's non-empty lines (choices, whys, references: one per line)."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())


class Suggestions:
    """/suggest's two forms, and the admins' queue buttons and note form."""

    def __init__(self, replies: Replies, runtime: Runtime) -> None:
        self.replies = replies
        self.runtime = runtime
        self.engine: StudyEngine = runtime.engine

    def register(self, tree: app_commands.CommandTree[Any]) -> None:
        @tree.command(name="suggest", description=COMMANDS["suggest"])
        @app_commands.guild_only()
        async def suggest(interaction: discord.Interaction[Any]) -> None:
            await self.replies.open_form(interaction, layout.suggest_form())

    # ---------------------------------------------------------------- buttons

    async def open_second_form(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """The first form's "continue": the second form, filled in with what a refused try of it had."""
        draft = decode_draft(custom_id)
        if draft is None:
            return await self.replies.stale(interaction, custom_id)
        typed = await self.typed_form(interaction, draft)
        await self.replies.open_form(interaction, layout.explain_form(custom_id, typed))

    async def open_first_form_again(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A refused first form, opened again with what the member had typed."""
        draft = decode_draft(custom_id, RETRY_PREFIX)
        if draft is None:
            return await self.replies.stale(interaction, custom_id)
        typed = await self.typed_form(interaction, draft)
        await self.replies.open_form(interaction, layout.suggest_form(typed, custom_id))

    async def typed_form(self, interaction: discord.Interaction[Any], draft: int) -> SuggestionForm | None:
        """What the member typed into a kept form of theirs (None: a form opened empty; its
        submit says when it expired)."""
        if interaction.guild_id is None or interaction.channel_id is None:
            return None
        typed = await self.runtime.call(self.engine.practice.suggestion_form, place(interaction).user, draft)
        return typed if isinstance(typed, SuggestionForm) else None

    async def decide_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A queue button: approve or reject at once; note opens the note's form."""
        decoded = decode_decision(custom_id)
        if decoded is None:
            return await self.replies.stale(interaction, custom_id)
        community = admin_of(interaction)
        if decoded[1] == "note":
            return await self.replies.open_form(interaction, layout.note_form(custom_id))
        await self.decide(interaction, decoded[0], community, custom_id)

    async def decide(
        self,
        interaction: discord.Interaction[Any],
        suggestion_id: int,
        community: CommunityRef,
        custom_id: str,
        *note: str,
    ) -> None:
        """An admin's decision (one engine call), answered by editing the queue item's own
        message: the decision above it and its buttons disabled, so nobody clicks them again.
        A refusal (a Problem) is answered privately instead."""
        task = asyncio.ensure_future(self.runtime.call(self.engine.practice.decide_button, community, custom_id, *note))
        deferred = False
        if not await in_time(task):  # type 6: the clicked message is edited once the call is done
            try:
                await interaction.response.defer()
                deferred = True
            except discord.HTTPException as exc:
                log.warning("deferring interaction %s failed: %s", interaction.id, send_failure(exc))
        result = await task
        try:
            if isinstance(result, Problem) or interaction.message is None:
                reply = layout.render(result)
                if deferred:
                    await interaction.followup.send(**reply.kwargs(), ephemeral=True)
                else:
                    await interaction.response.send_message(**reply.kwargs(), ephemeral=True)
            else:
                reply = layout.decided_item(layout.render(result).content or "", suggestion_id)
                if deferred:
                    await interaction.edit_original_response(content=reply.content, view=reply.view)
                else:
                    await interaction.response.edit_message(content=reply.content, view=reply.view)
        except discord.HTTPException:
            log.warning("answering interaction %s failed (the decision stands)", interaction.id, exc_info=True)

    # ------------------------------------------------------------------ forms

    async def submitted(self, interaction: discord.Interaction[Any]) -> None:
        """A submitted form, by its id: the first /suggest form (or a refused one again), the
        second (`sb1:sg:<draft>`) or an admin's note (`sb1:sq:<n>:note`). One engine call each."""
        data: dict[str, Any] = dict(interaction.data or {})
        custom_id = str(data.get("custom_id") or "")
        if not custom_id.startswith((SUGGEST_PREFIX, RETRY_PREFIX, QUEUE_PREFIX)):
            return
        values = modal_values(data)
        if custom_id.startswith(QUEUE_PREFIX):
            community = admin_of(interaction)
            decoded = decode_decision(custom_id)
            if decoded is None:
                return await self.replies.stale(interaction, custom_id)
            await self.decide(interaction, decoded[0], community, custom_id, values.get(layout.NOTE_FIELD, ""))
            return
        here = place(interaction)
        if custom_id == layout.FIRST_FORM or custom_id.startswith(RETRY_PREFIX):
            form = SuggestionForm(
                topic=values.get("topic", ""),
                level=values.get("level", ""),
                prompt=values.get("prompt", ""),
                choices=lines_of(values.get("choices", "")),
                correct=values.get("correct", ""),
            )
            again = decode_draft(custom_id, RETRY_PREFIX)  # a refused form again: its second part is kept
            ask = self.engine.practice.suggest_draft
            await self.replies.respond(interaction, ask, here.user, here.channel, form, again)
            return
        draft = decode_draft(custom_id)
        if draft is None:
            raise Refused(wording.FORM_EXPIRED)
        rest = SuggestionForm(
            whys=lines_of(values.get("whys", "")),
            trap=values.get("trap", ""),
            explain=values.get("explain", ""),
            hint=values.get("hint", ""),
            refs=lines_of(values.get("refs", "")),
        )
        go_on = self.engine.practice.suggest_continue
        await self.replies.respond(interaction, go_on, here.user, here.channel, draft, rest, again=custom_id)
