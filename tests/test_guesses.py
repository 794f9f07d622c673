"""Guess, then run: guesses on a queued checkpoint demo, counted before its first figure and
refused after it, one per member, and the result naming who guessed right; on the console,
Discord (the real discord.py client against the fake) and Slack (the real Bolt app)."""

from __future__ import annotations

import asyncio
from typing import Any

from bot.core.engine import StudyEngine
from bot.core.records import DemoGuess
from bot.core.services.guesses import band_of, decode_guess, encode_guess, measured_saving, takes_guesses
from bot.core.values import ChannelRef, UserRef
from bot.platforms.console import Message
from bot.platforms.console.render import render as console_render
from tests.console_chat import Console
from tests.fakes.discord_server import EPHEMERAL
from tests.fakes.slack_api import click_payload
from tests.test_discord import ALICE, BOB, CAROL, World, buttons, text_of, world  # noqa: F401  (the fixture)
from tests.test_slack import Slack, block_text, slack  # noqa: F401  (the fixture)

MIB = 2**20
NONE_ROW = {"strategy": "none", "peak_bytes": 100 * MIB, "saved_bytes": 0, "step_ms": 12.0, "grads_identical": True}
BLOCK_ROW = {
    "strategy": "block",
    "peak_bytes": 40 * MIB,
    "saved_bytes": 60 * MIB,
    "step_ms": 15.0,
    "grads_identical": True,
}
RESULT: dict[str, object] = {"device": "cpu", "torch": "2.5", "results": [NONE_ROW, BLOCK_ROW]}  # 60% less: 50-75%


def first_figure(engine: StudyEngine, job_id: int) -> None:
    """What a runner reports: the job claimed, then its first row measured."""
    claimed = engine.demos.claim_demo("test-worker", "local")
    assert claimed is not None and claimed.id == job_id
    engine.demos.demo_progress(job_id, {"total": 2, "rows": [NONE_ROW]})


def only(messages: list[Message], kind: str) -> Message:
    found = [m for m in messages if m.kind == kind]
    assert len(found) == 1, messages
    return found[0]


def test_the_codec_bands_and_which_demos_take_guesses() -> None:
    assert encode_guess(12, 3) == "sb1:gs:12:3" and decode_guess("sb1:gs:12:3") == (12, 3)
    for bad in ("sb1:gs:12:4", "sb1:gs:012:1", "sb1:gs:-1:0", "sb1:gs:12:1x", "sb1:a:12:1", None):
        assert decode_guess(bad) is None
    assert [band_of(s) for s in (-0.1, 0.0, 0.249, 0.25, 0.5, 0.74, 0.75, 1.0)] == [0, 0, 0, 1, 2, 2, 3, 3]
    assert measured_saving(RESULT) == 0.6
    assert measured_saving({"results": [NONE_ROW]}) is None
    assert takes_guesses("demos.checkpoint", ("--layers", "4"))
    assert takes_guesses("demos.checkpoint", ("--strategies", "block,none"))
    assert not takes_guesses("demos.checkpoint", ("--strategies", "none,sqrt"))
    assert not takes_guesses("demos.estimate", ())


def test_console_guesses_before_the_first_figure_count_and_the_result_names_who_was_right(
    engine: StudyEngine,
) -> None:
    chat = Console(engine, community="club", user="Ann")
    channel = chat.channel
    try:
        assert only(chat.handle("guess 2"), "notice").text.startswith("No checkpoint demo here is taking guesses")
        queued = engine.demos.request_demo(UserRef("console", "club", "dan", "Dan"), channel, "checkpoint layers=4")
        assert queued.guesses
        [invite] = console_render(queued)
        assert "Guess first: how much less peak memory will block checkpointing need than none?" in invite.text
        assert "guess 1 (under 25%), guess 2 (25-50%), guess 3 (50-75%), guess 4 (over 75%)" in invite.text

        assert (
            only(chat.handle("guess 3"), "notice").text
            == "Your guess is in: 50-75%. The result names who guessed right."
        )
        again = only(chat.handle("guess 1"), "notice")
        assert again.text == "You guessed 50-75% already; your first guess stands."
        assert "guess 1 (under 25%)" in only(chat.handle("guess 9"), "error").text
        chat.handle("/as Carol")
        assert "under 25%" in only(chat.handle("guess 1"), "notice").text

        first_figure(engine, queued.job_id)
        chat.handle("/as Bob")
        refused = only(chat.handle("guess 3"), "notice")
        assert refused.text == "Guesses closed when the first figure arrived; watch the result."
        with engine.store.read() as tx:
            assert tx.guesses.demo_guesses(queued.job_id) == [DemoGuess("Ann", 2), DemoGuess("Carol", 0)]

        assert engine.demos.demo_finished(queued.job_id, RESULT, None)
        posted = only(chat.deliver(), "demo")
        assert (
            "Block checkpointing needed 60% less peak memory than none (50-75%): guessed right by Ann (1 of 2 guesses)."
        ) in posted.text
    finally:
        chat.close()


def test_a_demo_without_block_invites_no_guesses(engine: StudyEngine) -> None:
    channel = ChannelRef("console", "club", "console")
    dan = UserRef("console", "club", "dan", "Dan")
    queued = engine.demos.request_demo(dan, channel, "checkpoint strategies=none,sqrt")
    assert not queued.guesses
    assert "Guess first" not in console_render(queued)[0].text
    notice = engine.guesses.guess_text(UserRef("console", "club", "ann", "Ann"), channel, "guess 2")
    assert notice.text.startswith("No checkpoint demo here is taking guesses")


# ------------------------------------------------------------------ Discord


async def test_discord_guess_buttons_until_the_first_figure(world: World) -> None:  # noqa: F811
    running = await world.start()
    fake = world.fake
    try:
        options = [{"name": "checkpoint", "type": 1, "options": [{"name": "layers", "type": 4, "value": 4}]}]
        interaction = await fake.slash("demo", CAROL, world.guild, world.channel, options)
        shown = await fake.answered(interaction)
        assert "Guess first: how much less peak memory" in shown["content"]
        jobs = running.engine.demos.demo_jobs()
        job_id = jobs[0].id
        ids = [b["custom_id"] for b in buttons(shown)]
        assert ids == [f"sb1:gs:{job_id}:{band}" for band in range(4)]
        assert [b["label"] for b in buttons(shown)] == ["under 25%", "25-50%", "50-75%", "over 75%"]
        await fake.wait_for(lambda: running.engine.demos.demo_jobs()[0].message_ref == shown["id"])

        counted = await fake.answered(await fake.click(shown["id"], ids[2], ALICE))
        assert counted["flags"] & EPHEMERAL and counted["content"].startswith("Your guess is in: 50-75%")
        second = await fake.answered(await fake.click(shown["id"], ids[0], ALICE))
        assert second["flags"] & EPHEMERAL and "your first guess stands" in second["content"]
        wrong = await fake.answered(await fake.click(shown["id"], ids[3], CAROL))
        assert "over 75%" in wrong["content"]

        await running.runtime.call(first_figure, running.engine, job_id)  # what the runner reports
        # a click between the first figure and the edit that takes the buttons away
        late = await fake.answered(await fake.click(shown["id"], ids[2], BOB))
        assert late["flags"] & EPHEMERAL and late["content"].startswith("Guesses closed when the first figure")
        card = await running.runtime.call(running.engine.demos.demo_progress, job_id, {"total": 2, "rows": [NONE_ROW]})
        assert card is not None
        await running.runtime.demo_progress(card)
        edited = fake.messages[shown["id"]]
        assert "1 of 2 measured" in edited["content"] and buttons(edited) == []

        assert await running.runtime.call(running.engine.demos.demo_finished, job_id, RESULT, None)
        running.runtime.wake()
        result = await fake.wait_for(
            lambda: next((m for m in fake.posts(world.channel) if "guessed right" in text_of(m)), None)
        )
        assert "60% less peak memory than none (50-75%): guessed right by alice (1 of 2 guesses)." in text_of(result)
    finally:
        await running.stop()
    assert fake.violations == []


# -------------------------------------------------------------------- Slack


def actions_of(params: dict[str, Any]) -> list[str]:
    blocks = params.get("blocks") or []
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def test_slack_guess_buttons_until_the_first_figure(slack: Slack) -> None:  # noqa: F811
    await slack.command("/demo", "checkpoint layers=4", user="U3")
    announced = (await slack.fake.wait_for("chat.postMessage", 1, channel="C1"))[-1].params
    assert "Guess first: how much less peak memory" in block_text(announced)
    for _ in range(100):  # the queued message's reference reaches the job
        jobs = slack.engine.demos.demo_jobs()
        if jobs and jobs[0].message_ref:
            break
        await asyncio.sleep(0.05)
    job = jobs[0]
    ids = actions_of(announced)
    assert ids == [f"sb1:gs:{job.id}:{band}" for band in range(4)]
    ts = job.message_ref.partition(":")[2]  # type: ignore[union-attr]

    async def guess(user: str, band: int, name: str) -> str:
        url = slack.fake.response_url(name)
        await slack.click(click_payload(ids[band], user, "T1", "C1", ts, url))
        reply = await slack.fake.wait_response(name)
        assert reply.params["response_type"] == "ephemeral" and reply.params["replace_original"] is False
        return str(reply.params["text"])

    assert (await guess("U1", 2, "g1")).startswith("Your guess is in: 50-75%")
    assert "your first guess stands" in await guess("U1", 1, "g2")
    assert (await guess("U2", 1, "g3")).startswith("Your guess is in: 25-50%")

    await slack.runtime.call(first_figure, slack.engine, job.id)
    # a click between the first figure and the edit that takes the buttons away
    assert (await guess("U4", 2, "g4")).startswith("Guesses closed when the first figure arrived")
    card = await slack.runtime.call(slack.engine.demos.demo_progress, job.id, {"total": 2, "rows": [NONE_ROW]})
    assert card is not None
    await slack.runtime.demo_progress(card)
    edited = slack.fake.of("chat.update")[-1].params
    assert "1 of 2 measured" in block_text(edited) and actions_of(edited) == []

    assert await slack.runtime.call(slack.engine.demos.demo_finished, job.id, RESULT, None)
    assert await slack.runtime.deliver_now("slack") >= 1
    done = slack.fake.of("chat.update")[-1].params
    assert "60% less peak memory than none (50-75%): guessed right by u1 (1 of 2 guesses)." in block_text(done)
