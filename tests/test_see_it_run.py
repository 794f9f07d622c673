"""The "See it run" from the chat: a reveal of a question with a `demo:` field carries a button
(Discord, Slack) or the command to type (the console); using it queues exactly that question's
demo for the member who used it, under the usual cooldown."""

from __future__ import annotations

from pathlib import Path

from bot.core import wording
from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.rules import choices as codec
from bot.core.rules import demo_request as dr
from bot.core.values import CommunityRef
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock
from tests.console_chat import Console
from tests.fakes.discord_server import EPHEMERAL
from tests.fakes.slack_api import FakeSlack, click_payload
from tests.test_demo_request import QUESTION_DEMO, demo_bank
from tests.test_discord import ALICE, World, buttons, open_round, text_of, world  # noqa: F401 (the fixture)
from tests.test_slack import action_ids, block_text, ephemerals, start_slack, stop_slack

EXPECTED = ("demos.checkpoint", dr.parse_question_demo(QUESTION_DEMO).args)


def jobs(engine: StudyEngine) -> list[tuple[str, tuple[str, ...], str]]:
    return [(job.module, job.args, job.user_name) for job in engine.demos.demo_jobs()]


async def test_discord_see_it_run_queues_the_questions_demo(world: World) -> None:  # noqa: F811
    world.bank = demo_bank(world.bank)
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        round_id = codec.decode_answer(buttons(post)[0]["custom_id"])[0]  # type: ignore[index]
        await running.runtime.call(running.engine.rounds.close_round, round_id)
        running.runtime.wake()
        [reveal] = await fake.wait_for(lambda: [m for m in fake.posts(world.channel) if m["id"] != post["id"]])
        [button] = buttons(reveal)
        assert (button["custom_id"], button["label"]) == (dr.encode_demo_button(round_id), wording.SEE_IT_RUN)

        queued = await fake.answered(await fake.click(reveal["id"], button["custom_id"], ALICE))
        assert not queued["flags"] & EPHEMERAL and "(checkpoint) for alice" in queued["content"]
        assert jobs(running.engine) == [(*EXPECTED, "alice")]

        again = await fake.answered(await fake.click(reveal["id"], button["custom_id"], ALICE))
        assert again["flags"] & EPHEMERAL and "one per member every" in text_of(again)
        assert len(jobs(running.engine)) == 1
    finally:
        await running.stop()
    assert fake.violations == []


async def test_slack_see_it_run_queues_the_questions_demo(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> None:
    fake = await FakeSlack().start()
    slack, database = await start_slack(fake, sqlite_url, demo_bank(test_bank), clock)
    try:
        slack.engine.admin.config(CommunityRef("slack", "T1"), "channel", "C1")
        round_id, ts = await slack.open_daily()
        slack.clock.advance(hours=13)
        assert len(slack.engine.rounds.close_due()) == 1
        assert await slack.runtime.deliver_now("slack") == 1
        reveal = slack.fake.of("chat.postMessage")[-1].params
        assert action_ids(reveal) == [dr.encode_demo_button(round_id)]
        assert wording.SEE_IT_RUN in str(reveal["blocks"])

        url = slack.fake.response_url("see-it-run")
        await slack.click(click_payload(dr.encode_demo_button(round_id), "U1", "T1", "C1", ts, url))
        queued = (await slack.fake.wait_for("chat.postMessage", 3, channel="C1"))[-1]
        assert "Demo #1 (checkpoint) for u1" in block_text(queued.params)
        assert jobs(slack.engine) == [(*EXPECTED, "u1")]

        await slack.click(click_payload(dr.encode_demo_button(round_id), "U1", "T1", "C1", ts, url))
        await slack.settle()
        refused = [block_text(c.params) for c in slack.fake.of("response_url") if c.url == "see-it-run"]
        assert len(refused) == 1 and "one per member every" in refused[0]
        assert len(jobs(slack.engine)) == 1 and ephemerals(slack.fake, "U1") == []

        tampered = dr.DEMO_BUTTON_PREFIX + "01"
        await slack.click(click_payload(tampered, "U2", "T1", "C1", ts, url))
        await slack.settle()
        said = [block_text(c.params) for c in slack.fake.of("response_url") if c.url == "see-it-run"]
        assert said[-1].startswith(wording.STALE_BUTTON) and len(jobs(slack.engine)) == 1
    finally:
        await stop_slack(slack, database)
        await fake.stop()


def test_console_prints_the_command_that_queues_the_questions_demo(
    database: Database, test_bank: Bank, clock: FakeClock, tmp_path: Path
) -> None:
    engine = StudyEngine(SqlStore(database), demo_bank(test_bank), clock=clock)
    chat = Console(engine, community="club", user="Ann", demos=tmp_path / "charts")
    try:
        chat.handle("/daily")
        chat.handle("/close")
        seen = chat.wait_for(lambda seen: any(m.kind == "reveal" for m in seen))
        reveal = next(m for m in seen if m.kind == "reveal")
        hint = next(line for line in reveal.text.splitlines() if line.startswith("See it run: "))
        command = hint.removeprefix("See it run: ")
        assert command == f"/demo checkpoint {QUESTION_DEMO}" and reveal.data["demo"] == command[len("/demo ") :]
        [queued] = [m for m in chat.handle(command) if m.kind == "demo_queued"]
        assert queued.data["module"] == "demos.checkpoint"
        assert jobs(engine) == [(*EXPECTED, "Ann")]
        assert engine.demos.demo_jobs()[0].channel_id == chat.channel.channel_id
        chat.wait_for(lambda seen: any(m.kind in ("demo", "demo_failed") for m in seen))
    finally:
        chat.close()
