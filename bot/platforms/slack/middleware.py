"""Bolt middleware: what is answered before any listener (malformed clicks, other workspaces)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.platforms.slack.identity import Identity

log = logging.getLogger(__name__)


class DropMalformed(AsyncMiddleware):
    """A click whose payload lacks its actions fails inside Bolt's own argument building (for
    any function listener or middleware): answer 200, log it, go no further. A class
    middleware is called without that argument building."""

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,  # noqa: ARG002 - Bolt passes it by this name; not needed here
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse:
        body = req.body or {}
        if body.get("type") == "block_actions":
            actions = body.get("actions")
            if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
                log.info("dropped a block_actions payload without actions")
                return BoltResponse(status=200, body="")
        return await next()


class OwnWorkspaceOnly(AsyncMiddleware):
    """One workspace (a bot token): a request that belongs to another workspace is answered 200
    and goes no further. It belongs to ours when Bolt's context team (the installation an
    event was delivered to: `authorizations`, or a click's `team`, the workspace of the message)
    or enterprise is ours, or when its `authorizations` name our workspace; so a Slack Connect
    member from another organisation acting in our channel is served."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,  # noqa: ARG002 - Bolt passes it by this name; not needed here
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse:
        team, enterprise = req.context.team_id, req.context.enterprise_id
        if not team and not enterprise:  # url_verification, ssl_check: no workspace to check
            return await next()
        ours = await self.identity.own_workspace()
        if ours is None:  # auth.test failed: Bolt's own authorization answers the request
            return await next()
        our_team, our_enterprise = ours
        body = req.body if isinstance(req.body, dict) else {}
        authorized = {a.get("team_id") for a in body.get("authorizations") or [] if isinstance(a, dict)}
        if team == our_team or (enterprise and enterprise == our_enterprise) or our_team in authorized:
            return await next()
        log.info("ignored a request from workspace %s (this bot serves %s)", team or enterprise, our_team)
        return BoltResponse(status=200, body="")
