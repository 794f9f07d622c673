"""The persistent answer button. Its custom_id is the seam's codec (`sb1:a:<round>:<choice>`),
so a click on yesterday's message works after a restart: discord.py routes it by this one
broad template, and the engine decodes it strictly (a tampered id gets a clear answer)."""

from __future__ import annotations

import re
from typing import Any, Protocol

import discord

TEMPLATE = r"sb1:.{1,96}"


class AnswerHandler(Protocol):
    async def answer_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None: ...


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
        handler: AnswerHandler | None = getattr(interaction.client, "study", None)
        if handler is not None:
            await handler.answer_click(interaction, self.item.custom_id or "")
