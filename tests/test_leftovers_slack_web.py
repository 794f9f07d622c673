"""Slack over HTTP and the study web page on one port (issue 20): when both run, the web
page's server also serves /slack/events (and, with OAuth, /slack/install and
/slack/oauth_redirect), and Slack starts no server of its own."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.platforms.launch import serve
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock
from tests.fakes.slack_api import FakeSlack, command_body
from tests.services import free_port
from tests.test_slack import _no_slack_env, block_text, post_when_listening, settings_for  # noqa: F401


async def serving(sqlite_url: str, bank: Bank, clock: FakeClock, **extra: Any) -> tuple[Any, ...]:
    fake = await FakeSlack().start()
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    web_port, slack_port = free_port(), free_port()
    settings = settings_for(
        fake, sqlite_url, host="127.0.0.1", port=slack_port, web_port=web_port, web_host="127.0.0.1", **extra
    )
    served = asyncio.create_task(serve(settings, engine, ("slack",), schedule=False))
    return fake, database, served, web_port, slack_port


async def refused_connection(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return True
    writer.close()
    await writer.wait_closed()
    return False


async def test_slack_events_and_the_web_page_share_one_port(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> None:
    fake, database, served, web_port, slack_port = await serving(sqlite_url, test_bank, clock)
    try:
        body = command_body("/score", "", "U1", "T1", "C1", fake.response_url("score"))
        assert await post_when_listening(f"http://127.0.0.1:{web_port}/slack/events", body) == 200
        answer = await fake.wait_response("score")
        assert "points" in block_text(answer.params).lower()
        async with aiohttp.ClientSession() as session:
            async with session.get(f"http://127.0.0.1:{web_port}/") as page:
                assert page.status == 200 and "text/html" in page.headers["Content-Type"]
            unsigned = {"Content-Type": "application/x-www-form-urlencoded"}
            async with session.post(f"http://127.0.0.1:{web_port}/slack/events", data=body, headers=unsigned) as bad:
                assert bad.status == 401  # Bolt still checks every request's signature
        assert await refused_connection(slack_port)  # no second port to expose
    finally:
        served.cancel()
        await asyncio.gather(served, return_exceptions=True)
        await fake.stop()
        database.dispose()


async def test_oauth_install_routes_are_on_the_web_page_port(
    sqlite_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    fake, database, served, web_port, slack_port = await serving(
        sqlite_url,
        test_bank,
        clock,
        SLACK_BOT_TOKEN=None,
        SLACK_CLIENT_ID="111.222",
        SLACK_CLIENT_SECRET="client-secret",
    )
    try:
        async with aiohttp.ClientSession() as session:
            deadline = asyncio.get_running_loop().time() + 15
            while True:
                try:
                    async with session.get(
                        f"http://127.0.0.1:{web_port}/slack/install", allow_redirects=False
                    ) as install:
                        status, text, location = install.status, await install.text(), install.headers.get("Location")
                    break
                except aiohttp.ClientConnectorError:
                    assert asyncio.get_running_loop().time() < deadline, "the web page never listened"
                    await asyncio.sleep(0.1)
            assert status in (200, 302)
            assert "slack.com/oauth/v2/authorize" in (location or text) and "client_id=111.222" in (location or text)
            async with session.get(f"http://127.0.0.1:{web_port}/slack/oauth_redirect?error=access_denied") as back:
                assert back.status in (200, 400, 401)  # Bolt's own failure page, not our 404
        assert await refused_connection(slack_port)
    finally:
        served.cancel()
        await asyncio.gather(served, return_exceptions=True)
        await fake.stop()
        database.dispose()
