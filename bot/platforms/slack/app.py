"""The Slack adapter: Bolt's AsyncApp over Socket Mode or HTTP, one workspace (a bot token) or
many (OAuth installs kept in our database), its transport, and `send`.

The listeners are in bot.platforms.slack.listeners; with a bot token (one workspace),
requests from any other workspace are ignored (bot.platforms.slack.middleware). Channel posts
(the daily round, reveals, leaderboards, demo results) come from the outbox through `send`,
which returns the message reference "CHANNEL:TS"; a running demo's progress is edited into its
queued message (`show_progress`)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.core import wording
from bot.core.errors import SendFailed
from bot.core.values import (
    ChannelRef,
    DemoFailedCard,
    DemoProgressCard,
    DemoResultCard,
    LeaderboardCard,
    Posted,
    QuestionCard,
    RevealCard,
    SuggestionDecided,
)
from bot.errors import OperatorError
from bot.platforms.runtime import Runtime
from bot.platforms.slack import forms, render
from bot.platforms.slack.blocks import SlackMessage
from bot.platforms.slack.errors import send_failed
from bot.platforms.slack.gate import gate, same_site
from bot.platforms.slack.identity import PLATFORM, Identity
from bot.platforms.slack.listeners import Listeners
from bot.platforms.slack.logs import keep_secrets_out, keep_secrets_out_of_http_logs
from bot.platforms.slack.suggestions import SLACK_REPLY_HOST, reply_host
from bot.web.app import hide_server_version, security_headers
from bot.web.links import keep_tokens_out_of_logs

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


def split_ref(ref: str | None) -> tuple[str, str] | None:
    """A message reference "CHANNEL:TS" as (channel, ts)."""
    if not ref or ":" not in ref:
        return None
    channel, _, ts = ref.partition(":")
    return (channel, ts) if channel and ts else None


class SlackBot:
    """The Slack platform for one process: the Bolt app, its transport and the outbox sender."""

    def __init__(self, settings: Settings, runtime: Runtime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.engine = runtime.engine
        self.api_url = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
        self.oauth = settings.slack_client_id is not None and settings.slack_client_secret is not None
        self.installations: Any = None
        self._runner: web.AppRunner | None = None
        self._socket: Any = None
        self._stopped = asyncio.Event()
        keep_secrets_out()  # slack_sdk at DEBUG logs tokens and message bodies
        self.port: int | None = None  # the bound port once serving HTTP
        self.mounted = False  # Slack's routes are served by the web page's server (one port)
        signing_secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
        if self.oauth:
            from bot.platforms.slack.oauth import oauth_settings

            if runtime.database is None:
                raise OperatorError("Slack's OAuth installs need the bot's database (bot/wiring.py build_runtime).")
            database = runtime.database
            oauth, self.installations = oauth_settings(settings, database.writer, database.write_gate)
            self.client = AsyncWebClient(base_url=self.api_url)
            self.app = AsyncApp(
                signing_secret=signing_secret,
                client=self.client,
                oauth_settings=oauth,
                logger=logging.getLogger("bolt"),
            )
        else:
            token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
            self.client = AsyncWebClient(token=token, base_url=self.api_url)
            self.app = AsyncApp(signing_secret=signing_secret, client=self.client, logger=logging.getLogger("bolt"))
        config_users = frozenset(u.strip() for u in settings.slack_config_users.split(",") if u.strip())
        self.identity = Identity(self.client)
        hosts = tuple(h for h in (SLACK_REPLY_HOST, reply_host(self.api_url)) if h)  # response_urls' hosts
        self.listeners = Listeners(runtime, self.identity, config_users, self.oauth, self.installations, hosts)
        self.listeners.register(self.app)
        runtime.add_sender(PLATFORM, self.send)
        runtime.add_progress(PLATFORM, self.show_progress)

    # ------------------------------------------------------------------ sending

    async def _client_for(self, community_id: str) -> AsyncWebClient:
        if not self.oauth:
            return self.client
        enterprise = community_id.startswith("E")
        bot = await self.installations.async_find_bot(
            enterprise_id=community_id if enterprise else None,
            team_id=None if enterprise else community_id,
            is_enterprise_install=enterprise,
        )
        if bot is None or not bot.bot_token:
            raise SendFailed(f"not_installed: no installation for workspace {community_id}", permanent=True)
        return AsyncWebClient(token=bot.bot_token, base_url=self.api_url)

    async def send(self, channel: ChannelRef, card: Posted) -> str | None:
        """Post a card from the outbox; returns "CHANNEL:TS" or raises SendFailed."""
        client = await self._client_for(channel.community_id)
        try:
            return await self._send(client, channel.channel_id, card)
        except SlackApiError as exc:
            raise send_failed(exc) from exc
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise send_failed(exc) from exc

    async def _post(self, client: AsyncWebClient, channel_id: str, message: SlackMessage, **extra: Any) -> str:
        posted = await client.chat_postMessage(channel=channel_id, text=message.text, blocks=message.blocks, **extra)
        return f"{posted['channel']}:{posted['ts']}"

    async def _send(self, client: AsyncWebClient, channel_id: str, card: Posted) -> str | None:
        match card:
            case QuestionCard():
                if card.admin_note:
                    log.warning("round %s: %s", card.round_id, card.admin_note)
                return await self._post(client, channel_id, render.question(card))
            case RevealCard():
                return await self._reveal(client, channel_id, card)
            case LeaderboardCard():
                return await self._post(client, channel_id, render.leaderboard(card))
            case DemoResultCard():
                return await self._demo_result(client, channel_id, card)
            case DemoFailedCard():
                message = render.render(card)
                return await self._edit_or_post(client, channel_id, card.message_ref, message)
            case SuggestionDecided():  # to its author's messages with the app: channel_id is their user id
                return await self._post(client, channel_id, forms.author_notice(card))
        log.error("no Slack post for %s", type(card).__name__)
        return None

    async def _reveal(self, client: AsyncWebClient, channel_id: str, card: RevealCard) -> str:
        """Close the question in place (buttons gone, counts), then the reveal in its thread."""
        ref = split_ref(card.question_ref)
        if ref is None:
            return await self._post(client, channel_id, render.reveal(card))
        question_channel, ts = ref
        closed = render.closed_question(card)
        try:
            await client.chat_update(channel=question_channel, ts=ts, text=closed.text, blocks=closed.blocks)
        except SlackApiError as exc:
            if exc.response.get("error") not in ("message_not_found", "cant_update_message", "edit_window_closed"):
                raise
            log.info("could not close question %s in place: %s", card.question_ref, exc.response.get("error"))
        return await self._post(client, question_channel, render.reveal(card), thread_ts=ts)

    async def _edit_or_post(
        self, client: AsyncWebClient, channel_id: str, message_ref: str | None, message: SlackMessage
    ) -> str:
        ref = split_ref(message_ref)
        if ref is not None:
            try:
                await client.chat_update(channel=ref[0], ts=ref[1], text=message.text, blocks=message.blocks)
                return f"{ref[0]}:{ref[1]}"
            except SlackApiError as exc:
                if exc.response.get("error") not in ("message_not_found", "cant_update_message", "edit_window_closed"):
                    raise
        return await self._post(client, channel_id, message)

    async def _demo_result(self, client: AsyncWebClient, channel_id: str, card: DemoResultCard) -> str:
        ref = await self._edit_or_post(client, channel_id, card.message_ref, render.demo_result(card))
        # every chart in one upload, in the card's order: the memory timeline first
        charts = [c for c in card.pictures() if Path(c.path).is_file()]
        files = [{"file": c.path, "title": wording.chart_title(c.kind)} for c in charts]
        if files:
            where, _, ts = ref.partition(":")
            await client.files_upload_v2(channel=where, file_uploads=files, thread_ts=ts or None)
        return ref

    async def show_progress(self, card: DemoProgressCard) -> None:
        """A running demo's rows so far, edited into its queued message."""
        ref = split_ref(card.message_ref)
        if ref is None:
            return
        client = await self._client_for(card.channel.community_id)
        message = render.demo_progress(card)
        await client.chat_update(channel=ref[0], ts=ref[1], text=message.text, blocks=message.blocks)

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Serve until closed: Socket Mode with SLACK_APP_TOKEN, else HTTP on the port."""
        if self.settings.slack_app_token is not None and not self.oauth:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            self._socket = AsyncSocketModeHandler(self.app, self.settings.slack_app_token.get_secret_value())
            keep_secrets_out()  # Socket Mode's loggers exist now
            await self._socket.connect_async()
            log.info("slack: connected over Socket Mode")
        elif self.mounted:
            log.info("slack: %s served on the web page's port", EVENTS_PATH)
        else:
            await self.start_http(self.settings.host, self.settings.port)
        await self._stopped.wait()

    def http_routes(self) -> list[web.RouteDef]:
        """Bolt's HTTP routes (/slack/events; /slack/install and /slack/oauth_redirect with
        OAuth) for the web page's server to serve, so one port takes both; none over Socket
        Mode. Once taken, `run` starts no server of its own."""
        if self.settings.slack_app_token is not None and not self.oauth:
            return []
        self.mounted = True
        return self._routes()

    def _routes(self) -> list[web.RouteDef]:
        """Bolt's routes, its POST /slack/events behind the gate (bounded, parsed and verified
        before Bolt sees it: bot.platforms.slack.gate)."""
        bolt = self.app.web_app(path=EVENTS_PATH, port=self.settings.port)
        secret = self.settings.slack_signing_secret.get_secret_value() if self.settings.slack_signing_secret else ""
        events = gate(self.app, secret)
        routes = []
        for route in bolt.router.routes():
            if route.resource is None or route.method == "HEAD":
                continue
            path = route.resource.canonical
            handler = events if route.method == "POST" and path == EVENTS_PATH else same_site(route.handler)
            routes.append(web.route(route.method, path, handler))
        return routes

    async def start_http(self, host: str, port: int) -> int:
        """Serve /slack/events (and /slack/install, /slack/oauth_redirect with OAuth); returns the port."""
        hide_server_version()  # aiohttp's own 400s name no version
        keep_tokens_out_of_logs()  # a malformed request line is logged with its path and query
        keep_secrets_out_of_http_logs()  # ...which on this port may carry OAuth's code and state
        served = web.Application(middlewares=[security_headers])  # Server without a version, HSTS behind TLS
        served.add_routes(self._routes())
        # a half-sent request (or an idle keep-alive) is closed after the web page's timeout
        runner = web.AppRunner(served, access_log=None, keepalive_timeout=self.settings.web_keepalive_s)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        bound = [address for address in runner.addresses if isinstance(address, tuple)]
        self.port = int(bound[0][1]) if bound else port
        log.info("slack: serving HTTP on %s:%s%s", host, self.port, EVENTS_PATH)
        return self.port

    async def close(self) -> None:
        self._stopped.set()
        if self._socket is not None:
            await self._socket.close_async()
            self._socket = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def build_app(settings: Settings, runtime: Runtime) -> AsyncApp:
    """The Bolt app with every listener registered (its sender added to `runtime`)."""
    return SlackBot(settings, runtime).app


def attach(settings: Settings, runtime: Runtime) -> SlackBot:
    """The adapter for `studybot run slack|all` (bot.platforms.launch.serve)."""
    return SlackBot(settings, runtime)
