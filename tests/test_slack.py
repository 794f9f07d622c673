"""The Slack adapter end to end: the real Bolt AsyncApp (HTTP on 127.0.0.1 with signed
requests, and Socket Mode against a local websocket) with a fake Slack Web API, real SQLite,
the real engine and outbox. Assertions are on the calls that reached the fake."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
import sys
import time
import urllib.parse
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import sqlalchemy as sa
import yaml

from bot.config import Settings
from bot.core import wording
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.rules import choices as codec
from bot.core.values import (
    AlreadyNoted,
    ChannelRef,
    CommunityRef,
    DemoFailedCard,
    DemoProgressCard,
    DemoResultCard,
    UserRef,
)
from bot.platforms.launch import LaunchError, choose_platforms, serve
from bot.platforms.runtime import Runtime
from bot.platforms.slack import COMMANDS, EVENTS, SlackBot
from bot.platforms.slack.errors import send_failed
from bot.platforms.slack.gate import printable
from bot.platforms.slack.slash import CONFIG_COMMAND
from bot.platforms.slack.suggestions import may_reply_to
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.wiring import build_runtime
from tests.conftest import ROOT, TEST_BANK, FakeClock
from tests.fakes.slack_api import (
    Call,
    FakeSlack,
    click_payload,
    command_body,
    command_payload,
    event_body,
    form_payload,
    sign,
    view_submission_payload,
)
from tests.services import free_port
from tests.test_suggestions import CHOICES, PROMPT, REF, TRAP, WHYS, good_form

SECRET = "test-signing-secret"
FORM = "application/x-www-form-urlencoded"
MANIFEST = ROOT / "bot" / "platforms" / "slack" / "manifest.yml"


@pytest.fixture(autouse=True)
def _no_slack_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # Bolt reads SLACK_* from the environment when an argument is None.
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_CLIENT_ID",
        "SLACK_CLIENT_SECRET",
    ):
        monkeypatch.delenv(name, raising=False)


@dataclass
class Slack:
    fake: FakeSlack
    bot: SlackBot
    engine: StudyEngine
    runtime: Runtime
    clock: FakeClock
    url: str
    session: aiohttp.ClientSession
    settings: Settings
    settles: int = 0

    async def post(
        self, body: str, content_type: str, secret: str = SECRET, timestamp: int | None = None, retry: int = 0
    ) -> aiohttp.ClientResponse:
        headers = {"Content-Type": content_type, **sign(secret, body, timestamp)}
        if retry:
            headers["X-Slack-Retry-Num"] = str(retry)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        async with self.session.post(self.url, data=body.encode(), headers=headers) as response:
            if response.content_type == "application/json":
                self.fake.check_ack(await response.json(), "HTTP ack")
            await response.read()
            return response

    async def command(
        self, command: str, text: str = "", user: str = "U1", team: str = "T1", channel: str = "C1", **kw: Any
    ) -> aiohttp.ClientResponse:
        body = command_body(command, text, user, team, channel, self.fake.response_url(f"{command[1:]}-{user}"))
        return await self.post(body, "application/x-www-form-urlencoded", **kw)

    async def click(self, payload: dict[str, Any], **kw: Any) -> aiohttp.ClientResponse:
        return await self.post(form_payload(payload), "application/x-www-form-urlencoded", **kw)

    async def submit(self, payload: dict[str, Any]) -> dict[str, Any]:
        """A view_submission; its answer is the body of the HTTP response (the ack)."""
        body = form_payload(payload)
        headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
        async with self.session.post(self.url, data=body.encode(), headers=headers) as response:
            assert response.status == 200
            text = await response.text()
        answer = json.loads(text) if text else {}
        self.fake.check_ack(answer, "view_submission ack")
        return answer

    async def event(self, event: dict[str, Any], event_id: str, team: str = "T1", **kw: Any) -> aiohttp.ClientResponse:
        return await self.post(json.dumps(event_body(event, team, event_id)), "application/json", **kw)

    async def settle(self) -> None:
        """Wait until everything sent before has sent what it was going to (a late duplicate
        then shows in the record). A /score sent now and answered through its own response_url
        proves the requests before it were acked and their listeners' work has started; then
        wait for all of that work to end."""
        self.settles += 1
        name = f"settle-{self.settles}"
        await self.post(command_body("/score", "", "USETTLE", "T1", "C9", self.fake.response_url(name)), FORM)
        await self.fake.wait_response(name)
        await self.bot.listeners.settled()

    async def open_daily(self, channel: str = "C1", team: str = "T1") -> tuple[int, str]:
        """Open today's round and deliver it; returns (round id, its message ts)."""
        card = self.engine.rounds.open_daily(ChannelRef("slack", team, channel))
        assert await self.runtime.deliver_now("slack") >= 1
        post = [c for c in self.fake.of("chat.postMessage") if c.params["channel"] == channel][-1]
        ts = next(
            ts for (ch, ts), m in self.fake.messages.items() if ch == channel and m["blocks"] == post.params["blocks"]
        )
        return card.round_id, ts  # type: ignore[union-attr]


def settings_for(fake: FakeSlack, db_url: str, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "_env_file": None,
        "database_url": db_url,
        "questions_dir": TEST_BANK,
        "slack_api_url": fake.api_url,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_BOT_TOKEN": "xoxb-one",
    }
    values.update(extra)
    return Settings(**values)


async def start_slack(fake: FakeSlack, sqlite_url: str, bank: Bank, clock: FakeClock) -> tuple[Slack, Database]:
    """The real app over HTTP on 127.0.0.1 on `sqlite_url` (a second call on the same database
    is the bot after a restart)."""
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), bank, clock=clock)
    runtime = build_runtime(engine, ("slack",), bridge_threads=4)
    settings = settings_for(fake, sqlite_url, slack_config_users="UALLOWED")
    bot = SlackBot(settings, runtime)
    port = await bot.start_http("127.0.0.1", 0)
    session = aiohttp.ClientSession()
    url = f"http://127.0.0.1:{port}/slack/events"
    return Slack(fake, bot, engine, runtime, clock, url, session, settings), database


async def stop_slack(slack: Slack, database: Database) -> None:
    await slack.session.close()
    await slack.bot.close()
    await slack.runtime.stop()
    database.dispose()


@pytest.fixture
async def slack(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> AsyncIterator[Slack]:
    fake = await FakeSlack().start()
    running, database = await start_slack(fake, sqlite_url, test_bank, clock)
    running.engine.admin.config(CommunityRef("slack", "T1"), "channel", "C1")
    try:
        yield running
    finally:
        await stop_slack(running, database)
        await fake.stop()


def ephemerals(fake: FakeSlack, user: str) -> list[dict[str, Any]]:
    return [c.params for c in fake.of("chat.postEphemeral") if c.params.get("user") == user]


def replies(fake: FakeSlack) -> list[Call]:
    """The answers through response_urls, less Slack.settle's own."""
    return [c for c in fake.of("response_url") if not c.url.startswith("settle-")]


def block_text(params: dict[str, Any]) -> str:
    blocks = params.get("blocks") or []
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    parts = [params.get("text") or ""]
    for block in blocks:
        parts.append((block.get("text") or {}).get("text", ""))
        parts.extend(e.get("text", "") for e in block.get("elements", []) if isinstance(e.get("text", ""), str))
    return "\n".join(parts)


def action_ids(params: dict[str, Any]) -> list[str]:
    blocks = params.get("blocks") or []
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def answer_index(engine: StudyEngine, round_id: int, correct: bool) -> int:
    """The shown index of the right (or a wrong) choice of a round."""
    with engine.store.read() as tx:
        row = tx.rounds.get_round(round_id)
    question = engine.bank.get(row.question_id)
    assert question is not None
    order = codec.parse_order(row.choice_order, len(question.choices))
    right = order.index(question.answer_index)
    return right if correct else (right + 1) % len(order)


# ---------------------------------------------------------------- daily round


async def test_daily_round_clicks_scored_once_and_reveal_updates_question(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    post = slack.fake.of("chat.postMessage")[0]
    assert post.token == "xoxb-one" and post.params["channel"] == "C1"
    right = answer_index(slack.engine, round_id, True)
    wrong = answer_index(slack.engine, round_id, False)
    assert codec.encode_answer(round_id, right) in action_ids(post.params)

    right_id = codec.encode_answer(round_id, right)
    wrong_id = codec.encode_answer(round_id, wrong)
    url = slack.fake.response_url("click")
    # U1 double clicks the right answer (the second as a retry), U2 picks a wrong one, U3 is a
    # Slack Connect member from another workspace answering in T1's channel.
    responses = await asyncio.gather(
        slack.click(click_payload(right_id, "U1", "T1", "C1", ts, url)),
        slack.click(click_payload(right_id, "U1", "T1", "C1", ts, url), retry=1),
        slack.click(click_payload(wrong_id, "U2", "T1", "C1", ts, url)),
        slack.click(click_payload(right_id, "U3", "T1", "C1", ts, url, user_team="TOTHER")),
    )
    assert [r.status for r in responses] == [200, 200, 200, 200]
    await slack.fake.wait_for("chat.postEphemeral", 4)
    u1 = [block_text(p) for p in ephemerals(slack.fake, "U1")]
    assert len(u1) == 2 and sum("Correct!" in t for t in u1) == 1 and sum("already answered" in t for t in u1) == 1
    assert "Not quite" in block_text(ephemerals(slack.fake, "U2")[0])
    assert "Correct!" in block_text(ephemerals(slack.fake, "U3")[0])
    # one answer each, scored once; the Slack Connect member in the host's community
    assert slack.engine.boards.score(UserRef("slack", "T1", "U1", "u1")).total_points > 0
    assert slack.engine.boards.score(UserRef("slack", "T1", "U3", "u3")).daily.answered == 1
    assert slack.engine.boards.score(UserRef("slack", "TOTHER", "U3", "u3")).daily.answered == 0
    rows = slack.engine.admin.export_rows(CommunityRef("slack", "T1"))
    assert sorted(r["user_id"] for r in rows) == ["U1", "U2", "U3"]
    # each member's Home after their first answer (the click's one engine call brings it), once for U1
    await slack.fake.wait_for("views.publish", 3)
    await slack.settle()
    assert sorted(c.params["user_id"] for c in slack.fake.of("views.publish")) == ["U1", "U2", "U3"]

    # the window closes: the question is edited in place (no buttons, counts), the reveal threads under it
    slack.clock.advance(hours=13)
    assert len(slack.engine.rounds.close_due()) == 1
    assert await slack.runtime.deliver_now("slack") == 1
    update = slack.fake.of("chat.update")[0].params
    assert (update["channel"], update["ts"]) == ("C1", ts)
    assert action_ids(update) == []
    assert "2 picked (the answer)" in block_text(update) and "1 picked" in block_text(update)
    reveal = slack.fake.of("chat.postMessage")[-1].params
    assert reveal["thread_ts"] == ts and "Answer to #" in block_text(reveal)
    # a click after the close is not scored
    await slack.click(click_payload(wrong_id, "U4", "T1", "C1", ts, url))
    await slack.fake.wait_for("chat.postEphemeral", 5)
    assert "closed" in block_text(ephemerals(slack.fake, "U4")[0])
    # and nothing is posted twice
    assert await slack.runtime.deliver_now("slack") == 0
    assert len(slack.fake.of("chat.postMessage")) == 2


async def test_thread_reply_answers_once_under_retries(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    right = answer_index(slack.engine, round_id, True)
    letter = "abcde"[right]
    reply = {
        "type": "message",
        "user": "U5",
        "text": letter,
        "channel": "C1",
        "ts": "1700000500.000001",
        "thread_ts": ts,
    }
    first = await slack.event(reply, "Ev1")
    again = await slack.event(reply, "Ev1", retry=1)
    assert first.status == 200 and again.status == 200
    await slack.fake.wait_for("chat.postEphemeral", 1)
    await slack.settle()
    sent = slack.fake.of("chat.postEphemeral")
    assert len(sent) == 1  # the retried event was not answered again
    assert sent[0].params["thread_ts"] == ts and sent[0].params["user"] == "U5"
    assert "Correct!" in block_text(sent[0].params)
    rows = slack.engine.admin.export_rows(CommunityRef("slack", "T1"))
    assert [(r["user_id"], r["user"]) for r in rows] == [("U5", "u5")]  # its name from users.info
    # chat in the channel (not in a thread), bot messages and edits are not answers
    for n, event in enumerate(
        [
            {"type": "message", "user": "U6", "text": "a", "channel": "C1", "ts": "1700000600.000001"},
            {"type": "message", "bot_id": "B9", "text": "a", "channel": "C1", "ts": "1.2", "thread_ts": ts},
            {"type": "message", "subtype": "message_changed", "channel": "C1", "ts": "1.3", "thread_ts": ts},
        ]
    ):
        assert (await slack.event(event, f"EvX{n}")).status == 200
    await slack.settle()
    assert [c.params["user"] for c in slack.fake.of("chat.postEphemeral")] == ["U5"]


def thread_reply(user: str, text: str, ts: str, thread_ts: str, channel: str = "C1") -> dict[str, Any]:
    return {"type": "message", "user": user, "text": text, "channel": channel, "ts": ts, "thread_ts": thread_ts}


async def test_thread_reply_answers_that_round_while_a_practice_question_is_pending(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    await slack.command("/quiz", "", user="U5")  # a private practice question, left unanswered
    quiz = (await slack.fake.wait_for("response_url", 1))[-1].params
    assert action_ids(quiz)
    letter = "abcde"[answer_index(slack.engine, round_id, True)]
    for n in range(2):  # /quiz, a, a in the channel itself: chat, never the daily round's answer
        top = {"type": "message", "user": "U5", "text": letter, "channel": "C1", "ts": f"1700000400.00000{n}"}
        assert (await slack.event(top, f"EvTop{n}")).status == 200
    await slack.settle()
    assert slack.fake.of("chat.postEphemeral") == []
    await slack.event(thread_reply("U5", letter, "1700000500.000001", ts), "EvP1")
    sent = (await slack.fake.wait_for("chat.postEphemeral", 1))[0].params
    assert sent["thread_ts"] == ts and "Correct!" in block_text(sent)
    assert f"This answered daily round #{round_id}; a daily answer is final." in block_text(sent)
    score = slack.engine.boards.score(UserRef("slack", "T1", "U5", "u5"))
    assert (score.daily.answered, score.practice.answered) == (1, 0)  # the round, not the practice question
    # the practice question still waits for its own answer (a click on its buttons)
    click = click_payload(action_ids(quiz)[0], "U5", "T1", "C1", "1.1", slack.fake.response_url("q"), ephemeral=True)
    await slack.click(click)
    await slack.fake.wait_response("q")  # the click's own answer (settle's /score also used a response_url)
    assert slack.engine.boards.score(UserRef("slack", "T1", "U5", "u5")).practice.answered == 1
    # a reply in a thread that is not a round's is chat
    await slack.event(thread_reply("U5", "a", "1700000600.000001", "1699999999.000009"), "EvP2")
    await slack.settle()
    assert len(slack.fake.of("chat.postEphemeral")) == 1


async def test_retried_thread_reply_after_a_restart_is_not_answered_again(
    sqlite_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    fake = await FakeSlack().start()
    first, database = await start_slack(fake, sqlite_url, test_bank, clock)
    try:
        first.engine.admin.config(CommunityRef("slack", "T1"), "channel", "C1")
        round_id, ts = await first.open_daily()
        letter = "abcde"[answer_index(first.engine, round_id, True)]
        reply = thread_reply("U5", letter, "1700000500.000001", ts)
        assert (await first.event(reply, "EvR1")).status == 200
        feedback = await fake.wait_for("chat.postEphemeral", 1)
        assert "Correct!" in block_text(feedback[0].params)
        points = first.engine.boards.score(UserRef("slack", "T1", "U5", "u5")).total_points
        assert points > 0
    finally:
        await stop_slack(first, database)
    # a new process on the same database: Slack retries the event (its ack was lost in the restart)
    second, database = await start_slack(fake, sqlite_url, test_bank, clock)
    try:
        assert (await second.event(reply, "EvR1", retry=1)).status == 200
        assert (await second.event(reply, "EvR1", retry=2)).status == 200
        # a new event (the member typing the letter again) is answered: the app is live
        again = thread_reply("U5", letter, "1700000700.000001", ts)
        assert (await second.event(again, "EvR2")).status == 200
        await fake.wait_for("chat.postEphemeral", 2)
        await second.settle()
        later = fake.of("chat.postEphemeral")
        assert len(later) == 2  # no second feedback for the retried event
        assert "already answered" in block_text(later[1].params)
        score = second.engine.boards.score(UserRef("slack", "T1", "U5", "u5"))
        assert (score.total_points, score.daily.answered) == (points, 1)  # scored once
        assert len(second.engine.admin.export_rows(CommunityRef("slack", "T1"))) == 1
    finally:
        await stop_slack(second, database)
        await fake.stop()


async def test_one_workspace_ignores_requests_from_other_workspaces(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    right = codec.encode_answer(round_id, answer_index(slack.engine, round_id, True))
    letter = "abcde"[answer_index(slack.engine, round_id, True)]
    url = slack.fake.response_url("t2")
    # the app installed in T2 too, while this bot runs with T1's token: T2's requests go nowhere
    responses = [
        await slack.command("/score", user="U2", team="T2"),
        await slack.click(click_payload(right, "U2", "T2", "C1", ts, url)),
        await slack.event({"type": "app_home_opened", "user": "U2", "tab": "home"}, "EvT2a", team="T2"),
        await slack.event(thread_reply("U2", letter, "1700000800.000001", ts), "EvT2b", team="T2"),
        await slack.event({"type": "app_uninstalled"}, "EvT2c", team="T2"),
    ]
    assert [r.status for r in responses] == [200] * 5
    assert slack.fake.of("auth.test")  # our workspace, from the bot token
    # a Slack Connect member of TOTHER replying in T1's channel: the event is T1's installation's
    body = event_body({**thread_reply("UX", letter, "1700000900.000001", ts), "user_team": "TOTHER"}, "T1", "EvSC")
    body["team_id"] = "TOTHER"
    body["is_ext_shared_channel"] = True
    assert (await slack.post(json.dumps(body), "application/json")).status == 200
    await slack.command("/score", user="U1")  # and T1 itself is served
    await slack.fake.wait_for("response_url", 1)
    connect = (await slack.fake.wait_for("chat.postEphemeral", 1))[-1].params
    assert connect["user"] == "UX" and "Correct!" in block_text(connect)
    await slack.settle()
    assert [c.params["user"] for c in slack.fake.of("chat.postEphemeral")] == ["UX"]
    assert len(replies(slack.fake)) == 1
    assert [c.params["user_id"] for c in slack.fake.of("views.publish")] == ["UX"]  # its Home after its answer
    assert [r["user_id"] for r in slack.engine.admin.export_rows(CommunityRef("slack", "T1"))] == ["UX"]
    assert [ref.community_id for ref, _ in slack.engine.admin.communities()] == ["T1"]  # nothing for T2 was created


# ----------------------------------------------------------------- signatures


async def test_bad_signature_and_old_timestamp_get_401_and_reach_no_listener(slack: Slack) -> None:
    wrong = await slack.command("/score", secret="not-the-secret")
    old = await slack.command("/score", timestamp=int(time.time()) - 6 * 60)
    assert (wrong.status, old.status) == (401, 401)
    good = await slack.command("/score")
    assert good.status == 200
    await slack.fake.wait_response("score-U1")
    await slack.settle()
    assert [c.url for c in replies(slack.fake)] == ["score-U1"]  # only the signed one reached a listener


# ------------------------------------------------------------------- commands


async def test_commands_answer_privately(slack: Slack) -> None:
    for command, text in [("/score", ""), ("/leaderboard", "all"), ("/studybot-help", ""), ("/review", "")]:
        assert (await slack.command(command, text)).status == 200
    replies = [c.params for c in await slack.fake.wait_for("response_url", 4)]
    assert all(r["response_type"] == "ephemeral" for r in replies)
    texts = [block_text(r) for r in replies]
    assert any("points in" in t for t in texts)
    assert any("All-time leaderboard" in t for t in texts)
    assert any(CONFIG_COMMAND in t and "/quiz" in t and "/suggest" in t for t in texts)
    assert any("No reviews are due" in t for t in texts)

    # /quiz: a private question with buttons; its click answers through the response_url
    await slack.command("/quiz", "", user="U7")
    quiz = (await slack.fake.wait_for("response_url", 5))[-1].params
    ids = action_ids(quiz)
    assert ids and all(codec.decode_answer(i) for i in ids)
    round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]
    click = click_payload(ids[0], "U7", "T1", "C1", "1.1", slack.fake.response_url("q"), ephemeral=True)
    await slack.click(click)
    feedback = (await slack.fake.wait_for("response_url", 6))[-1].params
    assert feedback["replace_original"] is False and (
        "Correct!" in block_text(feedback) or "Not quite" in block_text(feedback)
    )
    assert slack.engine.boards.score(UserRef("slack", "T1", "U7", "u7")).practice.answered == 1
    assert round_id > 0

    # /forget-me asks first, then deletes
    await slack.command("/forget-me", "", user="U7")
    await slack.command("/forget-me", "confirm", user="U7")
    replies = [block_text(c.params) for c in await slack.fake.wait_for("response_url", 8)]
    assert "/forget-me confirm" in replies[-2] and "Done: 1 answer" in replies[-1]


async def test_config_needs_an_admin_or_the_allow_list(slack: Slack) -> None:
    slack.fake.users["UADMIN"] = {"is_admin": True}
    await slack.command(CONFIG_COMMAND, "time 07:30", user="UPLAIN")
    refused = (await slack.fake.wait_for("response_url", 1))[-1].params
    assert "Only workspace admins and owners" in block_text(refused)
    assert slack.fake.of("users.info")[-1].params["user"] == "UPLAIN"
    assert dict(slack.engine.admin.config(CommunityRef("slack", "T1")).settings)["daily_time"] != "07:30"

    await slack.command(CONFIG_COMMAND, "channel <#C9|study>", user="UADMIN")
    await slack.command(CONFIG_COMMAND, "time 07:30", user="UALLOWED")  # on the operator's allow-list
    await slack.fake.wait_for("response_url", 3)
    settings = dict(slack.engine.admin.config(CommunityRef("slack", "T1")).settings)
    assert settings["channel"] == "C9" and settings["daily_time"] == "07:30"
    assert "UALLOWED" not in [c.params["user"] for c in slack.fake.of("users.info")]

    # anyone may look; post-now opens today's round, which the outbox posts in C9
    await slack.command(CONFIG_COMMAND, "show", user="UPLAIN")
    await slack.command(CONFIG_COMMAND, "post-now", user="UADMIN")
    replies = [block_text(c.params) for c in await slack.fake.wait_for("response_url", 5)]
    assert "Settings of" in replies[-2] and "Today's round #" in replies[-1]
    await slack.runtime.deliver_now("slack")
    assert slack.fake.of("chat.postMessage")[-1].params["channel"] == "C9"


async def test_uninstall_pauses_the_community(slack: Slack) -> None:
    response = await slack.event({"type": "app_uninstalled"}, "EvU")
    assert response.status == 200
    for _ in range(50):
        if dict(slack.engine.admin.config(CommunityRef("slack", "T1")).settings)["paused"] == "on":
            break
        await asyncio.sleep(0.05)
    assert dict(slack.engine.admin.config(CommunityRef("slack", "T1")).settings)["paused"] == "on"
    assert slack.fake.of("chat.postMessage") == []  # nothing is posted to a workspace that left


# ------------------------------------------------------------------- delivery


async def test_ratelimited_post_is_retried_after_retry_after(slack: Slack) -> None:
    slack.fake.fail("chat.postMessage", "ratelimited", status=429, retry_after=300)
    slack.engine.rounds.open_daily(ChannelRef("slack", "T1", "C1"))
    assert await slack.runtime.deliver_now("slack") == 0
    alerts = slack.engine.outbox.undelivered(CommunityRef("slack", "T1"))
    assert len(alerts) == 1 and "ratelimited" in alerts[0]
    slack.clock.advance(seconds=120)  # past the 60 s backoff but not Slack's Retry-After
    assert await slack.runtime.deliver_now("slack") == 0
    slack.clock.advance(seconds=200)
    assert await slack.runtime.deliver_now("slack") == 1
    assert len(slack.fake.of("chat.postMessage")) == 2  # the 429 and the post


async def test_server_error_is_retried_and_weekly_board_posted_as_blocks(slack: Slack) -> None:
    slack.fake.fail("chat.postMessage", "internal_error", status=500)
    board = slack.engine.boards.weekly_post(CommunityRef("slack", "T1"), "2026-W48")
    assert board is not None
    assert await slack.runtime.deliver_now("slack") == 0
    slack.clock.advance(seconds=61)
    assert await slack.runtime.deliver_now("slack") == 1
    posted = slack.fake.of("chat.postMessage")[-1].params
    assert posted["channel"] == "C1" and "Leaderboard for 2026-W48" in block_text(posted)
    assert slack.engine.outbox.undelivered(CommunityRef("slack", "T1")) == []


async def test_channel_not_found_is_given_up_and_shown_in_config(slack: Slack) -> None:
    slack.engine.admin.config(CommunityRef("slack", "T1"), "channel", "CGONE")
    slack.engine.rounds.open_daily(ChannelRef("slack", "T1", "CGONE"))
    assert await slack.runtime.deliver_now("slack") == 0
    slack.clock.advance(hours=1)
    assert await slack.runtime.deliver_now("slack") == 0
    assert len(slack.fake.of("chat.postMessage")) == 1  # given up at once
    await slack.command(CONFIG_COMMAND, "", user="UALLOWED")
    shown = block_text((await slack.fake.wait_for("response_url", 1))[-1].params)
    assert "Could not post the daily round" in shown and "channel_not_found" in shown


def test_send_failed_mapping() -> None:
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.slack_response import SlackResponse

    def error(name: str, status: int = 200, headers: dict[str, str] | None = None) -> SlackApiError:
        response = SlackResponse(
            client=None,
            http_verb="POST",
            api_url="x",
            req_args={},
            data={"ok": False, "error": name},
            headers=headers or {},
            status_code=status,
        )
        return SlackApiError(name, response)

    assert send_failed(error("not_in_channel")).permanent
    assert send_failed(error("missing_scope")).permanent
    limited = send_failed(error("ratelimited", 429, {"Retry-After": "30"}))
    assert (limited.permanent, limited.retry_after) == (False, 30.0)
    assert not send_failed(error("internal_error", 500)).permanent
    assert not send_failed(aiohttp.ClientConnectionError("reset")).permanent


# ------------------------------------------------------------------ App Home


async def test_app_home_published_with_a_review_button(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    wrong = codec.encode_answer(round_id, answer_index(slack.engine, round_id, False))
    await slack.click(click_payload(wrong, "U8", "T1", "C1", ts, slack.fake.response_url()))
    await slack.fake.wait_for("chat.postEphemeral", 1)
    assert "Reviews due: 0" in block_text((await slack.fake.wait_for("views.publish", 1))[0].params["view"])
    slack.clock.advance(days=2)  # the missed question's review falls due
    await slack.event({"type": "app_home_opened", "user": "U8", "channel": "D8", "tab": "home"}, "EvH")
    view = (await slack.fake.wait_for("views.publish", 2))[-1].params
    assert view["user_id"] == "U8"
    text = block_text(view["view"])
    assert "Reviews due: 1" in text and "Leaderboard for" in text
    assert "sb1:home:review" in action_ids(view["view"])
    await slack.click(click_payload("sb1:home:review", "U8", "T1", "D8", "1.1", slack.fake.response_url()))
    dm = (await slack.fake.wait_for("chat.postMessage", 1, channel="U8"))[-1].params
    assert "Review #" in block_text(dm) and action_ids(dm)


def home_text(call: Any) -> str:
    view = call.params["view"]
    return block_text(json.loads(view) if isinstance(view, str) else view)


async def test_app_home_published_after_each_answer_once_and_after_the_feedback(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    right = codec.encode_answer(round_id, answer_index(slack.engine, round_id, True))
    url = slack.fake.response_url("home")
    await slack.click(click_payload(right, "U1", "T1", "C1", ts, url))
    home = (await slack.fake.wait_for("views.publish", 1, user_id="U1"))[0]
    points = slack.engine.boards.score(UserRef("slack", "T1", "U1", "u1")).total_points
    assert points > 0 and f"{points} all time" in home_text(home)  # the new score
    methods = [c.method for c in slack.fake.calls]
    assert methods.index("chat.postEphemeral") < methods.index("views.publish")  # the feedback first
    # a repeat click: its feedback, no second score and no second Home
    await slack.click(click_payload(right, "U1", "T1", "C1", ts, url))
    again = await slack.fake.wait_for("chat.postEphemeral", 2, user="U1")
    assert "already answered" in block_text(again[1].params)
    await slack.settle()
    assert [c.params["user_id"] for c in slack.fake.of("views.publish")] == ["U1"]
    assert slack.engine.boards.score(UserRef("slack", "T1", "U1", "u1")).total_points == points
    # a Home that Slack refuses loses nothing: the feedback came and the answer counts
    slack.fake.fail("views.publish", "internal_error", status=500)
    await slack.click(click_payload(right, "U2", "T1", "C1", ts, url))
    assert "Correct!" in block_text((await slack.fake.wait_for("chat.postEphemeral", 1, user="U2"))[0].params)
    await slack.fake.wait_for("views.publish", 1, user_id="U2")
    assert slack.engine.boards.score(UserRef("slack", "T1", "U2", "u2")).daily.answered == 1
    # a reply in the round's thread refreshes the replier's Home too
    letter = "abcde"[answer_index(slack.engine, round_id, True)]
    await slack.event(thread_reply("U5", letter, "1700000500.000001", ts), "EvHome")
    await slack.fake.wait_for("chat.postEphemeral", 1, user="U5")
    reply_home = (await slack.fake.wait_for("views.publish", 1, user_id="U5"))[0]
    assert "Leaderboard for" in home_text(reply_home)


# ----------------------------------------------------------------------- demo


async def test_demo_result_progress_and_failure_render(slack: Slack, tmp_path: Path) -> None:
    # /demo: queued with a channel message whose reference the job keeps (progress and the result edit it)
    await slack.command("/demo", "checkpoint layers=4", user="U1")
    announced = (await slack.fake.wait_for("chat.postMessage", 1, channel="C1"))[-1].params
    assert "Demo #" in block_text(announced)
    for _ in range(50):
        jobs = slack.engine.demos.demo_jobs()
        if jobs and jobs[0].message_ref:
            break
        await asyncio.sleep(0.05)
    assert jobs[0].message_ref and jobs[0].message_ref.startswith("C1:1700000000.")
    # a second one at once is refused privately (the member's cooldown)
    await slack.command("/demo", "checkpoint layers=4", user="U1")
    refused = (await slack.fake.wait_for("response_url", 1))[-1].params
    assert refused["response_type"] == "ephemeral"
    assert refused["text"] == (
        "You asked for a demo 1 s ago; one per member every 10 min, so the next one is possible in 10 min."
    )
    assert len(slack.fake.of("chat.postMessage")) == 1

    queued = slack.fake._chat_postMessage("T1", {"channel": "C1", "text": "queued"})
    ref = f"C1:{queued['ts']}"
    await slack.bot.show_progress(
        DemoProgressCard(
            7,
            7,
            "demos.checkpoint",
            ChannelRef("slack", "T1", "C1"),
            ref,
            "Peak memory",
            ("strategy", "peak"),
            (("none", "1.0 GiB"),),
            1,
            2,
        )
    )
    progress = slack.fake.of("chat.update")[-1].params
    assert progress["ts"] == queued["ts"] and "1 of 2 measured" in block_text(progress)

    chart = tmp_path / "chart.png"
    chart.write_bytes(b"\x89PNG\r\n\x1a\n" + b"0" * 64)
    result = DemoResultCard(
        "demos.checkpoint",
        "Peak memory by strategy",
        ("strategy", "peak"),
        (("none", "1.0 GiB"), ("block", "0.4 GiB")),
        ("Checkpointing trades compute for memory.",),
        str(chart),
        3.2,
        job_id=7,
        message_ref=ref,
    )
    assert await slack.bot.send(ChannelRef("slack", "T1", "C1"), result) == ref
    done = slack.fake.of("chat.update")[-1].params
    assert "block" in block_text(done) and "```" in block_text(done)
    uploaded = slack.fake.of("upload")
    assert len(uploaded) == 1 and uploaded[0].params["size"] == chart.stat().st_size
    complete = slack.fake.of("files.completeUploadExternal")[-1].params
    assert complete["channel_id"] == "C1" and complete["thread_ts"] == queued["ts"]

    failed = DemoFailedCard(8, 8, "demos.checkpoint", "it ran out of time", message_ref=None)
    ref2 = await slack.bot.send(ChannelRef("slack", "T1", "C1"), failed)
    assert ref2 and "did not finish" in block_text(slack.fake.of("chat.postMessage")[-1].params)


SMALL_DEMO = "checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block"


async def post_when_listening(url: str, body: str, timeout: float = 15.0) -> int:
    """POST a signed form body as soon as the server accepts connections; its status."""
    deadline = time.monotonic() + timeout
    async with aiohttp.ClientSession() as session:
        while True:
            headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
            try:
                async with session.post(url, data=body, headers=headers) as response:
                    return response.status
            except aiohttp.ClientConnectorError:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)


async def test_demo_runs_on_the_local_back_end_through_serve(
    sqlite_url: str, test_bank: Bank, clock: FakeClock, tmp_path: Path
) -> None:
    """`/demo` through what `studybot run slack` starts (launch.serve: the Bolt app, the
    Runtime with its DemoJobRunner on the local back end, the outbox): the queued message,
    edited in place as each strategy is measured, then the result with the chart uploaded."""
    fake = await FakeSlack().start()
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock)
    port = free_port()
    settings = settings_for(
        fake,
        sqlite_url,
        host="127.0.0.1",
        port=port,
        worker="local",
        demo_timeout_s=300,
        demo_out_dir=tmp_path / "charts",
    )
    served = asyncio.create_task(serve(settings, engine, ("slack",)))
    try:
        body = command_body("/demo", SMALL_DEMO, "U1", "T1", "C1", fake.response_url("demo"))
        assert await post_when_listening(f"http://127.0.0.1:{port}/slack/events", body) == 200
        queued = (await fake.wait_for("chat.postMessage", 1, channel="C1"))[0].params
        assert "Demo #1" in block_text(queued)
        [ts] = [ts for (channel, ts) in fake.messages if channel == "C1"]
        complete = (await fake.wait_for("files.completeUploadExternal", 1, timeout=120))[0].params
        assert complete["channel_id"] == "C1" and complete["thread_ts"] == ts
        chart = tmp_path / "charts" / "demo-1.png"  # the memory timeline, uploaded first
        charts = [chart, tmp_path / "charts" / "demo-1-memory.png"]
        assert [c.params["size"] for c in fake.of("upload")] == [c.stat().st_size for c in charts]
        assert all(c.read_bytes()[:4] == b"\x89PNG" for c in charts)

        texts = [block_text(c.params) for c in fake.of("chat.update") if c.params["ts"] == ts]
        progress = [t for t in texts if "measured so far" in t]
        assert any("1 of 2 measured" in t for t in progress), texts  # after the first strategy
        assert any("2 of 2 measured" in t for t in progress), texts
        first = next(t for t in progress if "1 of 2 measured" in t)
        assert "none" in first
        # the result replaces the progress in the same message, and nothing edits it afterwards
        result = fake.messages[("C1", ts)]
        shown = block_text({"text": result["text"], "blocks": result["blocks"]})
        assert "measured so far" not in shown and "none" in shown and "block" in shown, shown
        assert texts[-1] == shown
        assert len(fake.of("chat.postMessage")) == 1  # edited in place, not posted again
        assert engine.demos.demo_jobs()[0].state == "done"
    finally:
        served.cancel()
        await asyncio.gather(served, return_exceptions=True)
        await fake.stop()
        database.dispose()


# ------------------------------------------------------------------ bad input


async def test_bad_input_gets_a_clear_private_answer(slack: Slack) -> None:
    round_id, ts = await slack.open_daily()
    url = slack.fake.response_url("bad")
    await slack.click(click_payload("sb1:a:99999:0", "U1", "T1", "C1", ts, url))
    (unknown,) = await slack.fake.wait_for("chat.postEphemeral", 1)
    assert unknown.params["text"] == wording.NOT_THIS_COMMUNITYS_QUESTION
    empty = click_payload("x", "U1", "T1", "C1", ts, url)
    empty["actions"] = []
    assert (await slack.click(empty)).status == 200
    # the bot is not in C3: feedback goes through the click's response_url instead
    right = codec.encode_answer(round_id, answer_index(slack.engine, round_id, True))
    await slack.click(click_payload(right, "U2", "T1", "C3", ts, url))
    (fallback,) = [c.params for c in await slack.fake.wait_for("response_url", 1)]
    assert "Correct!" in block_text(fallback) and fallback["response_type"] == "ephemeral"
    # a rate-limited reply is logged and the user told when possible; nothing crashes
    slack.fake.fail("chat.postEphemeral", "ratelimited", status=429, retry_after=1)
    await slack.click(click_payload(right, "U9", "T1", "C1", ts, url))
    busy = (await slack.fake.wait_for("response_url", 2))[-1].params
    assert "Correct!" in block_text(busy)
    assert slack.engine.boards.score(UserRef("slack", "T1", "U9", "u9")).daily.answered == 1


# ---------------------------------------------------------------- Socket Mode


async def test_socket_mode_same_flow(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> None:
    fake = await FakeSlack().start()
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock)
    runtime = build_runtime(engine, ("slack",), bridge_threads=2)
    settings = settings_for(fake, sqlite_url, SLACK_APP_TOKEN="xapp-one", SLACK_SIGNING_SECRET=None)
    bot = SlackBot(settings, runtime)
    task = asyncio.create_task(bot.run())
    try:
        await fake.wait_connected()
        assert fake.of("apps.connections.open")[0].token == "xapp-one"
        card = engine.rounds.open_daily(ChannelRef("slack", "T1", "C1"))
        await runtime.deliver_now("slack")
        ts = next(ts for (channel, ts) in fake.messages if channel == "C1")
        button = codec.encode_answer(card.round_id, 0)  # type: ignore[union-attr]
        envelope = await fake.push("interactive", click_payload(button, "U1", "T1", "C1", ts, fake.response_url()))
        await fake.wait_ack(envelope)
        again = await fake.push("interactive", click_payload(button, "U1", "T1", "C1", ts, fake.response_url()))
        await fake.wait_ack(again)
        feedback = await fake.wait_for("chat.postEphemeral", 2)
        assert sum("already answered" in block_text(c.params) for c in feedback) == 1
        command = await fake.push(
            "slash_commands", command_payload("/score", "", "U1", "T1", "C1", fake.response_url())
        )
        await fake.wait_ack(command)
        score = (await fake.wait_for("response_url", 1))[-1].params
        assert "points in" in block_text(score)
        # a modal's answer travels in the envelope's ack: a refused field under its input
        await fake.wait_ack(
            await fake.push("slash_commands", command_payload("/suggest", "", "U1", "T1", "C1", fake.response_url()))
        )
        view = (await fake.wait_for("views.open", 1))[0].params["view"]
        bad = view_submission_payload(view, suggestion_values(trap="", refs=""), "U1", "T1")
        answer = await fake.wait_ack(await fake.push("interactive", bad))
        assert answer["response_action"] == "errors" and set(answer["errors"]) == {"trap", "refs"}
        event = event_body({"type": "app_home_opened", "user": "U1", "tab": "home"}, "T1", "EvS")
        first = await fake.push("events_api", event)
        retried = await fake.push("events_api", event, retry_attempt=1)
        await fake.wait_ack(first)
        await fake.wait_ack(retried)
        await fake.wait_for("views.publish", 2)  # after the first answer (not the repeat), and for the home tab
        settle = await fake.push(
            "slash_commands", command_payload("/score", "", "USETTLE", "T1", "C9", fake.response_url("settle-1"))
        )
        await fake.wait_ack(settle)
        await fake.wait_response("settle-1")  # answered after the events before it
        assert [c.params["user_id"] for c in fake.of("views.publish")] == [
            "U1",
            "U1",
        ]  # the retry was not handled twice
        assert len(engine.admin.export_rows(CommunityRef("slack", "T1"))) == 1
    finally:
        await bot.close()
        await asyncio.wait_for(task, 5)
        await runtime.stop()
        await fake.stop()
        database.dispose()


# ---------------------------------------------------------------------- OAuth


async def test_oauth_state_cookie_is_samesite_and_a_second_workspace_keeps_its_rounds(
    sqlite_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    fake = await FakeSlack(tokens={"xoxb-one": "T1", "xoxb-two": "T2"}).start()
    for team, token in (("T1", "xoxb-one"), ("T2", "xoxb-two")):
        fake.installs[f"code-{team}"] = {
            "ok": True,
            "app_id": "A1",
            "authed_user": {"id": f"UI{team}"},
            "scope": "chat:write,commands",
            "token_type": "bot",
            "access_token": token,
            "bot_user_id": f"UB{team}",
            "team": {"id": team, "name": f"Team {team}"},
            "enterprise": None,
            "is_enterprise_install": False,
        }
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock)
    runtime = build_runtime(engine, ("slack",), bridge_threads=2)
    settings = settings_for(
        fake, sqlite_url, SLACK_BOT_TOKEN=None, SLACK_CLIENT_ID="111.222", SLACK_CLIENT_SECRET="client-secret"
    )
    assert choose_platforms(settings, None) == ("slack",)
    bot = SlackBot(settings, runtime)
    port = await bot.start_http("127.0.0.1", 0)
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            for team in ("T1", "T2"):
                async with session.get(f"{base}/slack/install", allow_redirects=False) as page:
                    assert page.status in (200, 302)
                    attributes = [a.strip().lower() for a in page.headers["Set-Cookie"].split(";")[1:]]
                    assert {"samesite=lax", "secure", "httponly"} <= set(attributes), attributes  # the state cookie
                    cookie = page.headers["Set-Cookie"].split(";")[0]
                    state = cookie.split("=", 1)[1]
                    assert "client_id=111.222" in (await page.text() + page.headers.get("Location", ""))
                async with session.get(
                    f"{base}/slack/oauth_redirect?code=code-{team}&state={state}",
                    headers={"Cookie": cookie},
                    allow_redirects=False,
                ) as done:
                    assert done.status == 200, await done.text()
            exchanged = fake.of("oauth.v2.access")
            assert [c.params["code"] for c in exchanged] == ["code-T1", "code-T2"]
            with database.read() as conn:
                teams = sorted(r[0] for r in conn.execute(sa.text("SELECT team_id FROM slack_bots")))
            assert teams == ["T1", "T2"]

            # the second workspace's round goes out with its own token, to its own channel
            engine.admin.config(CommunityRef("slack", "T2"), "channel", "C2")
            card2 = engine.rounds.open_daily(ChannelRef("slack", "T2", "C2"))
            card1 = engine.rounds.open_daily(ChannelRef("slack", "T1", "C1"))
            assert await runtime.deliver_now("slack") == 2
            posts = {c.params["channel"]: c.token for c in fake.of("chat.postMessage")}
            assert posts == {"C1": "xoxb-one", "C2": "xoxb-two"}
            assert card1.round_id != card2.round_id  # type: ignore[union-attr]

            # a command from T2 is authorized with T2's installation and answers in T2's community
            body = command_body("/score", "", "U2", "T2", "C2", fake.response_url("t2"))
            headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
            async with session.post(f"{base}/slack/events", data=body, headers=headers) as response:
                assert response.status == 200
            await fake.wait_for("response_url", 1)
            ts2 = next(ts for (ch, ts) in fake.messages if ch == "C2")
            button = codec.encode_answer(card2.round_id, 0)  # type: ignore[union-attr]
            click = form_payload(click_payload(button, "U2", "T2", "C2", ts2, fake.response_url("c")))
            headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, click)}
            async with session.post(f"{base}/slack/events", data=click, headers=headers) as response:
                assert response.status == 200
            ephemeral = (await fake.wait_for("chat.postEphemeral", 1))[-1]
            assert ephemeral.token == "xoxb-two"
            assert [r["user_id"] for r in engine.admin.export_rows(CommunityRef("slack", "T2"))] == ["U2"]
            assert engine.admin.export_rows(CommunityRef("slack", "T1")) == []

            # uninstalling T2 pauses it and forgets its tokens; T1 goes on
            event = json.dumps(event_body({"type": "app_uninstalled"}, "T2", "EvUn"))
            headers = {"Content-Type": "application/json", **sign(SECRET, event)}
            async with session.post(f"{base}/slack/events", data=event, headers=headers) as response:
                assert response.status == 200
            for _ in range(50):
                with database.read() as conn:
                    left = sorted(r[0] for r in conn.execute(sa.text("SELECT team_id FROM slack_bots")))
                if left == ["T1"]:
                    break
                await asyncio.sleep(0.05)
            assert left == ["T1"]
            assert dict(engine.admin.config(CommunityRef("slack", "T2")).settings)["paused"] == "on"
            assert dict(engine.admin.config(CommunityRef("slack", "T1")).settings)["paused"] == "off"
    finally:
        await bot.close()
        await runtime.stop()
        await fake.stop()
        database.dispose()


def test_migration_matches_the_library_tables(sqlite_url: str) -> None:
    from slack_sdk.oauth.installation_store.sqlalchemy import SQLAlchemyInstallationStore
    from slack_sdk.oauth.state_store.sqlalchemy import SQLAlchemyOAuthStateStore

    metadata = sa.MetaData()
    expected = [
        SQLAlchemyInstallationStore.build_installations_table(metadata, "slack_installations"),
        SQLAlchemyInstallationStore.build_bots_table(metadata, "slack_bots"),
        SQLAlchemyOAuthStateStore.build_oauth_states_table(metadata, "slack_oauth_states"),
    ]
    inspector = sa.inspect(sa.create_engine(sqlite_url))
    for table in expected:
        migrated = {c["name"]: c for c in inspector.get_columns(table.name)}
        assert set(migrated) == {c.name for c in table.columns}, table.name
        for column in table.columns:
            assert migrated[column.name]["nullable"] == column.nullable, (table.name, column.name)


# ------------------------------------------------------------- members' questions


def suggestion_values(**changes: str) -> dict[str, str]:
    """What a member types into the /suggest modal, by block id."""
    values = {"topic": "fundamentals", "level": "1", "prompt": PROMPT, "correct": "A", "trap": TRAP, "refs": REF}
    for i, (text, why) in enumerate(zip(CHOICES, WHYS, strict=True)):
        values[f"choice_{i}"], values[f"why_{i}"] = text, why
    values.update(changes)
    return values


def view_text(view: dict[str, Any]) -> str:
    return "\n".join((b.get("text") or {}).get("text", "") for b in view.get("blocks", []))


async def test_suggest_modal_refuses_a_field_under_its_input_and_queues_a_good_one(slack: Slack) -> None:
    assert (await slack.command("/suggest", user="U1")).status == 200
    opened = (await slack.fake.wait_for("views.open", 1))[0].params
    view = json.loads(opened["view"]) if isinstance(opened["view"], str) else opened["view"]
    assert opened["trigger_id"] == "trig.1"  # the command's own trigger
    assert view["callback_id"] == "sb1:suggest" and view["private_metadata"] == "C1"
    ids = [b["block_id"] for b in view["blocks"]]
    assert ids[:3] == ["topic", "level", "prompt"] and "why_4" in ids and ids[-3:] == ["correct", "trap", "refs"]
    assert [b["element"]["type"] for b in view["blocks"][:2]] == ["static_select", "static_select"]
    assert not slack.fake.of("response_url")  # nothing but the modal
    community = CommunityRef("slack", "T1")

    # a why too short: refused under that input only, nothing queued, the modal stays open
    short = suggestion_values(why_1="Too short to teach anything.")
    answer = await slack.submit(view_submission_payload(view, short, "U1", "T1"))
    assert answer["response_action"] == "errors"
    assert list(answer["errors"]) == ["why_1"] and "at least 40" in answer["errors"]["why_1"]
    # a right choice missing: the error is under "which is right"
    answer = await slack.submit(view_submission_payload(view, suggestion_values(correct="E"), "U1", "T1"))
    assert list(answer["errors"]) == ["correct"]
    assert slack.engine.practice.suggestion_queue(community).waiting == 0

    # a good one is queued; the modal shows the answer
    answer = await slack.submit(view_submission_payload(view, suggestion_values(), "U1", "T1"))
    assert answer["response_action"] == "update"
    assert "Thanks! Your question #" in view_text(answer["view"])
    queue = slack.engine.practice.suggestion_queue(community)
    assert queue.waiting == 1 and queue.items[0].prompt == PROMPT and queue.items[0].author == "u1"


async def test_a_late_engine_answer_closes_the_modal_and_comes_as_a_direct_message(
    slack: Slack, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bot.platforms.slack import handling

    monkeypatch.setattr(handling, "ACK_WITHIN", 0.0)  # the engine "takes longer" than Slack waits
    await slack.command("/suggest", user="U1")
    view = (await slack.fake.wait_for("views.open", 1))[0].params["view"]
    assert await slack.submit(view_submission_payload(view, suggestion_values(), "U1", "T1")) == {}
    dm = (await slack.fake.wait_for("chat.postMessage", 1, channel="U1"))[-1].params
    assert "Thanks! Your question #" in block_text(dm)
    assert slack.engine.practice.suggestion_queue(CommunityRef("slack", "T1")).waiting == 1


async def test_admins_queue_buttons_decide_and_the_author_is_told(slack: Slack) -> None:
    slack.fake.users["UADMIN"] = {"is_admin": True}
    author = UserRef("slack", "T1", "U1", "u1")
    channel = ChannelRef("slack", "T1", "C1")
    numbers = [slack.engine.practice.suggest(author, channel, good_form()).suggestion_id for _ in "abc"]  # type: ignore[union-attr]
    community = CommunityRef("slack", "T1")

    # a member may not list the queue nor use its buttons
    await slack.command(CONFIG_COMMAND, "suggestions", user="UPLAIN")
    refused = (await slack.fake.wait_for("response_url", 1))[-1].params
    assert "Only workspace admins and owners" in block_text(refused)
    url = slack.fake.response_url("queue")
    await slack.click(click_payload(f"sb1:sq:{numbers[0]}:approve", "UPLAIN", "T1", "C1", "1.1", url, ephemeral=True))
    refused = (await slack.fake.wait_for("response_url", 2))[-1].params
    assert "Only workspace admins and owners" in block_text(refused)
    await slack.click(click_payload(f"sb1:sq:{numbers[1]}:note", "UPLAIN", "T1", "C1", "1.1", url, ephemeral=True))
    await slack.fake.wait_for("response_url", 3)
    assert slack.fake.of("views.open") == [] and slack.engine.practice.suggestion_queue(community).waiting == 3

    # an admin lists it: each suggestion with approve, note and reject buttons
    await slack.command(CONFIG_COMMAND, "suggestions", user="UADMIN")
    listed = (await slack.fake.wait_for("response_url", 4))[-1].params
    assert "Suggested questions waiting: 3" in block_text(listed)
    for n in numbers:
        assert {f"sb1:sq:{n}:{a}" for a in ("approve", "note", "reject")} <= set(action_ids(listed))

    # approve: the admin sees the new question's id, the author a direct message
    await slack.click(click_payload(f"sb1:sq:{numbers[0]}:approve", "UADMIN", "T1", "C1", "1.1", url, ephemeral=True))
    approved = (await slack.fake.wait_for("response_url", 5))[-1].params
    assert f"Suggestion #{numbers[0]} approved" in block_text(approved) and "member-" in block_text(approved)
    assert await slack.runtime.deliver_now("slack") == 1  # the author's message goes through the outbox
    dm = (await slack.fake.wait_for("chat.postMessage", 1, channel="U1"))[-1].params
    assert "was approved" in block_text(dm)

    # note: a one-input modal; a member's forged submit is refused, the admin's sends it back
    await slack.click(click_payload(f"sb1:sq:{numbers[1]}:note", "UADMIN", "T1", "C1", "1.1", url, ephemeral=True))
    opened = (await slack.fake.wait_for("views.open", 1))[0].params
    note_view = json.loads(opened["view"]) if isinstance(opened["view"], str) else opened["view"]
    assert opened["trigger_id"] == "trig.2" and note_view["callback_id"] == f"sb1:sq:{numbers[1]}:note"
    assert [b["block_id"] for b in note_view["blocks"]] == ["note"]
    note = "Say which PyTorch version the reference is about."
    forged = await slack.submit(view_submission_payload(note_view, {"note": note}, "UPLAIN", "T1"))
    assert forged == {"response_action": "errors", "errors": {"note": wording.FORM_NOT_OURS}}  # not opened for them
    assert slack.engine.practice.suggestion_queue(community).waiting == 2
    answer = await slack.submit(view_submission_payload(note_view, {"note": note}, "UADMIN", "T1"))
    assert answer["response_action"] == "update" and "sent back to its author" in view_text(answer["view"])
    await slack.fake.wait_for("response_url", 6)  # the queue's message redrawn: the decision is stored
    assert await slack.runtime.deliver_now("slack") == 1
    dm = (await slack.fake.wait_for("chat.postMessage", 2, channel="U1"))[-1].params
    assert "sent back by the admins" in block_text(dm) and note in block_text(dm)

    # reject by a member on the operator's allow-list (no users.info needed)
    await slack.click(click_payload(f"sb1:sq:{numbers[2]}:reject", "UALLOWED", "T1", "C1", "1.1", url, ephemeral=True))
    await slack.fake.wait_for("response_url", 7)
    assert await slack.runtime.deliver_now("slack") == 1
    dm = (await slack.fake.wait_for("chat.postMessage", 3, channel="U1"))[-1].params
    assert "was not accepted" in block_text(dm)
    assert slack.engine.practice.suggestion_queue(community).waiting == 0
    # a decided one stays decided
    await slack.click(click_payload(f"sb1:sq:{numbers[2]}:approve", "UADMIN", "T1", "C1", "1.1", url, ephemeral=True))
    again = (await slack.fake.wait_for("response_url", 8))[-1].params
    assert "already decided" in block_text(again)

    # the approved question is the workspace's next daily round
    await slack.open_daily()
    daily = [c.params for c in slack.fake.of("chat.postMessage") if c.params["channel"] == "C1"][-1]
    assert PROMPT in block_text(daily)
    # and its reveal names its author
    slack.clock.advance(hours=13)
    assert len(slack.engine.rounds.close_due()) == 1
    assert await slack.runtime.deliver_now("slack") == 1
    reveal = slack.fake.of("chat.postMessage")[-1].params
    assert "Answer to #" in block_text(reveal) and "Question written by u1" in block_text(reveal)


async def test_typed_decision_tells_the_author_too(slack: Slack) -> None:
    author = UserRef("slack", "T1", "U1", "u1")
    card = slack.engine.practice.suggest(author, ChannelRef("slack", "T1", "C1"), good_form())
    await slack.command(CONFIG_COMMAND, f"reject {card.suggestion_id}", user="UALLOWED")  # type: ignore[union-attr]
    reply = (await slack.fake.wait_for("response_url", 1))[-1].params
    assert "rejected" in block_text(reply)
    assert await slack.runtime.deliver_now("slack") == 1
    dm = (await slack.fake.wait_for("chat.postMessage", 1, channel="U1"))[-1].params
    assert "was not accepted" in block_text(dm)

    # an author Slack will not deliver to: the decision stands, and admins see it in /config
    card = slack.engine.practice.suggest(author, ChannelRef("slack", "T1", "C1"), good_form())
    slack.fake.fail("chat.postMessage", "channel_not_found")
    await slack.command(CONFIG_COMMAND, f"approve {card.suggestion_id}", user="UALLOWED")  # type: ignore[union-attr]
    replies = [block_text(c.params) for c in await slack.fake.wait_for("response_url", 2)]
    assert "approved" in replies[-1]
    assert await slack.runtime.deliver_now("slack") == 0
    [alert] = slack.engine.outbox.undelivered(CommunityRef("slack", "T1"))
    assert f"decision on suggestion #{card.suggestion_id}" in alert and "channel_not_found" in alert  # type: ignore[union-attr]
    assert slack.engine.practice.suggestion_queue(CommunityRef("slack", "T1")).waiting == 0


# ------------------------------------------------------------------- manifest


async def test_manifest_declares_exactly_what_is_handled(slack: Slack) -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    commands = {c["command"] for c in manifest["features"]["slash_commands"]}
    events = {e.split(".")[0] for e in manifest["settings"]["event_subscriptions"]["bot_events"]}
    assert commands == set(COMMANDS)
    assert events == set(EVENTS)
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    from bot.platforms.slack.oauth import BOT_SCOPES

    assert scopes == set(BOT_SCOPES)
    # every declared command and event reaches a listener (Bolt answers 404 to unhandled ones)
    for command in sorted(commands):
        assert (await slack.command(command, "show" if command == CONFIG_COMMAND else "")).status == 200, command
    unhandled = await slack.command("/not-ours")
    assert unhandled.status == 404
    for n, event in enumerate(sorted(events)):
        body = {"type": event, "user": "U1", "channel": "C1", "tab": "messages", "text": "hi", "ts": "1.1"}
        if event == "tokens_revoked":
            body["tokens"] = {"oauth": ["U1"]}
        assert (await slack.event(body, f"EvM{n}")).status == 200, event


# ------------------------------------------------------------ studybot run slack


async def test_studybot_run_slack_serves_http(tmp_path: Path) -> None:
    fake = await FakeSlack().start()
    port = free_port()
    env = {
        **os.environ,
        "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK),
        "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'run.db'}",
        "STUDYBOT_SLACK_API_URL": fake.api_url,
        "STUDYBOT_HOST": "127.0.0.1",
        "SLACK_BOT_TOKEN": "xoxb-one",
        "SLACK_SIGNING_SECRET": SECRET,
    }
    env.pop("SLACK_APP_TOKEN", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run", "slack", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        body = command_body("/studybot-help", "", "U1", "T1", "C1", fake.response_url("run"))
        async with aiohttp.ClientSession() as session:
            status = None
            for _ in range(150):
                if process.poll() is not None:
                    break
                try:
                    headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
                    async with session.post(f"http://127.0.0.1:{port}/slack/events", data=body, headers=headers) as r:
                        status = r.status
                        break
                except aiohttp.ClientConnectorError:
                    await asyncio.sleep(0.1)
            assert status == 200, process.stdout.read().decode() if process.poll() is not None else status  # type: ignore[union-attr]
            reply = (await fake.wait_for("response_url", 1, timeout=10))[-1].params
            assert "/studybot-config" in block_text(reply)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        await fake.stop()


def test_launch_accepts_oauth_without_a_bot_token() -> None:
    base = {"_env_file": None, "SLACK_CLIENT_ID": "1.2", "SLACK_CLIENT_SECRET": "s"}
    assert choose_platforms(Settings(**base, SLACK_SIGNING_SECRET="x"), "slack") == ("slack",)
    with pytest.raises(LaunchError, match="SLACK_SIGNING_SECRET"):
        choose_platforms(Settings(**base), "slack")


def test_blank_slack_variables_mean_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # A .env copied from .env.example has SLACK_BOT_TOKEN= and SLACK_CLIENT_ID= lines.
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET", "DISCORD_TOKEN"):
        monkeypatch.setenv(name, "")
    settings = Settings(_env_file=None)
    assert settings.slack_bot_token is None and settings.slack_client_id is None
    assert choose_platforms(settings, None) == ("console",)


async def test_a_click_or_select_the_bot_cannot_read_gets_one_private_sentence(
    slack: Slack, caplog: pytest.LogCaptureFixture
) -> None:
    round_id, ts = await slack.open_daily()
    select = click_payload("sb1:pick", "U1", "T1", "C1", ts, slack.fake.response_url("select"))
    select["actions"][0] = {
        "type": "static_select",
        "action_id": "sb1:pick",
        "block_id": "b1",
        "selected_option": {"value": "zz"},
        "action_ts": "1700000100.000002",
    }
    stale = {
        "older": click_payload("sb0:answer:1:2", "U1", "T1", "C1", ts, slack.fake.response_url("older")),
        "queue": click_payload("sb1:sq:x:approve", "U1", "T1", "C1", ts, slack.fake.response_url("queue")),
        "round": click_payload(f"sb1:a:{round_id}:07", "U1", "T1", "C1", ts, slack.fake.response_url("round")),
        "select": select,
    }
    with caplog.at_level(logging.DEBUG, logger="bot.platforms.slack.handling"):
        for payload in stale.values():
            assert (await slack.click(payload)).status == 200  # acked at once
        answers = [await slack.fake.wait_response(name) for name in stale]
        await slack.settle()
    for answer in answers:
        assert answer.params == {
            "text": wording.STALE_BUTTON,
            "response_type": "ephemeral",
            "replace_original": False,
        }
    assert [c.url for c in replies(slack.fake)] == list(stale)  # one answer each
    assert slack.fake.of("chat.postEphemeral") == [] and slack.fake.of("views.open") == []
    assert slack.engine.boards.score(UserRef("slack", "T1", "U1", "u1")).daily.answered == 0
    unreadable = [r for r in caplog.records if r.levelno == logging.DEBUG and "cannot read" in r.getMessage()]
    assert len(unreadable) == 4


# ------------------------------------------------- what reaches the log (issue 27)


async def test_unauthenticated_and_malformed_requests_never_put_their_bodies_in_the_log(
    slack: Slack, caplog: pytest.LogCaptureFixture
) -> None:
    """Bolt logged a refused request's whole body at INFO (twenty 1 MB bodies: 20 MB of log; a
    newline in the body forged a log line) and answered a malformed body with a 500 and an
    ERROR traceback. Now: 401 / 400 / 413, one line each (method, path, size, verdict)."""
    caplog.set_level(logging.DEBUG)
    forged = "FORGED 2026-12-01 INFO bot.core: member U9 is now an admin"
    unsigned = command_body("/score", "x\r\n" + forged, "U1", "T1", "C1", slack.fake.response_url("unsigned"))
    big = "text=" + "A" * 1_000_000
    headers = {"Content-Type": FORM}
    async with slack.session.post(slack.url, data=unsigned.encode(), headers=headers) as plain:
        assert plain.status == 401  # no signature at all
    assert (await slack.post(unsigned, FORM, secret="not-the-secret")).status == 401
    sizes = []
    for _ in range(20):
        sizes.append((await slack.post(big, FORM, secret="not-the-secret")).status)
    assert sizes == [401] * 20
    # malformed, signed and not: 400, no traceback
    for body, content_type in (
        ('{"type": "event_callback", ', "application/json"),
        ("[1, 2, 3]", "application/json"),
        ("payload=%7Bnot-json", FORM),
        ("payload=" + "%FF" * 8, FORM),
    ):
        assert (await slack.post(body, content_type)).status == 400, body
        assert (await slack.post(body, content_type, secret="not-the-secret")).status == 400, body
    # larger than the bound: refused unread
    async with slack.session.post(
        slack.url, data=b"text=" + b"B" * (2 << 20), headers={"Content-Type": FORM, **sign(SECRET, "x")}
    ) as huge:
        assert huge.status == 413
    # and a good request still goes through
    assert (await slack.command("/score")).status == 200
    await slack.fake.wait_response("score-U1")

    logged = [(r, r.getMessage()) for r in caplog.records]
    assert not [m for r, m in logged if r.levelno >= logging.ERROR or r.exc_info], "an ERROR or a traceback"
    text = "\n".join(m for _, m in logged)
    assert forged not in text and "AAAAAAAAAA" not in text and "not-json" not in text and "BBBBBBBBBB" not in text
    assert len(text) < 20_000, len(text)  # 20 MB of refused bodies were in the log
    refusals = [m for r, m in logged if r.name == "bot.platforms.slack.gate"]
    assert len(refusals) == 2 + 20 + 8 + 1 and all("\n" not in m and "\r" not in m for m in refusals)
    assert refusals[0] == f"slack: refused POST /slack/events ({len(unsigned)} bytes): bad signature or timestamp"
    assert sum("malformed" in m for m in refusals) == 8 and refusals[-1].endswith("too large")
    assert [c.url for c in replies(slack.fake)] == ["score-U1"]  # nothing refused reached a listener


def test_a_log_line_escapes_cr_and_lf() -> None:
    assert printable("POST\r\n/slack/events\x1b[31m") == "POST\\r\\n/slack/events\\x1b[31m"


async def test_a_debug_run_never_writes_the_bot_token_or_a_signed_link(
    slack: Slack, caplog: pytest.LogCaptureFixture
) -> None:
    """slack_sdk at DEBUG logs each request's headers (the bot token) and body (a /score's
    signed link): with the process at DEBUG, neither reaches the log."""
    from tests.test_command_parity import SignedLinks

    slack.engine.links = SignedLinks()
    caplog.set_level(logging.DEBUG)  # the whole process at DEBUG, as STUDYBOT_LOG_LEVEL=DEBUG sets it
    round_id, ts = await slack.open_daily()  # chat.postMessage with the bot token
    await slack.click(
        click_payload(codec.encode_answer(round_id, 0), "U1", "T1", "C1", ts, slack.fake.response_url("c"))
    )
    await slack.fake.wait_for("chat.postEphemeral", 1)
    await slack.command("/score", user="U1")
    score = await slack.fake.wait_response("score-U1")
    assert "/s/member-U1/me" in json.dumps(score.params)  # the link was sent
    await slack.settle()
    ours = [r for r in caplog.records if not r.name.startswith("tests.")]
    text = "\n".join(r.getMessage() for r in ours)
    assert "xoxb-one" not in text and "member-U1" not in text


async def test_a_member_named_channel_never_yields_a_mention_in_any_posted_text(slack: Slack) -> None:
    """Slack reads a message's fallback `text` as mrkdwn like its blocks: a display name such as
    `<!channel>` or `<https://...|label>` is escaped in both, in every post, reply and update."""
    name = "<!channel> <https://evil.example/|win> &"
    slack.fake.users["U6"] = {"profile": {"display_name": name}}
    round_id, ts = await slack.open_daily()
    letter = "abcde"[answer_index(slack.engine, round_id, True)]
    await slack.event(thread_reply("U6", letter, "1700000600.000001", ts), "EvName")  # the name from users.info
    await slack.fake.wait_for("chat.postEphemeral", 1)
    body = command_body("/score", "", "U6", "T1", "C1", slack.fake.response_url("score-name"))
    body = body.replace("user_name=u6", "user_name=" + urllib.parse.quote(name))
    assert (await slack.post(body, FORM)).status == 200
    await slack.fake.wait_response("score-name")
    await slack.command("/leaderboard", "all", user="U1")
    board = await slack.fake.wait_response("leaderboard-U1")
    assert "&lt;!channel&gt;" in board.params["text"]  # the name is there, escaped
    assert slack.engine.boards.weekly_post(CommunityRef("slack", "T1"), "2026-W48") is not None
    assert await slack.runtime.deliver_now("slack") == 1
    await slack.settle()
    kinds = ("chat.postMessage", "chat.postEphemeral", "chat.update", "response_url")
    sent = [c for c in slack.fake.calls if c.method in kinds]
    assert len(sent) >= 5
    for call in sent:
        text = block_text(call.params)
        assert "<!" not in text and "<https://evil" not in text, (call.method, text)


async def test_a_view_the_bot_never_opened_is_refused_and_a_note_redraws_only_on_slack(slack: Slack) -> None:
    """A view_submission is accepted only for a modal the bot opened for that member (the id it
    gave the view, stored): others get response_action errors and nothing is stored. The note
    form's queue redraw goes to the click's response_url as stored, on Slack's hosts only,
    whatever the submitted view's private_metadata says."""
    community = CommunityRef("slack", "T1")
    await slack.command("/suggest", user="U1")
    view = (await slack.fake.wait_for("views.open", 1))[0].params["view"]
    assert view["external_id"].startswith("sb1v:")
    refused = {"response_action": "errors", "errors": {"prompt": wording.FORM_NOT_OURS}}
    never = {k: v for k, v in view.items() if k != "external_id"}
    for forged, who in (({**view, "external_id": "sb1v:made-up"}, "U1"), (never, "U1"), (view, "U2")):
        assert await slack.submit(view_submission_payload(forged, suggestion_values(), who, "T1")) == refused
    assert await slack.submit(view_submission_payload(view, suggestion_values(), "U1", "T2")) == {}  # T2: ignored
    assert slack.engine.practice.suggestion_queue(community).waiting == 0  # nothing stored
    answer = await slack.submit(view_submission_payload(view, suggestion_values(), "U1", "T1"))
    assert answer["response_action"] == "update" and slack.engine.practice.suggestion_queue(community).waiting == 1

    # the note form: a tampered private_metadata is never posted to
    number = slack.engine.practice.suggestion_queue(community).items[0].suggestion_id
    evil = slack.fake.response_url("evil").replace("127.0.0.1", "localhost")  # reachable, not Slack's host
    url = slack.fake.response_url("queue")
    await slack.click(click_payload(f"sb1:sq:{number}:note", "UALLOWED", "T1", "C1", "1.1", url, ephemeral=True))
    note_view = (await slack.fake.wait_for("views.open", 2))[-1].params["view"]
    tampered = {**note_view, "private_metadata": evil}
    answer = await slack.submit(view_submission_payload(tampered, {"note": "Say which version."}, "UALLOWED", "T1"))
    assert answer["response_action"] == "update"
    await slack.fake.wait_response("queue")  # redrawn where the click came from
    await slack.settle()
    assert [c.url for c in replies(slack.fake) if c.url in ("queue", "evil")] == ["queue"]


def test_only_slacks_response_hosts_are_replied_to() -> None:
    hosts = ("https://hooks.slack.com/", "http://127.0.0.1:8123/")
    assert may_reply_to("https://hooks.slack.com/actions/T1/1/abc", hosts)
    assert may_reply_to("http://127.0.0.1:8123/respond/queue", hosts)
    for url in (
        "https://hooks.slack.com.evil.example/actions",
        "https://evil.example/?https://hooks.slack.com/",
        "https://hooks.slack.com@evil.example/",
        "http://hooks.slack.com/actions",
        "http://127.0.0.1:9999/respond/queue",
        "",
    ):
        assert not may_reply_to(url, hosts), url


async def test_an_answer_click_is_stored_by_the_time_its_http_200_returns(slack: Slack) -> None:
    """Slack does not redeliver a click it got a 200 for: a process killed between the ack and
    the store lost the answer unseen (14 of 160 in SIGKILL bursts). The 200 now follows the store."""
    round_id, ts = await slack.open_daily()
    url = slack.fake.response_url("stored")
    for n in range(8):
        who = f"UK{n}"
        response = await slack.click(click_payload(codec.encode_answer(round_id, n % 2), who, "T1", "C1", ts, url))
        assert response.status == 200
        stored = [r["user_id"] for r in slack.engine.admin.export_rows(CommunityRef("slack", "T1"))]
        assert who in stored, (who, stored)  # read the moment the 200 arrived, no waiting
    await slack.fake.wait_for("chat.postEphemeral", 8)


async def test_slacks_own_http_port_is_hardened_like_the_web_page(
    slack: Slack, caplog: pytest.LogCaptureFixture
) -> None:
    """Slack's own HTTP port (issue 27): a half-sent request is closed after
    STUDYBOT_WEB_KEEPALIVE_S (aiohttp's default is an hour), the Server header names no version,
    HSTS is sent behind a TLS proxy, and a malformed request line carrying an OAuth redirect's
    code and state is logged without them."""
    caplog.set_level(logging.DEBUG)
    first = slack.bot._runner
    slack.settings.web_keepalive_s = 0.5
    port = await slack.bot.start_http("127.0.0.1", 0)
    try:

        async def exchange(data: bytes) -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(data)
            await writer.drain()
            try:
                return await asyncio.wait_for(reader.read(), 20)  # b"": the server closed it
            finally:
                writer.close()

        assert await exchange(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Slow: ") == b""
        answer = (
            await exchange(b"GET /nothing HTTP/1.1\r\nHost: x\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n")
        ).decode()
        assert "\r\nServer: studybot\r\n" in answer and "aiohttp" not in answer
        assert "Strict-Transport-Security: max-age=" in answer
        plain = (await exchange(b"GET /nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")).decode()
        assert "Strict-Transport-Security" not in plain
        bad = await exchange(b"GET /slack/oauth_redirect?code=SECRETCODE&state=SECRETSTATE HTTP/1.1\x00\r\n\r\n")
        assert b" 400 " in bad.split(b"\r\n")[0] and b"aiohttp" not in bad
    finally:
        await slack.bot._runner.cleanup()
        slack.bot._runner = first
    logged = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    assert "SECRETCODE" not in logged and "SECRETSTATE" not in logged


async def test_a_second_quiz_says_which_unanswered_question_it_replaces(slack: Slack) -> None:
    await slack.command("/quiz", "", user="U8")
    first = await slack.fake.wait_response("quiz-U8")
    number = re.search(r"Practice question #(\d+)", block_text(first.params))
    assert number is not None, block_text(first.params)
    await slack.command("/quiz", "", user="U8")
    await slack.fake.wait_for("response_url", 2)
    second = [c for c in replies(slack.fake) if c.url == "quiz-U8"][-1]
    assert f"This replaces your unanswered question #{number.group(1)}" in block_text(second.params)


async def test_a_thread_reply_may_say_how_sure_with_the_answer(slack: Slack) -> None:
    """`b sure` in a question's thread answers that round and records the confidence with it, as
    a Discord mention or a console line does: one event, one engine call."""
    round_id, ts = await slack.open_daily()
    wrong = next(i for i in range(4) if i != answer_index(slack.engine, round_id, True))
    reply = thread_reply("U7", f"{'abcde'[wrong]} sure", "1700000700.000001", ts)
    assert (await slack.event(reply, "EvSure")).status == 200
    await slack.fake.wait_for("chat.postEphemeral", 1)
    await slack.settle()
    (sent,) = slack.fake.of("chat.postEphemeral")
    assert sent.params["user"] == "U7" and "Correct!" not in block_text(sent.params)
    again = slack.engine.confidence.confide(UserRef("slack", "T1", "U7", "u7"), round_id, False)
    assert isinstance(again, AlreadyNoted) and again.sure  # "sure" was recorded with the answer
