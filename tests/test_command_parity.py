"""Every documented command and option asks the engine the same thing on every platform.

The list is the shared text-command table (bot.platforms.commands.TABLE, `documented`). Each
entry is typed on the console (the real app on a real Runtime), sent as a Slack slash command
to the real Bolt app (tests/fakes/slack_api.py) and as a Discord slash command to the real
discord.py client (tests/fakes/discord_server.py). A spy on the engine records, for each,
which method was called with which arguments (references reduced to their role) and what kind
of card came back; the three records must be equal. Commands of one platform only are listed
apart: the console's /as, /daily, /close, /quit; Discord's and Slack's buttons."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from bot.background.demo_runner import DemoJobRunner, LocalBackend
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.errors import StudyBotError
from bot.core.rules.demo_request import parse_demo
from bot.core.values import ChannelRef, CommunityRef, UserRef
from bot.platforms import commands
from bot.platforms.slack.slash import SLACK_NAMES
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock, migrated_sqlite
from tests.console_chat import Console
from tests.fakes.discord_server import user
from tests.fakes.slack_api import FakeSlack, command_body
from tests.test_discord import World, world  # noqa: F401  (the fixture)
from tests.test_slack import FORM, start_slack, stop_slack

START = datetime(2026, 11, 23, 9, 0, tzinfo=timezone.utc)
# Typed where only one platform has them (not walked here: their own tests cover them).
ONLY_ON = {
    "console": ("/as NAME", "/daily", "/close", "/quit", "/suggest's guided prompts"),
    "discord": ("answer buttons", "the members' queue buttons", "the /suggest modal"),
    "slack": ("answer buttons", "the members' queue buttons", "the /suggest modal", "App Home"),
}
WALKED = [
    (name, option)
    for name, option in commands.documented("discord")
    if commands.BY_NAME[name].ask is not None and commands.documented("slack").count((name, option))
]
ADMIN = user("900000000000000001", "admin")


class Spy:
    """Wraps the table's engine methods on one engine: (method, arguments, card kind) per
    outermost call (configure's own call to config is not recorded)."""

    def __init__(self, engine: StudyEngine, channel_id: str) -> None:
        self.calls: list[tuple[str, tuple[object, ...], str]] = []
        self.channel_id = channel_id
        self._depth = threading.local()
        asks = [c.ask(commands.Where(_U, _C), o) for c in commands.TABLE if c.ask for o in c.documented]
        bound = {(id(m.__self__), m.__name__): m for m in (ask.bound(engine) for ask in asks)}
        for method in bound.values():  # each service method the table asks, wrapped where it lives
            setattr(method.__self__, method.__name__, self._wrap(method.__name__, method))

    def _wrap(self, method: str, call: Callable[..., object]) -> Callable[..., object]:
        def spied(*args: object, **kwargs: object) -> object:
            depth = getattr(self._depth, "n", 0)
            self._depth.n = depth + 1
            kind = "error"
            try:
                result = call(*args, **kwargs)
                kind = type(result).__name__
                return result
            except StudyBotError as exc:
                kind = type(exc).__name__
                raise
            finally:
                self._depth.n = depth
                if depth == 0:
                    self.calls.append((method, self._norm(method, (*args, *kwargs.values())), kind))

        return spied

    def _norm(self, method: str, args: tuple[object, ...]) -> tuple[object, ...]:
        def one(value: object) -> object:
            if isinstance(value, UserRef | ChannelRef | CommunityRef):
                return type(value).__name__
            if value == self.channel_id:
                return "<this channel>"
            return value

        if method == "request_demo":
            return (*map(one, args[:2]), parse_demo(str(args[2])))
        return tuple(map(one, args))

    async def next_call(self, count: int, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.calls) <= count:
            assert time.monotonic() < deadline, f"no engine call within {timeout} s; so far {self.calls}"
            await asyncio.sleep(0.02)


_U = UserRef("console", "c", "u", "u")
_C = ChannelRef("console", "c", "console")


def fresh_engine(path: Path, bank: Bank, clock: FakeClock) -> tuple[StudyEngine, Database]:
    url = migrated_sqlite(path)
    database = Database(url)
    return StudyEngine(SqlStore(database), bank, clock=clock), database


def walk_console(tmp_path: Path, bank: Bank, clock: FakeClock) -> list[tuple[str, tuple[object, ...], str]]:
    clock.set(START)
    engine, database = fresh_engine(tmp_path / "console.db", bank, clock)
    engine.admin.config(CommunityRef("console", "club"), "channel", "console")
    spy = Spy(engine, "console")
    chat = Console(engine, community="club", user="Ann")
    # queued demos stay queued: a runner that is never started (the console asks the engine only with one)
    chat.runtime.demo_runner = DemoJobRunner(engine, LocalBackend(), tmp_path / "charts")
    try:
        for name, option in WALKED:
            before = len(spy.calls)
            chat.handle(f"/{name} {option}".strip())
            assert len(spy.calls) == before + 1, (name, option, spy.calls[before:])
    finally:
        chat.close()
        database.dispose()
    return spy.calls


async def walk_slack(tmp_path: Path, bank: Bank, clock: FakeClock) -> list[tuple[str, tuple[object, ...], str]]:
    clock.set(START)
    url = migrated_sqlite(tmp_path / "slack.db")
    fake = await FakeSlack().start()
    slack, database = await start_slack(fake, url, bank, clock)
    try:
        slack.engine.admin.config(CommunityRef("slack", "T1"), "channel", "C1")
        spy = Spy(slack.engine, "C1")
        for n, (name, option) in enumerate(WALKED):
            command = SLACK_NAMES.get(name, f"/{name}")
            body = command_body(command, option, "UALLOWED", "T1", "C1", fake.response_url(f"walk-{n}"))
            before = len(spy.calls)
            assert (await slack.post(body, FORM)).status == 200
            await spy.next_call(before)
        return spy.calls
    finally:
        await stop_slack(slack, database)
        await fake.stop()


def discord_options(name: str, option: str) -> list[dict[str, Any]]:
    """The documented option as Discord's typed options (a demo: its subcommand's)."""

    def typed(key: str, value: object) -> dict[str, Any]:
        kind = {bool: 5, int: 4, float: 10}.get(type(value), 3)
        return {"name": key, "type": kind, "value": value}

    if not option:
        return []
    if name == "demo":
        sub, *pairs = option.split()
        given = [pair.partition("=") for pair in pairs]
        return [
            {
                "name": sub,
                "type": 1,
                "options": [typed(k.replace("-", "_"), int(v) if v.isdigit() else v) for k, _, v in given],
            }
        ]
    if name == "config":
        key, _, value = option.partition(" ")
        return [typed("setting", key), *([typed("value", value)] if value else [])]
    if name == "forget-me":
        return [typed("confirm", option == "confirm")]
    return [typed({"quiz": "topic", "leaderboard": "scope", "review": "action"}[name], option)]


async def walk_discord(place: World, clock: FakeClock) -> list[tuple[str, tuple[object, ...], str]]:
    clock.set(START)
    running = await place.start()
    try:
        running.engine.admin.config(CommunityRef("discord", place.guild), "channel", place.channel)
        spy = Spy(running.engine, place.channel)
        for name, option in WALKED:
            before = len(spy.calls)
            asked = await place.fake.slash(
                name, ADMIN, place.guild, place.channel, discord_options(name, option), admin=True
            )
            await place.fake.answered(asked)
            await spy.next_call(before)
        return spy.calls
    finally:
        await running.stop()


def test_the_walk_covers_every_documented_command_of_every_platform() -> None:
    walked = {name for name, _ in WALKED}
    for platform in commands.EVERYWHERE:
        asked = {name for name, _ in commands.documented(platform) if commands.BY_NAME[name].ask is not None}
        assert asked - walked == ({"daily", "close"} if platform == "console" else set()), platform
    assert set(ONLY_ON) == set(commands.EVERYWHERE)
    assert {"config", "leaderboard", "demo"} <= walked
    assert ("config", "pause") in WALKED and ("config", "post-now") in WALKED
    assert ("leaderboard", "this-week") in WALKED


async def test_every_platform_asks_the_engine_the_same_and_gets_the_same_kind_of_card(
    world: World,  # noqa: F811
    tmp_path: Path,
    test_bank: Bank,
    clock: FakeClock,
) -> None:
    console = await asyncio.to_thread(walk_console, tmp_path, test_bank, clock)
    slack = await walk_slack(tmp_path, test_bank, clock)
    discord = await walk_discord(world, clock)
    assert len(console) == len(WALKED)
    for n, (name, option) in enumerate(WALKED):
        assert console[n] == slack[n] == discord[n], (name, option, console[n], slack[n], discord[n])
    kinds = {kind for _, _, kind in console}
    assert {"ConfigCard", "LeaderboardCard", "QuestionCard", "DemoQueued", "Forgotten"} <= kinds  # it did things
    assert console[[option for name, option in WALKED].index("post-now")][2] == "QuestionCard"


COMMANDS_PAGE = Path(__file__).resolve().parent.parent / "docs" / "commands.md"


def _table_rows(page: str, heading: str) -> list[str]:
    """The first cells of the markdown table under a heading (up to the next heading)."""
    section = page.split(f"\n{heading}\n", 1)[1].split("\n#", 1)[0]
    return [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| `")]


def test_the_commands_page_lists_exactly_the_tables_commands() -> None:
    page = COMMANDS_PAGE.read_text(encoding="utf-8")
    listed = {cell.strip("`").split()[0].lstrip("/") for cell in _table_rows(page, "## Chat commands")}
    listed |= {cell.strip("`").split()[0].lstrip("/") for cell in _table_rows(page, "### The console")}
    table = {command.name for command in commands.TABLE}
    console_only = {"as", "cancel", "quit"}  # the console adapter's own lines, not engine calls
    assert listed - console_only == table


def test_every_documented_config_word_is_on_the_commands_page() -> None:
    page = COMMANDS_PAGE.read_text(encoding="utf-8")
    cells = " ".join(_table_rows(page, "## /config"))
    words = {option.split()[0] for option in commands.BY_NAME["config"].documented if option}
    missing = sorted(word for word in words if f"`{word}" not in cells and f", `{word}" not in cells)
    assert not missing, f"docs/commands.md's /config table lacks {missing}"


# ------------------------------------------------------- the admin page's link (issue 27)

ADMIN_URL = "https://study.example.org/s/admin-token/admin"


class SignedLinks:
    """The engine's Links port with fixed URLs: what is tested is which answers carry one."""

    def member(self, community: CommunityRef, user_id: str, *versions: object) -> str:  # noqa: ARG002 - WebLinks'
        return f"https://study.example.org/s/member-{user_id}/me"

    def admin(self, community: CommunityRef, *holder: object) -> str:  # noqa: ARG002 - WebLinks' signature
        return ADMIN_URL


def test_the_engine_puts_the_admin_link_only_in_an_admins_config_answer(
    tmp_path: Path, test_bank: Bank, clock: FakeClock
) -> None:
    engine, database = fresh_engine(tmp_path / "core.db", test_bank, clock)
    engine.links = SignedLinks()
    club = CommunityRef("console", "club")
    admin = UserRef("console", "club", "ann", "Ann")  # the platform's word: Ann may configure
    try:
        for word, value in (("show", None), ("", None), ("time", "07:30"), ("pause", None), ("resume", None)):
            assert engine.admin.configure(club, word, value).link is None, word  # type: ignore[union-attr]
            assert engine.admin.configure(club, word, value, admin).link == ADMIN_URL, word  # type: ignore[union-attr]
        assert engine.admin.config(club).link is None and engine.admin.config(club, admin=admin).link == ADMIN_URL
    finally:
        database.dispose()


async def test_the_admin_link_reaches_only_members_who_may_configure_on_every_platform(
    world: World,  # noqa: F811
    tmp_path: Path,
    test_bank: Bank,
    clock: FakeClock,
) -> None:
    """/config with no words and `show` by a member who may not configure: the settings without
    the admin link on Slack (it used to carry it), a refusal on Discord; an admin (Slack's
    workspace admin or allow-list, Discord's Manage Server, the console's operator) gets it."""
    clock.set(START)
    # the console: the operator's own terminal
    engine, database = fresh_engine(tmp_path / "console.db", test_bank, clock)
    engine.links = SignedLinks()
    chat = Console(engine, community="club", user="Ann")
    try:
        assert ADMIN_URL in "\n".join(m.text for m in chat.handle("/config"))
    finally:
        chat.close()
        database.dispose()

    # Slack: a plain member's /studybot-config and /studybot-config show
    url = migrated_sqlite(tmp_path / "slack.db")
    fake = await FakeSlack().start()
    slack, database = await start_slack(fake, url, test_bank, clock)
    slack.engine.links = SignedLinks()
    fake.users["UADMIN"] = {"is_admin": True}
    try:
        for n, (who, text) in enumerate([("UPLAIN", ""), ("UPLAIN", "show"), ("UADMIN", ""), ("UALLOWED", "show")]):
            body = command_body("/studybot-config", text, who, "T1", "C1", fake.response_url(f"config-{n}"))
            assert (await slack.post(body, FORM)).status == 200
            answer = json.dumps((await fake.wait_response(f"config-{n}")).params)
            assert "Settings of" in answer, (who, text, answer)
            assert (ADMIN_URL in answer) == (who != "UPLAIN"), (who, text, answer)
    finally:
        await stop_slack(slack, database)
        await fake.stop()

    # Discord: a member without Manage Server is refused; an admin gets the link
    running = await world.start()
    running.engine.links = SignedLinks()
    try:
        for who, admin in ((user("900000000000000002", "member"), False), (ADMIN, True)):
            for options in ([], [{"name": "setting", "type": 3, "value": "show"}]):
                asked = await world.fake.slash("config", who, world.guild, world.channel, options, admin=admin)
                answer = json.dumps(await world.fake.answered(asked))
                assert (ADMIN_URL in answer) == admin, (admin, options, answer)
    finally:
        await running.stop()


# ------------------------------------------------- an admin link revoked when its admin loses the right


def _token(answer: str) -> str:
    return answer.split("/s/", 1)[1].split("/", 1)[0]


async def test_an_admin_link_stops_opening_when_its_admin_loses_the_right_on_slack_and_discord(
    world: World,  # noqa: F811
    tmp_path: Path,
    test_bank: Bank,
    clock: FakeClock,
) -> None:
    """An admin gets a signed admin link naming them; when the platform next sees them without
    the right (Slack: users.info no longer says admin, on /studybot-config show or a setting;
    Discord: /config without Manage Server), that link no longer opens (link_current), and
    `web rotate` (Slack's text, Discord's option) revokes every link of the community."""
    from bot.web.links import WebLinks

    clock.set(START)
    signer = WebLinks("https://study.example.org", "x" * 40, 3600)

    def opens(engine: StudyEngine, token: str) -> bool:
        grant = signer.read(token)
        return engine.web.link_current(grant.community, grant.holder, grant.admin, grant.versions)

    url = migrated_sqlite(tmp_path / "slack.db")
    fake = await FakeSlack().start()
    slack, database = await start_slack(fake, url, test_bank, clock)
    slack.engine.links = signer
    fake.users["UBOSS"] = {"is_admin": True}

    async def config(text: str, n: int) -> str:
        body = command_body("/studybot-config", text, "UBOSS", "T1", "C1", fake.response_url(f"lost-{n}"))
        assert (await slack.post(body, FORM)).status == 200
        return json.dumps((await fake.wait_response(f"lost-{n}")).params)

    try:
        first = _token(await config("show", 0))
        assert signer.read(first).holder == "UBOSS" and opens(slack.engine, first)
        fake.users["UBOSS"] = {"is_admin": False}  # their workspace admin role removed
        assert "/s/" not in await config("show", 1)
        assert not opens(slack.engine, first)
        fake.users["UBOSS"] = {"is_admin": True}
        second = _token(await config("", 2))
        assert opens(slack.engine, second)
        rotated = await config("web rotate", 3)
        assert not opens(slack.engine, second) and opens(slack.engine, _token(rotated))
    finally:
        await stop_slack(slack, database)
        await fake.stop()

    running = await world.start()
    running.engine.links = signer
    boss = user("900000000000000003", "boss")
    try:
        asked = await world.fake.slash("config", boss, world.guild, world.channel, [], admin=True)
        token = _token(json.dumps(await world.fake.answered(asked)))
        assert opens(running.engine, token)
        asked = await world.fake.slash("config", boss, world.guild, world.channel, [], admin=False)
        assert "/s/" not in json.dumps(await world.fake.answered(asked))  # refused
        assert not opens(running.engine, token)
        asked = await world.fake.slash("config", boss, world.guild, world.channel, [], admin=True)
        again = _token(json.dumps(await world.fake.answered(asked)))
        options = [{"name": "setting", "type": 3, "value": "web"}, {"name": "value", "type": 3, "value": "rotate"}]
        asked = await world.fake.slash("config", boss, world.guild, world.channel, options, admin=True)
        rotated = _token(json.dumps(await world.fake.answered(asked)))
        assert not opens(running.engine, again) and opens(running.engine, rotated)
    finally:
        await running.stop()
