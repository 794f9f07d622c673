"""The persistent buttons. Their custom_ids are the seam's codecs (an answer `sb1:a:<round>:<choice>`,
the suggestion form's continue `sb1:sg:<draft>`, a queue decision `sb1:sq:<n>:<action>`), so a
click on yesterday's message works after a restart: discord.py routes every one by this one
broad template to `DiscordApp.click`, and the engine decodes it strictly (a tampered id gets a
clear answer)."""

from __future__ import annotations

import re
from typing import Any, Protocol

import discord

TEMPLATE = r"sb1:.{1,96}"


class ClickHandler(Protocol):
    async def click(self, interaction: discord.Interaction[Any], custom_id: str) -> None: ...


class AnswerButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=TEMPLATE):
    def __init__(
        self,
        custom_id: str,
        label: str = "?",
        style: discord.ButtonStyle = discord.ButtonStyle.primary,
        disabled: bool = False,
    ) -> None:
        super().__init__(discord.ui.Button(custom_id=custom_id, label=label, style=style, disabled=disabled))

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction[Any], item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> AnswerButton:
        return cls(match.group(0))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        handler: ClickHandler | None = getattr(interaction.client, "study", None)
        if handler is not None:
            await handler.click(interaction, self.item.custom_id or "")
