"""Sure / Unsure on Discord and Slack: the buttons under the private feedback of a click,
recorded once, a second press told it was already recorded, a stale id answered. The real
discord.py client and the real Bolt app against the fakes (tests/fakes)."""

from __future__ import annotations

import asyncio

from bot.core import wording
from bot.core.rules import choices as codec
from bot.core.rules.confidence_rules import encode_confidence
from bot.core.values import AlreadyNoted, UserRef
from tests.fakes.discord_server import EPHEMERAL
from tests.fakes.slack_api import click_payload
from tests.test_discord import ALICE, BOB, World, buttons, open_round, right_choice, text_of
from tests.test_discord import world as world  # noqa: F401  (the fixture)
from tests.test_slack import Slack, action_ids, answer_index, block_text, ephemerals, replies
from tests.test_slack import slack as slack  # noqa: F401  (the fixture)


async def test_discord_sure_unsure_after_a_click_once(world: World) -> None:  # noqa: F811
    running = await world.start()
    fake = world.fake
    try:
        post = await open_round(world, running)
        ids = [b["custom_id"] for b in buttons(post)]
        round_id = codec.decode_answer(ids[0])[0]  # type: ignore[index]
        wrong = (right_choice(running.engine, round_id) + 1) % len(ids)

        feedback = await fake.answered(await fake.click(post["id"], ids[wrong], ALICE))
        assert feedback["flags"] & EPHEMERAL and feedback["embeds"][0]["title"].startswith("Not quite")
        sure = buttons(feedback)
        assert [(b["label"], b["custom_id"]) for b in sure] == [
            ("Sure", encode_confidence(round_id, True)),
            ("Unsure", encode_confidence(round_id, False)),
        ]
        noted = await fake.answered(await fake.click(feedback["id"], sure[0]["custom_id"], ALICE))
        assert noted["flags"] & EPHEMERAL and noted["content"] == wording.SURE_WRONG
        again = await fake.answered(await fake.click(feedback["id"], sure[1]["custom_id"], ALICE))
        assert again["flags"] & EPHEMERAL and "Already recorded: you said you were sure" in again["content"]
        # Someone without an answer to the round pressing the same id is told so, nothing recorded.
        other = await fake.answered(await fake.click(feedback["id"], sure[1]["custom_id"], BOB))
        assert other["flags"] & EPHEMERAL and text_of(other) == wording.NO_ANSWER_TO_RATE
        # A confidence id the bot cannot read is answered as stale.
        fake.messages[feedback["id"]]["components"][0]["components"][0]["custom_id"] = "sb1:cf:x:s"
        stale = await fake.answered(await fake.click(feedback["id"], "sb1:cf:x:s", ALICE))
        assert stale["flags"] & EPHEMERAL and text_of(stale) == wording.STALE_BUTTON
        stale = await fake.answered(await fake.click(feedback["id"], "sb1:cf:x:s", ALICE))
        assert stale["flags"] & EPHEMERAL and stale["content"] == wording.STALE_BUTTON
        score = running.engine.boards.score(UserRef("discord", world.guild, ALICE["id"], "alice"))
        assert score.calibration is not None and (score.calibration.sure.answered, score.total_points) == (1, 0)
    finally:
        await running.stop()
    assert fake.violations == []


async def test_slack_sure_unsure_after_a_click_once(slack: Slack) -> None:  # noqa: F811
    round_id, ts = await slack.open_daily()
    right = codec.encode_answer(round_id, answer_index(slack.engine, round_id, True))
    await slack.click(click_payload(right, "U1", "T1", "C1", ts, slack.fake.response_url("click")))
    await slack.fake.wait_for("chat.postEphemeral", 1)
    feedback = ephemerals(slack.fake, "U1")[0]
    assert "Correct!" in block_text(feedback) and wording.ASK_SURE in block_text(feedback)
    assert action_ids(feedback) == [encode_confidence(round_id, True), encode_confidence(round_id, False)]

    # The presses come from the ephemeral feedback: answered through their own response_url.
    unsure, sure = encode_confidence(round_id, False), encode_confidence(round_id, True)
    await asyncio.gather(
        slack.click(click_payload(unsure, "U1", "T1", "C1", ts, slack.fake.response_url("p1"), ephemeral=True)),
        slack.click(
            click_payload(unsure, "U1", "T1", "C1", ts, slack.fake.response_url("p1"), ephemeral=True), retry=1
        ),
    )
    await slack.click(click_payload(sure, "U1", "T1", "C1", ts, slack.fake.response_url("p2"), ephemeral=True))
    await slack.click(click_payload("sb1:cf:0:s", "U1", "T1", "C1", ts, slack.fake.response_url("p3"), ephemeral=True))
    await slack.settle()
    answers: dict[str, list[str]] = {c.url: [] for c in replies(slack.fake)}
    for call in replies(slack.fake):
        answers[call.url].append(str(call.params.get("text")))
        assert call.params.get("response_type") == "ephemeral"
    noted = [t for t in answers["p1"] if t.startswith("Noted")]
    assert noted == ["Noted: you were unsure, and right this time."], answers
    assert all("Already recorded" in t for t in answers["p1"] if t not in noted)
    with slack.engine.store.read() as tx:
        round_number = tx.rounds.get_round(round_id).number
    assert answers["p2"] == [wording.already_noted(AlreadyNoted(round_id, round_number, False))]
    assert answers["p3"] == [wording.STALE_BUTTON]
    score = slack.engine.boards.score(UserRef("slack", "T1", "U1", "u1"))
    assert score.calibration is not None and (score.calibration.unsure.answered, score.calibration.sure.answered) == (
        1,
        0,
    )
