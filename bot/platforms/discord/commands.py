"""The study slash commands: /quiz, /review, /score, /leaderboard, /forget-me and /help, each
one engine call through `Replies.respond`; and the autocomplete the commands' options share.
The other features register their own (/config in admin, /suggest in suggestions, /demo in
demos). Who may run a command is declared on it (`guild_only`, `default_permissions`) and
checked by the one guard (bot.platforms.discord.guard), never in a command's body."""

from __future__ import annotations

from typing import Any, Literal

import discord
from discord import app_commands

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.engine import StudyEngine
from bot.platforms.discord.guard import place
from bot.platforms.discord.replies import Replies
from bot.platforms.discord.text import COMMANDS, HELP_ANSWERING_DISCORD, OPTIONS

Choice = app_commands.Choice


def matching(options: tuple[str, ...], current: str) -> list[Choice[str]]:
    """An option's autocomplete: the options starting with what is typed, then those holding it."""
    text = current.strip().lower()
    hits = [o for o in options if o.lower().startswith(text)] + [
        o for o in options if text in o.lower() and not o.lower().startswith(text)
    ]
    return [Choice(name=o[:100], value=o[:100]) for o in hits[:25]]


class StudyCommands:
    """A member's own commands: practice, reviews, their score, the board, forgetting them."""

    def __init__(self, replies: Replies, engine: StudyEngine) -> None:
        self.replies = replies
        self.engine = engine

    def register(self, tree: app_commands.CommandTree[Any]) -> None:
        say, opt, respond, engine = COMMANDS, OPTIONS, self.replies.respond, self.engine

        async def topics(_interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
            return matching(TOPICS, current)

        @tree.command(name="quiz", description=say["quiz"])
        @app_commands.guild_only()
        @app_commands.describe(topic=opt["topic"])
        @app_commands.autocomplete(topic=topics)
        async def quiz(interaction: discord.Interaction[Any], topic: str | None = None) -> None:
            here = place(interaction)
            await respond(interaction, engine.practice.quiz, here.user, here.channel, topic)

        @tree.command(name="review", description=say["review"])
        @app_commands.guild_only()
        @app_commands.describe(action=wording.ANKI_EXPORT_OPTION)
        async def review(interaction: discord.Interaction[Any], action: Literal["export"] | None = None) -> None:
            here = place(interaction)
            if action == "export":  # the missed questions as an Anki deck, attached to the private answer
                await respond(interaction, engine.anki.review_export, here.user)
            else:
                await respond(interaction, engine.practice.review, here.user, here.channel)

        @tree.command(name="score", description=say["score"])
        @app_commands.guild_only()
        async def score(interaction: discord.Interaction[Any]) -> None:
            await respond(interaction, engine.boards.score, place(interaction).user)

        async def scopes(_interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
            return matching(("week", "all"), current) or [Choice(name=current[:100], value=current[:100])]

        @tree.command(name="leaderboard", description=say["leaderboard"])
        @app_commands.guild_only()
        @app_commands.describe(scope=opt["scope"])
        @app_commands.autocomplete(scope=scopes)
        async def leaderboard(interaction: discord.Interaction[Any], scope: str | None = None) -> None:
            await respond(interaction, engine.boards.leaderboard_for, place(interaction).community, scope)

        @tree.command(name="forget-me", description=say["forget-me"])
        @app_commands.guild_only()
        @app_commands.describe(confirm=opt["confirm"])
        async def forget_me(interaction: discord.Interaction[Any], confirm: bool = False) -> None:
            await respond(interaction, engine.admin.forget_me, place(interaction).user, confirm)

        @tree.command(name="help", description=say["help"])
        async def help_(interaction: discord.Interaction[Any]) -> None:
            lines = [wording.HELP_TITLE, HELP_ANSWERING_DISCORD, *wording.help_lines("/config")]
            await self.replies.refuse(interaction, "\n".join(lines))
