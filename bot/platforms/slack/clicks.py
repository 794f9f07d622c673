"""Clicks on Slack messages, after the queue's (suggestions) and App Home's (home): an answer
button, Sure / Unsure under the feedback, a guess on a queued demo, the reveal's demo button.
Each is one engine call, answered privately; an answer's feedback goes by chat.postEphemeral
(the click's response_url where the bot is not in the channel), and App Home is republished
with it. A click or select whose id the bot cannot decode (an older release's message, a
hand-made id) gets wording.STALE_BUTTON privately, logged at debug."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError

from bot.core.rules import choices as codec
from bot.core.rules.confidence_rules import CONFIDENCE_PREFIX, decode_confidence
from bot.core.rules.demo_request import DEMO_BUTTON_PREFIX, decode_demo_button
from bot.core.services.guesses import GUESS_PREFIX, decode_guess
from bot.core.values import AnswerWithHome, ChannelRef, DemoQueued
from bot.platforms.slack import handling, render
from bot.platforms.slack.blocks import escape
from bot.platforms.slack.handling import Handling, in_time
from bot.platforms.slack.identity import PLATFORM

log = logging.getLogger(__name__)


class Clicks:
    """Every action no other feature registered for (registered last: Bolt takes the first match)."""

    def __init__(self, shared: Handling) -> None:
        self.shared = shared
        self.runtime = shared.runtime
        self.engine = shared.engine

    def register(self, app: AsyncApp) -> None:
        app.action(re.compile(".*"))(self._click)  # decoded strictly by the engine

    async def _click(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        """A click: acked at once, except an answer's, acked once it is stored (Slack does not
        redeliver a click it got a 200 for: an answer acked first and lost in a crash was lost
        unseen), within ACK_WITHIN of Slack's 3 s."""
        acked = False

        async def ack_once() -> None:
            nonlocal acked
            if not acked:
                acked = True
                await ack()

        async def reply(text: str) -> None:
            await ack_once()
            await respond(text=escape(text), response_type="ephemeral", replace_original=False)

        try:
            await self.shared.guard("click", lambda: self._route(body, context, respond, client, ack_once), reply)
        finally:
            await ack_once()

    async def _route(
        self, body: dict[str, Any], context: Any, respond: Any, client: Any, ack: Callable[[], Awaitable[None]]
    ) -> None:
        actions = body.get("actions") or []
        action_id = str(actions[0].get("action_id", "")) if actions else ""
        prefixed = action_id.startswith((DEMO_BUTTON_PREFIX, CONFIDENCE_PREFIX, GUESS_PREFIX))
        if prefixed or codec.decode_answer(action_id) is None:
            await ack()  # not an answer: nothing to store first
        if not actions:
            log.info("a block_actions payload without actions")
            return
        if action_id.startswith(DEMO_BUTTON_PREFIX):
            await self._demo(body, context, respond, client, actions[0])
        elif action_id.startswith(CONFIDENCE_PREFIX):
            await self._confidence(body, context, respond, actions[0])
        elif action_id.startswith(GUESS_PREFIX):
            await self._guess(body, context, respond, actions[0])
        elif codec.decode_answer(action_id) is None:
            await self.shared.stale(respond, actions[0])
        else:
            await self._answer(body, context, respond, client, ack, action_id)

    async def _answer(
        self,
        body: dict[str, Any],
        context: Any,
        respond: Any,
        client: Any,
        ack: Callable[[], Awaitable[None]],
        action_id: str,
    ) -> None:
        """An answer button: stored before the ack where the store is quick enough."""
        user = self.shared.identity.actor(context, body)
        call = asyncio.ensure_future(self.runtime.call(self.engine.answers.click, user, action_id, True))
        if not await in_time(call):  # the answer stored before the 200, unless the store is slower than Slack waits
            log.info("an answer took over %.1f s to store: acked before it was", handling.ACK_WITHIN)
        await ack()
        answered = await call
        if answered is None:  # only a thread reply can be no answer
            return
        card = answered.feedback if isinstance(answered, AnswerWithHome) else answered
        channel_id = str((body.get("channel") or {}).get("id") or "")
        container = body.get("container") or {}
        message = render.render(card)
        if channel_id and not container.get("is_ephemeral") and not channel_id.startswith("D"):
            try:
                await client.chat_postEphemeral(
                    channel=channel_id, user=user.user_id, text=message.text, blocks=message.blocks
                )
            except SlackApiError as exc:  # not_in_channel and the like: the click's own response_url works
                log.info("chat.postEphemeral in %s failed: %s", channel_id, exc.response.get("error"))
                await respond(
                    text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False
                )
        else:
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)
        if isinstance(answered, AnswerWithHome) and answered.home is not None:
            await self.shared.refresh_home(client, user.user_id, answered.home)

    async def _demo(
        self, body: dict[str, Any], context: Any, respond: Any, client: Any, action: dict[str, Any]
    ) -> None:
        """The "see it run" button under a reveal: the question's demo queued for the member who clicked (one
        engine call), posted in the channel like /demo's; a refusal (cooldown, full queue) privately."""
        round_id = decode_demo_button(action.get("action_id"))
        if round_id is None:
            await self.shared.stale(respond, action)
            return
        user = self.shared.identity.actor(context, body)
        channel = ChannelRef(PLATFORM, user.community_id, str((body.get("channel") or {}).get("id") or ""))
        card = await self.runtime.call(self.engine.demos.request_question_demo, user, channel, round_id)
        if isinstance(card, DemoQueued):
            await self.shared.post_queued(client, channel, card, respond)
            return
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    async def _guess(self, body: dict[str, Any], context: Any, respond: Any, action: dict[str, Any]) -> None:
        """A guess on a queued checkpoint demo: one engine call, answered privately."""
        if decode_guess(action.get("action_id")) is None:
            await self.shared.stale(respond, action)
            return
        user = self.shared.identity.actor(context, body)
        card = await self.runtime.call(self.engine.guesses.guess_button, user, str(action.get("action_id")))
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    async def _confidence(self, body: dict[str, Any], context: Any, respond: Any, action: dict[str, Any]) -> None:
        """Sure / Unsure under an answer's feedback: recorded once (one engine call), answered
        privately through the click's response_url; a second press is told the first one stands."""
        action_id = str(action.get("action_id") or "")
        if decode_confidence(action_id) is None:
            await self.shared.stale(respond, action)
            return
        actor = self.shared.identity.actor(context, body)
        card = await self.runtime.call(self.engine.confidence.confidence_button, actor, action_id)
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)
