"""Your misses in Anki (issue 21): `/review export` on the console, Discord and Slack, and the
web page's two deck links. Every export is opened back as Anki would read it: the package is a
zip whose `collection.anki2` is SQLite; its notes table must hold one note per missed question,
with every choice's why, tagged by topic, and the same guid, note type and deck on a second
export (so Anki updates the cards instead of adding copies)."""

from __future__ import annotations

import asyncio
import html
import io
import json
import sqlite3
import warnings
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot import anki
from bot.core.bank import Bank, Question
from bot.core.engine import StudyEngine
from bot.core.values import (
    AnkiDeck,
    AnswerFeedback,
    BankEntry,
    ChannelRef,
    ChoiceReveal,
    CommunityRef,
    QuestionCard,
    UserRef,
)
from bot.store.database import Database
from bot.store.repository import SqlStore
from bot.web.app import WebServer, build_app
from bot.web.links import WebLinks
from tests.conftest import FakeClock
from tests.console_chat import Console
from tests.fakes.discord_server import user as discord_user
from tests.fakes.slack_api import FakeSlack
from tests.test_discord import World, text_of, world  # noqa: F401  (the fixture)
from tests.test_slack import Slack, replies, slack  # noqa: F401  (the fixture)


@dataclass(frozen=True)
class Note:
    guid: str
    model_id: int
    deck_id: int
    fields: dict[str, str]
    tags: tuple[str, ...]
    modified: int


def open_package(data: bytes, tmp_path: Path) -> tuple[list[Note], dict[str, Any], dict[str, Any]]:
    """An .apkg read back as Anki reads it: its notes (with each note's card's deck), and the
    collection's note types and decks."""
    with zipfile.ZipFile(io.BytesIO(data)) as package:
        assert set(package.namelist()) == {"collection.anki2", "media"}
        assert json.loads(package.read("media")) == {}
        path = tmp_path / f"collection-{len(list(tmp_path.iterdir()))}.anki2"
        path.write_bytes(package.read("collection.anki2"))
    db = sqlite3.connect(path)
    try:
        models_json, decks_json = db.execute("SELECT models, decks FROM col").fetchone()
        models, decks = json.loads(models_json), json.loads(decks_json)
        rows = db.execute(
            "SELECT n.guid, n.mid, c.did, n.flds, n.tags, n.mod FROM notes n JOIN cards c ON c.nid = n.id ORDER BY n.id"
        ).fetchall()
        cards, notes = db.execute("SELECT count(*) FROM cards").fetchone()[0], db.execute("SELECT count(*) FROM notes")
        assert cards == notes.fetchone()[0]  # one card per note: the note type has one template
    finally:
        db.close()
    found = []
    for guid, mid, did, flds, tags, mod in rows:
        names = [f["name"] for f in models[str(mid)]["flds"]]
        found.append(Note(guid, mid, did, dict(zip(names, flds.split("\x1f"), strict=True)), tuple(tags.split()), mod))
    return found, models, decks


def wrong_index(bank: Bank, card: QuestionCard) -> int:
    question = bank.get(card.question_id)
    assert question is not None
    return next(i for i, text in enumerate(card.choices) if text != question.choices[question.answer_index].text)


def right_index(bank: Bank, card: QuestionCard) -> int:
    question = bank.get(card.question_id)
    assert question is not None
    return card.choices.index(question.choices[question.answer_index].text)


def miss_and_hit(engine: StudyEngine, who: UserRef, where: ChannelRef, clock: FakeClock) -> tuple[str, str, str, str]:
    """Three practice questions: the first and third missed, the second right; two days later
    the most overdue miss is reviewed and missed again. Returns the three question ids and the
    reviewed one's (the newest miss)."""
    asked = []
    for n in range(3):
        card = engine.practice.quiz(who, where)
        assert isinstance(card, QuestionCard)
        choice = right_index(engine.bank, card) if n == 1 else wrong_index(engine.bank, card)
        feedback = engine.rounds.answer(who, card.round_id, choice)
        assert isinstance(feedback, AnswerFeedback) and feedback.correct == (n == 1)
        asked.append(card.question_id)
    clock.set(clock.now + timedelta(days=2))
    again = engine.practice.review(who, where)
    assert isinstance(again, QuestionCard) and again.question_id in (asked[0], asked[2])
    assert isinstance(engine.rounds.answer(who, again.round_id, wrong_index(engine.bank, again)), AnswerFeedback)
    return asked[0], asked[1], asked[2], again.question_id


def bank_question(bank: Bank, question_id: str) -> Question:
    question = bank.get(question_id)
    assert question is not None
    return question


def assert_whole_notes(notes: list[Note], questions: list[Question], deck: str) -> None:
    """One note per question, in that order, each with its prompt, choices, answer, every
    choice's why, references and topic tag, under the bot's note type and `deck`."""
    assert [n.guid for n in notes] == [anki.note_guid(q.id) for q in questions]
    for note, question in zip(notes, questions, strict=True):
        assert note.model_id == anki.MODEL_ID and note.deck_id == anki.DECK_IDS[deck]
        assert note.fields["Id"] == question.id and note.fields["Question"] == html.escape(question.prompt)
        right = question.choices[question.answer_index]
        assert html.escape(right.text) in note.fields["Answer"]
        for choice in question.choices:
            assert html.escape(choice.text) in note.fields["Choices"]
            assert html.escape(choice.why) in note.fields["Whys"]
        for ref in question.refs:
            assert ref in note.fields["References"]
        if question.explain:
            assert html.escape(question.explain) in note.fields["Explanation"]
        assert question.topic in note.tags and "checkpoint-study-bot" in note.tags


# ------------------------------------------------------------------ the console


def test_the_console_exports_each_missed_question_once_and_a_second_export_keeps_the_ids(
    tmp_path: Path, test_bank: Bank, clock: FakeClock, sqlite_url: str
) -> None:
    database = Database(sqlite_url)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock)
    chat = Console(engine, community="club", user="Ann")
    chat.app.options = replace(chat.app.options, export_dir=tmp_path / "decks")
    try:
        (nothing,) = chat.handle("/review export")  # nothing missed yet: a sentence, no file
        assert nothing.kind == "notice" and "nothing to put in an Anki deck" in nothing.text
        assert not (tmp_path / "decks").exists()

        first, right, third, reviewed = miss_and_hit(engine, chat.user, chat.channel, clock)
        (saved,) = chat.handle("/review export")
        assert saved.kind == "anki" and saved.data["notes"] == 2
        path = Path(saved.data["path"])
        assert path == (tmp_path / "decks" / "studybot-misses-ann.apkg").resolve() and str(path) in saved.text
        notes, models, decks = open_package(path.read_bytes(), tmp_path)
        newest_first = [reviewed, third if reviewed == first else first]  # missed twice, one note
        assert saved.data["question_ids"] == newest_first
        assert_whole_notes(notes, [bank_question(test_bank, q) for q in newest_first], "misses")
        assert models[str(anki.MODEL_ID)]["name"] == "Checkpoint Study Bot question"
        assert decks[str(anki.DECK_IDS["misses"])]["name"] == "Checkpoint Study Bot::Missed questions"

        # A day later the member misses the question they had right: the second export holds
        # three notes; the two from before keep their guid, note type and deck.
        clock.set(clock.now + timedelta(days=1))
        for _ in range(20):  # reviews due come first, answered right; then the least seen
            card = engine.practice.quiz(chat.user, chat.channel, "fundamentals")
            if card.question_id == right:
                break
            engine.rounds.answer(chat.user, card.round_id, right_index(test_bank, card))
        assert card.question_id == right
        engine.rounds.answer(chat.user, card.round_id, wrong_index(test_bank, card))
        (again,) = chat.handle("/review export")
        assert Path(again.data["path"]) == path  # the same file, replaced
        later, _, _ = open_package(path.read_bytes(), tmp_path)
        assert len(later) == 3 and {n.guid for n in notes} < {n.guid for n in later}
        before = {n.guid: (n.model_id, n.deck_id, n.fields) for n in notes}
        assert all(before[n.guid] == (n.model_id, n.deck_id, n.fields) for n in later if n.guid in before)
        assert min(n.modified for n in later) >= max(n.modified for n in notes)
        assert [p.name for p in (tmp_path / "decks").iterdir()] == [path.name]  # no partial file left
    finally:
        chat.close()
        database.dispose()


def test_text_that_looks_like_html_is_shown_as_typed(tmp_path: Path) -> None:
    """A prompt about `x <y> z` must not become a tag in Anki (genanki warns of unescaped HTML)."""
    entry = BankEntry(
        question_id="M-7",
        topic="pytorch api",
        difficulty=2,
        prompt="Which is kept: <saved tensors> or x < y & z?\nSecond line",
        choices=(
            ChoiceReveal("A", "<b>bold</b>", True, "kept & rebuilt <later>", 0),
            ChoiceReveal("B", "none", False, "see https://example.org/a_b.", 0),
        ),
        explain=None,
        trap="<trap>",
        refs=("Docs: https://pytorch.org/docs/stable/checkpoint.html", "a book"),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = anki.package(AnkiDeck("bank", "Checkpoint Study Bot::Revealed bank", "x.apkg", (entry,)))
    (note,), _, _ = open_package(data, tmp_path)
    assert note.fields["Question"] == "Which is kept: &lt;saved tensors&gt; or x &lt; y &amp; z?<br>Second line"
    assert (
        "&lt;b&gt;bold&lt;/b&gt;" in note.fields["Choices"]
        and "kept &amp; rebuilt &lt;later&gt;" in note.fields["Whys"]
    )
    assert "&lt;trap&gt;" in note.fields["Explanation"]
    link = (
        '<a href="https://pytorch.org/docs/stable/checkpoint.html">https://pytorch.org/docs/stable/checkpoint.html</a>'
    )
    assert link in note.fields["References"] and "a book" in note.fields["References"]
    assert note.tags == ("checkpoint-study-bot", "pytorch_api") and note.deck_id == anki.DECK_IDS["bank"]


# --------------------------------------------------------------------- Discord


async def test_discord_attaches_the_deck_to_the_private_answer(
    world: World,  # noqa: F811
    tmp_path: Path,
    clock: FakeClock,
) -> None:
    running = await world.start()
    try:
        ann = discord_user("900000000000000002", "ann")
        bob = discord_user("900000000000000003", "bob")
        who = UserRef("discord", world.guild, ann["id"], "ann")
        first, _, third, _ = await asyncio_to_thread(
            miss_and_hit, running.engine, who, ChannelRef("discord", world.guild, world.channel), clock
        )
        options = [{"name": "action", "type": 3, "value": "export"}]
        asked = await world.fake.slash("review", ann, world.guild, world.channel, options)
        shown = await world.fake.answered(asked)
        assert shown["flags"] & 64  # ephemeral: only Ann sees it
        assert "2 missed questions" in text_of(shown) and "File > Import" in text_of(shown)
        (name, data), *rest = world.fake.uploaded
        assert not rest and name == "studybot-misses-ann.apkg"
        notes, _, _ = open_package(data, tmp_path)
        assert {n.fields["Id"] for n in notes} == {first, third}

        plain = await world.fake.answered(await world.fake.slash("review", bob, world.guild, world.channel, options))
        assert "nothing to put in an Anki deck" in text_of(plain) and len(world.fake.uploaded) == 1
        assert not world.fake.violations and not world.fake.contract_violations
    finally:
        await running.stop()


async def asyncio_to_thread(function: Any, *args: Any) -> Any:
    return await asyncio.to_thread(function, *args)


# ----------------------------------------------------------------------- Slack


async def test_slack_sends_the_deck_to_the_members_messages_with_the_app(
    slack: Slack,  # noqa: F811
    tmp_path: Path,
    clock: FakeClock,
) -> None:
    who = UserRef("slack", "T1", "U1", "u1")
    first, _, third, _ = await asyncio_to_thread(
        miss_and_hit, slack.engine, who, ChannelRef("slack", "T1", "C1"), clock
    )
    assert (await slack.command("/review", "export", user="U1")).status == 200
    (done,) = await slack.fake.wait_for("files.completeUploadExternal")
    assert done.params["channel_id"] == FakeSlack.dm_of("U1")  # a conversation's id, not the user's
    (intro,) = slack.fake.of("chat.postMessage")
    assert intro.params["channel"] == "U1" and "2 missed questions" in intro.params["text"]
    (file_id,) = slack.fake.uploads
    assert json.loads(done.params["files"])[0]["id"] == file_id
    notes, _, _ = open_package(slack.fake.uploads[file_id], tmp_path)
    assert {n.fields["Id"] for n in notes} == {first, third}
    answer = await slack.fake.wait_response("review-U1")
    assert answer.params["response_type"] == "ephemeral" and "in your messages with me" in answer.params["text"]
    assert not slack.fake.contract_violations


# ------------------------------------------------------------------------ web


@pytest.fixture
async def web(sqlite_url: str, test_bank: Bank, clock: FakeClock) -> AsyncIterator[tuple[StudyEngine, WebLinks, str]]:
    database = Database(sqlite_url)
    links = WebLinks("http://127.0.0.1", "a web secret for tests", 3600)
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock, links=links)
    server = WebServer(build_app(engine, links), "127.0.0.1", 0)
    await server.start()
    links.base_url = f"http://127.0.0.1:{server.port}"
    try:
        yield engine, links, links.base_url
    finally:
        await server.close()
        database.dispose()


async def get(url: str) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, dict(response.headers), await response.read()


@pytest.mark.usefixtures("clock")
async def test_the_web_page_links_a_members_misses_and_the_revealed_bank(
    web: tuple[StudyEngine, WebLinks, str], tmp_path: Path
) -> None:
    engine, links, base = web
    community = CommunityRef("console", "club")
    channel = ChannelRef("console", "club", "general")
    ann = UserRef("console", "club", "ann", "Ann")
    engine.admin.configure(community, "channel", "general")
    daily = engine.rounds.open_daily(channel)
    assert isinstance(daily, QuestionCard)
    engine.rounds.answer(ann, daily.round_id, wrong_index(engine.bank, daily))
    engine.rounds.close_open_in(channel)  # revealed: now in the bank page and its deck

    page = links.member(community, "ann")
    status, _, body = await get(page)
    assert status == 200 and b"/me/misses.apkg" in body
    status, headers, data = await get(page.replace("/me", "/me/misses.apkg"))
    assert status == 200 and headers["Content-Disposition"] == 'attachment; filename="studybot-misses-ann.apkg"'
    (missed,), _, _ = open_package(data, tmp_path)
    assert missed.fields["Id"] == daily.question_id and missed.deck_id == anki.DECK_IDS["misses"]

    status, _, body = await get(page.replace("/me", "/bank"))
    assert status == 200 and b"/bank.apkg" in body
    status, headers, data = await get(page.replace("/me", "/bank.apkg"))
    assert status == 200 and "studybot-bank-club.apkg" in headers["Content-Disposition"]
    (shown,), _, _ = open_package(data, tmp_path)  # only the revealed question, never the others
    assert shown.fields["Id"] == daily.question_id and shown.deck_id == anki.DECK_IDS["bank"]
    assert shown.guid == missed.guid  # the same question is the same note in both decks

    # The member deck needs the member's own link; a private community's bank deck needs a link.
    assert (await get(links.admin(community, "ann").replace("/admin", "/me/misses.apkg")))[0] == 404
    assert (await get(f"{base}/c/console/club/bank.apkg"))[0] == 404
    engine.admin.configure(community, "web", "public")
    status, _, data = await get(f"{base}/c/console/club/bank.apkg")
    assert status == 200 and len(open_package(data, tmp_path)[0]) == 1
    assert (await get(f"{base}/c/console/club/me/misses.apkg"))[0] == 404
