"""The slash commands: guild-only, each one engine call through the app's `respond`.
Descriptions come from bot.core.wording; /suggest opens its first form; /config needs Manage Server, both by
default_member_permissions and by a check when it runs."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Literal, Protocol
from zoneinfo import available_timezones

import discord
from discord import app_commands

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.demo_request import PRESETS
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, CommunityRef, UserRef
from bot.platforms.discord import render as layout
from bot.platforms.discord.render import PLATFORM

Choice = app_commands.Choice
_CHANNEL = re.compile(r"^<#([0-9]+)>$")  # ASCII digits: \d takes any scripts
SETTINGS = ("show", "channel", "time", "timezone", "window", "topics", "pause", "resume", "post-now", "web")
# The members' questions: the queue (decided by its buttons), or by number (`value`: N [NOTE]), and
# `remove` with a question id.
QUEUE_WORDS = ("suggestions", "approve", "note", "reject", "remove")
_ZONES: tuple[str, ...] = ()


def zones() -> tuple[str, ...]:
    global _ZONES
    if not _ZONES:
        _ZONES = tuple(sorted(available_timezones()))
    return _ZONES


def matching(options: tuple[str, ...], current: str) -> list[Choice[str]]:
    text = current.strip().lower()
    hits = [o for o in options if o.lower().startswith(text)] + [
        o for o in options if text in o.lower() and not o.lower().startswith(text)
    ]
    return [Choice(name=o[:100], value=o[:100]) for o in hits[:25]]


class CommandHost(Protocol):
    """What the commands need of the adapter (bot/platforms/discord/app.py's DiscordApp)."""

    engine: StudyEngine

    def where(self, interaction: discord.Interaction[Any]) -> tuple[UserRef, ChannelRef] | None: ...

    async def refuse(self, interaction: discord.Interaction[Any], text: str) -> None: ...

    async def open_form(self, interaction: discord.Interaction[Any], modal: discord.ui.Modal) -> None: ...

    async def demo_posted(self, interaction: discord.Interaction[Any], result: object) -> None: ...

    async def respond(
        self,
        interaction: discord.Interaction[Any],
        call: Callable[..., Any],
        *args: Any,
        defer: bool = False,
        ephemeral: bool | None = True,
        after: Callable[[object], Awaitable[None]] | None = None,
        again: str | None = None,
    ) -> object: ...


def register(tree: app_commands.CommandTree[Any], app: CommandHost) -> None:
    engine = app.engine
    say = wording.COMMANDS
    opt = wording.OPTIONS

    async def topics(_interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
        return matching(TOPICS, current)

    @tree.command(name="quiz", description=say["quiz"])
    @app_commands.guild_only()
    @app_commands.describe(topic=opt["topic"])
    @app_commands.autocomplete(topic=topics)
    async def quiz(interaction: discord.Interaction[Any], topic: str | None = None) -> None:
        found = app.where(interaction)
        if found is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        await app.respond(interaction, engine.quiz, found[0], found[1], topic)

    @tree.command(name="review", description=say["review"])
    @app_commands.guild_only()
    @app_commands.describe(action=wording.ANKI_EXPORT_OPTION)
    async def review(interaction: discord.Interaction[Any], action: Literal["export"] | None = None) -> None:
        found = app.where(interaction)
        if found is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        if action == "export":  # the missed questions as an Anki deck, attached to the private answer
            await app.respond(interaction, engine.review_export, found[0])
        else:
            await app.respond(interaction, engine.review, found[0], found[1])

    @tree.command(name="score", description=say["score"])
    @app_commands.guild_only()
    async def score(interaction: discord.Interaction[Any]) -> None:
        found = app.where(interaction)
        if found is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        await app.respond(interaction, engine.score, found[0])

    async def scopes(_interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
        return matching(("week", "all"), current) or [Choice(name=current[:100], value=current[:100])]

    @tree.command(name="leaderboard", description=say["leaderboard"])
    @app_commands.guild_only()
    @app_commands.describe(scope=opt["scope"])
    @app_commands.autocomplete(scope=scopes)
    async def leaderboard(interaction: discord.Interaction[Any], scope: str | None = None) -> None:
        if interaction.guild_id is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        community = CommunityRef(PLATFORM, str(interaction.guild_id))
        await app.respond(interaction, engine.leaderboard_for, community, scope)

    @tree.command(name="forget-me", description=say["forget-me"])
    @app_commands.guild_only()
    @app_commands.describe(confirm=opt["confirm"])
    async def forget_me(interaction: discord.Interaction[Any], confirm: bool = False) -> None:
        found = app.where(interaction)
        if found is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        await app.respond(interaction, engine.forget_me, found[0], confirm)

    @tree.command(name="help", description=say["help"])
    async def help_(interaction: discord.Interaction[Any]) -> None:
        lines = [wording.HELP_TITLE, wording.HELP_ANSWERING_DISCORD, *wording.help_lines("/config")]
        await app.refuse(interaction, "\n".join(lines))

    async def values(interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
        setting = getattr(interaction.namespace, "setting", None)
        if setting == "timezone":
            return matching(zones(), current)
        if setting == "topics":
            return matching(("all", *TOPICS), current.rsplit(",", 1)[-1])
        if setting == "window":
            return matching(tuple(str(h) for h in (6, 8, 12, 24, 48)), current)
        if setting == "web":
            return matching(("private", "public", "rotate"), current)
        return []

    @tree.command(name="config", description=say["config"])
    @app_commands.guild_only()
    @app_commands.default_permissions(manage_guild=True)
    @app_commands.describe(setting=opt["setting"], value=opt["value"])
    @app_commands.choices(setting=[Choice(name=s, value=s) for s in (*SETTINGS, *QUEUE_WORDS)])
    @app_commands.autocomplete(value=values)
    async def config(interaction: discord.Interaction[Any], setting: str = "show", value: str | None = None) -> None:
        if interaction.guild_id is None or interaction.channel_id is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        found = app.where(interaction)
        if found is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        if not interaction.permissions.manage_guild:  # an admin link they had stops opening
            await app.respond(interaction, engine.config_refused, found[0], wording.NEEDS_MANAGE_SERVER)
            return None
        if setting == "channel":
            text = (value or "").strip()
            mention = _CHANNEL.match(text)
            value = mention.group(1) if mention else (text or str(interaction.channel_id))
        community = CommunityRef(PLATFORM, str(interaction.guild_id))
        admin = found[0]  # Manage Server, checked above: the answer may carry their admin link
        await app.respond(interaction, engine.configure, community, setting, value, admin, found[0])

    @tree.command(name="suggest", description=say["suggest"])
    @app_commands.guild_only()
    async def suggest(interaction: discord.Interaction[Any]) -> None:
        if interaction.guild_id is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        await app.open_form(interaction, layout.suggest_form())

    demo = app_commands.Group(name="demo", description=say["demo"], guild_only=True)

    @demo.command(name="checkpoint", description=wording.DEMO_COMMANDS["checkpoint"])
    @app_commands.describe(
        layers=opt["layers"],
        tokens=opt["tokens"],
        width=opt["width"],
        repeat=opt["repeat"],
        strategies=opt["strategies"],
        model=opt["model"],
        heads=opt["heads"],
        batch=opt["demo_batch"],
        budgets=opt["budgets"],
    )
    async def checkpoint(
        interaction: discord.Interaction[Any],
        layers: app_commands.Range[int, 1, 512] | None = None,
        tokens: app_commands.Range[int, 1, 65536] | None = None,
        width: app_commands.Range[int, 8, 4096] | None = None,
        repeat: app_commands.Range[int, 1, 20] | None = None,
        strategies: str | None = None,
        model: Literal["blocks", "chain", "transformer", "hf-gpt2"] | None = None,
        heads: app_commands.Range[int, 1, 64] | None = None,
        batch: app_commands.Range[int, 1, 256] | None = None,
        budgets: str | None = None,
    ) -> None:
        # the bounds are demo_request's INT_BOUNDS (tests/test_demo_chat.py compares them)
        words = {
            "model": model,
            "layers": layers,
            "tokens": tokens,
            "width": width,
            "heads": heads,
            "batch": batch,
            "repeat": repeat,
            "strategies": strategies,
            "budgets": budgets,
        }
        await run_demo(interaction, "checkpoint", words)

    async def presets(_interaction: discord.Interaction[Any], current: str) -> list[Choice[str]]:
        return matching(PRESETS, current)

    @demo.command(name="estimate", description=wording.DEMO_COMMANDS["estimate"])
    @app_commands.describe(
        preset=opt["preset"], batch=opt["batch"], seq=opt["seq"], gpu_gib=opt["gpu_gib"], kernels=opt["kernels"]
    )
    @app_commands.autocomplete(preset=presets)
    async def estimate(
        interaction: discord.Interaction[Any],
        preset: str,
        batch: app_commands.Range[int, 1, 512] | None = None,
        seq: app_commands.Range[int, 1, 131072] | None = None,
        gpu_gib: app_commands.Range[float, 1.0, 4096.0] | None = None,
        kernels: Literal["cuda", "cpu"] | None = None,
    ) -> None:
        words = {"preset": preset, "batch": batch, "seq": seq, "gpu-gib": gpu_gib, "kernels": kernels}
        await run_demo(interaction, "estimate", words)

    async def run_demo(interaction: discord.Interaction[Any], name: str, words: Mapping[str, object]) -> None:
        found = app.where(interaction)
        if found is None:
            return await app.refuse(interaction, wording.GUILD_ONLY)
        text = " ".join([name, *(f"{k}={str(v).replace(' ', '')}" for k, v in words.items() if v is not None)])

        async def after(result: object) -> None:
            await app.demo_posted(interaction, result)

        # queued: public, in the channel (progress edits it); refused (cooldown, full queue): private
        await app.respond(interaction, engine.request_demo, found[0], found[1], text, ephemeral=None, after=after)

    tree.add_command(demo)
