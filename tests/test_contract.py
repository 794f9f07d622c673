"""The contract checks the fakes run on every request catch what the platforms' published
definitions refuse: bodies planted on purpose against Discord's OpenAPI document and Slack's
Block Kit models must be refused and recorded, so the suites that run under them (every
Discord and Slack test) cannot pass vacuously. Also: the bot calls only Web API methods
slack_sdk's client has, and the fakes' payloads carry the keys Slack documents."""

from __future__ import annotations

import ast
import inspect
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.models.views import View
from slack_sdk.web.async_client import AsyncWebClient

from tests.conftest import ROOT
from tests.conftest import _contract_kept as contract_kept
from tests.contract import ledger
from tests.contract.discord_openapi import DOCUMENT, contract
from tests.contract.slack_models import web_api_methods
from tests.fakes.discord_server import FakeDiscord, snowflake, user
from tests.fakes.slack_api import (
    FakeSlack,
    click_payload,
    command_payload,
    event_body,
    view_submission_payload,
)

MENTIONS = {"parse": []}


@pytest.fixture
async def discord_fake() -> AsyncIterator[tuple[FakeDiscord, aiohttp.ClientSession]]:
    fake = await FakeDiscord().start()
    fake.add_guild()
    session = aiohttp.ClientSession(headers={"Authorization": "Bot fake-token"})
    try:
        yield fake, session
    finally:
        await session.close()
        await fake.stop()
        ledger.take()  # this test's planted violations are its own


async def send(session: aiohttp.ClientSession, method: str, url: str, **kw: Any) -> tuple[int, Any]:
    async with session.request(method, url, **kw) as response:
        text = await response.text()
        return response.status, (json.loads(text) if text else None)


def test_a_violation_left_at_the_end_of_a_test_fails_it() -> None:
    """What the hooks in tests/conftest.py run after each test's call and teardown."""
    ledger.record("fake Discord: planted")
    with pytest.raises(pytest.fail.Exception, match=r"(?s)1 contract violation.*planted"):
        contract_kept("the test")
    assert ledger.pending() == []
    contract_kept("the test")  # nothing left: nothing fails


# ------------------------------------------------------------------ Discord


def test_the_vendored_document_says_where_it_came_from_and_its_license() -> None:
    assert json.loads(DOCUMENT.read_text())["openapi"].startswith("3.1")
    license_text = (DOCUMENT.parent / "discord-openapi.LICENSE").read_text()
    source = (DOCUMENT.parent / "discord-openapi.SOURCE.md").read_text()
    assert license_text.startswith("MIT License") and "Discord" in license_text
    assert "discord/discord-api-spec" in source and "74fda0f" in source


def test_requests_are_matched_to_the_documented_operation() -> None:
    found = contract()
    edit = found.operation("PATCH", "/webhooks/1/tok/messages/@original")
    assert edit is not None and edit.template == "/webhooks/{webhook_id}/{webhook_token}/messages/@original"
    me = found.operation("GET", "/users/@me")
    assert me is not None and me.template == "/users/@me"
    callback = found.operation("POST", "/interactions/1/tok/callback")
    assert callback is not None and "with_response" in callback.query
    assert found.operation("DELETE", "/users/@me") is None
    assert found.operation("POST", "/channels/1/frobnicate") is None


async def test_discord_fake_refuses_and_records_planted_bad_bodies(
    discord_fake: tuple[FakeDiscord, aiohttp.ClientSession],
) -> None:
    fake, session = discord_fake
    channel = next(iter(fake.channels))
    messages = f"{fake.api}/channels/{channel}/messages"
    # a good body passes, both ways
    assert (await send(session, "POST", messages, json={"content": "hi", "allowed_mentions": MENTIONS}))[0] == 200
    assert ledger.pending() == [] and fake.contract_violations == []

    status, answer = await send(session, "POST", messages, json={"content": ["not", "text"]})
    assert (status, answer["code"]) == (400, 50035)
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps({"embeds": [{"title": {"nested": 1}}]}), content_type="application/json")
    form.add_field("files[0]", b"\x89PNG", filename="chart.png", content_type="image/png")
    assert (await send(session, "POST", messages, data=form))[0] == 400
    assert (await send(session, "POST", f"{fake.api}/channels/{channel}/frobnicate", json={}))[0] == 404
    assert (await send(session, "GET", f"{fake.api}/users/@me?flavour=mint"))[0] == 200

    # interaction callbacks and webhooks are in the document too
    member = user(snowflake(), "member")
    interaction = await fake.interact(2, None, channel, member, {"id": snowflake(), "name": "score", "type": 1})
    callback = f"{fake.api}/interactions/{interaction.id}/{interaction.token}/callback?with_response=true"
    assert (await send(session, "POST", callback, json={"type": 4, "data": {"flags": "ephemeral"}}))[0] == 400
    webhook = f"{fake.api}/webhooks/{fake.app_id}/{interaction.token}"
    assert (await send(session, "PATCH", f"{webhook}/messages/@original", json={"embeds": "x"}))[0] == 400

    found = ledger.take()
    assert found == [f"fake Discord: {v}" for v in fake.contract_violations]
    expected = [
        "POST /channels/{channel_id}/messages request at content",
        "POST /channels/{channel_id}/messages request at embeds/0/title",
        f"POST /channels/{channel}/frobnicate: the document has no such operation",
        "GET /users/@me: query parameters ['flavour'] are not documented",
        "POST /interactions/{interaction_id}/{interaction_token}/callback request at data/flags",
        "PATCH /webhooks/{webhook_id}/{webhook_token}/messages/@original request at embeds",
    ]
    assert len(fake.contract_violations) == len(expected), fake.contract_violations
    for violation, start in zip(fake.contract_violations, expected, strict=True):
        assert violation.startswith(start), (violation, start)


async def test_discord_fake_records_an_answer_the_document_does_not_describe(
    discord_fake: tuple[FakeDiscord, aiohttp.ClientSession],
) -> None:
    fake, session = discord_fake
    del fake.bot_user["public_flags"]  # a fake answering in a shape Discord never sends
    assert (await send(session, "GET", f"{fake.api}/users/@me"))[0] == 200
    assert fake.contract_violations == [
        "GET /users/@me 200 response at (the body): 'public_flags' is a required property"
    ]
    assert ledger.take() == [f"fake Discord: {fake.contract_violations[0]}"]  # which fails a test that leaves it
    assert contract().check_response("GET", "/users/@me", 418, {"code": 0, "message": "teapot"}) == []  # a 4XX
    assert contract().check_response("DELETE", "/channels/1/messages/2", 200, {"id": "2"}) == [
        "DELETE /channels/{channel_id}/messages/{message_id}: status 200 is not a documented answer"
    ]


# -------------------------------------------------------------------- Slack


@pytest.fixture
async def slack_fake() -> AsyncIterator[tuple[FakeSlack, AsyncWebClient]]:
    fake = await FakeSlack().start()
    client = AsyncWebClient(token="xoxb-one", base_url=fake.api_url)
    try:
        yield fake, client
    finally:
        await fake.stop()
        ledger.take()


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


async def refused(call: Any) -> str:
    with pytest.raises(SlackApiError) as raised:
        await call
    return str(raised.value.response["error"])


async def test_slack_fake_refuses_and_records_planted_bad_blocks_and_views(
    slack_fake: tuple[FakeSlack, AsyncWebClient],
) -> None:
    fake, client = slack_fake
    assert (await client.chat_postMessage(channel="C1", text="hi", blocks=[section("fine")]))["ok"]
    assert ledger.pending() == []

    header = [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]
    assert await refused(client.chat_postMessage(channel="C1", text="t", blocks=header)) == "invalid_blocks"
    typo = [{**section("x"), "txet": "typo"}]
    assert await refused(client.chat_postEphemeral(channel="C1", user="U1", text="t", blocks=typo)) == "invalid_blocks"
    crowded = [{"type": "context", "elements": [{"type": "mrkdwn", "text": "x"}] * 11}]
    assert await refused(client.chat_update(channel="C1", ts="1.1", text="t", blocks=crowded)) == "invalid_blocks"
    home = {"type": "home", "blocks": [section("x")] * 101}
    assert await refused(client.views_publish(user_id="U1", view=home)) == "invalid_arguments"
    modal = {"type": "modal", "title": {"type": "plain_text", "text": "x" * 25}, "blocks": [section("x")]}
    assert await refused(client.views_open(trigger_id="t", view=modal)) == "invalid_arguments"
    assert await refused(client.api_call("chat.frobnicate", json={"channel": "C1"})) == "unknown_method"
    async with aiohttp.ClientSession() as session:
        button = {"type": "button", "text": {"type": "plain_text", "text": "a"}, "action_id": "a"}
        bad = {"blocks": [{"type": "actions", "elements": [button] * 26}]}
        async with session.post(fake.response_url("r9"), json=bad) as response:
            assert response.status == 400
    fake.check_ack({"response_action": "update", "view": {"type": "modal", "blocks": []}}, "view_submission ack")
    fake.check_ack({"response_action": "errors", "errors": {"prompt": ""}}, "view_submission ack")

    found = ledger.take()
    assert found == [f"fake Slack: {v}" for v in fake.contract_violations]
    expected = [
        "chat.postMessage: block 0 (header): text attribute cannot exceed 150",
        "chat.postEphemeral: keys slack_sdk's models do not know: ['block 0.txet']",
        "chat.update: block 0 (context): elements attribute cannot exceed 10",
        "views.publish: view (home): views must contain between 1 and 100 blocks",
        "views.open: view (modal): title must be between 1 and 24 characters",
        "chat.frobnicate: not a Web API method",
        "response_url: block 0 (actions)",
        "view_submission ack (update): view (modal)",
        "view_submission ack: errors must map block ids to text",
    ]
    assert len(fake.contract_violations) == len(expected), fake.contract_violations
    for violation, start in zip(fake.contract_violations, expected, strict=True):
        assert violation.startswith(start), (violation, start)


async def test_socket_mode_acks_are_checked_too(slack_fake: tuple[FakeSlack, AsyncWebClient]) -> None:
    fake, _ = slack_fake
    async with aiohttp.ClientSession() as session, session.ws_connect(f"ws://127.0.0.1:{fake.port}/link") as ws:
        assert json.loads((await ws.receive()).data)["type"] == "hello"
        envelope = await fake.push("interactive", {"type": "view_submission"})
        view = {"type": "modal", "title": {"type": "plain_text", "text": "Suggest"}, "blocks": []}
        await ws.send_str(json.dumps({"envelope_id": envelope, "payload": {"response_action": "push", "view": view}}))
        await fake.wait_ack(envelope)
    assert [v.split(":")[0] for v in ledger.take()] == ["fake Slack"]
    assert fake.contract_violations == [
        "Socket Mode ack (push): view (modal): views must contain between 1 and 100 blocks"
    ]


def calls_in(source: str) -> set[str]:
    """The client methods a module calls (`client.chat_postMessage(...)`, any receiver named
    client) and the names it passes to api_call."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        receiver = node.func.value
        named = receiver.attr if isinstance(receiver, ast.Attribute) else getattr(receiver, "id", "")
        if named == "client" and node.func.attr != "api_call":
            found.add(node.func.attr)
        if node.func.attr == "api_call" and node.args and isinstance(node.args[0], ast.Constant):
            found.add(f"api:{node.args[0].value}")
    return found


def test_the_bot_calls_only_web_api_methods_the_sdk_client_has() -> None:
    called = set().union(*(calls_in(p.read_text()) for p in (ROOT / "bot" / "platforms" / "slack").glob("*.py")))
    assert {"chat_postMessage", "views_publish", "users_info"} <= called  # the scan sees the bot's calls
    methods = web_api_methods()
    # a method that calls one api_call, or one of the client's helpers over them (files_upload_v2)
    helpers = {name for name, _ in inspect.getmembers(AsyncWebClient, inspect.iscoroutinefunction)}
    unknown = sorted(c for c in called if c[4:] not in methods and c not in methods.values() and c not in helpers)
    assert unknown == []
    # and every method the fake answers is one of them
    handled = {name[1:].replace("_", ".") for name in dir(FakeSlack) if name[1:2].islower() and "_" in name[2:]}
    served = {m for m in methods if m.replace("_", ".") in handled}
    assert {"chat.postMessage", "files.getUploadURLExternal", "views.open"} <= served


def test_fake_payloads_carry_the_keys_slack_documents() -> None:
    """Keys from Slack's payload references as bolt-js types them (BlockAction, ButtonAction,
    ViewSubmit/ViewOutput, SlashCommand, EnvelopedEvent); views through slack_sdk's View."""
    click = click_payload("sb1:a:1:0", "U1", "T1", "C1", "1.1", "http://x/respond/r")
    assert {"type", "actions", "team", "user", "token", "response_url", "trigger_id", "api_app_id", "container"} <= set(
        click
    )
    assert {"type", "block_id", "action_id", "action_ts", "value", "text"} <= set(click["actions"][0])
    assert {"id", "username"} <= set(click["user"]) and {"id", "domain"} <= set(click["team"])

    sent = {
        "type": "modal",
        "callback_id": "suggest",
        "title": {"type": "plain_text", "text": "Suggest"},
        "submit": {"type": "plain_text", "text": "Send"},
        "blocks": [
            {
                "type": "input",
                "block_id": "prompt",
                "label": {"type": "plain_text", "text": "Question"},
                "element": {"type": "plain_text_input", "action_id": "value"},
            }
        ],
    }
    submitted = view_submission_payload(sent, {"prompt": "Why?"}, "U1", "T1")
    assert {"type", "team", "user", "view", "api_app_id", "token", "trigger_id"} <= set(submitted)
    view = submitted["view"]
    documented = {"id", "team_id", "app_id", "bot_id", "title", "type", "blocks", "close", "submit", "state", "hash"}
    documented |= {"private_metadata", "root_view_id", "previous_view_id", "clear_on_close", "notify_on_close"}
    assert documented <= set(view)
    View(**view).validate_json()
    assert view["state"]["values"] == {"prompt": {"value": {"type": "plain_text_input", "value": "Why?"}}}

    command = command_payload("/score", "", "U1", "T1", "C1", "http://x/respond/r")
    assert {"token", "command", "text", "response_url", "trigger_id", "user_id", "user_name", "team_id"} <= set(command)
    assert {"team_domain", "channel_id", "channel_name"} <= set(command)

    envelope = event_body({"type": "message", "user": "U1", "text": "a", "channel": "C1", "ts": "1.2"}, "T1", "Ev1")
    assert {"token", "team_id", "api_app_id", "event", "type", "event_id", "event_time", "authorizations"} <= set(
        envelope
    )
    assert {"enterprise_id", "team_id", "user_id", "is_bot"} <= set(envelope["authorizations"][0])
    assert envelope["event"]["event_ts"] == "1.2" and envelope["event"]["channel_type"] == "channel"
    home = event_body({"type": "app_home_opened", "user": "U8", "tab": "home"}, "T1", "Ev2")["event"]
    assert home["channel"].startswith("D") and "event_ts" in home
