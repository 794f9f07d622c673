"""The persistent buttons. Their custom_ids are the seam's codecs (an answer `sb1:a:<round>:<choice>`,
the suggestion form's continue `sb1:sg:<draft>`, a queue decision `sb1:sq:<n>:<action>`), so a
click on yesterday's message works after a restart.

Every click reaches `StudyBot.on_interaction`, which routes it (`DiscordApp.component`): a button
of ours to its handler, anything it cannot read to one private sentence. The buttons are
DynamicItems only so that discord.py keeps no View per posted message; their callback does
nothing, so no click is answered twice."""

from __future__ import annotations

import re
from typing import Any

import discord

ID_PREFIX = "sb1:"
TEMPLATE = r"sb1:.{1,96}"


class AnswerButton(discord.ui.DynamicItem[discord.ui.Button[Any]], template=TEMPLATE):
    """An answer button that outlives a restart: discord.py rebuilds it from its custom id."""

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
        cls, _interaction: discord.Interaction[Any], _item: discord.ui.Item[Any], match: re.Match[str], /
    ) -> AnswerButton:
        return cls(match.group(0))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        """Nothing: the bot's on_interaction answers every click (see the module's docstring)."""
