"""A fake Slack on 127.0.0.1: the Web API (GET and POST, query strings, forms and JSON, as
slack_sdk sends them), response_url endpoints, the upload URL of files_upload_v2, the OAuth
code exchange, and a Socket Mode websocket that pushes envelopes and records the acks.

It behaves like Slack where the adapter depends on it: tokens are checked, a bot posts only in
channels it is a member of (not_in_channel) that exist (channel_not_found), Block Kit limits
are enforced (50 blocks, 3000 characters a section, 255 an action_id, 75 a button label), and
a rate limit answers 429 with Retry-After. Every call is recorded; tests assert on them.

Every blocks array, view and ack also goes through slack_sdk's Block Kit models, and every
method must be one AsyncWebClient has (tests/contract/slack_models.py); what they refuse lands
in `contract_violations` and fails the test (tests/conftest.py)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import re
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from aiohttp import WSMsgType, web

from tests.contract import ledger
from tests.contract.slack_models import check_ack, check_blocks, check_method, check_view, web_api_methods

MESSAGE_METHODS = ("chat.postMessage", "chat.postEphemeral", "chat.update", "chat.scheduleMessage")
VIEW_METHODS = ("views.publish", "views.open", "views.update", "views.push")
_CONVERSATION_ID = re.compile(r"^[CGDZ][A-Z0-9]+$")


@dataclass
class Call:
    method: str  # "chat.postMessage", "response_url", "upload"
    params: dict[str, Any]
    token: str | None
    http: str  # GET or POST
    url: str = ""  # a response_url call: the name its url was made with


@dataclass
class Failure:
    error: str
    status: int = 200
    retry_after: int | None = None
    times: int = 1


@dataclass
class FakeSlack:
    """Workspaces by token: `tokens` maps a bot token to its team id."""

    tokens: dict[str, str] = field(default_factory=lambda: {"xoxb-one": "T1"})
    app_token: str = "xapp-one"
    members: set[str] = field(default_factory=lambda: {"C1", "C2", "C9"})  # channels the bot is in
    channels: set[str] = field(default_factory=lambda: {"C1", "C2", "C9", "C3"})  # channels that exist
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    installs: dict[str, dict[str, Any]] = field(default_factory=dict)  # OAuth code -> oauth.v2.access answer
    calls: list[Call] = field(default_factory=list)
    uploads: dict[str, bytes] = field(default_factory=dict)
    messages: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    acks: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, list[Failure]] = field(default_factory=dict)
    # The bot token's scopes, as auth.test reports them in its x-oauth-scopes header.
    scopes: tuple[str, ...] = (
        "chat:write",
        "commands",
        "users:read",
        "channels:history",
        "groups:history",
        "files:write",
    )

    def __post_init__(self) -> None:
        self._ts = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._sockets: list[web.WebSocketResponse] = []
        self._changed = asyncio.Event()
        self.connections = 0
        self.contract_violations: list[str] = []  # what slack_sdk's models and client say is wrong

    # ------------------------------------------------------------------ server

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def response_url(self, name: str = "r1") -> str:
        return f"{self.base}/respond/{name}"

    async def start(self) -> FakeSlack:
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/respond/{name}", self._respond)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_get("/link", self._socket)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    # --------------------------------------------------------------- test API

    def fail(self, method: str, error: str, status: int = 200, retry_after: int | None = None, times: int = 1) -> None:
        self.failures.setdefault(method, []).append(Failure(error, status, retry_after, times))

    def of(self, method: str) -> list[Call]:
        return [call for call in self.calls if call.method == method]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 5.0, **match: Any) -> list[Call]:
        """The calls of `method` (whose params contain `match`) once there are `count`."""
        deadline = time.monotonic() + timeout
        while True:
            found = [c for c in self.of(method) if all(c.params.get(k) == v for k, v in match.items())]
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                seen = [(c.method, c.params) for c in self.calls[-8:]]
                raise AssertionError(f"no {count} x {method} {match} within {timeout}s; last calls: {seen}")
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=0.1)

    async def wait_response(self, name: str, timeout: float = 5.0) -> Call:
        """The first answer through the response_url made with `name`."""
        deadline = time.monotonic() + timeout
        while True:
            found = [c for c in self.of("response_url") if c.url == name]
            if found:
                return found[0]
            assert time.monotonic() < deadline, f"nothing through response_url {name} within {timeout}s"
            await asyncio.sleep(0.01)

    def _record(self, call: Call) -> None:
        self.calls.append(call)
        self._changed.set()

    def _breach(self, problems: list[str]) -> bool:
        """Contract violations (slack_sdk's Block Kit models, its client's methods): kept here
        and in the ledger that fails the test. True when there were any."""
        for problem in problems:
            self.contract_violations.append(problem)
            ledger.record(f"fake Slack: {problem}")
        return bool(problems)

    def check_ack(self, body: Any, where: str = "ack") -> None:
        """An ack's body as Slack reads it (a view_submission's response_action update or push
        carries a view): for the HTTP acks a test receives itself."""
        self._breach(check_ack(body, where))

    @staticmethod
    def _contract(method: str, params: dict[str, Any]) -> list[str]:
        problems = check_method(method)
        if method in MESSAGE_METHODS and params.get("blocks") is not None:
            problems += check_blocks(params["blocks"], method)
        if method in VIEW_METHODS:
            problems += check_view(params.get("view"), method)
        return problems

    # ------------------------------------------------------------------ web API

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            kind = request.content_type
            if kind == "application/json":
                params.update(await request.json())
            elif kind in ("application/x-www-form-urlencoded", "multipart/form-data"):
                params.update({k: v for k, v in (await request.post()).items() if isinstance(v, str)})
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() or params.pop("token", None)
        self._record(Call(method, params, token, request.method))
        if self._breach(self._contract(method, params)):
            error = "invalid_arguments" if method in VIEW_METHODS else "invalid_blocks"
            return self._json({"ok": False, "error": "unknown_method" if method not in web_api_methods() else error})
        queued = self.failures.get(method)
        if queued:
            failure = queued[0]
            failure.times -= 1
            if failure.times <= 0:
                queued.pop(0)
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
            return self._json({"ok": False, "error": failure.error}, failure.status, headers)
        if method == "oauth.v2.access":
            return self._json(self.installs.get(str(params.get("code")), {"ok": False, "error": "invalid_code"}))
        if method == "apps.connections.open":
            if token != self.app_token:
                return self._json({"ok": False, "error": "invalid_auth"})
            return self._json({"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"})
        team = self.tokens.get(token or "")
        if team is None:
            return self._json({"ok": False, "error": "not_authed" if not token else "invalid_auth"})
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return self._json({"ok": False, "error": "unknown_method"})
        headers = {"x-oauth-scopes": ",".join(self.scopes)} if method == "auth.test" else None
        return self._json(handler(team, params), headers=headers)

    @staticmethod
    def _json(body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
        return web.Response(
            text=json.dumps(body), status=status, headers=headers or {}, content_type="application/json"
        )

    def _auth_test(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": f"https://{team.lower()}.slack.com/",
            "team": f"team {team}",
            "user": "studybot",
            "team_id": team,
            "user_id": f"UB{team}",
            "bot_id": f"B{team}",
            "is_enterprise_install": False,
        }

    def _check_channel(self, channel: str) -> str | None:
        if channel.startswith(("U", "D")):
            return None  # a member's messages with the app
        if channel not in self.channels:
            return "channel_not_found"
        if channel not in self.members:
            return "not_in_channel"
        return None

    @staticmethod
    def _check_blocks(params: dict[str, Any]) -> str | None:
        blocks = params.get("blocks")
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if not params.get("text") and not blocks:
            return "no_text"
        if blocks is None:
            return None
        if len(blocks) > 50:
            return "invalid_blocks"
        for block in blocks:
            text = (block.get("text") or {}).get("text", "")
            if len(text) > 3000:
                return "invalid_blocks"
            for element in block.get("elements", []):
                if len(element.get("action_id", "")) > 255:
                    return "invalid_blocks"
                if element.get("type") == "button" and len(element["text"]["text"]) > 75:
                    return "invalid_blocks"
        return None

    def _chat_postMessage(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        channel = str(params.get("channel", ""))
        error = self._check_channel(channel) or self._check_blocks(params)
        if error:
            return {"ok": False, "error": error}
        if channel.startswith(("U", "W")):  # a member's messages with the app: answered with its conversation id
            channel = self.dm_of(channel)
        ts = f"1700000000.{next(self._ts):06d}"
        message = {
            "type": "message",
            "user": f"UB{team}",
            "bot_id": f"B{team}",
            "app_id": "A1",
            "team": team,
            "ts": ts,
            "text": params.get("text"),
            "blocks": params.get("blocks"),
        }
        if params.get("thread_ts"):
            thread = params["thread_ts"]
            if (channel, thread) not in self.messages:
                return {"ok": False, "error": "thread_not_found"}
            message["thread_ts"] = thread
        self.messages[(channel, ts)] = message
        return {"ok": True, "channel": channel, "ts": ts, "message": message}

    @staticmethod
    def dm_of(user_id: str) -> str:
        """The id of a member's conversation with the app (what chat.postMessage to their user id answers with)."""
        return "D" + user_id[1:]

    def _chat_update(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        key = (str(params.get("channel")), str(params.get("ts")))
        if key not in self.messages:
            return {"ok": False, "error": "message_not_found"}
        error = self._check_blocks(params)
        if error:
            return {"ok": False, "error": error}
        self.messages[key].update(text=params.get("text"), blocks=params.get("blocks"))
        return {"ok": True, "channel": key[0], "ts": key[1]}

    def _chat_postEphemeral(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        error = self._check_channel(str(params.get("channel", ""))) or self._check_blocks(params)
        if error:
            return {"ok": False, "error": error}
        return {"ok": True, "message_ts": f"1700000001.{next(self._ts):06d}"}

    def _views_publish(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        view = params.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not view or len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": self._view_answer(team, view, "V1")}

    def _views_open(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        """A modal: a trigger id, at most 100 blocks, a title of 24 characters, unique block
        ids, a submit button when it has inputs, and inputs with a label and an element."""
        view = params.get("view")
        if isinstance(view, str):
            view = json.loads(view)
        if not params.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        if not isinstance(view, dict) or view.get("type") != "modal":
            return {"ok": False, "error": "invalid_arguments"}
        blocks = view.get("blocks") or []
        ids = [b.get("block_id") for b in blocks if b.get("block_id")]
        inputs = [b for b in blocks if b.get("type") == "input"]
        if (
            len(blocks) > 100
            or len(view["title"]["text"]) > 24
            or len(ids) != len(set(ids))
            or (inputs and not view.get("submit"))
            or any(not b.get("label") or not (b.get("element") or {}).get("action_id") for b in inputs)
        ):
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": self._view_answer(team, view, f"V{next(self._ts)}")}

    @staticmethod
    def _view_answer(team: str, view: dict[str, Any], view_id: str) -> dict[str, Any]:
        """A view as views.open and views.publish answer with it (and view payloads carry it)."""
        return view_as_slack_sends(view, team, view_id)

    def _users_info(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        user_id = str(params.get("user"))
        user = {"id": user_id, "name": user_id.lower(), "team_id": team, "is_admin": False, "is_owner": False}
        user.update(self.users.get(user_id, {}))
        return {"ok": True, "user": user}

    def _files_getUploadURLExternal(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        file_id = f"F{next(self._ts)}"
        return {"ok": True, "upload_url": f"{self.base}/upload/{file_id}", "file_id": file_id}

    def _files_completeUploadExternal(self, team: str, params: dict[str, Any]) -> dict[str, Any]:
        files = params.get("files")
        if isinstance(files, str):
            files = json.loads(files)
        channel = params.get("channel_id")
        # Slack's schema: ^[CGDZ][A-Z0-9]{8,}$, a conversation's id, never a user's (the fake's ids are shorter)
        if channel and not _CONVERSATION_ID.match(str(channel)):
            return {"ok": False, "error": "invalid_arguments"}
        if channel and self._check_channel(str(channel)):
            return {"ok": False, "error": self._check_channel(str(channel))}
        missing = [f["id"] for f in files or [] if f["id"] not in self.uploads]
        if missing:
            return {"ok": False, "error": "file_not_found"}
        return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files or []]}

    # ---------------------------------------------------- response_url, upload

    async def _respond(self, request: web.Request) -> web.Response:
        body = await request.json()
        self._record(Call("response_url", body, None, "POST", url=request.match_info["name"]))
        if body.get("blocks") is not None and self._breach(check_blocks(body["blocks"], "response_url")):
            return web.Response(status=400, text="invalid_blocks")
        return web.Response(text="ok")

    async def _upload(self, request: web.Request) -> web.Response:
        data = await request.read()
        self.uploads[request.match_info["file_id"]] = data
        self._record(Call("upload", {"file_id": request.match_info["file_id"], "size": len(data)}, None, "POST"))
        return web.Response(text="OK")

    # -------------------------------------------------------------- Socket Mode

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._sockets.append(ws)
        self.connections += 1
        self._changed.set()
        await ws.send_str(json.dumps({"type": "hello", "num_connections": 1, "debug_info": {"host": "fake"}}))
        try:
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    data = json.loads(message.data)
                    if "envelope_id" in data:
                        self.acks[data["envelope_id"]] = data.get("payload") or {}
                        self._breach(check_ack(data.get("payload"), "Socket Mode ack"))
                        self._record(Call("socket_ack", data, None, "WS"))
        finally:
            self._sockets.remove(ws)
        return ws

    async def wait_connected(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while not self._sockets:
            if time.monotonic() > deadline:
                raise AssertionError("the Socket Mode client never connected")
            await asyncio.sleep(0.02)

    async def push(self, kind: str, payload: dict[str, Any], retry_attempt: int = 0) -> str:
        """Send one envelope (events_api, slash_commands, interactive) to the connected client."""
        envelope_id = f"env-{next(self._ts)}"
        envelope = {
            "envelope_id": envelope_id,
            "type": kind,
            "payload": payload,
            "accepts_response_payload": kind != "events_api",
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        await self._sockets[-1].send_str(json.dumps(envelope))
        return envelope_id

    async def wait_ack(self, envelope_id: str, timeout: float = 5.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while envelope_id not in self.acks:
            if time.monotonic() > deadline:
                raise AssertionError(f"envelope {envelope_id} was never acked")
            await asyncio.sleep(0.02)
        return self.acks[envelope_id]


# ------------------------------------------------------------- signed requests


def sign(secret: str, body: str, timestamp: int | None = None) -> dict[str, str]:
    """The headers Slack sends with a request: v0 signature over `v0:{timestamp}:{body}`."""
    stamp = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{stamp}:{body}".encode(), hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def command_body(command: str, text: str, user: str, team: str, channel: str, response_url: str) -> str:
    return urllib.parse.urlencode(
        {
            "command": command,
            "text": text,
            "user_id": user,
            "user_name": user.lower(),
            "team_id": team,
            "team_domain": team.lower(),
            "channel_id": channel,
            "channel_name": channel.lower(),
            "response_url": response_url,
            "trigger_id": "trig.1",
            "api_app_id": "A1",
            "token": "legacy",
            "is_enterprise_install": "false",
        }
    )


def command_payload(command: str, text: str, user: str, team: str, channel: str, response_url: str) -> dict[str, str]:
    return dict(
        urllib.parse.parse_qsl(command_body(command, text, user, team, channel, response_url), keep_blank_values=True)
    )


def click_payload(
    action_id: str,
    user: str,
    team: str,
    channel: str,
    ts: str,
    response_url: str,
    user_team: str | None = None,
    ephemeral: bool = False,
) -> dict[str, Any]:
    """A block_actions payload (the documented keys: Slack's block_actions reference, bolt-js's
    BlockAction type). `team` is the workspace of the message (Slack puts the host's id there
    even when the clicking user is a Slack Connect member of `user_team`)."""
    return {
        "type": "block_actions",
        "api_app_id": "A1",
        "token": "legacy",
        "is_enterprise_install": False,
        "enterprise": None,
        "team": {"id": team, "domain": team.lower()},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": user_team or team},
        "channel": {"id": channel, "name": channel.lower()},
        "container": {"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": ephemeral},
        "message": {"type": "message", "ts": ts, "text": "", "user": f"UB{team}", "bot_id": f"B{team}"},
        "response_url": response_url,
        "trigger_id": "trig.2",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "b1",
                "text": {"type": "plain_text", "text": "?", "emoji": True},
                "value": action_id,
                "action_ts": "1700000100.000001",
            }
        ],
    }


def view_submission_payload(
    view: dict[str, Any], values: dict[str, str], user: str, team: str, view_id: str = "V1"
) -> dict[str, Any]:
    """A view_submission of `view` (as views.open received it) with `values` typed into its
    inputs by block id: a text input's value, a select's chosen option."""
    state: dict[str, dict[str, Any]] = {}
    for block in view.get("blocks", []):
        if block.get("type") != "input":
            continue
        element = block["element"]
        value = values.get(block["block_id"])
        if element["type"] == "static_select":
            chosen = next((o for o in element["options"] if o["value"] == value), None)
            entry: dict[str, Any] = {"type": "static_select", "selected_option": chosen}
        else:
            entry = {"type": element["type"], "value": value or None}
        state[block["block_id"]] = {element["action_id"]: entry}
    return {
        "type": "view_submission",
        "api_app_id": "A1",
        "token": "legacy",
        "is_enterprise_install": False,
        "enterprise": None,
        "team": {"id": team, "domain": team.lower()},
        "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": team},
        "trigger_id": "trig.3",
        "view": {**view_as_slack_sends(view, team, view_id), "state": {"values": state}},
        "response_urls": [],
    }


def view_as_slack_sends(view: dict[str, Any], team: str, view_id: str) -> dict[str, Any]:
    """A view as Slack answers with it and sends it in payloads: the view the app sent plus
    the keys Slack adds (bolt-js's ViewOutput type)."""
    plain = {"type": "plain_text", "emoji": True}
    return {
        "close": None,
        "submit": None,
        "callback_id": "",
        "external_id": "",
        **view,
        **{k: {**plain, **view[k]} for k in ("title", "close", "submit") if isinstance(view.get(k), dict)},
        "id": view_id,
        "team_id": team,
        "app_id": "A1",
        "app_installed_team_id": team,
        "bot_id": f"B{team}",
        "state": {"values": {}},
        "hash": "h1",
        "private_metadata": view.get("private_metadata", ""),
        "root_view_id": view_id,
        "previous_view_id": None,
        "clear_on_close": bool(view.get("clear_on_close", False)),
        "notify_on_close": bool(view.get("notify_on_close", False)),
    }


def form_payload(payload: dict[str, Any]) -> str:
    return urllib.parse.urlencode({"payload": json.dumps(payload)})


def event_body(event: dict[str, Any], team: str, event_id: str) -> dict[str, Any]:
    """An Events API envelope (bolt-js's EnvelopedEvent) around `event`, completed with the keys
    Slack sends that a test left out (event_ts; a message's channel_type; app_home_opened's
    channel, the member's DM with the app)."""
    return {
        "token": "legacy",
        "team_id": team,
        "api_app_id": "A1",
        "event": complete_event(event),
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1700000000,
        "event_context": f"4-{event_id}",
        "is_ext_shared_channel": False,
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team,
                "user_id": f"UB{team}",
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
    }


def complete_event(event: dict[str, Any]) -> dict[str, Any]:
    found = {"event_ts": event.get("ts") or "1700000000.000100", **event}
    if found["type"] == "message" and "channel" in found:
        kinds = {"D": "im", "G": "group", "C": "channel"}
        found.setdefault("channel_type", kinds.get(str(found["channel"])[:1], "channel"))
    if found["type"] == "app_home_opened" and "user" in found:
        found.setdefault("channel", "D" + str(found["user"]).removeprefix("U"))
    return found
