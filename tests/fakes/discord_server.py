"""A fake Discord (REST and gateway on 127.0.0.1) that the real discord.py client logs into.

It behaves like Discord where the bot could get it wrong, and records every call so tests
assert on what reached it: 2,000 characters of content, 4,096 of an embed description, 5
rows of 5 buttons, 80-character labels, 100-character custom ids, allowed_mentions that parse
nothing, one initial response per interaction within 3 seconds, message content empty
without the message-content intent (unless the bot is mentioned), 429s with retry_after
when a test asks for them, unknown channels (10003) and closed DMs (50007), refusals a test
picks for chosen requests (403 50013 Missing Permissions, 404 10003 Unknown Channel: `refuse`),
interaction follow-ups and edits in a deleted channel (404 10003), and modals as
Discord checks them (at most 5 text inputs, 45-character title and labels, never the answer to
a modal's own submit, whose values come back only for the inputs the modal had).

Beside those limits, every request and answer is checked against Discord's OpenAPI document
(tests/contract/discord_openapi.py); what it finds lands in `contract_violations` and fails
the test (tests/conftest.py)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from aiohttp import WSMsgType, web

from tests.contract import ledger
from tests.contract.discord_openapi import contract

MESSAGE_CONTENT = 1 << 15
EPHEMERAL = 1 << 6
GUILDS = 1 << 0
GUILD_MESSAGES = 1 << 9
MANAGE_GUILD = 1 << 5
MEMBER_PERMS = (1 << 10) | (1 << 11) | (1 << 31)  # view channel, send messages, use application commands
ADMIN_PERMS = MEMBER_PERMS | MANAGE_GUILD
# What the README's invite link asks for: view channels, send messages, embed links, attach files, read history.
BOT_PERMS = (1 << 10) | (1 << 11) | (1 << 14) | (1 << 15) | (1 << 16)
_ids = itertools.count(1_300_000_000_000_000_000)


def snowflake() -> str:
    return str(next(_ids))


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat()


def guild_id_for_shard(shard: int, count: int, start: int = 1_100_000_000_000_000_000) -> str:
    """A guild id that Discord routes to `shard` of `count` ((id >> 22) % count)."""
    value = start
    while (value >> 22) % count != shard:
        value += 1 << 22
    return str(value)


@dataclass
class Call:
    method: str
    path: str
    json: Any
    at: float
    status: int = 200
    files: list[str] = field(default_factory=list)


@dataclass
class Interaction:
    id: str
    token: str
    type: int
    created: float
    payload: dict[str, Any]
    responses: list[dict[str, Any]] = field(default_factory=list)  # the callback bodies
    original: dict[str, Any] | None = None  # the response message, once there is one
    followups: list[dict[str, Any]] = field(default_factory=list)
    modal: dict[str, Any] | None = None  # the form the bot opened in answer (callback type 9)
    done: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass
class Refusal:
    """A 4xx answer (`code` in the body, as Discord sends it) for requests matching `method` and
    `pattern`, `times` times (None: every time)."""

    method: str
    pattern: re.Pattern[str]
    status: int
    code: int
    message: str
    times: int | None = 1


def user(uid: str, name: str, bot: bool = False) -> dict[str, Any]:
    return {
        "id": uid,
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
        "flags": 0,
        "primary_guild": None,
    }


def with_component_ids(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Components as Discord answers with them: each one numbered (`id`, 1 up, in order) when
    the bot did not number it."""
    numbers = itertools.count(1)

    def numbered(component: dict[str, Any]) -> dict[str, Any]:
        found = {**component, "id": component.get("id") or next(numbers)}
        if "components" in found:
            found["components"] = [numbered(c) for c in found["components"]]
        return found

    return [numbered(row) for row in rows]


class FakeDiscord:
    def __init__(self) -> None:
        self.app_id = snowflake()
        self.bot_user = user(self.app_id, "StudyBot", bot=True)
        self.guilds: dict[str, dict[str, Any]] = {}
        self.channels: dict[str, str] = {}  # channel id -> guild id
        self.messages: dict[str, dict[str, Any]] = {}
        self.calls: list[Call] = []
        self.violations: list[str] = []  # what the fake's own checks of Discord's limits refused
        self.contract_violations: list[str] = []  # what Discord's OpenAPI document says is wrong
        self.interactions: dict[str, Interaction] = {}
        self.command_syncs: list[tuple[str, list[dict[str, Any]]]] = []
        self.identifies: list[dict[str, Any]] = []
        self.announced: list[set[str]] = []  # per identify: the guilds sent to that connection
        self.rate_limits: list[tuple[str, re.Pattern[str], float]] = []
        self.failures: list[tuple[str, re.Pattern[str], int]] = []  # one 5xx each, when asked
        self.refusals: list[Refusal] = []  # 4xx answers for chosen requests (`refuse`)
        self.recommended_shards = 1  # what /gateway/bot recommends
        self.token: str | None = None  # when set, REST calls with another bot token get 401
        self.app_flags = 0  # the application's flags (privileged intents turned on in the portal)
        self.bot_permissions: dict[str, int] = {}  # guild id -> the bot's permissions there (default BOT_PERMS)
        self.unknown_channels: set[str] = set()
        self.forbidden_channels: set[str] = set()
        self.closed_dms: set[str] = set()
        self.dm_channels: dict[str, str] = {}  # dm channel -> user id
        self.uploaded: list[tuple[str, bytes]] = []  # every attached file as it arrived: (file name, bytes)
        self.sockets: list[tuple[web.WebSocketResponse, tuple[int, int], int]] = []
        self.seq = itertools.count(1)
        self.runner: web.AppRunner | None = None
        self.port = 0
        self.changed = asyncio.Condition()

    # ------------------------------------------------------------ setup

    @property
    def api(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    @property
    def gateway(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    def add_guild(self, name: str = "Study Group", guild_id: str | None = None, channels: int = 1) -> dict[str, Any]:
        gid = guild_id or snowflake()
        chans = [snowflake() for _ in range(channels)]
        for cid in chans:
            self.channels[cid] = gid
        self.guilds[gid] = {"id": gid, "name": name, "channels": chans}
        return self.guilds[gid]

    def refuse(
        self,
        method: str,
        pattern: str,
        status: int = 403,
        code: int = 50013,
        message: str = "Missing Permissions",
        times: int | None = 1,
    ) -> Refusal:
        """Answer requests matching `method` and `pattern` (a regex over the path after /api/v10)
        with `status` and Discord's error `code`: 403 50013 Missing Permissions by default, 404
        10003 Unknown Channel for a deleted channel."""
        refusal = Refusal(method, re.compile(pattern), status, code, message, times)
        self.refusals.append(refusal)
        return refusal

    async def start(self) -> FakeDiscord:
        app = web.Application(client_max_size=32 * 1024 * 1024)
        app.router.add_get("/gateway", self.ws)
        app.router.add_route("*", "/api/v10/{tail:.*}", self.rest)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        for socket, _, _ in list(self.sockets):
            await socket.close()
        if self.runner is not None:
            await self.runner.cleanup()

    # ---------------------------------------------------------- gateway

    def guild_create(self, gid: str) -> dict[str, Any]:
        guild = self.guilds[gid]
        me = {"user": self.bot_user, "roles": [], "joined_at": now_iso(), "deaf": False, "mute": False, "flags": 0}
        return {
            "id": gid,
            "name": guild["name"],
            "icon": None,
            "owner_id": snowflake(),
            "afk_timeout": 300,
            "verification_level": 0,
            "default_message_notifications": 0,
            "explicit_content_filter": 0,
            "mfa_level": 0,
            "nsfw_level": 0,
            "premium_tier": 0,
            "preferred_locale": "en-US",
            "features": [],
            "roles": [
                {
                    "id": gid,
                    "name": "@everyone",
                    "permissions": str(MEMBER_PERMS),
                    "position": 0,
                    "color": 0,
                    "hoist": False,
                    "managed": False,
                    "mentionable": False,
                    "flags": 0,
                }
            ],
            "emojis": [],
            "stickers": [],
            "channels": [
                {
                    "id": cid,
                    "type": 0,
                    "guild_id": gid,
                    "name": f"channel-{n}",
                    "position": n,
                    "permission_overwrites": [],
                    "nsfw": False,
                    "parent_id": None,
                    "rate_limit_per_user": 0,
                    "flags": 0,
                }
                for n, cid in enumerate(guild["channels"])
            ],
            "threads": [],
            "members": [me],
            "member_count": 1,
            "large": False,
            "unavailable": False,
            "joined_at": now_iso(),
            "voice_states": [],
            "presences": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
        }

    def shard_of(self, gid: str, count: int) -> int:
        return (int(gid) >> 22) % count

    async def ws(self, request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        await socket.send_str(json.dumps({"op": 10, "s": None, "t": None, "d": {"heartbeat_interval": 41250}}))
        entry: tuple[web.WebSocketResponse, tuple[int, int], int] | None = None
        async for message in socket:
            if message.type != WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            if data["op"] == 1:
                await socket.send_str(json.dumps({"op": 11, "s": None, "t": None, "d": None}))
            elif data["op"] == 2:
                identify = data["d"]
                self.identifies.append(identify)
                shard = tuple(identify.get("shard") or (0, 1))
                entry = (socket, (int(shard[0]), int(shard[1])), int(identify["intents"]))
                self.sockets.append(entry)
                mine = [g for g in self.guilds if self.shard_of(g, entry[1][1]) == entry[1][0]]
                self.announced.append(set(mine))
                ready = {
                    "v": 10,
                    "user": self.bot_user,
                    "guilds": [{"id": g, "unavailable": True} for g in mine],
                    "session_id": snowflake(),
                    "resume_gateway_url": self.gateway,
                    "application": {"id": self.app_id, "flags": 0},
                    "shard": list(entry[1]),
                }
                await self.send_event(socket, "READY", ready)
                for gid in mine:
                    await self.send_event(socket, "GUILD_CREATE", self.guild_create(gid))
        if entry in self.sockets:
            self.sockets.remove(entry)  # type: ignore[arg-type]
        return socket

    async def send_event(self, socket: web.WebSocketResponse, name: str, data: dict[str, Any]) -> None:
        await socket.send_str(json.dumps({"op": 0, "s": next(self.seq), "t": name, "d": data}))

    async def dispatch(self, gid: str, name: str, data: dict[str, Any]) -> None:
        sent = False
        for socket, (shard, count), _ in list(self.sockets):
            if self.shard_of(gid, count) == shard:
                await self.send_event(socket, name, data)
                sent = True
        if not sent:
            raise AssertionError(f"no gateway connection serves guild {gid}")

    # ------------------------------------------------------- users' events

    def member(self, who: dict[str, Any], permissions: int) -> dict[str, Any]:
        return {
            "user": who,
            "roles": [],
            "joined_at": now_iso(),
            "deaf": False,
            "mute": False,
            "nick": None,
            "permissions": str(permissions),
            "flags": 0,
        }

    async def interact(
        self,
        kind: int,
        gid: str | None,
        cid: str,
        who: dict[str, Any],
        data: dict[str, Any],
        message: dict[str, Any] | None = None,
        permissions: int = MEMBER_PERMS,
    ) -> Interaction:
        iid, token = snowflake(), "tok" + snowflake()
        payload: dict[str, Any] = {
            "id": iid,
            "application_id": self.app_id,
            "type": kind,
            "data": data,
            "channel_id": cid,
            "channel": {"id": cid, "type": 0 if gid else 1, "name": "channel", "position": 0},
            "token": token,
            "version": 1,
            "app_permissions": str(ADMIN_PERMS),
            "locale": "en-US",
            "entitlements": [],
            "authorizing_integration_owners": {"0": gid} if gid else {},
            "context": 0 if gid else 1,
            "attachment_size_limit": 10 * 1024 * 1024,
        }
        if gid:
            payload["guild_id"] = gid
            payload["guild_locale"] = "en-US"
            payload["member"] = self.member(who, permissions)
            payload["channel"]["guild_id"] = gid
        else:
            payload["user"] = who
        if message is not None:
            payload["message"] = message
        found = Interaction(iid, token, kind, time.monotonic(), payload)
        self.interactions[iid] = found
        if gid:
            await self.dispatch(gid, "INTERACTION_CREATE", payload)
        else:
            for socket, _, _ in self.sockets:
                await self.send_event(socket, "INTERACTION_CREATE", payload)
        return found

    async def slash(
        self,
        name: str,
        who: dict[str, Any],
        gid: str | None,
        cid: str,
        options: list[dict[str, Any]] | None = None,
        admin: bool = False,
    ) -> Interaction:
        data: dict[str, Any] = {"id": snowflake(), "name": name, "type": 1, "options": options or []}
        return await self.interact(2, gid, cid, who, data, permissions=ADMIN_PERMS if admin else MEMBER_PERMS)

    async def autocomplete(
        self,
        name: str,
        who: dict[str, Any],
        gid: str,
        cid: str,
        options: list[dict[str, Any]],
        admin: bool = False,
    ) -> Interaction:
        """A member typing in an option with autocomplete (type 4); the focused option is
        marked `focused`. The bot answers with type 8 and at most 25 choices."""
        data: dict[str, Any] = {"id": snowflake(), "name": name, "type": 1, "options": options}
        return await self.interact(4, gid, cid, who, data, permissions=ADMIN_PERMS if admin else MEMBER_PERMS)

    def bot_message(self, cid: str, custom_ids: list[str], selects: tuple[str, ...] = ()) -> dict[str, Any]:
        """A message of the bot's with buttons carrying these ids (a tampered or stale one), and
        a string select (type 3) per id in `selects`, each in its own row as Discord requires."""
        buttons = [{"type": 2, "style": 1, "label": "?", "custom_id": c} for c in custom_ids]
        rows: list[dict[str, Any]] = [{"type": 1, "components": buttons}] if buttons else []
        options = [{"label": "One", "value": "1"}, {"label": "Two", "value": "2"}]
        rows += [
            {
                "type": 1,
                "components": [{"type": 3, "custom_id": s, "options": options, "min_values": 1, "max_values": 1}],
            }
            for s in selects
        ]
        return self.store_message(cid, {"content": "", "components": rows}, "channel", [])

    def component(self, message_id: str, custom_id: str) -> dict[str, Any]:
        """The message's component with this id: Discord only delivers interactions on those."""
        message = self.messages[message_id]
        for row in message.get("components", []):
            for found in row.get("components", []):
                if found.get("custom_id") == custom_id:
                    return dict(found)
        raise AssertionError(f"message {message_id} has no component {custom_id}")

    async def click(self, message_id: str, custom_id: str, who: dict[str, Any], admin: bool = False) -> Interaction:
        if self.component(message_id, custom_id)["type"] != 2:
            raise AssertionError(f"{custom_id} is not a button: choose() from a select")
        return await self.use(message_id, {"custom_id": custom_id, "component_type": 2}, who, admin)

    async def choose(
        self, message_id: str, custom_id: str, values: list[str], who: dict[str, Any], admin: bool = False
    ) -> Interaction:
        """A member picks `values` in a select menu (component type 3), as Discord sends it."""
        select = self.component(message_id, custom_id)
        allowed = [o["value"] for o in select.get("options", [])]
        if select["type"] != 3 or not set(values) <= set(allowed):
            raise AssertionError(f"{custom_id} is not a select offering {values}")
        if not select.get("min_values", 1) <= len(values) <= select.get("max_values", 1):
            raise AssertionError(
                f"{custom_id} takes {select.get('min_values', 1)}-{select.get('max_values', 1)} values"
            )
        return await self.use(message_id, {"custom_id": custom_id, "component_type": 3, "values": values}, who, admin)

    async def use(self, message_id: str, data: dict[str, Any], who: dict[str, Any], admin: bool) -> Interaction:
        message = self.messages[message_id]
        permissions = ADMIN_PERMS if admin else MEMBER_PERMS
        return await self.interact(
            3, message.get("guild_id"), message["channel_id"], who, data, message=message, permissions=permissions
        )

    async def opened_form(self, interaction: Interaction, timeout: float = 10.0) -> dict[str, Any]:
        """The modal the bot answered an interaction with (callback type 9)."""
        await asyncio.wait_for(interaction.done.wait(), timeout)
        assert interaction.modal is not None, f"interaction {interaction.id} was answered without a form"
        return interaction.modal

    async def submit(
        self, opened: Interaction, values: dict[str, str], who: dict[str, Any] | None = None, admin: bool = False
    ) -> Interaction:
        """A member fills in and submits the form the bot opened for `opened` (a type 5 modal
        submit, from the same place, carrying the clicked message when a button opened it).
        Discord sends every input of the form (empty when left so) and nothing else."""
        form = await self.opened_form(opened)
        inputs = [c["custom_id"] for row in form["components"] for c in row["components"]]
        unknown = set(values) - set(inputs)
        if unknown:
            raise AssertionError(f"form {form['custom_id']} has no inputs {sorted(unknown)}")
        rows = [{"type": 1, "components": [{"type": 4, "custom_id": c, "value": values.get(c, "")}]} for c in inputs]
        data = {"custom_id": form["custom_id"], "components": rows}
        payload = opened.payload
        who = who or (payload.get("member") or {}).get("user") or payload["user"]
        return await self.interact(
            5,
            payload.get("guild_id"),
            payload["channel_id"],
            who,
            data,
            message=payload.get("message"),
            permissions=ADMIN_PERMS if admin else MEMBER_PERMS,
        )

    async def say(self, gid: str, cid: str, who: dict[str, Any], content: str, reply_to: str | None = None) -> str:
        """A member's message; its content reaches the bot only if it mentions the bot (or the
        bot asked for the message-content intent)."""
        mid = snowflake()
        mentioned = f"<@{self.app_id}>" in content or f"<@!{self.app_id}>" in content
        data: dict[str, Any] = {
            "id": mid,
            "channel_id": cid,
            "guild_id": gid,
            "author": who,
            "member": {"roles": [], "joined_at": now_iso(), "deaf": False, "mute": False, "flags": 0},
            "content": content,
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [{**self.bot_user, "member": {"roles": [], "joined_at": now_iso(), "flags": 0}}]
            if mentioned
            else [],
            "mention_roles": [],
            "attachments": [],
            "embeds": [],
            "pinned": False,
            "type": 19 if reply_to else 0,
            "flags": 0,
            "components": [],
        }
        if reply_to:
            data["message_reference"] = {"message_id": reply_to, "channel_id": cid, "guild_id": gid}
        for socket, (shard, count), intents in list(self.sockets):
            if self.shard_of(gid, count) != shard:
                continue
            event = dict(data)
            if not intents & MESSAGE_CONTENT and not mentioned:
                event["content"] = ""
            await self.send_event(socket, "MESSAGE_CREATE", event)
        return mid

    async def remove_guild(self, gid: str) -> None:
        await self.dispatch(gid, "GUILD_DELETE", {"id": gid})

    # ------------------------------------------------------------- waiting

    async def wait_for(self, predicate: Any, timeout: float = 10.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            found = predicate()
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError("the fake Discord never saw what the test waited for")
            await asyncio.sleep(0.02)

    async def answered(self, interaction: Interaction, timeout: float = 10.0) -> dict[str, Any]:
        """The message the user finally sees for an interaction (the response, or the deferred
        response once edited)."""
        await asyncio.wait_for(interaction.done.wait(), timeout)
        assert interaction.original is not None
        return interaction.original

    def posts(self, cid: str | None = None) -> list[dict[str, Any]]:
        """Messages the bot posted in channels (not interaction responses), oldest first."""
        return [
            m for m in self.messages.values() if m.get("_via") == "channel" and (cid is None or m["channel_id"] == cid)
        ]

    def requests(self, method: str, pattern: str) -> list[Call]:
        return [c for c in self.calls if c.method == method and re.fullmatch(pattern, c.path)]

    # ---------------------------------------------------------------- REST

    def reply(self, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
        body = b"" if data is None else json.dumps(data).encode()
        base = {"Content-Type": "application/json"} if data is not None else {}
        return web.Response(
            body=body, status=status if data is not None or status != 200 else 204, headers={**base, **(headers or {})}
        )

    def error(self, status: int, code: int, message: str) -> web.Response:
        return self.reply({"code": code, "message": message}, status)

    async def read_body(self, request: web.Request) -> tuple[Any, list[str]]:
        if request.content_type.startswith("multipart/"):
            payload: Any = None
            files: list[str] = []
            reader = await request.multipart()
            async for part in reader:
                if part.name == "payload_json":  # type: ignore[union-attr]
                    payload = json.loads(await part.text())  # type: ignore[union-attr]
                else:
                    content = await part.read()  # type: ignore[union-attr]
                    self.uploaded.append((str(part.filename), bytes(content)))  # type: ignore[union-attr]
                    files.append(f"{part.filename}:{len(content)}:{content[:8].hex()}")  # type: ignore[union-attr]
            return payload, files
        text = await request.text()
        return (json.loads(text) if text else None), []

    def check_message(self, body: dict[str, Any], where: str) -> str | None:
        """What Discord would refuse in a message body (None when it is fine)."""
        content = body.get("content") or ""
        if len(content) > 2000:
            return f"{where}: content is {len(content)} characters (limit 2000)"
        embeds = body.get("embeds") or []
        if len(embeds) > 10:
            return f"{where}: {len(embeds)} embeds"
        for embed in embeds:
            if len(embed.get("description") or "") > 4096:
                return f"{where}: embed description over 4096"
            if len(embed.get("title") or "") > 256:
                return f"{where}: embed title over 256"
        rows = body.get("components") or []
        if len(rows) > 5:
            return f"{where}: {len(rows)} component rows"
        for row in rows:
            if len(row.get("components", [])) > 5:
                return f"{where}: more than 5 buttons in a row"
            for comp in row.get("components", []):
                if len(comp.get("label") or "") > 80:
                    return f"{where}: button label over 80"
                if len(comp.get("custom_id") or "") > 100:
                    return f"{where}: custom_id over 100"
        mentions = body.get("allowed_mentions")
        if mentions is None or mentions.get("parse") != [] or mentions.get("users") or mentions.get("roles"):
            self.violations.append(f"{where}: allowed_mentions {mentions!r} would let text ping")
        return None

    def store_message(
        self, cid: str, body: dict[str, Any], via: str, files: list[str], flags: int = 0
    ) -> dict[str, Any]:
        mid = snowflake()
        message = {
            "id": mid,
            "channel_id": cid,
            "author": self.bot_user,
            "content": body.get("content") or "",
            "timestamp": now_iso(),
            "edited_timestamp": None,
            "tts": False,
            "mention_everyone": False,
            "mentions": [],
            "mention_roles": [],
            "attachments": [
                {
                    "id": snowflake(),
                    "filename": f.split(":")[0],
                    "size": int(f.split(":")[1]),
                    "url": "x",
                    "proxy_url": "x",
                }
                for f in files
            ],
            "embeds": body.get("embeds") or [],
            "components": with_component_ids(body.get("components") or []),
            "pinned": False,
            "type": 0,
            "flags": flags | int(body.get("flags") or 0),
            "_via": via,
            "_files": files,
        }
        if cid in self.channels:
            message["guild_id"] = self.channels[cid]
        self.messages[mid] = message
        return message

    @staticmethod
    def public(message: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in message.items() if not k.startswith("_")}

    def edit_message(self, message: dict[str, Any], body: dict[str, Any], files: list[str]) -> None:
        for key in ("content", "embeds", "components"):
            if key in body and body[key] is not None:
                message[key] = with_component_ids(body[key]) if key == "components" else body[key]
        if files:
            message["_files"] = files
        message["edited_timestamp"] = now_iso()
        message.setdefault("_edits", []).append(body)

    def breach(self, problem: str) -> None:
        """A contract violation: what Discord's OpenAPI document says it would not send or take."""
        self.contract_violations.append(problem)
        ledger.record(f"fake Discord: {problem}")

    async def rest(self, request: web.Request) -> web.Response:
        """A REST call, checked against Discord's OpenAPI document both ways: a body it does
        not describe is refused as Discord refuses it (400, 50035 Invalid Form Body), and
        every answer the fake gives must be one the document describes."""
        path = "/" + request.match_info["tail"]
        body, files = await self.read_body(request)
        call = Call(request.method, path, body, time.monotonic(), files=files)
        self.calls.append(call)
        for problem in contract().check_request(request.method, path, set(request.query), body):
            self.breach(problem)
        if contract().operation(request.method, path) is None:
            response = self.error(404, 0, "404: Not Found")
        elif contract().check_body(request.method, path, body):
            response = self.error(400, 50035, "Invalid Form Body")
        else:
            response = await self.answer(request, path, body, files, call)
        call.status = response.status
        raw = response.body if isinstance(response.body, bytes) else b""
        answered = json.loads(raw) if raw else None
        for problem in contract().check_response(request.method, path, response.status, answered):
            self.breach(problem)
        return response

    async def answer(self, request: web.Request, path: str, body: Any, files: list[str], call: Call) -> web.Response:
        auth = request.headers.get("Authorization", "")
        wrong_token = not auth.startswith("Bot ") or (self.token is not None and auth != f"Bot {self.token}")
        if wrong_token and "/interactions/" not in path and "/webhooks/" not in path:
            call.status = 401
            return self.error(401, 0, "401: Unauthorized")
        for index, (method, pattern, retry_after) in enumerate(self.rate_limits):
            if method == request.method and pattern.fullmatch(path):
                del self.rate_limits[index]
                call.status = 429
                headers = {
                    "Retry-After": str(retry_after),
                    "X-RateLimit-Limit": "5",
                    "X-RateLimit-Remaining": "0",
                    "X-RateLimit-Reset-After": str(retry_after),
                    "X-RateLimit-Bucket": "fake",
                    "X-RateLimit-Scope": "user",
                    "Via": "1.1 google",  # discord.py takes a 429 without it for a Cloudflare ban
                }
                return self.reply(
                    {"message": "You are being rate limited.", "retry_after": retry_after, "global": False, "code": 0},
                    429,
                    headers,
                )
        for refusal in list(self.refusals):
            if refusal.method == request.method and refusal.pattern.fullmatch(path):
                if refusal.times is not None:
                    refusal.times -= 1
                    if refusal.times <= 0:
                        self.refusals.remove(refusal)
                call.status = refusal.status
                return self.error(refusal.status, refusal.code, refusal.message)
        for index, (method, pattern, status) in enumerate(self.failures):
            if method == request.method and pattern.fullmatch(path):
                del self.failures[index]
                call.status = status
                return self.error(status, 0, f"{status}: Server Error")
        response = await self.route(request.method, path, body, files)
        call.status = response.status
        return response

    async def route(self, method: str, path: str, body: Any, files: list[str]) -> web.Response:
        parts = path.strip("/").split("/")
        if path == "/users/@me" and method == "GET":
            return self.reply({**self.bot_user, "mfa_enabled": False, "locale": "en-US"})
        if path == "/oauth2/applications/@me":
            return self.reply(
                {
                    "id": self.app_id,
                    "name": "StudyBot",
                    "icon": None,
                    "description": "",
                    "type": None,
                    "bot_public": True,
                    "bot_require_code_grant": False,
                    "owner": user(snowflake(), "owner"),
                    "verify_key": "00",
                    "team": None,
                    "flags": self.app_flags,
                    "flags_new": str(self.app_flags),
                    "redirect_uris": [],
                    "interactions_endpoint_url": None,
                    "role_connections_verification_url": None,
                    "approximate_guild_count": len(self.guilds),
                    "approximate_user_install_count": 0,
                    "approximate_user_authorization_count": 0,
                    "explicit_content_filter": 0,
                    "eligible_oauth2_scopes": [],
                }
            )
        if path == "/users/@me/guilds" and method == "GET":
            return self.reply(
                [
                    {
                        "id": gid,
                        "name": guild["name"],
                        "icon": None,
                        "banner": None,
                        "owner": False,
                        "permissions": str(self.bot_permissions.get(gid, BOT_PERMS)),
                        "features": [],
                    }
                    for gid, guild in self.guilds.items()
                ]
            )
        if path in ("/gateway/bot", "/gateway"):
            limits = {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1}
            return self.reply({"url": self.gateway, "shards": self.recommended_shards, "session_start_limit": limits})
        if parts[0] == "applications" and parts[-1] == "commands" and method == "PUT":
            target = parts[3] if len(parts) == 5 else "global"
            for command in body:
                for text in self.descriptions(command):
                    if not 1 <= len(text) <= 100:
                        return self.error(400, 50035, f"description of {command['name']} is {len(text)} characters")
            self.command_syncs.append((target, body))
            return self.reply([self.registered(c) for c in body])
        if parts[0] == "applications" and parts[-1] == "commands" and method == "GET":
            return self.reply([])
        if path == "/users/@me/channels" and method == "POST":
            body["recipient_id"] = str(body["recipient_id"])
            dm = next((c for c, u in self.dm_channels.items() if u == body["recipient_id"]), None) or snowflake()
            self.dm_channels[dm] = body["recipient_id"]
            return self.reply(
                {
                    "id": dm,
                    "type": 1,
                    "flags": 0,
                    "recipients": [user(body["recipient_id"], "member")],
                    "last_message_id": None,
                }
            )
        if parts[0] == "channels" and len(parts) >= 3 and parts[2] == "messages":
            return self.channel_message(method, parts, body, files)
        if parts[0] == "interactions" and parts[-1] == "callback":
            return self.callback(parts[1], parts[2], body, files)
        if parts[0] == "webhooks":
            return self.webhook(method, parts, body, files)
        return self.error(404, 0, f"404: Not Found ({method} {path})")

    def registered(self, command: dict[str, Any]) -> dict[str, Any]:
        """A synced command as Discord answers with it: its ids and version, and the defaults
        Discord fills in for what the bot left out or sent as null."""
        defaults = {"type": 1, "default_member_permissions": None, "integration_types": [0], "contexts": None}
        found = {**defaults, **{k: v for k, v in command.items() if v is not None}}
        if found["default_member_permissions"] is not None:  # taken as a number, answered as a string
            found["default_member_permissions"] = str(found["default_member_permissions"])
        return {**found, "id": snowflake(), "application_id": self.app_id, "version": snowflake()}

    @staticmethod
    def descriptions(command: dict[str, Any]) -> list[str]:
        found = [command.get("description", "")]
        for option in command.get("options") or []:
            found += FakeDiscord.descriptions(option)
        return found

    def channel_message(self, method: str, parts: list[str], body: Any, files: list[str]) -> web.Response:
        cid = parts[1]
        if cid in self.unknown_channels or (cid not in self.channels and cid not in self.dm_channels):
            return self.error(404, 10003, "Unknown Channel")
        if cid in self.forbidden_channels:
            return self.error(403, 50013, "Missing Permissions")
        if cid in self.dm_channels and self.dm_channels[cid] in self.closed_dms:
            return self.error(403, 50007, "Cannot send messages to this user")
        problem = self.check_message(body or {}, f"{method} /channels/{cid}/messages")
        if problem:
            self.violations.append(problem)
            return self.error(400, 50035, problem)
        if method == "POST" and len(parts) == 3:
            message = self.store_message(cid, body, "dm" if cid in self.dm_channels else "channel", files)
            return self.reply(self.public(message))
        if method == "PATCH" and len(parts) == 4:
            message = self.messages.get(parts[3])
            if message is None or message["channel_id"] != cid:
                return self.error(404, 10008, "Unknown Message")
            self.edit_message(message, body, files)
            return self.reply(self.public(message))
        return self.error(405, 0, "405: Method Not Allowed")

    def callback(self, iid: str, token: str, body: Any, files: list[str]) -> web.Response:
        found = self.interactions.get(iid)
        if found is None or found.token != token or time.monotonic() - found.created > 3.0:
            return self.error(404, 10062, "Unknown interaction")
        if found.responses:
            self.violations.append(f"second response to interaction {iid}")
            return self.error(400, 40060, "Interaction has already been acknowledged.")
        found.responses.append(body)
        kind = body["type"]
        data = body.get("data") or {}
        info: dict[str, Any] = {"id": iid, "type": found.type}
        if kind in (4, 5):
            problem = self.check_message(data, f"interaction {iid} response") if kind == 4 else None
            if problem:
                self.violations.append(problem)
            message = self.store_message(found.payload["channel_id"], data, "interaction", files)
            message["interaction_id"] = iid
            message["_loading"] = kind == 5
            found.original = message
            info.update(
                response_message_id=message["id"],
                response_message_loading=kind == 5,
                response_message_ephemeral=bool(message["flags"] & 64),
            )
            if kind == 4:
                found.done.set()
                return self.reply({"interaction": info, "resource": {"type": kind, "message": self.public(message)}})
            return self.reply({"interaction": info})  # the document has no resource for a deferral
        if kind == 9:
            problem = self.check_modal(found, data)
            if problem:
                self.violations.append(f"interaction {iid}: {problem}")
                return self.error(400, 50035, problem)
            found.modal = data
            found.done.set()
        if kind == 7 and "message" in found.payload:  # update the clicked message
            self.edit_message(self.messages[found.payload["message"]["id"]], data, files)
            found.original = self.messages[found.payload["message"]["id"]]  # what the member now sees
            found.done.set()
        if kind == 8:
            choices = data.get("choices", [])
            if len(choices) > 25 or any(not 1 <= len(c["name"]) <= 100 for c in choices):
                self.violations.append(f"interaction {iid}: autocomplete choices Discord refuses")
                return self.error(400, 50035, "Invalid Form Body")
            found.original = {"choices": choices}
            found.done.set()
        return self.reply({"interaction": info})

    @staticmethod
    def check_modal(found: Interaction, data: dict[str, Any]) -> str | None:
        """What Discord refuses in a modal: as the answer to a modal submit or an autocomplete,
        more than 5 inputs, a title or label over 45 characters, an id over 100."""
        if found.type not in (2, 3):
            return f"a modal cannot answer an interaction of type {found.type}"
        if not 1 <= len(data.get("title") or "") <= 45:
            return "a modal's title must be 1-45 characters"
        if not 1 <= len(data.get("custom_id") or "") <= 100:
            return "a modal's custom_id must be 1-100 characters"
        rows = data.get("components") or []
        if not 1 <= len(rows) <= 5:
            return f"a modal has {len(rows)} inputs (1 to 5)"
        for row in rows:
            inner = row.get("components") or []
            if row.get("type") != 1 or len(inner) != 1 or inner[0].get("type") != 4:
                return "each row of a modal holds one text input"
            text_input = inner[0]
            if not 1 <= len(text_input.get("label") or "") <= 45:
                return f"label {text_input.get('label')!r} is not 1-45 characters"
            if not 1 <= len(text_input.get("custom_id") or "") <= 100:
                return "a text input's custom_id must be 1-100 characters"
            if text_input.get("style") not in (1, 2) or not 1 <= int(text_input.get("max_length") or 4000) <= 4000:
                return "a text input's style must be 1 or 2 and its max_length at most 4000"
            if len(text_input.get("placeholder") or "") > 100:
                return "a text input's placeholder is over 100 characters"
        return None

    def webhook(self, method: str, parts: list[str], body: Any, files: list[str]) -> web.Response:
        token = parts[2]
        found = next((i for i in self.interactions.values() if i.token == token), None)
        if found is None or time.monotonic() - found.created > 15 * 60:
            return self.error(404, 10015, "Unknown Webhook")
        if method != "GET" and found.payload["channel_id"] in self.unknown_channels:  # deleted since
            return self.error(404, 10003, "Unknown Channel")
        if len(parts) == 5 and parts[4] == "@original":
            if found.original is None:
                return self.error(404, 10008, "Unknown Message")
            if method == "GET":
                return self.reply(self.public(found.original))
            if method == "DELETE":
                self.messages.pop(found.original["id"], None)
                found.original["_deleted"] = True
                return self.reply(None)
            if method == "PATCH":
                problem = self.check_message(body or {}, f"interaction {found.id} edit")
                if problem:
                    self.violations.append(problem)
                    return self.error(400, 50035, problem)
                self.edit_message(found.original, body, files)
                found.original["_loading"] = False
                found.done.set()
                return self.reply(self.public(found.original))
        if len(parts) == 3 and method == "POST":
            problem = self.check_message(body or {}, f"interaction {found.id} follow-up")
            if problem:
                self.violations.append(problem)
                return self.error(400, 50035, problem)
            message = self.store_message(found.payload["channel_id"], body, "followup", files)
            found.followups.append(message)
            return self.reply(self.public(message))
        return self.error(404, 0, "404: Not Found")
