"""App Home on Slack: published when the member opens it (one engine call) and after each of
their scored answers (clicks and threads refresh it from the answer's own card); its "start a
review" button opens a private review round in the member's messages with the app."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.core.values import ChannelRef, Problem, UserRef
from bot.platforms.slack import render
from bot.platforms.slack.handling import Handling
from bot.platforms.slack.identity import PLATFORM

log = logging.getLogger(__name__)


class Home:
    """App Home opened, and its review button."""

    def __init__(self, shared: Handling) -> None:
        self.shared = shared
        self.runtime = shared.runtime
        self.engine = shared.engine

    def register(self, app: AsyncApp) -> None:
        app.action(render.ACTION_REVIEW)(self._review_click)
        app.event("app_home_opened")(self._opened)

    async def _review_click(self, ack: Any, body: dict[str, Any], context: Any, client: Any) -> None:
        await ack()
        await self.shared.guard("home review", lambda: self._start_review(body, context, client))

    async def _start_review(self, body: dict[str, Any], context: Any, client: Any) -> None:
        user = self.shared.identity.actor(context, body)
        # The review is a private round in the member's messages with the app.
        channel = ChannelRef(PLATFORM, user.community_id, user.user_id)
        card = await self.runtime.call(self.engine.practice.review, user, channel)
        message = render.render(card)
        await client.chat_postMessage(channel=user.user_id, text=message.text, blocks=message.blocks)

    async def _opened(self, ack: Any, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        await ack()
        identity = self.shared.identity
        if event.get("tab", "home") != "home" or not identity.first_time(body):
            return
        user = UserRef(PLATFORM, identity.community_id(context), str(event.get("user", "")), f"<@{event.get('user')}>")
        await self.shared.guard("app home", lambda: self._publish(client, user))

    async def _publish(self, client: Any, user: UserRef) -> None:
        """Publish the member's App Home when they open it (one engine call)."""
        card = await self.runtime.call(self.engine.boards.home, user)
        if isinstance(card, Problem):
            log.info("no App Home for %s: %s", user.user_id, card.text)
            return
        await client.views_publish(user_id=user.user_id, view=render.home(card))
