"""Slack's listeners, one feature a module, each acking at once and then making one
`runtime.call(engine.<service>.<method>, ...)`, the card laid out with `render`:

- slash: every command of the shared text-command table; suggestions: /suggest's modal, the
  admins' queue and its note form; home: App Home and its review button; clicks: answers,
  Sure / Unsure, guesses, the reveal's demo button; threads: answers typed in a question's
  thread; and here, the app uninstalled (the workspace's community paused).
- handling: what they share, the guard around their work after the ack among it.

The community is the workspace the event belongs to, never the clicking user's team, so Slack
Connect members from another workspace answer in the host's community."""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.core.values import CommunityRef
from bot.platforms.runtime import Runtime
from bot.platforms.slack.clicks import Clicks
from bot.platforms.slack.handling import Handling
from bot.platforms.slack.home import Home
from bot.platforms.slack.identity import PLATFORM, Identity
from bot.platforms.slack.middleware import DropMalformed, OwnWorkspaceOnly
from bot.platforms.slack.slash import SlashCommands
from bot.platforms.slack.suggestions import SLACK_REPLY_HOST, SuggestionListeners
from bot.platforms.slack.threads import Threads

log = logging.getLogger(__name__)

EVENTS = ("message", "app_home_opened", "app_uninstalled", "tokens_revoked")


class Listeners:
    """Every listener of the Bolt app, for one process."""

    def __init__(
        self,
        runtime: Runtime,
        identity: Identity,
        config_users: frozenset[str],
        oauth: bool,
        installations: Any,
        reply_hosts: tuple[str, ...] = (SLACK_REPLY_HOST,),
    ) -> None:
        self.shared = Handling(runtime, identity, config_users)
        self.oauth = oauth
        self.installations = installations
        # Bolt takes the first listener that matches: the clicks' catch-all comes after the
        # review and queue buttons.
        self.features = (
            SlashCommands(self.shared),
            Home(self.shared),
            SuggestionListeners(self.shared, reply_hosts),
            Clicks(self.shared),
            Threads(self.shared),
        )

    def register(self, app: AsyncApp) -> None:
        app.use(DropMalformed())
        if not self.oauth:
            app.use(OwnWorkspaceOnly(self.shared.identity))
        for feature in self.features:
            feature.register(app)
        app.event("app_uninstalled")(self._uninstalled)
        app.event("tokens_revoked")(self._uninstalled)

    async def settled(self) -> None:
        """Return once every event being handled now has sent what it was going to (or failed)."""
        await self.shared.settled()

    async def _uninstalled(self, ack: Any, event: dict[str, Any], context: Any) -> None:
        await ack()
        await self.shared.guard("uninstall", lambda: self._pause(event, context))

    async def _pause(self, event: dict[str, Any], context: Any) -> None:
        if event.get("type") == "tokens_revoked" and not (event.get("tokens") or {}).get("bot"):
            return  # only user tokens went: the bot still works
        community = CommunityRef(PLATFORM, self.shared.identity.community_id(context))
        card = await self.shared.runtime.call(self.shared.engine.admin.bot_removed, community)
        log.info("slack workspace %s uninstalled the app: paused (%s)", community.community_id, type(card).__name__)
        if self.installations is not None:
            await self.installations.async_delete_all(
                enterprise_id=context.get("enterprise_id"), team_id=context.get("team_id")
            )
