"""One letter for a choice everywhere a member sees it (issue 28). A daily round shows its
choices shuffled and stores that order; the chat's feedback, the reveal, the member's web
page, `studybot export` and the Anki deck of their misses must all call the choice the
member pressed by the letter they pressed, and the answer by the letter it had on screen."""

from __future__ import annotations

import csv
import html
import io
import re
import string
from pathlib import Path

import aiohttp
import pytest

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.rules import choices as codec
from bot.core.values import AnswerFeedback, ChannelRef, CommunityRef, QuestionCard, RevealCard, UserRef
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.web.app import WebServer, build_app
from bot.web.links import WebLinks
from tests.conftest import FakeClock, migrated_sqlite, run_studybot
from tests.test_anki import open_package


async def get(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, url
        return await response.text()


async def get_bytes(url: str) -> bytes:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, url
        return await response.read()


async def test_a_choice_has_one_letter_in_feedback_reveal_web_page_export_and_anki(
    tmp_path: Path, test_bank: Bank, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A known shuffle: shown position i is the bank's choice n-1-i.
    # draw_order's signature (rng is passed by keyword); the known shuffle ignores it
    monkeypatch.setattr(codec, "draw_order", lambda count, rng=None: tuple(reversed(range(count))))  # noqa: ARG005
    url = migrated_sqlite(tmp_path / "cli.db")  # the file `studybot export` reads below
    database = Database(url)
    links = WebLinks("http://127.0.0.1", "a web secret for tests", 3600)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock, links=links)
    server = WebServer(build_app(engine, links), "127.0.0.1", 0)
    await server.start()
    links.base_url = f"http://127.0.0.1:{server.port}"
    try:
        community = CommunityRef("console", "club")
        channel = ChannelRef("console", "club", "general")
        ann = UserRef("console", "club", "ann", "Ann")
        engine.admin.configure(community, "channel", "general")
        card = engine.rounds.open_daily(channel)
        assert isinstance(card, QuestionCard)
        question = test_bank.get(card.question_id)
        assert question is not None
        count = len(question.choices)
        key_file = question.answer_index
        key_shown = count - 1 - key_file
        # The first choice on screen, unless it is the key; a wrong one either way.
        pressed = 0 if key_shown != 0 else 1
        pressed_file = count - 1 - pressed
        assert card.choices[pressed] == question.choices[pressed_file].text  # the chat shows the shuffle
        pressed_letter, key_letter = string.ascii_uppercase[pressed], string.ascii_uppercase[key_shown]
        assert pressed_letter != string.ascii_uppercase[pressed_file] or key_letter != string.ascii_uppercase[key_file]

        feedback = engine.rounds.answer(ann, card.round_id, pressed)
        assert isinstance(feedback, AnswerFeedback) and not feedback.correct
        assert (feedback.chosen, feedback.answer) == (pressed_letter, key_letter)

        reveal = engine.rounds.close_open_in(channel)
        assert isinstance(reveal, RevealCard) and reveal.answer == key_letter
        by_letter = {c.letter: c.text for c in reveal.choices}
        assert by_letter[pressed_letter] == question.choices[pressed_file].text
        assert by_letter[key_letter] == question.choices[key_file].text

        # The member's web page: "you chose B, the answer is A" in the letters they saw, and
        # its list of choices lettered the same way.
        page = await get(links.member(community, "ann"))
        assert f"you chose {pressed_letter}, the answer is {key_letter}" in page
        strong = [
            f"<strong>{string.ascii_uppercase[shown]}. {html.escape(question.choices[index].text, quote=True)}</strong>"
            for shown, index in enumerate(reversed(range(count)))
        ]
        assert all(line in page for line in strong)
        assert [page.index(line) for line in strong] == sorted(page.index(line) for line in strong)  # as shown
        assert re.search(re.escape(strong[pressed]) + r"[^\n]*your choice", page)

        # The Anki deck of the member's misses.
        deck = await get_bytes(links.member(community, "ann").replace("/me", "/me/misses.apkg"))
        (note,), _, _ = open_package(deck, tmp_path)
        assert note.fields["Answer"].startswith(f"{key_letter}) ")
        assert f"<b>{pressed_letter})</b> {html.escape(question.choices[pressed_file].text)}" in note.fields["Choices"]
        assert f"<b>{key_letter})</b> {html.escape(question.choices[key_file].text)}" in note.fields["Choices"]

        # `studybot export`, the CSV an admin downloads.
        done = run_studybot(tmp_path, ["export", "--community", "club", "--platform", "console"])
        assert done.returncode == 0, done.stderr
        (row,) = list(csv.DictReader(io.StringIO(done.stdout)))
        assert row["choice"] == pressed_letter and row["user"] == "Ann"
    finally:
        await server.close()
        database.dispose()
