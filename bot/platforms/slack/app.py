"""The Slack adapter: Bolt's AsyncApp over Socket Mode or HTTP, one workspace (a bot token) or
many (OAuth installs kept in our database).

Thin by rule: each listener acks at once, then makes one `runtime.call(engine.method, ...)`
and lays the card out with `render`; a modal's submit (/suggest, the queue's note) is acked
with the engine's answer (a refused field under its input), within ACK_WITHIN. App Home is
published when the member opens it (app_home_opened, which Slack sends every time the tab is
opened) and after each of their scored answers: `engine.answer_with_home` returns the feedback
and the member's Home together, so an answer stays one engine call; Home is published after
the feedback is sent, and a failed publish is only logged. With a bot token (one
workspace), requests from any other workspace are ignored. Listeners catch their own
exceptions (a listener that raises after its ack makes Bolt drop the ack). The community is
the workspace the event belongs to (Bolt's context team id, or the enterprise id for an
org-wide install), never the clicking user's team, so Slack Connect members from another workspace answer in the host's
community. Channel posts (the daily round, reveals, leaderboards, demo results) come from the
outbox through `send`, which returns the message reference "CHANNEL:TS"."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.core import wording
from bot.core.errors import SendFailed
from bot.core.practice import QUEUE_PREFIX, decode_decision
from bot.core.values import (
    AnswerWithHome,
    ChannelRef,
    CommunityRef,
    DemoFailedCard,
    DemoProgressCard,
    DemoQueued,
    DemoResultCard,
    HomeCard,
    LeaderboardCard,
    Notice,
    Posted,
    Problem,
    QuestionCard,
    RevealCard,
    SuggestionDecided,
    SuggestionRefused,
    UserRef,
)
from bot.platforms.runtime import Runtime
from bot.platforms.slack import render
from bot.platforms.slack.render import ACTION_REVIEW, SUGGEST_VIEW, SlackMessage

log = logging.getLogger(__name__)

PLATFORM = "slack"
EVENTS_PATH = "/slack/events"
CONFIG_COMMAND = "/studybot-config"
# Everything the app registers; manifest.yml declares exactly these (a test checks both ways).
COMMANDS = (
    "/quiz",
    "/review",
    "/score",
    "/leaderboard",
    "/demo",
    "/forget-me",
    "/suggest",
    "/studybot-help",
    CONFIG_COMMAND,
)
EVENTS = ("message", "app_home_opened", "app_uninstalled", "tokens_revoked")
# Web API errors that trying again cannot fix: the post is given up where admins see it.
PERMANENT = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "missing_scope",
        "not_authed",
        "invalid_auth",
        "account_inactive",
        "token_revoked",
        "no_permission",
        "restricted_action",
        "team_access_not_granted",
        "ekm_access_denied",
        "msg_too_long",
        "invalid_blocks",
        "not_installed",
    }
)
_CHANNEL_MENTION = re.compile(r"^<#([CGD][A-Z0-9]{1,30})(\|[^>]*)?>$")
_QUEUE_BUTTON = re.compile("^" + re.escape(QUEUE_PREFIX))
_NOTE_VIEW = re.compile("^" + re.escape(QUEUE_PREFIX) + r"\d+:note$")
# Slack waits 3 s for a modal's answer; an engine answer later than this closes the modal
# and goes to the member's messages with the app instead.
ACK_WITHIN = 2.5
_SEEN_EVENTS = 4096
_NAMES = 4096


def send_failed(exc: Exception) -> SendFailed:
    """What a failed Web API call means for the outbox: permanent, rate-limited or transient."""
    if isinstance(exc, SlackApiError):
        response = exc.response
        error = str(response.get("error") or f"HTTP {response.status_code}")
        if error == "ratelimited" or response.status_code == 429:
            retry_after = response.headers.get("Retry-After") or response.headers.get("retry-after")
            try:
                seconds = float(retry_after) if retry_after is not None else None
            except ValueError:
                seconds = None
            return SendFailed("ratelimited", retry_after=seconds)
        return SendFailed(error, permanent=error in PERMANENT)
    return SendFailed(f"{type(exc).__name__}: {exc}")  # network, timeout, 5xx without a body


def split_ref(ref: str | None) -> tuple[str, str] | None:
    """A message reference "CHANNEL:TS" as (channel, ts)."""
    if not ref or ":" not in ref:
        return None
    channel, _, ts = ref.partition(":")
    return (channel, ts) if channel and ts else None


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


class DropMalformed(AsyncMiddleware):
    """A click whose payload lacks its actions fails inside Bolt's own argument building (for
    any function listener or middleware): answer 200, log it, go no further. A class
    middleware is called without that argument building."""

    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Callable[[], Awaitable[BoltResponse]]
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

    def __init__(self, bot: SlackBot) -> None:
        self.bot = bot

    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Callable[[], Awaitable[BoltResponse]]
    ) -> BoltResponse:
        team, enterprise = req.context.team_id, req.context.enterprise_id
        if not team and not enterprise:  # url_verification, ssl_check: no workspace to check
            return await next()
        ours = await self.bot.own_workspace()
        if ours is None:  # auth.test failed: Bolt's own authorization answers the request
            return await next()
        our_team, our_enterprise = ours
        body = req.body if isinstance(req.body, dict) else {}
        authorized = {a.get("team_id") for a in body.get("authorizations") or [] if isinstance(a, dict)}
        if team == our_team or (enterprise and enterprise == our_enterprise) or our_team in authorized:
            return await next()
        log.info("ignored a request from workspace %s (this bot serves %s)", team or enterprise, our_team)
        return BoltResponse(status=200, body="")


class SlackBot:
    """The Slack platform for one process: the Bolt app, its listeners and the outbox sender."""

    def __init__(self, settings: Settings, runtime: Runtime) -> None:
        self.settings = settings
        self.runtime = runtime
        self.engine = runtime.engine
        self.api_url = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
        self.config_users = frozenset(u.strip() for u in settings.slack_config_users.split(",") if u.strip())
        self.oauth = settings.slack_client_id is not None and settings.slack_client_secret is not None
        self.installations: Any = None
        self._seen: OrderedDict[str, None] = OrderedDict()
        self._names: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._runner: web.AppRunner | None = None
        self._own: tuple[str, str | None] | None = None
        self._socket: Any = None
        self._stopped = asyncio.Event()
        self.port: int | None = None  # the bound port once serving HTTP
        signing_secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
        if self.oauth:
            from bot.platforms.slack.oauth import oauth_settings
            from bot.store.database import Database

            self._db = Database(settings.database_url)
            oauth, self.installations = oauth_settings(settings, self._db.writer)
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
        self._register()
        runtime.add_sender(PLATFORM, self.send)
        runtime.add_progress(PLATFORM, self.show_progress)

    # ------------------------------------------------------------------ identity

    async def own_workspace(self) -> tuple[str, str | None] | None:
        """(team id, enterprise id) of the bot token's workspace (auth.test, asked once)."""
        if self._own is None:
            try:
                auth = await self.client.auth_test()
            except Exception as exc:
                log.warning("auth.test failed: %s", exc)
                return None
            self._own = (str(auth.get("team_id") or ""), auth.get("enterprise_id") or None)
        return self._own

    @staticmethod
    def community_id(context: Any) -> str:
        """The workspace the event belongs to (not the acting user's team)."""
        return str(context.get("team_id") or context.get("enterprise_id") or "")

    def _user(self, context: Any, user_id: str, name: str | None) -> UserRef:
        community = self.community_id(context)
        if name:
            self._remember(community, user_id, name)
        return UserRef(PLATFORM, community, user_id, name or user_id)

    def _remember(self, community: str, user_id: str, name: str) -> None:
        self._names[(community, user_id)] = name
        self._names.move_to_end((community, user_id))
        while len(self._names) > _NAMES:
            self._names.popitem(last=False)

    async def _name(self, client: AsyncWebClient, community: str, user_id: str) -> str:
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
        except Exception as exc:
            log.info("users.info for %s failed: %s", user_id, exc)
            return user_id
        self._remember(community, user_id, str(name))
        return str(name)

    def _first_time(self, body: dict[str, Any]) -> bool:
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

    # ----------------------------------------------------------------- listeners

    def _register(self) -> None:
        app = self.app
        app.use(DropMalformed())
        if not self.oauth:
            app.use(OwnWorkspaceOnly(self))
        for name in COMMANDS:
            app.command(name)(self._command)
        app.action(ACTION_REVIEW)(self._home_review)
        app.action(_QUEUE_BUTTON)(self._queue_click)  # the admins' queue, before the catch-all
        app.view(SUGGEST_VIEW)(self._suggest_submit)
        app.view(_NOTE_VIEW)(self._note_submit)
        app.action(re.compile(".*"))(self._click)  # every other action: decoded strictly by the engine
        app.event("message")(self._message)
        app.event("app_home_opened")(self._home_opened)
        app.event("app_uninstalled")(self._uninstalled)
        app.event("tokens_revoked")(self._uninstalled)

    async def _guard(self, what: str, work: Callable[[], Awaitable[None]], reply: Any = None) -> None:
        """Run a listener's work after its ack; log a failure and tell a waiting user."""
        try:
            await work()
        except Exception as exc:
            incident = uuid.uuid4().hex[:8]
            log.exception("slack %s failed (incident %s)", what, incident)
            if reply is not None:
                try:
                    busy = isinstance(exc, SlackApiError) and send_failed(exc).reason == "ratelimited"
                    await reply(wording.PLATFORM_BUSY if busy else wording.BUG.format(incident=incident))
                except Exception:
                    log.warning("telling the user about a failed %s failed too", what, exc_info=True)

    async def _command(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        await ack()

        async def reply(text: str) -> None:
            await respond(text=text, response_type="ephemeral")

        await self._guard(
            body.get("command", "command"), lambda: self._run_command(body, context, respond, client), reply
        )

    async def _run_command(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        command = str(body.get("command", ""))
        text = str(body.get("text") or "").strip()
        user = self._user(context, str(body.get("user_id", "")), body.get("user_name"))
        channel = ChannelRef(PLATFORM, user.community_id, str(body.get("channel_id", "")))
        community = CommunityRef(PLATFORM, user.community_id)
        call = self.runtime.call
        engine = self.engine
        card: object
        if command == "/quiz":
            card = await call(engine.quiz, user, channel, text or None)
        elif command == "/review":
            card = await call(engine.review, user, channel)
        elif command == "/score":
            card = await call(engine.score, user)
        elif command == "/leaderboard":
            card = await call(engine.leaderboard_for, community, text or None)
        elif command == "/forget-me":
            card = await call(engine.forget_me, user, text.lower() == "confirm")
        elif command == "/demo":
            card = await call(engine.request_demo, user, channel, text)
            if isinstance(card, DemoQueued):
                await self._post_queued(client, channel, card, respond)
                return
        elif command == "/suggest":  # the form; its submit is the one engine call
            await client.views_open(trigger_id=body.get("trigger_id"), view=render.suggest_modal(channel.channel_id))
            return
        elif command == CONFIG_COMMAND:
            words = text.split(maxsplit=1)
            key = words[0] if words else "show"
            value = config_value(key, words[1] if len(words) > 1 else "", channel.channel_id)
            if key.lower() != "show" and not await self._may_configure(client, user.user_id):
                await respond(text=wording.config_admins_only(CONFIG_COMMAND), response_type="ephemeral")
                return
            card = await call(engine.configure, community, key, value or None)
            if isinstance(card, QuestionCard):  # post-now: the question itself comes through the outbox
                await respond(text=wording.daily_opened(card), response_type="ephemeral")
                return
            if isinstance(card, SuggestionDecided):  # approve|note|reject N typed
                message = render.render(card)
                await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
                if not await self._tell_author(client, card):
                    await respond(text=wording.AUTHOR_DMS_CLOSED, response_type="ephemeral")
                return
        else:  # /studybot-help
            message = render.help_message(CONFIG_COMMAND)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
            return
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")

    async def _may_configure(self, client: Any, user_id: str) -> bool:
        """Workspace admins and owners (users.info), and the members the operator allowed."""
        if user_id in self.config_users:
            return True
        info = await client.users_info(user=user_id)
        user = info.get("user") or {}
        return bool(user.get("is_admin") or user.get("is_owner") or user.get("is_primary_owner"))

    # ------------------------------------------------------- members' questions

    async def _queue_click(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        await ack()

        async def reply(text: str) -> None:
            await respond(text=text, response_type="ephemeral", replace_original=False)

        await self._guard("queue click", lambda: self._decide_click(body, context, respond, client), reply)

    async def _decide_click(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        """An admin's approve or reject (one engine call), or the note button's form."""
        who = body.get("user") or {}
        user = self._user(context, str(who.get("id", "")), who.get("name") or who.get("username"))
        action_id = str((body.get("actions") or [{}])[0].get("action_id", ""))
        if not await self._may_configure(client, user.user_id):
            await respond(
                text=wording.config_admins_only(CONFIG_COMMAND), response_type="ephemeral", replace_original=False
            )
            return
        decoded = decode_decision(action_id)
        if decoded is not None and decoded[1] == "note":
            await client.views_open(trigger_id=body.get("trigger_id"), view=render.note_modal(action_id))
            return
        card = await self.runtime.call(self.engine.decide_button, CommunityRef(PLATFORM, user.community_id), action_id)
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)
        if isinstance(card, SuggestionDecided) and not await self._tell_author(client, card):
            await respond(text=wording.AUTHOR_DMS_CLOSED, response_type="ephemeral", replace_original=False)

    @staticmethod
    def _direct(client: Any, user_id: str) -> Callable[[str], Awaitable[None]]:
        """A text to a member's messages with the app (a modal has no response_url)."""

        async def send(text: str) -> None:
            await client.chat_postMessage(channel=user_id, text=text)

        return send

    async def _tell_author(self, client: Any, card: SuggestionDecided) -> bool:
        """The author hears the decision in their messages with the app (not retried: logged);
        False when that failed, for the admin to know."""
        if card.author is None:
            return True  # forgotten: nobody to tell
        message = render.author_notice(card)
        try:
            await client.chat_postMessage(channel=card.author.user_id, text=message.text, blocks=message.blocks)
        except SlackApiError as exc:
            log.info("telling the author of suggestion %s failed: %s", card.suggestion_id, exc.response.get("error"))
            return False
        return True

    async def _suggest_submit(
        self, ack: Any, body: dict[str, Any], context: Any, client: Any, view: dict[str, Any]
    ) -> None:
        who = body.get("user") or {}
        user = self._user(context, str(who.get("id", "")), who.get("name") or who.get("username"))
        channel = ChannelRef(PLATFORM, user.community_id, str(view.get("private_metadata") or user.user_id))
        form = render.suggestion_form(view)

        async def work() -> None:
            call = self.runtime.call(self.engine.suggest, user, channel, form)
            await self._answer_view(ack, client, user.user_id, wording.SUGGEST_TITLE, call)

        await self._guard("suggest", work, self._direct(client, user.user_id))

    async def _note_submit(
        self, ack: Any, body: dict[str, Any], context: Any, client: Any, view: dict[str, Any]
    ) -> None:
        who = body.get("user") or {}
        user = self._user(context, str(who.get("id", "")), who.get("name") or who.get("username"))
        note = render.view_values(view).get(render.NOTE_BLOCK, "")
        note_id = str(view.get("callback_id", ""))

        async def decide() -> object:
            if not await self._may_configure(client, user.user_id):
                return Notice(wording.config_admins_only(CONFIG_COMMAND))
            community = CommunityRef(PLATFORM, user.community_id)
            return await self.runtime.call(self.engine.decide_button, community, note_id, note)

        async def work() -> None:
            card = await self._answer_view(ack, client, user.user_id, wording.NOTE_TITLE, decide())
            if isinstance(card, SuggestionDecided) and not await self._tell_author(client, card):
                await self._direct(client, user.user_id)(wording.AUTHOR_DMS_CLOSED)

        await self._guard("note", work, self._direct(client, user.user_id))

    async def _answer_view(self, ack: Any, client: Any, user_id: str, title: str, call: Awaitable[object]) -> object:
        """Answer a modal's submit with the engine's card as the ack: a refusal under its
        inputs (response_action "errors"), else the modal updated with the answer. Later than
        ACK_WITHIN, the modal is closed and the answer goes to the member's messages with the app."""
        task = asyncio.ensure_future(call)
        try:
            card = await asyncio.wait_for(asyncio.shield(task), ACK_WITHIN)
        except TimeoutError:
            await ack()
            card = await task
            message = render.render(card)
            await client.chat_postMessage(channel=user_id, text=message.text, blocks=message.blocks)
            return card
        except Exception:
            await ack()  # the modal closes; the guard logs it and tells the member
            raise
        if isinstance(card, SuggestionRefused):
            await ack(response_action="errors", errors=render.field_errors(card))
        else:
            await ack(response_action="update", view=render.answer_view(title, render.render(card)))
        return card

    async def _post_queued(self, client: Any, channel: ChannelRef, card: DemoQueued, respond: Any) -> None:
        """A queued demo gets a channel message that its progress and result edit in place."""
        message = render.render(card)
        try:
            posted = await client.chat_postMessage(channel=channel.channel_id, text=message.text, blocks=message.blocks)
        except SlackApiError as exc:
            log.info("posting demo %s in %s failed: %s", card.job_id, channel.channel_id, exc.response.get("error"))
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
            return
        await self.runtime.call(self.engine.demo_message, card.job_id, f"{posted['channel']}:{posted['ts']}")

    async def _click(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        await ack()

        async def reply(text: str) -> None:
            await respond(text=text, response_type="ephemeral", replace_original=False)

        await self._guard("click", lambda: self._answer_click(body, context, respond, client), reply)

    async def _answer_click(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        actions = body.get("actions") or []
        if not actions:
            log.info("a block_actions payload without actions")
            return
        who = body.get("user") or {}
        user = self._user(context, str(who.get("id", "")), who.get("name") or who.get("username"))
        answered = await self.runtime.call(self.engine.answer_with_home, user, str(actions[0].get("action_id", "")))
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
            await self._refresh_home(client, user.user_id, answered.home)

    async def _home_review(self, ack: Any, body: dict[str, Any], context: Any, client: Any) -> None:
        await ack()
        await self._guard("home review", lambda: self._start_review(body, context, client))

    async def _start_review(self, body: dict[str, Any], context: Any, client: Any) -> None:
        who = body.get("user") or {}
        user = self._user(context, str(who.get("id", "")), who.get("name") or who.get("username"))
        # The review is a private round in the member's messages with the app.
        channel = ChannelRef(PLATFORM, user.community_id, user.user_id)
        card = await self.runtime.call(self.engine.review, user, channel)
        message = render.render(card)
        await client.chat_postMessage(channel=user.user_id, text=message.text, blocks=message.blocks)

    async def _message(self, ack: Any, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        await ack()
        await self._guard("message", lambda: self._answer_text(body, event, context, client))

    async def _answer_text(self, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any) -> None:
        # Answers are replies in the thread of a daily round's question, and answer THAT round
        # (by the question post's reference), whatever practice question the member has pending.
        # Anything else in a channel is chat. The event id is noted in the database by the
        # engine, so a retry Slack sends after a restart is not answered again.
        if event.get("subtype") or event.get("bot_id") or not event.get("thread_ts") or not event.get("user"):
            return
        if event.get("thread_ts") == event.get("ts") or not self._first_time(body):
            return
        community = self.community_id(context)
        user_id = str(event["user"])
        channel_id = str(event.get("channel", ""))
        name = await self._name(client, community, user_id)
        user = UserRef(PLATFORM, community, user_id, name)
        question_ref = f"{channel_id}:{event['thread_ts']}"
        event_id = str(body["event_id"]) if body.get("event_id") else None
        text = str(event.get("text") or "")
        answered = await self.runtime.call(
            self.engine.answer_with_home, user, thread=question_ref, text=text, event_id=event_id
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
            await self._refresh_home(client, user_id, answered.home)

    async def _home_opened(
        self, ack: Any, body: dict[str, Any], event: dict[str, Any], context: Any, client: Any
    ) -> None:
        await ack()
        if event.get("tab", "home") != "home" or not self._first_time(body):
            return
        user = UserRef(PLATFORM, self.community_id(context), str(event.get("user", "")), f"<@{event.get('user')}>")
        await self._guard("app home", lambda: self._publish_home(client, user))

    async def _publish_home(self, client: Any, user: UserRef) -> None:
        """Publish the member's App Home when they open it (one engine call)."""
        card = await self.runtime.call(self.engine.home, user)
        if isinstance(card, Problem):
            log.info("no App Home for %s: %s", user.user_id, card.text)
            return
        await client.views_publish(user_id=user.user_id, view=render.home(card))

    async def _refresh_home(self, client: Any, user_id: str, card: HomeCard) -> None:
        """The Home an answer came back with, published after its feedback was sent: a failure
        is logged, the feedback is already with the member and the next opening publishes it."""
        try:
            await client.views_publish(user_id=user_id, view=render.home(card))
        except Exception as exc:
            log.info("publishing the App Home of %s after an answer failed: %s", user_id, exc)

    async def _uninstalled(self, ack: Any, body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        await ack()
        await self._guard("uninstall", lambda: self._pause(body, event, context))

    async def _pause(self, body: dict[str, Any], event: dict[str, Any], context: Any) -> None:
        if event.get("type") == "tokens_revoked" and not (event.get("tokens") or {}).get("bot"):
            return  # only user tokens went: the bot still works
        community = CommunityRef(PLATFORM, self.community_id(context))
        card = await self.runtime.call(self.engine.configure, community, "pause")
        log.info("slack workspace %s uninstalled the app: paused (%s)", community.community_id, type(card).__name__)
        if self.installations is not None:
            await self.installations.async_delete_all(
                enterprise_id=context.get("enterprise_id"), team_id=context.get("team_id")
            )

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
        if card.chart and Path(card.chart).is_file():
            where, _, ts = ref.partition(":")
            await client.files_upload_v2(
                channel=where, file=card.chart, title=wording.DEMO_CHART_TITLE, thread_ts=ts or None
            )
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
            await self._socket.connect_async()
            log.info("slack: connected over Socket Mode")
        else:
            await self.start_http(self.settings.host, self.settings.port)
        await self._stopped.wait()

    async def start_http(self, host: str, port: int) -> int:
        """Serve /slack/events (and /slack/install, /slack/oauth_redirect with OAuth); returns the port."""
        runner = web.AppRunner(self.app.web_app(path=EVENTS_PATH, port=port), access_log=None)
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
        if self.oauth:
            self._db.dispose()


def build_app(settings: Settings, runtime: Runtime) -> AsyncApp:
    """The Bolt app with every listener registered (its sender added to `runtime`)."""
    return SlackBot(settings, runtime).app


def attach(settings: Settings, runtime: Runtime) -> SlackBot:
    """The adapter for `studybot run slack|all` (bot.platforms.launch.serve)."""
    return SlackBot(settings, runtime)
