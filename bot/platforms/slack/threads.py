"""Text answers on Slack: a reply in the thread of a daily round's question answers THAT round
(by the question post's reference), whatever practice question the member has pending; anything
else in a channel is chat. One engine call (`engine.answers.line` with `home=True`), the
feedback shown to the member only, in the thread, and App Home refreshed. The event id is noted
by the engine, so a retry Slack sends after a restart is not answered again."""

from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.core.values import AnswerWithHome, UserRef
from bot.platforms.slack import render
from bot.platforms.slack.handling import Handling
from bot.platforms.slack.identity import PLATFORM


class Threads:
    """Messages in channels the bot is in: a thread reply to a daily question is an answer."""

    def __init__(self, shared: Handling) -> None:
        self.shared = shared
        self.runtime = shared.runtime
        self.engine = shared.engine

    def register(self, app: AsyncApp) -> None:
        app.event("message")(self._message)

    async def _message(self, ack: Any, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        await ack()
        await self.shared.guard("message", lambda: self._answer(body, event, context, client))

    async def _answer(self, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        if event.get("subtype") or event.get("bot_id") or not event.get("thread_ts") or not event.get("user"):
            return
        identity = self.shared.identity
        if event.get("thread_ts") == event.get("ts") or not identity.first_time(body):
            return
        community = identity.community_id(context)
        user_id = str(event["user"])
        channel_id = str(event.get("channel", ""))
        user = UserRef(PLATFORM, community, user_id, await identity.name(client, community, user_id))
        question_ref = f"{channel_id}:{event['thread_ts']}"
        event_id = str(body["event_id"]) if body.get("event_id") else None
        text = str(event.get("text") or "")
        answered = await self.runtime.call(
            self.engine.answers.line, user, None, text, reply_to=question_ref, event_id=event_id, home=True
        )
        if answered is None:
            return
        card = answered.feedback if isinstance(answered, AnswerWithHome) else answered
        message = render.render(card)
        await client.chat_postEphemeral(
            channel=channel_id,
            user=user_id,
            thread_ts=event.get("thread_ts"),
            text=message.text,
            blocks=message.blocks,
        )
        if isinstance(answered, AnswerWithHome) and answered.home is not None:
            await self.shared.refresh_home(client, user_id, answered.home)
