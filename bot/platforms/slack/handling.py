"""What every Slack listener shares: the guard around its work after the ack (a failure logged
under an incident id, bridge.report_incident, and the member told wording.BUG with it, or that
Slack is busy), the work in flight (`settled`), and the answers several features give: a stale
id, a queued demo's channel message, App Home refreshed after an answer, the admin check.

Listeners catch their own exceptions: one that raises after its ack makes Bolt drop the ack."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from slack_sdk.errors import SlackApiError

from bot.background.bridge import report_incident
from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, DemoQueued, HomeCard
from bot.platforms.in_flight import InFlight
from bot.platforms.runtime import Runtime
from bot.platforms.slack import render
from bot.platforms.slack.blocks import escape
from bot.platforms.slack.errors import is_ratelimited
from bot.platforms.slack.identity import Identity

log = logging.getLogger(__name__)

T = TypeVar("T")
Reply = Callable[[str], Awaitable[None]]
# Slack waits 3 s for an ack (and a modal's answer); an engine answer later than this is acked
# first and goes where the member still sees it (a modal is closed, the answer sent to them).
ACK_WITHIN = 2.5


async def in_time(task: asyncio.Future[T]) -> bool:
    """Whether `task` is done within ACK_WITHIN (read at each call: a test shortens it); the
    task runs on either way."""
    try:
        await asyncio.wait_for(asyncio.shield(task), ACK_WITHIN)
    except TimeoutError:
        return False
    return True


class Handling:
    """The runtime, who is who, and the listeners' shared guard and answers."""

    def __init__(self, runtime: Runtime, identity: Identity, config_users: frozenset[str]) -> None:
        self.runtime = runtime
        self.engine: StudyEngine = runtime.engine
        self.identity = identity
        self.config_users = config_users
        self._handling = InFlight()  # listeners' work after their ack

    async def guard(self, what: str, work: Callable[[], Awaitable[None]], reply: Reply | None = None) -> None:
        """Run a listener's work after its ack; log a failure and tell a waiting user."""
        async with self._handling.track():
            try:
                await work()
            # Broad by design: a listener's failure is logged (report_incident, with its
            # traceback) and the waiting user told, whatever it was.
            except Exception as exc:  # noqa: BLE001
                incident = report_incident(f"slack {what}")
                if reply is not None:
                    try:
                        busy = is_ratelimited(exc)
                        await reply(wording.PLATFORM_BUSY if busy else wording.BUG.format(incident=incident))
                    except Exception:
                        log.warning("telling the user about a failed %s failed too", what, exc_info=True)

    async def settled(self) -> None:
        """Return once every event being handled now has sent what it was going to (or failed)."""
        await self._handling.settled()

    @staticmethod
    async def stale(respond: Any, action: dict[str, Any]) -> None:
        """A click or select whose id the engine cannot decode: one private sentence."""
        log.debug("a %s with an id this bot cannot read: %.80r", action.get("type", "action"), action.get("action_id"))
        await respond(text=escape(wording.STALE_BUTTON), response_type="ephemeral", replace_original=False)

    @staticmethod
    def direct(client: Any, user_id: str) -> Reply:
        """A text to a member's messages with the app (a modal has no response_url)."""

        async def send(text: str) -> None:
            await client.chat_postMessage(channel=user_id, text=escape(text))

        return send

    async def may_configure(self, client: Any, user_id: str) -> bool:
        """Workspace admins and owners (users.info), and the members the operator allowed."""
        if user_id in self.config_users:
            return True
        info = await client.users_info(user=user_id)
        user = info.get("user") or {}
        return bool(user.get("is_admin") or user.get("is_owner") or user.get("is_primary_owner"))

    async def post_queued(self, client: Any, channel: ChannelRef, card: DemoQueued, respond: Any) -> None:
        """A queued demo gets a channel message that its progress and result edit in place."""
        message = render.render(card)
        try:
            posted = await client.chat_postMessage(channel=channel.channel_id, text=message.text, blocks=message.blocks)
        except SlackApiError as exc:
            log.info("posting demo %s in %s failed: %s", card.job_id, channel.channel_id, exc.response.get("error"))
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
            return
        await self.runtime.call(self.engine.demos.demo_message, card.job_id, f"{posted['channel']}:{posted['ts']}")

    @staticmethod
    async def refresh_home(client: Any, user_id: str, card: HomeCard) -> None:
        """The Home an answer came back with, published after its feedback was sent: a failure
        is logged, the feedback is already with the member and the next opening publishes it."""
        try:
            await client.views_publish(user_id=user_id, view=render.home(card))
        except Exception as exc:  # Slack's error or the network's: the member has the feedback already
            log.info("publishing the App Home of %s after an answer failed: %s", user_id, exc, exc_info=True)
