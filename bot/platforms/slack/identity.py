"""Who and where a Slack event is: the workspace it belongs to, the member's name, our own
workspace (auth.test), and events Slack sends again."""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.core.values import UserRef

log = logging.getLogger(__name__)

PLATFORM = "slack"
_SEEN_EVENTS = 4096
_NAMES = 4096


class Identity:
    """Names seen, events handled, and the bot token's workspace, for one process."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._names: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._own: tuple[str, str | None] | None = None

    async def own_workspace(self) -> tuple[str, str | None] | None:
        """(team id, enterprise id) of the bot token's workspace (auth.test, asked once)."""
        if self._own is None:
            try:
                auth = await self.client.auth_test()
            except Exception as exc:  # Slack's error or the network's: asked again next time
                log.warning("auth.test failed: %s", exc, exc_info=True)
                return None
            self._own = (str(auth.get("team_id") or ""), auth.get("enterprise_id") or None)
        return self._own

    @staticmethod
    def community_id(context: Any) -> str:
        """The workspace the event belongs to (not the acting user's team)."""
        return str(context.get("team_id") or context.get("enterprise_id") or "")

    def user(self, context: Any, user_id: str, name: str | None) -> UserRef:
        community = self.community_id(context)
        if name:
            self._remember(community, user_id, name)
        return UserRef(PLATFORM, community, user_id, name or user_id)

    def actor(self, context: Any, body: dict[str, Any]) -> UserRef:
        """The member who clicked or submitted (a payload's `user`)."""
        who = body.get("user") or {}
        return self.user(context, str(who.get("id", "")), who.get("name") or who.get("username"))

    def _remember(self, community: str, user_id: str, name: str) -> None:
        self._names[(community, user_id)] = name
        self._names.move_to_end((community, user_id))
        while len(self._names) > _NAMES:
            self._names.popitem(last=False)

    async def name(self, client: AsyncWebClient, community: str, user_id: str) -> str:
        """A text reply carries only the user id: the name from a click or command seen before,
        else users.info (once), else the id."""
        known = self._names.get((community, user_id))
        if known:
            return known
        try:
            info = await client.users_info(user=user_id)
            user = info.get("user") or {}
            profile = user.get("profile") or {}
            name = profile.get("display_name") or profile.get("real_name") or user.get("name") or user_id
        except Exception as exc:  # Slack's error or the network's: the id stands in for the name
            log.info("users.info for %s failed: %s", user_id, exc, exc_info=True)
            return user_id
        self._remember(community, user_id, str(name))
        return str(name)

    def first_time(self, body: dict[str, Any]) -> bool:
        """False for an event Slack sends again (a retry) that this process already handled."""
        event_id = body.get("event_id")
        if not event_id:
            return True
        if event_id in self._seen:
            log.info("event %s again (retry %s): already handled", event_id, body.get("retry_attempt"))
            return False
        self._seen[event_id] = None
        while len(self._seen) > _SEEN_EVENTS:
            self._seen.popitem(last=False)
        return True
