"""The Discord adapter: a discord.py Bot whose every event makes one engine call through the
Runtime and renders the card that comes back.

- Interactions are answered within Discord's 3 seconds: a call still running after
  `ACK_WITHIN_S` is deferred first and answered by a follow-up; `/demo` defers at once.
- Posts decided by the engine (daily rounds, reveals, leaderboards, demo results) arrive
  through the outbox at `send`, which returns the message id as the reference; the reveal
  also edits the question (buttons disabled, counts) through `RevealCard.question_ref`.
- Every click and select is answered: one the bot cannot read (an older release's button,
  a hand-made id, a select) gets wording.STALE_BUTTON privately at once, logged at debug.
- Text answers: messages that mention the bot (Discord delivers their content without the
  privileged message-content intent); the feedback goes by direct message.
- /suggest: a first modal (topic, level, prompt, choices, the right one) kept as a draft, then
  a button opening the second (the whys, the trap, a reference): a modal cannot answer a
  modal. The admins' queue (/config suggestions) decides by buttons, a note by a one-input
  modal; Manage Server is checked when they are used; the author is told by direct message
  through the outbox (retried like posts, given up where admins see it).
- The command tree is synced only when its hash differs from the one stored in the
  database for that target (a guild, or global)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord
import yarl
from discord import app_commands
from discord.ext import commands

from bot.config import Settings
from bot.core import choices as codec
from bot.core import wording
from bot.core.confidence import CONFIDENCE_PREFIX, decode_confidence
from bot.core.demo_request import DEMO_BUTTON_PREFIX, decode_demo_button
from bot.core.errors import SendFailed
from bot.core.guesses import GUESS_PREFIX, decode_guess
from bot.core.numbers import ascii_int
from bot.core.practice import QUEUE_PREFIX, RETRY_PREFIX, SUGGEST_PREFIX, decode_decision, decode_draft
from bot.core.scope import ShardsOf
from bot.core.values import (
    AnswerFeedback,
    ChannelRef,
    CommunityRef,
    DemoProgressCard,
    DemoQueued,
    LeaderboardCard,
    Posted,
    Problem,
    QuestionCard,
    RevealCard,
    SuggestionDecided,
    SuggestionForm,
    SuggestionRefused,
    UserRef,
)
from bot.platforms.discord import render as layout
from bot.platforms.discord.commands import register
from bot.platforms.discord.logs import keep_secrets_out
from bot.platforms.discord.views import ID_PREFIX
from bot.platforms.in_flight import InFlight
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

PLATFORM = layout.PLATFORM
DEFAULT_API = "https://discord.com/api/v10"
ACK_WITHIN_S = 2.0  # defer an interaction whose engine call is still running after this
SETTLE_ON_CLOSE_S = 5.0  # how long a stop waits for the interactions being answered
READY_WAIT_S = 30.0
_MENTION = re.compile(r"<@!?([0-9]+)>")  # ASCII digits: \d takes any script's
_CHANNEL = re.compile(r"^<#([0-9]+)>$")


def snowflake(text: str) -> int | None:
    """A Discord id as the bot stores it (ASCII digits, at most 20), else None: `str.isdigit`
    is true for other scripts' digits, which `int` would read as another channel's id."""
    return ascii_int(text, 20)


def send_failure(exc: BaseException) -> SendFailed:
    """A discord.py error as the outbox understands it: permanent, rate-limited or transient."""
    if isinstance(exc, SendFailed):
        return exc
    if isinstance(exc, discord.RateLimited):
        return SendFailed(f"rate limited for {exc.retry_after:.1f} s", retry_after=exc.retry_after)
    if isinstance(exc, discord.NotFound):
        return SendFailed(f"the channel is gone or unknown ({exc.code}: {exc.text[:120]})", permanent=True)
    if isinstance(exc, discord.Forbidden):
        return SendFailed(f"the bot may not post there ({exc.code}: {exc.text[:120]})", permanent=True)
    if isinstance(exc, discord.HTTPException):
        if exc.status == 429:
            retry = exc.response.headers.get("Retry-After") if exc.response is not None else None
            return SendFailed("rate limited", retry_after=float(retry) if retry else None)
        if exc.status >= 500:
            return SendFailed(f"Discord error {exc.status}")
        return SendFailed(f"Discord refused the post ({exc.status} {exc.code}: {exc.text[:120]})", permanent=True)
    if isinstance(exc, aiohttp.ClientError | TimeoutError | OSError):
        return SendFailed(f"network: {type(exc).__name__}: {exc}"[:200])
    return SendFailed(f"{type(exc).__name__}: {exc}"[:200])


def user_ref(interaction_user: discord.abc.User, guild_id: int) -> UserRef:
    return UserRef(PLATFORM, str(guild_id), str(interaction_user.id), interaction_user.display_name)


class StudyBot(commands.Bot):
    """discord.py's Bot with the study adapter attached as `.study`."""

    study: DiscordApp

    async def setup_hook(self) -> None:
        await self.study.setup()

    async def on_ready(self) -> None:
        self.study.ready.set()
        log.info("Discord: ready as %s in %s guilds", self.user, len(self.guilds))

    async def on_message(self, message: discord.Message) -> None:
        await self.study.on_message(message)

    async def on_guild_remove(self, guild: discord.Guild) -> None:
        await self.study.guild_changed(guild, removed=True)

    async def on_guild_join(self, guild: discord.Guild) -> None:
        await self.study.guild_changed(guild, removed=False)

    async def on_interaction(self, interaction: discord.Interaction[Any]) -> None:
        """Every click, select and form of ours comes here (slash commands go to the tree)."""
        if interaction.type is discord.InteractionType.modal_submit:
            await self.study.handle(self.study.modal_submit, interaction)
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
    """What `attach` returns: the bot, its `send` for the outbox, `run` and `close`."""

    def __init__(self, settings: Settings, runtime: Runtime, bot: StudyBot) -> None:
        self.settings = settings
        self.runtime = runtime
        self.engine = runtime.engine
        self.bot = bot
        self.ready = asyncio.Event()
        self.synced: bool | None = None  # after setup: True when the tree was synced, False when unchanged
        self._handling = InFlight()

    # ---------------------------------------------------------------- start

    async def setup(self) -> None:
        if self.settings.discord_api_url.rstrip("/") != DEFAULT_API:
            _shards, url, _limits = await self.bot.http.get_bot_gateway()
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(url)
        try:
            self.synced = await self.sync_commands()
        except discord.HTTPException:
            log.exception("syncing the slash commands failed; the commands Discord has stay as they were")

    def sync_target(self) -> discord.Object | None:
        return discord.Object(id=self.settings.discord_guild) if self.settings.discord_guild else None

    async def sync_commands(self) -> bool:
        """Sync the command tree when it changed since the last sync to the same target."""
        tree = self.bot.tree
        guild = self.sync_target()
        if guild is not None:
            tree.copy_global_to(guild=guild)
        payload = [command.to_dict(tree) for command in tree.get_commands(guild=guild)]
        digest = hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()
        key = f"discord:commands:{self.bot.application_id}:{guild.id if guild else 'global'}"
        if await self.runtime.bridge.run(self.engine.platform_state, key) == digest:
            log.info("Discord: slash commands unchanged, not synced")
            return False
        await tree.sync(guild=guild)
        await self.runtime.bridge.run(self.engine.set_platform_state, key, digest)
        log.info("Discord: synced %s slash commands to %s", len(payload), guild.id if guild else "all guilds")
        return True

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

    async def handle(
        self, handler: Callable[[discord.Interaction[Any]], Awaitable[None]], interaction: discord.Interaction[Any]
    ) -> None:
        """Run one interaction's handler, counted until it has answered (see `settled`)."""
        async with self._handling.track():
            await handler(interaction)

    async def settled(self) -> None:
        """Return once every click and form being handled now has been answered (or failed)."""
        await self._handling.settled()

    # ------------------------------------------------------------ interactions

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
        if not deferred:
            done, _ = await asyncio.wait({task}, timeout=ACK_WITHIN_S)
            if not done:
                deferred = await self.defer(interaction, ephemeral)
        result = await task  # a failed defer still lets the call finish: what it does is never lost
        reply = layout.render(result)
        if isinstance(result, SuggestionRefused) and (result.retry_id or again):
            reply.view = layout.retry_view(result.retry_id or again or "")
        private = not reply.public if ephemeral is None else ephemeral
        try:
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
        if isinstance(exc, discord.NotFound):
            return
        text = wording.ANSWER_FORBIDDEN if isinstance(exc, discord.Forbidden) else wording.ANSWER_FAILED
        try:
            if interaction.response.is_done():
                await interaction.followup.send(text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none())
            else:
                await interaction.response.send_message(
                    text, ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
                )
        except discord.HTTPException:
            log.warning("telling the member of interaction %s privately failed too", interaction.id, exc_info=True)

    async def refuse(self, interaction: discord.Interaction[Any], text: str) -> None:
        try:
            await interaction.response.send_message(
                layout.safe(text), ephemeral=True, allowed_mentions=discord.AllowedMentions.none()
            )
        except discord.HTTPException:
            log.warning("answering interaction %s failed", interaction.id, exc_info=True)

    async def component(self, interaction: discord.Interaction[Any]) -> None:
        """Every click and select on a message: a button of ours goes to `click`; anything else
        (a select, another app's or a hand-made id) is answered as stale."""
        data: dict[str, Any] = dict(interaction.data or {})
        custom_id = str(data.get("custom_id") or "")
        if data.get("component_type") == discord.ComponentType.button.value and custom_id.startswith(ID_PREFIX):
            await self.click(interaction, custom_id)
        else:
            await self.stale(interaction, custom_id)

    async def click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """Every button of ours: the suggestion form's continue, a queue decision, an answer; one
        whose id does not decode (an older release's, a tampered one) is answered as stale."""
        if custom_id.startswith(SUGGEST_PREFIX):
            await self.open_second_form(interaction, custom_id)
        elif custom_id.startswith(RETRY_PREFIX):
            await self.open_first_form_again(interaction, custom_id)
        elif custom_id.startswith(QUEUE_PREFIX):
            await self.decide_click(interaction, custom_id)
        elif custom_id.startswith(DEMO_BUTTON_PREFIX):
            await self.demo_click(interaction, custom_id)
        elif custom_id.startswith(CONFIDENCE_PREFIX):
            await self.confidence_click(interaction, custom_id)
        elif custom_id.startswith(GUESS_PREFIX):
            await self.guess_click(interaction, custom_id)
        else:
            await self.answer_click(interaction, custom_id)

    async def stale(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A component the bot cannot read: one private sentence at once, never "This interaction failed"."""
        log.debug("interaction %s: component id %r is not one this bot can read", interaction.id, custom_id[:100])
        await self.refuse(interaction, wording.STALE_BUTTON)

    async def answer_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        if codec.decode_answer(custom_id) is None:
            return await self.stale(interaction, custom_id)
        if interaction.guild_id is None:
            await self.refuse(interaction, wording.GUILD_ONLY)
            return
        await self.respond(
            interaction, self.engine.answer_button, user_ref(interaction.user, interaction.guild_id), custom_id
        )

    async def confidence_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """Sure / Unsure under an answer's feedback: recorded once (one engine call), answered
        privately; a second press is told the first one stands."""
        if decode_confidence(custom_id) is None:
            return await self.stale(interaction, custom_id)
        if interaction.guild_id is None:
            return await self.refuse(interaction, wording.GUILD_ONLY)
        await self.respond(
            interaction, self.engine.confidence_button, user_ref(interaction.user, interaction.guild_id), custom_id
        )

    async def demo_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """The "see it run" button under a reveal: the question's demo queued for the member who clicked (one
        engine call), posted in the channel like /demo's; a refusal (cooldown, full queue) privately."""
        round_id = decode_demo_button(custom_id)
        if round_id is None:
            return await self.stale(interaction, custom_id)
        found = self.where(interaction)
        if found is None:
            return await self.refuse(interaction, wording.GUILD_ONLY)

        async def after(result: object) -> None:
            await self.demo_posted(interaction, result)

        await self.respond(
            interaction, self.engine.request_question_demo, found[0], found[1], round_id, ephemeral=None, after=after
        )

    async def guess_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A guess on a queued checkpoint demo: one engine call, answered privately."""
        if decode_guess(custom_id) is None:
            return await self.stale(interaction, custom_id)
        if interaction.guild_id is None:
            return await self.refuse(interaction, wording.GUILD_ONLY)
        await self.respond(
            interaction, self.engine.guess_button, user_ref(interaction.user, interaction.guild_id), custom_id
        )

    # ------------------------------------------------------ members' questions

    async def open_form(self, interaction: discord.Interaction[Any], modal: discord.ui.Modal) -> None:
        try:
            await interaction.response.send_modal(modal)
        except discord.HTTPException:
            log.warning("opening a form for interaction %s failed", interaction.id, exc_info=True)

    async def open_second_form(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """The second form, filled in with what a refused try of it had."""
        draft = decode_draft(custom_id)
        if draft is None:
            return await self.stale(interaction, custom_id)
        typed = await self.typed_form(interaction, draft)
        await self.open_form(interaction, layout.explain_form(custom_id, typed))

    async def open_first_form_again(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        """A refused first form, opened again with what the member had typed."""
        draft = decode_draft(custom_id, RETRY_PREFIX)
        if draft is None:
            return await self.stale(interaction, custom_id)
        typed = await self.typed_form(interaction, draft)
        await self.open_form(interaction, layout.suggest_form(typed, custom_id))

    async def typed_form(self, interaction: discord.Interaction[Any], draft: int) -> SuggestionForm | None:
        """What the member typed into a kept form of theirs (None: a form opened empty; its
        submit says when it expired)."""
        found = self.where(interaction)
        if found is None:
            return None
        typed = await self.runtime.call(self.engine.suggestion_form, found[0], draft)
        return typed if isinstance(typed, SuggestionForm) else None

    def admin(self, interaction: discord.Interaction[Any]) -> CommunityRef | None:
        """The community of an interaction by a member with Manage Server (checked at run time:
        a queue's buttons and forms can be used by whoever sees them)."""
        if interaction.guild_id is None or not interaction.permissions.manage_guild:
            return None
        return CommunityRef(PLATFORM, str(interaction.guild_id))

    async def decide_click(self, interaction: discord.Interaction[Any], custom_id: str) -> None:
        decoded = decode_decision(custom_id)
        if decoded is None:
            return await self.stale(interaction, custom_id)
        community = self.admin(interaction)
        if community is None:
            return await self.refuse(interaction, wording.NEEDS_MANAGE_SERVER)
        if decoded[1] == "note":
            return await self.open_form(interaction, layout.note_form(custom_id))
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
        task = asyncio.ensure_future(self.runtime.call(self.engine.decide_button, community, custom_id, *note))
        done, _ = await asyncio.wait({task}, timeout=ACK_WITHIN_S)
        deferred = False
        if not done:  # type 6: the clicked message is edited once the call is done
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

    async def modal_submit(self, interaction: discord.Interaction[Any]) -> None:
        """A submitted form, by its id: the first /suggest form, the second (`sb1:sg:<draft>`)
        or an admin's note (`sb1:sq:<n>:note`). One engine call each."""
        data: dict[str, Any] = dict(interaction.data or {})
        custom_id = str(data.get("custom_id") or "")
        if not custom_id.startswith((SUGGEST_PREFIX, RETRY_PREFIX, QUEUE_PREFIX)):
            return
        values = modal_values(data)
        if custom_id.startswith(QUEUE_PREFIX):
            community = self.admin(interaction)
            if community is None:
                return await self.refuse(interaction, wording.NEEDS_MANAGE_SERVER)
            note = values.get(layout.NOTE_FIELD, "")
            decoded = decode_decision(custom_id)
            if decoded is None:
                return await self.stale(interaction, custom_id)
            await self.decide(interaction, decoded[0], community, custom_id, note)
            return
        found = self.where(interaction)
        if found is None:
            return await self.refuse(interaction, wording.GUILD_ONLY)
        user, channel = found
        if custom_id == layout.FIRST_FORM or custom_id.startswith(RETRY_PREFIX):
            form = SuggestionForm(
                topic=values.get("topic", ""),
                level=values.get("level", ""),
                prompt=values.get("prompt", ""),
                choices=lines_of(values.get("choices", "")),
                correct=values.get("correct", ""),
            )
            again = decode_draft(custom_id, RETRY_PREFIX)  # a refused form again: its second part is kept
            await self.respond(interaction, self.engine.suggest_draft, user, channel, form, again)
            return
        draft = decode_draft(custom_id)
        if draft is None:
            return await self.refuse(interaction, wording.FORM_EXPIRED)
        rest = SuggestionForm(
            whys=lines_of(values.get("whys", "")),
            trap=values.get("trap", ""),
            explain=values.get("explain", ""),
            hint=values.get("hint", ""),
            refs=lines_of(values.get("refs", "")),
        )
        await self.respond(interaction, self.engine.suggest_continue, user, channel, draft, rest, again=custom_id)

    def where(self, interaction: discord.Interaction[Any]) -> tuple[UserRef, ChannelRef] | None:
        if interaction.guild_id is None or interaction.channel_id is None:
            return None
        guild = str(interaction.guild_id)
        return user_ref(interaction.user, interaction.guild_id), ChannelRef(
            PLATFORM, guild, str(interaction.channel_id)
        )

    # ----------------------------------------------------------------- text

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
        result = await self.runtime.call(self.engine.answer_line, user, channel, text, reply_to)
        if result is None:
            return
        reply = layout.render(result)
        if isinstance(result, AnswerFeedback) and reply.embed is not None:  # by DM: no buttons (they need the server)
            reply.view = None
            reply.embed.remove_footer()
        try:
            if isinstance(result, AnswerFeedback):
                try:
                    await message.author.send(**reply.kwargs())
                    return
                except discord.Forbidden:
                    reply = layout.Reply(content=wording.FEEDBACK_DMS_CLOSED)
            await message.reply(**reply.kwargs(), mention_author=False)
        except discord.HTTPException as exc:  # no interaction is open: the log is all there is
            log.warning(
                "answering message %s in channel %s failed (what it asked for stands): %s",
                message.id,
                message.channel.id,
                send_failure(exc),
                exc_info=True,
            )

    async def guild_changed(self, guild: discord.Guild, removed: bool) -> None:
        """Removed from a guild: its community is paused (nothing deleted); invited back:
        resumed, unless an admin had paused it before the removal."""
        method = self.engine.bot_removed if removed else self.engine.bot_returned
        result = await self.runtime.call(method, CommunityRef(PLATFORM, str(guild.id)))
        if isinstance(result, Problem):
            what = "left" if removed else "joined"
            log.warning("guild %s %s, but recording it failed: %s", guild.id, what, result.text)

    # ------------------------------------------------------------ the outbox

    async def wait_ready(self) -> None:
        try:
            await asyncio.wait_for(self.ready.wait(), READY_WAIT_S)
        except TimeoutError:
            raise SendFailed("not connected to Discord yet") from None

    async def send(self, channel: ChannelRef, card: Posted) -> str:
        """Post a card the engine queued; the message id is its reference."""
        await self.wait_ready()
        if snowflake(channel.channel_id) is None:
            raise SendFailed(f"'{channel.channel_id[:40]}' is not a Discord channel id", permanent=True)
        if isinstance(card, SuggestionDecided):  # to its author: channel_id is their user id
            return await self.tell_author(int(channel.channel_id), card)
        target = self.bot.get_partial_messageable(int(channel.channel_id), guild_id=int(channel.community_id))
        if isinstance(card, QuestionCard):
            reply = layout.daily_post(card)
        elif isinstance(card, LeaderboardCard):
            reply = layout.leaderboard(card, public=True)
        else:
            reply = layout.render(card)
        try:
            message = await target.send(**reply.kwargs())
        except Exception as exc:
            raise send_failure(exc) from exc
        if isinstance(card, RevealCard) and snowflake(card.question_ref or "") is not None:
            await self.edit_question(target, card)
        return str(message.id)

    async def tell_author(self, user_id: int, card: SuggestionDecided) -> str:
        """The decision on a member's question, by direct message; closed messages (50007) are
        permanent: given up where admins see it (/config)."""
        try:
            dm = await self.bot.create_dm(discord.Object(id=user_id))
            message = await dm.send(**layout.author_notice(card).kwargs())
        except Exception as exc:
            raise send_failure(exc) from exc
        return str(message.id)

    async def edit_question(self, target: discord.PartialMessageable, card: RevealCard) -> None:
        try:
            await target.get_partial_message(int(card.question_ref or 0)).edit(
                **layout.revealed_question(card).kwargs()
            )
        except discord.HTTPException:  # the reveal is posted; the old buttons answer "closed"
            log.warning("editing the question of round %s failed", card.round_id, exc_info=True)

    async def show_progress(self, card: DemoProgressCard) -> None:
        message, channel = snowflake(card.message_ref or ""), snowflake(card.channel.channel_id)
        if message is None or channel is None:
            return
        target = self.bot.get_partial_messageable(channel)
        await target.get_partial_message(message).edit(**layout.demo_progress(card).kwargs())

    async def demo_posted(self, interaction: discord.Interaction[Any], result: object) -> None:
        """After /demo answered with the queued message: tell the engine that message's id, so
        progress edits it in place."""
        if not isinstance(result, DemoQueued):
            return
        try:
            message = await interaction.original_response()
        except discord.HTTPException:
            log.warning("reading the /demo message failed", exc_info=True)
            return
        await self.runtime.call(self.engine.demo_message, result.job_id, str(message.id))


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


def bot_intents() -> discord.Intents:
    """The gateway intents the bot asks for: none privileged (`studybot doctor` checks them)."""
    intents = discord.Intents.none()
    intents.guilds = True
    intents.guild_messages = True
    intents.dm_messages = False
    return intents


def build_bot(settings: Settings, runtime: Runtime | None = None) -> StudyBot:
    """The Discord bot with the study adapter attached (`bot.study`), its `send` registered
    with the runtime's deliverer. Without a runtime, one is built from the settings."""
    if runtime is None:
        from bot.wiring import build_engine

        runtime = Runtime(build_engine(settings), (PLATFORM,), settings.bridge_threads)
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
    register(bot.tree, app)
    runtime.add_sender(PLATFORM, app.send, serves=serves)
    runtime.add_progress(PLATFORM, app.show_progress)
    return bot


def attach(settings: Settings, runtime: Runtime) -> DiscordApp:
    """The adapter as `studybot run discord` starts it (bot.platforms.launch.serve)."""
    return build_bot(settings, runtime).study


__all__ = [
    "DiscordApp",
    "ShardedStudyBot",
    "StudyBot",
    "app_commands",
    "attach",
    "build_bot",
    "guild_shard",
    "send_failure",
    "shard_filter",
]
