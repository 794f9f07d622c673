"""The Discord adapter: a discord.py Bot whose every event makes one engine call through the
Runtime and renders the card that comes back. This module builds it and routes each event to
the feature that answers it:

- replies: every interaction answered within Discord's 3 seconds (deferred when the engine
  call is slow), once; guard: the one check and error answer of every command, click and form;
- commands (/quiz, /review, /score, /leaderboard, /forget-me, /help), admin (/config, the bot
  leaving or rejoining a guild), suggestions (/suggest's forms, the admins' queue), demos
  (/demo, the reveal's demo button, progress), buttons (a choice, Sure / Unsure, a guess);
- mentions: text answers, in messages that mention the bot;
- posts: what the outbox delivers (`send`); sync: the command tree synced when it changed.

Every click and select is answered: one the bot cannot read (an older release's button, a
hand-made id, a select) gets wording.STALE_BUTTON privately at once, logged at debug."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import discord
import yarl
from discord.ext import commands

from bot.config import Settings
from bot.core.rules.confidence_rules import CONFIDENCE_PREFIX
from bot.core.rules.demo_request import DEMO_BUTTON_PREFIX
from bot.core.rules.suggestion_buttons import QUEUE_PREFIX, RETRY_PREFIX, SUGGEST_PREFIX
from bot.core.scope import ShardsOf
from bot.core.services.guesses import GUESS_PREFIX
from bot.core.values import ChannelRef, Posted
from bot.platforms.discord import render as layout
from bot.platforms.discord.admin import Admin
from bot.platforms.discord.buttons import AnswerButtons
from bot.platforms.discord.commands import StudyCommands
from bot.platforms.discord.demos import Demos
from bot.platforms.discord.errors import send_failure
from bot.platforms.discord.guard import Guard, StudyTree
from bot.platforms.discord.logs import keep_secrets_out
from bot.platforms.discord.mentions import Mentions
from bot.platforms.discord.posts import Posts
from bot.platforms.discord.replies import Replies
from bot.platforms.discord.suggestions import Suggestions
from bot.platforms.discord.sync import sync_commands
from bot.platforms.discord.views import ID_PREFIX
from bot.platforms.in_flight import InFlight
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

PLATFORM = layout.PLATFORM
DEFAULT_API = "https://discord.com/api/v10"
SETTLE_ON_CLOSE_S = 5.0  # how long a stop waits for the interactions being answered
Handler = Callable[[discord.Interaction[Any]], Awaitable[None]]
Click = Callable[[discord.Interaction[Any], str], Awaitable[None]]


class StudyBot(commands.Bot):
    """discord.py's Bot with the study adapter attached as `.study`."""

    study: DiscordApp

    async def setup_hook(self) -> None:
        await self.study.setup()

    async def on_ready(self) -> None:
        self.study.ready.set()
        log.info("Discord: ready as %s in %s guilds", self.user, len(self.guilds))

    async def on_message(self, message: discord.Message) -> None:
        await self.study.mentions.on_message(message)

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self.study.admin.guild_changed(guild, removed=True)

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self.study.admin.guild_changed(guild, removed=False)

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """Every click, select and form of ours comes here (slash commands go to the tree)."""
        if interaction.type is discord.InteractionType.modal_submit:
            await self.study.handle(self.study.suggestions.submitted, interaction)
        elif interaction.type is discord.InteractionType.component:
            await self.study.handle(self.study.component, interaction)


class ShardedStudyBot(StudyBot, commands.AutoShardedBot):
    """StudyBot over discord.py's AutoShardedBot: this process runs `shard_ids` of
    `shard_count` (STUDYBOT_DISCORD_SHARD_IDS / STUDYBOT_DISCORD_SHARD_COUNT)."""


def guild_shard(guild_id: int, shard_count: int) -> int:
    """The shard Discord routes a guild's events to."""
    return (guild_id >> 22) % shard_count


def shard_filter(shard_count: int, shard_ids: tuple[int, ...]) -> Callable[[str], bool]:
    """Whether a community (a guild id) belongs to this process's shards: the scheduler and
    the outbox of each shard process serve only those guilds."""
    return ShardsOf(shard_count, tuple(sorted(set(shard_ids))))  # also read as SQL by the scheduler


class DiscordApp:
    """What `attach` returns: the bot, its features, `send` for the outbox, `run` and `close`."""

    def __init__(self, settings: Settings, runtime: Runtime, bot: StudyBot) -> None:
        self.settings = settings
        self.runtime = runtime
        self.engine = runtime.engine
        self.bot = bot
        self.ready = asyncio.Event()
        self.synced: bool | None = None  # after setup: True when the tree was synced, False when unchanged
        self._handling = InFlight()
        self.replies = Replies(runtime)
        self.guard = Guard(self.replies, self.engine)
        self.study_commands = StudyCommands(self.replies, self.engine)
        self.admin = Admin(self.replies, runtime)
        self.suggestions = Suggestions(self.replies, runtime)
        self.demos = Demos(self.replies, runtime, bot)
        self.buttons = AnswerButtons(self.replies, self.engine)
        self.mentions = Mentions(runtime, bot)
        self.posts = Posts(bot, self.ready)
        self._clicks: tuple[tuple[str, Click], ...] = (
            (SUGGEST_PREFIX, self.suggestions.open_second_form),
            (RETRY_PREFIX, self.suggestions.open_first_form_again),
            (QUEUE_PREFIX, self.suggestions.decide_click),
            (DEMO_BUTTON_PREFIX, self.demos.click),
            (CONFIDENCE_PREFIX, self.buttons.confidence),
            (GUESS_PREFIX, self.buttons.guess),
        )

    def register(self, tree: StudyTree) -> None:
        """Every feature's slash commands on the tree, behind the one guard."""
        tree.guard = self.guard
        for feature in (self.study_commands, self.admin, self.suggestions, self.demos):
            feature.register(tree)

    # ---------------------------------------------------------------- start and stop

    async def setup(self) -> None:
        if self.settings.discord_api_url.rstrip("/") != DEFAULT_API:
            _shards, url, _limits = await self.bot.http.get_bot_gateway()
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        try:
            self.synced = await sync_commands(self.bot, self.runtime, self.settings.discord_guild)
        except discord.HTTPException:
            log.exception("syncing the slash commands failed; the commands Discord has stay as they were")

    async def run(self) -> None:
        token = self.settings.discord_token
        if token is None:
            raise RuntimeError("DISCORD_TOKEN is not set")
        await self.bot.start(token.get_secret_value())

    async def close(self) -> None:
        """Stop: the interactions being answered finish first (at most SETTLE_ON_CLOSE_S)."""
        try:
            await asyncio.wait_for(self.settled(), SETTLE_ON_CLOSE_S)
        except TimeoutError:
            log.warning("Discord: stopping with %s interaction(s) still unanswered", len(self._handling))
        await self.bot.close()

    # ---------------------------------------------------------------- clicks and forms

    async def handle(self, handler: Handler, interaction: discord.Interaction[Any]) -> None:
        """Run one click's or form's handler, counted until it has answered (see `settled`);
        whatever it raises is answered by the guard, in one sentence."""
        async with self._handling.track():
            try:
                await handler(interaction)
            # Broad by design: every interaction is answered; guard.failed logs the traceback.
            except Exception as exc:  # noqa: BLE001
                await self.guard.failed(interaction, exc)

    async def settled(self) -> None:
        """Return once every click and form being handled now has been answered (or failed)."""
        await self._handling.settled()

    async def component(self, interaction: discord.Interaction[Any]) -> None:
        """Every click and select on a message: a button of ours goes to its feature by the id's
        prefix (an answer's when none other matches); anything else (a select, another app's or
        a hand-made id) is answered as stale."""
        data: dict[str, Any] = dict(interaction.data or {})
        custom_id = str(data.get("custom_id") or "")
        if data.get("component_type") != discord.ComponentType.button.value or not custom_id.startswith(ID_PREFIX):
            return await self.replies.stale(interaction, custom_id)
        click = next((click for prefix, click in self._clicks if custom_id.startswith(prefix)), self.buttons.answer)
        await click(interaction, custom_id)

    # ---------------------------------------------------------------- the outbox

    async def send(self, channel: ChannelRef, card: Posted) -> str:
        """Post a card the engine queued; the message id is its reference."""
        return await self.posts.send(channel, card)


def bot_intents() -> discord.Intents:
    """The gateway intents the bot asks for: none privileged (`studybot doctor` checks them)."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = False
    return intents


def build_bot(settings: Settings, runtime: Runtime) -> StudyBot:
    """The Discord bot with the study adapter attached (`bot.study`), its `send` registered
    with the runtime's deliverer (the runtime comes from the composition root, bot/wiring.py)."""
    discord.http.Route.BASE = settings.discord_api_url.rstrip("/")
    keep_secrets_out()  # discord.py at DEBUG logs interaction tokens and message bodies
    options: dict[str, Any] = {
        "command_prefix": commands.when_mentioned,
        "intents": bot_intents(),
        "help_command": None,
        "allowed_mentions": discord.AllowedMentions.none(),
        "max_ratelimit_timeout": 30.0,
        "guild_ready_timeout": settings.discord_guild_ready_timeout,
        "chunk_guilds_at_startup": False,
        "tree_cls": StudyTree,
    }
    serves: Callable[[str], bool] | None = None
    bot: StudyBot
    if settings.discord_shard_count is not None:
        shards = settings.discord_shards()
        bot = ShardedStudyBot(shard_count=settings.discord_shard_count, shard_ids=list(shards), **options)
        serves = shard_filter(settings.discord_shard_count, shards)
        log.info("Discord: shards %s of %s in this process", ",".join(map(str, shards)), settings.discord_shard_count)
    else:
        bot = StudyBot(**options)
    app = DiscordApp(settings, runtime, bot)
    bot.study = app
    if not isinstance(bot.tree, StudyTree):
        raise TypeError("the bot's command tree is not the guarded StudyTree")
    app.register(bot.tree)
    runtime.add_sender(PLATFORM, app.send, serves=serves)
    runtime.add_progress(PLATFORM, app.demos.show_progress)
    return bot


def attach(settings: Settings, runtime: Runtime) -> DiscordApp:
    """The adapter as `studybot run discord` starts it (bot.platforms.launch.serve)."""
    return build_bot(settings, runtime).study


__all__ = [
    "DiscordApp",
    "ShardedStudyBot",
    "StudyBot",
    "attach",
    "build_bot",
    "guild_shard",
    "send_failure",
    "shard_filter",
]
