"""A refused Discord form comes back filled in with what was typed (issue 20): a modal cannot
answer a modal, so the refusal carries a button, and the form it opens holds the member's
text, from the database (a restart between the two loses nothing)."""

from __future__ import annotations

from typing import Any

from bot.platforms.discord import render
from tests.test_discord import (  # noqa: F401  (world: the fixture)
    ALICE,
    BOB,
    WHYS,
    World,
    buttons,
    first_part,
    second_part,
    suggest_first,
    world,
)


def inputs(form: dict[str, Any]) -> dict[str, str]:
    """A modal's text inputs as it opens: id -> the text it holds."""
    return {c["custom_id"]: c.get("value", "") for row in form["components"] for c in row["components"]}


async def test_a_refused_first_form_opens_again_with_what_was_typed(world: World) -> None:  # noqa: F811
    running = await world.start()
    fake = world.fake
    try:
        typed = first_part(level="9")  # no such level
        refused = await suggest_first(world, ALICE, typed)
        assert "was not sent" in refused["content"] and "level" in refused["content"]
        [retry] = buttons(refused)
        assert retry["custom_id"].startswith("sb1:sf:")
        opened = await fake.click(refused["id"], retry["custom_id"], ALICE)
        form = await fake.opened_form(opened)
        assert form["custom_id"] == retry["custom_id"]  # its submit says which refused draft it fixes
        assert inputs(form) == typed

        # another member cannot open it with Alice's text
        stolen = await fake.click(refused["id"], retry["custom_id"], BOB)
        assert inputs(await fake.opened_form(stolen)) == dict.fromkeys(render.FIRST_FIELDS, "")

        # corrected, it is kept, and the second form goes on from there
        kept = await fake.answered(await fake.submit(opened, first_part()))
        assert "First part kept" in kept["content"]
        [continue_button] = buttons(kept)
        click = await fake.click(kept["id"], continue_button["custom_id"], ALICE)
        assert inputs(await fake.opened_form(click)) == dict.fromkeys(render.SECOND_FIELDS, "")

        short = second_part(whys="\n".join(WHYS[:2]))  # one why missing
        refused_again = await fake.answered(await fake.submit(click, short))
        assert "why of choice C" in refused_again["content"]
        [retry] = buttons(refused_again)
        reopened = await fake.click(refused_again["id"], retry["custom_id"], ALICE)
        assert inputs(await fake.opened_form(reopened)) == short | {"explain": "", "hint": ""}  # the optional two
        thanks = await fake.answered(await fake.submit(reopened, second_part()))
        assert "is waiting for the admins" in thanks["content"]
    finally:
        await running.stop()
    assert fake.violations == []
