"""Slack's listeners: each acks at once, then makes one `runtime.call(engine.method, ...)` and
lays the card out with `render`.

Slash commands parse their text through the shared text-command table (bot.platforms.commands),
so they ask the engine what Discord's slash commands and the console's lines ask; around it stay
Slack's own parts: a `<#C..|name>` channel mention, the admin check, the /suggest modal. A
modal's submit (/suggest, the queue's note) is acked with the engine's answer (a refused field
under its input), within ACK_WITHIN. A click or select whose id the bot cannot decode (an older
release's message, a hand-made id) gets wording.STALE_BUTTON privately, logged at debug. App
Home is published when the member opens it and after each of their scored answers
(`engine.answer_with_home`: one engine call). Listeners catch their own exceptions (a listener
that raises after its ack makes Bolt drop the ack): a failure is logged under an incident id
(bridge.report_incident) and the member told wording.BUG with it. The community is the
workspace the event belongs to, never the clicking user's team, so Slack Connect members from
another workspace answer in the host's community."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError

from bot import anki
from bot.bridge import report_incident
from bot.core import choices as codec
from bot.core import wording
from bot.core.confidence import CONFIDENCE_PREFIX, decode_confidence
from bot.core.demo_request import DEMO_BUTTON_PREFIX, decode_demo_button
from bot.core.guesses import GUESS_PREFIX, decode_guess
from bot.core.practice import QUEUE_PREFIX, decode_decision
from bot.core.records import OpenedView
from bot.core.values import (
    AnkiDeck,
    AnswerWithHome,
    Card,
    ChannelRef,
    CommunityRef,
    DemoQueued,
    HomeCard,
    Notice,
    Problem,
    QuestionCard,
    SuggestionDecided,
    SuggestionRefused,
    UserRef,
)
from bot.platforms import commands
from bot.platforms.in_flight import InFlight
from bot.platforms.runtime import Runtime
from bot.platforms.slack import render
from bot.platforms.slack.errors import is_ratelimited
from bot.platforms.slack.identity import PLATFORM, Identity
from bot.platforms.slack.middleware import DropMalformed, OwnWorkspaceOnly
from bot.platforms.slack.render import ACTION_REVIEW, SUGGEST_VIEW

log = logging.getLogger(__name__)

CONFIG_COMMAND = "/studybot-config"
HELP_COMMAND = "/studybot-help"
# Slack's name for each command of the shared table (the table's own name where not listed).
SLACK_NAMES = {"config": CONFIG_COMMAND, "help": HELP_COMMAND}
TABLE_NAMES = {f"/{c.name}" if c.name not in SLACK_NAMES else SLACK_NAMES[c.name]: c.name for c in commands.TABLE}
# Everything the app registers; manifest.yml declares exactly these (a test checks both ways).
COMMANDS = tuple(slack for slack, name in TABLE_NAMES.items() if commands.lookup(name, PLATFORM) is not None)
EVENTS = ("message", "app_home_opened", "app_uninstalled", "tokens_revoked")
_CHANNEL_MENTION = re.compile(r"^<#([CGD][A-Z0-9]{1,30})(\|[^>]*)?>$")
_QUEUE_BUTTON = re.compile("^" + re.escape(QUEUE_PREFIX))
_NOTE_VIEW = re.compile("^" + re.escape(QUEUE_PREFIX) + r"[0-9]+:note$")
# Slack waits 3 s for a modal's answer; an engine answer later than this closes the modal
# and goes to the member's messages with the app instead.
ACK_WITHIN = 2.5
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
        self.runtime = runtime
        self.engine = runtime.engine
        self.identity = identity
        self.config_users = config_users
        self.oauth = oauth
        self.installations = installations
        self.reply_hosts = reply_hosts  # where a stored response_url may point (reply_host)
        self._handling = InFlight()  # listeners' work after their ack

    def register(self, app: AsyncApp) -> None:
        app.use(DropMalformed())
        if not self.oauth:
            app.use(OwnWorkspaceOnly(self.identity))
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
        async with self._handling.track():
            try:
                await work()
            except Exception as exc:
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

    async def _command(self, ack: Any, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        await ack()

        async def reply(text: str) -> None:
            await respond(text=render.escape(text), response_type="ephemeral")

        await self._guard(
            body.get("command", "command"), lambda: self._run_command(body, context, respond, client), reply
        )

    async def _run_command(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        command = str(body.get("command", ""))
        text = str(body.get("text") or "").strip()
        user = self.identity.user(context, str(body.get("user_id", "")), body.get("user_name"))
        channel = ChannelRef(PLATFORM, user.community_id, str(body.get("channel_id", "")))
        name = TABLE_NAMES.get(command, "help")
        if name == "suggest":  # the form, noted as opened by the bot (a submission of any other is refused)
            view_id = render.new_view_id()
            await self.runtime.call(self.engine.view_opened, user, view_id, SUGGEST_VIEW)
            view = render.suggest_modal(channel.channel_id, view_id)
            await client.views_open(trigger_id=body.get("trigger_id"), view=view)
            return
        admin = False
        if name == "config":  # Slack's own parts around the table: a channel mention, the admin check
            key, _, value = text.partition(" ")
            text = f"{key} {config_value(key, value, channel.channel_id)}".strip()
            admin = await self._may_configure(client, user.user_id)
            if key.lower() not in ("", "show") and not admin:  # an admin link they had stops opening
                refused = await self.runtime.call(
                    self.engine.config_refused, user, wording.config_admins_only(CONFIG_COMMAND)
                )
                message = render.render(refused)
                await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
                return
        # a member who may only look sees the settings; the engine leaves the admin link out
        asked = commands.ask(name, commands.Where(user, channel, admin), text)
        if asked is None:  # /studybot-help
            message = render.help_message(CONFIG_COMMAND)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")
            return
        card = await self.runtime.call(getattr(self.engine, asked.method), *asked.args)
        if isinstance(card, DemoQueued):
            await self._post_queued(client, channel, card, respond)
            return
        if isinstance(card, QuestionCard) and card.kind == "daily":  # post-now: the question is a channel post
            await respond(text=render.escape(wording.daily_opened(card)), response_type="ephemeral")
            return
        if isinstance(card, AnkiDeck):  # /review export: the file first, in the member's messages with the app
            await self._send_deck(client, user, card)
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral")

    @staticmethod
    async def _send_deck(client: Any, user: UserRef, card: AnkiDeck) -> None:
        """The .apkg in the member's messages with the app (a file shared in a channel is public).
        files.completeUploadExternal takes a conversation's id, not a user's: a message posted to
        the user id first answers with that conversation's id."""
        data = await asyncio.to_thread(anki.package, card)
        text = wording.anki_attached(card.kind, len(card.notes))
        posted = await client.chat_postMessage(channel=user.user_id, text=render.escape(text))
        where = str(posted["channel"])
        await client.files_upload_v2(channel=where, file=data, filename=card.filename, title=card.filename)

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
            await respond(text=render.escape(text), response_type="ephemeral", replace_original=False)

        await self._guard("queue click", lambda: self._decide_click(body, context, respond, client), reply)

    async def _decide_click(self, body: dict[str, Any], context: Any, respond: Any, client: Any) -> None:
        """An admin's approve or reject (one engine call), or the note button's form."""
        user = self.identity.actor(context, body)
        action = (body.get("actions") or [{}])[0]
        action_id = str(action.get("action_id", ""))
        decoded = decode_decision(action_id)
        if decoded is None:
            await self._stale(respond, action)
            return
        if not await self._may_configure(client, user.user_id):
            refused = render.escape(wording.config_admins_only(CONFIG_COMMAND))
            await respond(text=refused, response_type="ephemeral", replace_original=False)
            return
        if decoded[1] == "note":  # the form, noted with the queue message's response_url (a Slack host's)
            queue_url = str(body.get("response_url") or "")
            reply_to = queue_url if may_reply_to(queue_url, self.reply_hosts) else None
            view_id = render.new_view_id()
            await self.runtime.call(self.engine.view_opened, user, view_id, action_id, reply_to)
            await client.views_open(trigger_id=body.get("trigger_id"), view=render.note_modal(action_id, view_id))
            return
        card = await self.runtime.call(self.engine.decide_button, CommunityRef(PLATFORM, user.community_id), action_id)
        if isinstance(card, SuggestionDecided):  # the queue's message redrawn: no live button for a decided one
            message = render.decided_queue(card)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=True)
        else:
            message = render.render(card)
            await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    @staticmethod
    def _direct(client: Any, user_id: str) -> Callable[[str], Awaitable[None]]:
        """A text to a member's messages with the app (a modal has no response_url)."""

        async def send(text: str) -> None:
            await client.chat_postMessage(channel=user_id, text=render.escape(text))

        return send

    async def _suggest_submit(
        self, ack: Any, body: dict[str, Any], context: Any, client: Any, view: dict[str, Any]
    ) -> None:
        user = self.identity.actor(context, body)
        channel = ChannelRef(PLATFORM, user.community_id, str(view.get("private_metadata") or user.user_id))
        form = render.suggestion_form(view)

        async def work() -> None:
            if await self._not_opened(ack, user, view, "prompt"):
                return
            call = self.runtime.call(self.engine.suggest, user, channel, form)
            await self._answer_view(ack, client, user.user_id, wording.SUGGEST_TITLE, call)

        await self._guard("suggest", work, self._direct(client, user.user_id))

    async def _note_submit(
        self, ack: Any, body: dict[str, Any], context: Any, client: Any, view: dict[str, Any]
    ) -> None:
        user = self.identity.actor(context, body)
        note = render.view_values(view).get(render.NOTE_BLOCK, "")
        note_id = str(view.get("callback_id", ""))

        async def decide() -> Card:
            if not await self._may_configure(client, user.user_id):
                return Notice(wording.config_admins_only(CONFIG_COMMAND))
            community = CommunityRef(PLATFORM, user.community_id)
            return await self.runtime.call(self.engine.decide_button, community, note_id, note)

        async def work() -> None:
            view_id = str(view.get("external_id") or "")  # the id the bot gave the view it opened
            opened = await self.runtime.call(self.engine.view_submitted, user, view_id, note_id)
            if not isinstance(opened, OpenedView):  # None, or a Problem: refused either way
                await ack(response_action="errors", errors={render.NOTE_BLOCK: wording.FORM_NOT_OURS})
                return
            card = await self._answer_view(ack, client, user.user_id, wording.NOTE_TITLE, decide())
            queue_url = opened.reply_url or ""  # noted when the bot opened the form; never the view's metadata
            if isinstance(card, SuggestionDecided) and may_reply_to(queue_url, self.reply_hosts):
                await self._redraw_queue(queue_url, card)

        await self._guard("note", work, self._direct(client, user.user_id))

    async def _not_opened(self, ack: Any, user: UserRef, view: dict[str, Any], block: str) -> bool:
        """True (and the submission refused under `block`) for a view the bot did not open for `user`."""
        opened = await self.runtime.call(
            self.engine.view_submitted, user, str(view.get("external_id", "")), str(view.get("callback_id", ""))
        )
        if not isinstance(opened, OpenedView):  # None, or a Problem: refused either way
            await ack(response_action="errors", errors={block: wording.FORM_NOT_OURS})
            return True
        return False

    @staticmethod
    async def _redraw_queue(queue_url: str, card: SuggestionDecided) -> None:
        """The queue message a note button was on, redrawn through its response_url (kept in
        the note form's private_metadata); a failure is logged: the decision stands."""
        message = render.decided_queue(card)
        try:
            await AsyncRespond(response_url=queue_url)(
                text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=True
            )
        except Exception:
            log.info("redrawing the queue after suggestion %s failed", card.suggestion_id, exc_info=True)

    async def _answer_view(self, ack: Any, client: Any, user_id: str, title: str, call: Awaitable[Card]) -> Card:
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
            await respond(text=render.escape(text), response_type="ephemeral", replace_original=False)

        try:
            await self._guard("click", lambda: self._answer_click(body, context, respond, client, ack_once), reply)
        finally:
            await ack_once()

    async def _answer_click(
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
            await self._demo_click(body, context, respond, client, actions[0])
            return
        if action_id.startswith(CONFIDENCE_PREFIX):
            await self._confidence_click(body, context, respond, actions[0])
            return
        if action_id.startswith(GUESS_PREFIX):
            await self._guess_click(body, context, respond, actions[0])
            return
        if codec.decode_answer(action_id) is None:
            await self._stale(respond, actions[0])
            return
        user = self.identity.actor(context, body)
        call = asyncio.ensure_future(self.runtime.call(self.engine.answer_with_home, user, action_id))
        try:  # the answer stored before the 200, unless the store is slower than Slack waits
            await asyncio.wait_for(asyncio.shield(call), ACK_WITHIN)
        except TimeoutError:
            log.info("an answer took over %.1f s to store: acked before it was", ACK_WITHIN)
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
            await self._refresh_home(client, user.user_id, answered.home)

    async def _demo_click(
        self, body: dict[str, Any], context: Any, respond: Any, client: Any, action: dict[str, Any]
    ) -> None:
        """The "see it run" button under a reveal: the question's demo queued for the member who clicked (one
        engine call), posted in the channel like /demo's; a refusal (cooldown, full queue) privately."""
        round_id = decode_demo_button(action.get("action_id"))
        if round_id is None:
            await self._stale(respond, action)
            return
        user = self.identity.actor(context, body)
        channel = ChannelRef(PLATFORM, user.community_id, str((body.get("channel") or {}).get("id") or ""))
        card = await self.runtime.call(self.engine.request_question_demo, user, channel, round_id)
        if isinstance(card, DemoQueued):
            await self._post_queued(client, channel, card, respond)
            return
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    async def _guess_click(self, body: dict[str, Any], context: Any, respond: Any, action: dict[str, Any]) -> None:
        """A guess on a queued checkpoint demo: one engine call, answered privately."""
        if decode_guess(action.get("action_id")) is None:
            await self._stale(respond, action)
            return
        user = self.identity.actor(context, body)
        card = await self.runtime.call(self.engine.guess_button, user, str(action.get("action_id")))
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    async def _confidence_click(self, body: dict[str, Any], context: Any, respond: Any, action: dict[str, Any]) -> None:
        """Sure / Unsure under an answer's feedback: recorded once (one engine call), answered
        privately through the click's response_url; a second press is told the first one stands."""
        action_id = str(action.get("action_id") or "")
        if decode_confidence(action_id) is None:
            await self._stale(respond, action)
            return
        card = await self.runtime.call(self.engine.confidence_button, self.identity.actor(context, body), action_id)
        message = render.render(card)
        await respond(text=message.text, blocks=message.blocks, response_type="ephemeral", replace_original=False)

    @staticmethod
    async def _stale(respond: Any, action: dict[str, Any]) -> None:
        """A click or select whose id the engine cannot decode: one private sentence."""
        log.debug("a %s with an id this bot cannot read: %.80r", action.get("type", "action"), action.get("action_id"))
        await respond(text=render.escape(wording.STALE_BUTTON), response_type="ephemeral", replace_original=False)

    async def _home_review(self, ack: Any, body: dict[str, Any], context: Any, client: Any) -> None:
        await ack()
        await self._guard("home review", lambda: self._start_review(body, context, client))

    async def _start_review(self, body: dict[str, Any], context: Any, client: Any) -> None:
        user = self.identity.actor(context, body)
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
        if event.get("thread_ts") == event.get("ts") or not self.identity.first_time(body):
            return
        community = self.identity.community_id(context)
        user_id = str(event["user"])
        channel_id = str(event.get("channel", ""))
        name = await self.identity.name(client, community, user_id)
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
        if event.get("tab", "home") != "home" or not self.identity.first_time(body):
            return
        user = UserRef(
            PLATFORM, self.identity.community_id(context), str(event.get("user", "")), f"<@{event.get('user')}>"
        )
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
        community = CommunityRef(PLATFORM, self.identity.community_id(context))
        card = await self.runtime.call(self.engine.bot_removed, community)
        log.info("slack workspace %s uninstalled the app: paused (%s)", community.community_id, type(card).__name__)
        if self.installations is not None:
            await self.installations.async_delete_all(
                enterprise_id=context.get("enterprise_id"), team_id=context.get("team_id")
            )
