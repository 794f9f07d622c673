"""Slack's slash commands. Their text is parsed through the shared text-command table
(bot.platforms.commands), so they ask the engine what Discord's slash commands and the console's
lines ask, one engine call each; around it stay Slack's own parts: a `<#C..|name>` channel
mention, the admin check, the /suggest modal, a demo's channel message, an Anki deck uploaded to
the member's messages with the app."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot import anki
from bot.core import wording
from bot.core.values import AnkiDeck, ChannelRef, DemoQueued, QuestionCard, UserRef
from bot.platforms import commands
from bot.platforms.slack import forms, render
from bot.platforms.slack.blocks import escape
from bot.platforms.slack.handling import Handling
from bot.platforms.slack.identity import PLATFORM

CONFIG_COMMAND = "/studybot-config"
HELP_COMMAND = "/studybot-help"
# Slack's name for each command of the shared table (the table's own name where not listed).
SLACK_NAMES = {"config": CONFIG_COMMAND, "help": HELP_COMMAND}
TABLE_NAMES = {SLACK_NAMES.get(c.name, f"/{c.name}"): c.name for c in commands.TABLE}
# Everything the app registers; manifest.yml declares exactly these (a test checks both ways).
COMMANDS = tuple(slack for slack, name in TABLE_NAMES.items() if commands.lookup(name, PLATFORM) is not None)
_CHANNEL_MENTION = re.compile(r"^<#([CGD][A-Z0-9]{1,30})(\|[^>]*)?>$")


def config_value(key: str, value: str, channel_id: str) -> str:
    """`/studybot-config channel #study` arrives as `<#C123|study>`: keep the id; "here" is
    the channel the command was typed in."""
    if key.strip().lower() != "channel":
        return value
    text = value.strip()
    if text.lower() in ("", "here", "this"):
        return channel_id
    match = _CHANNEL_MENTION.match(text)
    if match:
        return match.group(1)
    return text


class SlashCommands:
    """Every command of the table Slack has, acked at once and answered privately."""

    def __init__(self, shared: Handling) -> None:
        self.shared = shared
        self.runtime = shared.runtime
        self.engine = shared.engine

    def register(self, app: AsyncApp) -> None:
        for name in COMMANDS:
            app.command(name)(self._command)

    async def _command(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        await ack()

        async def reply(text: str) -> None:
            await respond(text=escape(text), response_type="ephemeral")

        what = body.get("command", "command")
        await self.shared.guard(what, lambda: self._run(body, context, respond, client), reply)

    async def _run(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        command = str(body.get("command", ""))
        text = str(body.get("text") or "").strip()
        user = self.shared.identity.user(context, str(body.get("user_id", "")), body.get("user_name"))
        channel = ChannelRef(PLATFORM, user.community_id, str(body.get("channel_id", "")))
        name = TABLE_NAMES.get(command, "help")
        if name == "suggest":  # the form, noted as opened by the bot (a submission of any other is refused)
            view_id = forms.new_view_id()
            await self.runtime.call(self.engine.views.view_opened, user, view_id, forms.SUGGEST_VIEW)
            view = forms.suggest_modal(channel.channel_id, view_id)
            await client.views_open(trigger_id=body.get("trigger_id"), view=view)
            return
        admin = False
        if name == "config":  # Slack's own parts around the table: a channel mention, the admin check
            key, _, value = text.partition(" ")
            text = f"{key} {config_value(key, value, channel.channel_id)}".strip()
            admin = await self.shared.may_configure(client, user.user_id)
            if key.lower() not in ("", "show") and not admin:  # an admin link they had stops opening
                refused = await self.runtime.call(
                    self.engine.admin.config_refused, user, wording.config_admins_only(CONFIG_COMMAND)
                )
                message = render.render(refused)
                await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
                return
        # a member who may only look sees the settings; the engine leaves the admin link out
        asked = commands.ask(name, commands.Where(user, channel, admin), text)
        if asked is None:  # /studybot-help
            message = render.help_message(CONFIG_COMMAND)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
            return
        card = await self.runtime.call(asked.bound(self.engine), *asked.args)
        if isinstance(card, DemoQueued):
            await self.shared.post_queued(client, channel, card, respond)
            return
        if isinstance(card, QuestionCard) and card.kind == "daily":  # post-now: the question is a channel post
            await respond(text=escape(wording.daily_opened(card)), response_type="ephemeral")
            return
        if isinstance(card, AnkiDeck):  # /review export: the file first, in the member's messages with the app
            await self._send_deck(client, user, card)
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")

    @staticmethod
    async def _send_deck(client: Any, user: UserRef, card: AnkiDeck) -> None:
        """The .apkg in the member's messages with the app (a file shared in a channel is public).
        files.completeUploadExternal takes a conversation's id, not a user's: a message posted to
        the user id first answers with that conversation's id."""
        data = await asyncio.to_thread(anki.package, card)
        text = wording.anki_attached(card.kind, len(card.notes))
        posted = await client.chat_postMessage(channel=user.user_id, text=escape(text))
        where = str(posted["channel"])
        await client.files_upload_v2(channel=where, file=data, filename=card.filename, title=card.filename)
