"""The admins' queue once a suggestion is decided (issue 20): on Discord the item's own message
shows the decision with its buttons disabled; on Slack the queue's message is redrawn without
the decided suggestion (a button's decision, and a note sent from its form)."""

from __future__ import annotations

import json
from typing import Any

from bot.core.values import ChannelRef, SuggestionForm, SuggestionReceived, UserRef
from tests.fakes.slack_api import click_payload, view_submission_payload
from tests.test_discord import ADMIN, World, buttons, world  # noqa: F401  (world: the fixture)
from tests.test_slack import (  # noqa: F401  (slack, _no_slack_env: fixtures)
    CONFIG_COMMAND,
    Slack,
    _no_slack_env,
    action_ids,
    block_text,
    slack,
)
from tests.test_suggestions import CHOICES, PROMPT, REF, TRAP, WHYS, good_form


async def test_discord_decided_items_keep_no_live_button(world: World) -> None:  # noqa: F811
    running = await world.start()
    fake = world.fake
    alice = UserRef("discord", world.guild, "1234", "alice")
    where = ChannelRef("discord", world.guild, world.channel)
    try:
        numbers = []
        for level in ("1", "2"):
            form = SuggestionForm("fundamentals", level, f"({level}) {PROMPT}", CHOICES, WHYS, "A", TRAP, refs=(REF,))
            received = await running.runtime.call(running.engine.practice.suggest, alice, where, form)
            assert isinstance(received, SuggestionReceived)
            numbers.append(received.suggestion_id)
        queue = await world.slash("config", ADMIN, admin=True, setting="suggestions")
        [second] = await fake.wait_for(lambda: [m for m in fake.messages.values() if m.get("_via") == "followup"])
        first_id, second_id = queue["id"], second["id"]

        await fake.answered(await fake.click(first_id, f"sb1:sq:{numbers[0]}:approve", ADMIN, admin=True))
        item = fake.messages[first_id]
        assert f"Suggestion #{numbers[0]} approved" in item["content"]
        assert [b["disabled"] for b in buttons(item)] == [True, True, True]
        assert PROMPT in item["embeds"][0]["description"]  # the suggestion itself is still shown
        assert not any(b.get("disabled") for b in buttons(fake.messages[second_id]))  # the other is still live

        opened = await fake.click(second_id, f"sb1:sq:{numbers[1]}:note", ADMIN, admin=True)
        await fake.answered(await fake.submit(opened, {"note": "Name the layer it recomputes."}, admin=True))
        item = fake.messages[second_id]
        assert f"Suggestion #{numbers[1]} sent back" in item["content"]
        assert [b["disabled"] for b in buttons(item)] == [True, True, True]
    finally:
        await running.stop()
    assert fake.violations == []


def queue_replies(slack: Slack, url: str) -> list[dict[str, Any]]:  # noqa: F811
    return [c.params for c in slack.fake.of("response_url") if c.url == url]


async def test_slack_queue_message_is_redrawn_after_each_decision(slack: Slack) -> None:  # noqa: F811
    author = UserRef("slack", "T1", "U1", "u1")
    numbers = [
        slack.engine.practice.suggest(author, ChannelRef("slack", "T1", "C1"), good_form()).suggestion_id  # type: ignore[union-attr]
        for _ in "ab"
    ]
    await slack.command(CONFIG_COMMAND, "suggestions", user="UALLOWED")
    url = slack.fake.response_url("queue")

    await slack.click(click_payload(f"sb1:sq:{numbers[0]}:approve", "UALLOWED", "T1", "C1", "1.1", url, ephemeral=True))
    [redrawn] = (await slack.fake.wait_for("response_url", 2))[-1:]
    assert redrawn.url == "queue" and redrawn.params["replace_original"] is True
    assert f"Suggestion #{numbers[0]} approved" in block_text(redrawn.params)
    assert action_ids(redrawn.params) == [f"sb1:sq:{numbers[1]}:{a}" for a in ("approve", "note", "reject")]

    await slack.click(click_payload(f"sb1:sq:{numbers[1]}:note", "UALLOWED", "T1", "C1", "1.1", url, ephemeral=True))
    opened = (await slack.fake.wait_for("views.open", 1))[0].params
    view = json.loads(opened["view"]) if isinstance(opened["view"], str) else opened["view"]
    assert view["private_metadata"] == ""  # the queue's response_url is kept with the view's id, not in the view
    await slack.submit(view_submission_payload(view, {"note": "Say which version."}, "UALLOWED", "T1"))
    await slack.fake.wait_for("response_url", 3)
    last = queue_replies(slack, "queue")[-1]
    assert last["replace_original"] is True and action_ids(last) == []
    assert f"Suggestion #{numbers[1]} sent back" in block_text(last)
    assert "No suggested questions are waiting." in block_text(last)
