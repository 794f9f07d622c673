"""The members' questions on Slack: /suggest's modal submitted, the admins' queue buttons and
the note form. A modal's submit is acked with the engine's answer (a refusal under its input),
within handling.ACK_WITHIN; later, the modal closes and the answer goes to the member's messages
with the app. A form the bot did not open for that member is refused. One engine call each."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.core import wording
from bot.core.records import OpenedView
from bot.core.rules.suggestion_buttons import QUEUE_PREFIX, decode_decision
from bot.core.values import Card, ChannelRef, CommunityRef, Notice, SuggestionDecided, SuggestionRefused, UserRef
from bot.platforms.slack import forms, render
from bot.platforms.slack.blocks import escape
from bot.platforms.slack.handling import Handling, in_time
from bot.platforms.slack.identity import PLATFORM
from bot.platforms.slack.slash import CONFIG_COMMAND

log = logging.getLogger(__name__)

QUEUE_BUTTON = re.compile("^" + re.escape(QUEUE_PREFIX))
_NOTE_VIEW = re.compile("^" + re.escape(QUEUE_PREFIX) + r"[0-9]+:note$")
# Where Slack's response_urls point; the configured API base's host is added (a test's fake).
SLACK_REPLY_HOST = "https://hooks.slack.com/"


def reply_host(api_url: str) -> str:
    """The scheme, host and port of a URL, ending in "/" ("" when it has none)."""
    scheme, sep, rest = api_url.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if not sep or scheme not in ("http", "https") or not host or "@" in host or "\\" in host:
        return ""
    return f"{scheme}://{host}/"


def may_reply_to(url: str, hosts: tuple[str, ...]) -> bool:
    """Whether a response_url points at one of Slack's response hosts."""
    return bool(url) and reply_host(url) in hosts


class SuggestionListeners:
    """/suggest's submission, the queue's buttons and its note form."""

    def __init__(self, shared: Handling, reply_hosts: tuple[str, ...]) -> None:
        self.shared = shared
        self.runtime = shared.runtime
        self.engine = shared.engine
        self.reply_hosts = reply_hosts  # where a stored response_url may point (reply_host)

    def register(self, app: AsyncApp) -> None:
        """The queue's buttons (before the catch-all click listener) and both modals."""
        app.action(QUEUE_BUTTON)(self._queue_click)
        app.view(forms.SUGGEST_VIEW)(self._suggest_submit)
        app.view(_NOTE_VIEW)(self._note_submit)

    async def _queue_click(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        await ack()

        async def reply(text: str) -> None:
            await respond(text=escape(text), response_type="ephemeral", replace_original=False)

        await self.shared.guard("queue click", lambda: self._decide_click(body, context, respond, client), reply)

    async def _decide_click(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        """An admin's approve or reject (one engine call), or the note button's form."""
        user = self.shared.identity.actor(context, body)
        action = (body.get("actions") or [{}])[0]
        action_id = str(action.get("action_id", ""))
        decoded = decode_decision(action_id)
        if decoded is None:
            await self.shared.stale(respond, action)
            return
        if not await self.shared.may_configure(client, user.user_id):
            refused = escape(wording.config_admins_only(CONFIG_COMMAND))
            await respond(text=refused, response_type="ephemeral", replace_original=False)
            return
        if decoded[1] == "note":  # the form, noted with the queue message's response_url (a Slack host's)
            queue_url = str(body.get("response_url") or "")
            reply_to = queue_url if may_reply_to(queue_url, self.reply_hosts) else None
            view_id = forms.new_view_id()
            await self.runtime.call(self.engine.views.view_opened, user, view_id, action_id, reply_to)
            await client.views_open(trigger_id=body.get("trigger_id"), view=forms.note_modal(action_id, view_id))
            return
        community = CommunityRef(PLATFORM, user.community_id)
        card = await self.runtime.call(self.engine.practice.decide_button, community, action_id)
        if isinstance(card, SuggestionDecided):  # the queue's message redrawn: no live button for a decided one
            message = forms.decided_queue(card)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=True)
        else:
            message = render.render(card)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    async def _suggest_submit(
        self, ack: Any, body: dict[str, Any], context: Any, client: Any, view: dict[str, Any]
    ) -> None:
        user = self.shared.identity.actor(context, body)
        channel = ChannelRef(PLATFORM, user.community_id, str(view.get("private_metadata") or user.user_id))
        form = forms.suggestion_form(view)

        async def work() -> None:
            if await self._not_opened(ack, user, view, "prompt"):
                return
            call = self.runtime.call(self.engine.practice.suggest, user, channel, form)
            await self._answer_view(ack, client, user.user_id, wording.SUGGEST_TITLE, call)

        await self.shared.guard("suggest", work, self.shared.direct(client, user.user_id))

    async def _note_submit(
        self, ack: Any, body: dict[str, Any], context: Any, client: Any, view: dict[str, Any]
    ) -> None:
        user = self.shared.identity.actor(context, body)
        note = forms.view_values(view).get(forms.NOTE_BLOCK, "")
        note_id = str(view.get("callback_id", ""))

        async def decide() -> Card:
            if not await self.shared.may_configure(client, user.user_id):
                return Notice(wording.config_admins_only(CONFIG_COMMAND))
            community = CommunityRef(PLATFORM, user.community_id)
            return await self.runtime.call(self.engine.practice.decide_button, community, note_id, note)

        async def work() -> None:
            view_id = str(view.get("external_id") or "")  # the id the bot gave the view it opened
            opened = await self.runtime.call(self.engine.views.view_submitted, user, view_id, note_id)
            if not isinstance(opened, OpenedView):  # None, or a Problem: refused either way
                await ack(response_action="errors", errors={forms.NOTE_BLOCK: wording.FORM_NOT_OURS})
                return
            card = await self._answer_view(ack, client, user.user_id, wording.NOTE_TITLE, decide())
            queue_url = opened.reply_url or ""  # noted when the bot opened the form; never the view's metadata
            if isinstance(card, SuggestionDecided) and may_reply_to(queue_url, self.reply_hosts):
                await self._redraw_queue(queue_url, card)

        await self.shared.guard("note", work, self.shared.direct(client, user.user_id))

    async def _not_opened(self, ack: Any, user: UserRef, view: dict[str, Any], block: str) -> bool:
        """True (and the submission refused under `block`) for a view the bot did not open for `user`."""
        opened = await self.runtime.call(
            self.engine.views.view_submitted, user, str(view.get("external_id", "")), str(view.get("callback_id", ""))
        )
        if not isinstance(opened, OpenedView):  # None, or a Problem: refused either way
            await ack(response_action="errors", errors={block: wording.FORM_NOT_OURS})
            return True
        return False

    @staticmethod
    async def _redraw_queue(queue_url: str, card: SuggestionDecided) -> None:
        """The queue message a note button was on, redrawn through its response_url (kept in
        the database when the note form was opened); a failure is logged: the decision stands."""
        message = forms.decided_queue(card)
        try:
            await AsyncRespond(response_url=queue_url)(
                text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=True
            )
        except Exception:
            log.info("redrawing the queue after suggestion %s failed", card.suggestion_id, exc_info=True)

    @staticmethod
    async def _answer_view(ack: Any, client: Any, user_id: str, title: str, call: Awaitable[Card]) -> Card:
        """Answer a modal's submit with the engine's card as the ack: a refusal under its
        inputs (response_action "errors"), else the modal updated with the answer. Later than
        ACK_WITHIN, the modal is closed and the answer goes to the member's messages with the app."""
        task = asyncio.ensure_future(call)
        try:
            answered = await in_time(task)
        except Exception:
            await ack()  # the modal closes; the guard logs it and tells the member
            raise
        if not answered:
            await ack()
            card = await task
            message = render.render(card)
            await client.chat_postMessage(channel=user_id, text=message.text, blocks=message.blocks)
            return card
        card = task.result()
        if isinstance(card, SuggestionRefused):
            await ack(response_action="errors", errors=forms.field_errors(card))
        else:
            await ack(response_action="update", view=forms.answer_view(title, render.render(card)))
        return card
