"""Members' questions (issue 14) through the console and the engine: /suggest's guided
prompts, refusals that name the field, the admins' queue, the daily round, the reveal's
author, removal, limits, pings, and `studybot questions export` passing `questions lint`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.bank import Bank, Question
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput
from bot.core.rules import suggestions as forms
from bot.core.services.practice import SuggestionPolicy
from bot.core.values import (
    ChannelRef,
    CommunityRef,
    SuggestionDecided,
    SuggestionForm,
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
    UserRef,
)
from bot.platforms.console import Message
from bot.platforms.console.text import console_operator_only
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import FakeClock, run_studybot
from tests.console_chat import Console

PROMPT = (
    "A study group trains a model on a laptop CPU. Does activation checkpointing change which "
    "answers the model gives after training?"
)
CHOICES = (
    "No: it changes memory and time, not what is learned",
    "Yes: recomputed layers learn slightly different weights",
    "Yes: the model skips the layers it recomputes",
)
WHYS = (
    "Checkpointing only trades memory for recomputation; the same forward runs again, so the gradients "
    "and the trained weights are the same.",
    "Recomputed layers run the very same forward again, so their gradients and the learned weights match "
    "the run without checkpointing.",
    "No layer is skipped: checkpointed layers run twice, once in the forward and once again during backward.",
)
LONG_RIGHT = "No: it changes memory and time, never what the model learns"
TRAP = "Thinking recomputation is an approximation that changes what the model learns."
REF = "PyTorch docs: torch.utils.checkpoint"


def good_form(**changes: object) -> SuggestionForm:
    values: dict[str, object] = dict(
        topic="fundamentals",
        level="1",
        prompt=PROMPT,
        choices=CHOICES,
        whys=WHYS,
        correct="A",
        trap=TRAP,
        refs=(REF,),
    )
    values.update(changes)
    return SuggestionForm(**values)  # type: ignore[arg-type]


def guided(prompt: str = PROMPT, whys: tuple[str, ...] = WHYS) -> list[str]:
    lines = ["/suggest", "fundamentals", "1", prompt]
    for text, why in zip(CHOICES, whys, strict=True):
        lines += [text, why]
    return [*lines, "done", "A", TRAP, "-", "-", REF]


def say(chat: Console, lines: list[str]) -> list[Message]:
    out: list[Message] = []
    for line in lines:
        out.extend(chat.handle(line))
    return out


def only(messages: list[Message], kind: str) -> Message:
    found = [m for m in messages if m.kind == kind]
    assert len(found) == 1, messages
    return found[0]


@pytest.fixture
def chat(engine: StudyEngine) -> Iterator[Console]:
    # closed before the database is disposed: a deliverer left running reads a closed SQLite
    # connection (a segfault in CI)
    console = Console(engine, community="club", user="Boss")  # Boss, the operator, configures
    console.handle("/as Ann")  # Ann, a member, writes the questions
    yield console
    console.close()


def test_console_suggestion_end_to_end(chat: Console, engine: StudyEngine, tmp_path: Path) -> None:
    # A why too short is refused as it is typed, with its field, and asked again; nothing is queued.
    lines = guided()
    at = lines.index(WHYS[1])
    say(chat, lines[:at])
    answered = chat.handle("Too short to teach anything.")
    refused = only(answered, "refused")
    assert refused.data["fields"] == ["why_1"]
    assert "Why of choice B" in refused.text and "at least 40" in refused.text
    assert only(answered, "prompt").data["field"] == "why_1"
    assert engine.practice.suggestion_queue(CLUB).waiting == 0

    # The good why, and the rest: it goes to the admins' queue.
    received = only(say(chat, lines[at:]), "suggestion")
    number = received.data["number"]
    # Its author cannot approve it; the console's operator does, and the author is told.
    refused = only(chat.handle(f"/config approve {number}"), "notice")
    assert refused.text == console_operator_only("Boss")
    assert engine.practice.suggestion_queue(CLUB).waiting == 1
    chat.handle("/as Boss")
    queue = only(chat.handle("/config suggestions"), "queue")
    assert queue.data["items"] == [number]
    assert f"#{number} by Ann" in queue.text and "[right]" in queue.text
    decided = chat.handle(f"/config approve {number}")
    assert only(decided, "decided").data["action"] == "approved"
    notice = only(decided, "author_notice")
    assert notice.data["author"] == "Ann" and "approved" in notice.text
    question_id = only(decided, "decided").data["question_id"]
    assert question_id.startswith("member-")

    # It is asked in the next daily round, and its reveal names its author.
    chat.handle("/config channel console")
    posted = chat.handle("/daily")
    daily = only(posted, "question")
    assert daily.data["question_id"] == question_id
    chat.handle("/as Cy")
    answer = chr(ord("a") + daily.data["choices"].index(CHOICES[0]))
    assert only(chat.handle(f"daily {answer}"), "feedback").data["correct"] is True
    reveal = only(chat.handle("/close"), "reveal")
    assert reveal.data["author"] == "Ann" and "written by Ann" in reveal.text

    # Export: bank YAML that `questions lint` accepts.
    files = engine.practice.export_questions(CommunityRef("console", "club"))
    assert list(files) == ["fundamentals"]
    out = tmp_path / "exported"
    out.mkdir()
    (out / "fundamentals.yaml").write_text(files["fundamentals"], encoding="utf-8")
    linted = run_studybot(tmp_path, ["questions", "lint", str(out)])
    assert linted.returncode == 0, linted.stdout + linted.stderr
    assert "OK: 1 questions" in linted.stdout


def test_export_command_writes_files_that_lint(tmp_path: Path) -> None:
    script = "\n".join(["/as Ann", *guided(), "/as Operator", "/config approve 1", "/quit"]) + "\n"
    chat = run_studybot(tmp_path, ["console", "--community", "club"], stdin=script)
    assert chat.returncode == 0, chat.stderr
    out = tmp_path / "out"
    exported = run_studybot(tmp_path, ["questions", "export", "--community", "club", "--out", str(out)])
    assert exported.returncode == 0, exported.stdout + exported.stderr
    assert (out / "fundamentals.yaml").is_file()
    linted = run_studybot(tmp_path, ["questions", "lint", str(out)])
    assert linted.returncode == 0, linted.stdout + linted.stderr


ANN = UserRef("console", "club", "ann", "Ann")
HERE = ChannelRef("console", "club", "console")
CLUB = CommunityRef("console", "club")


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"topic": "cooking"}, "topic", "not a topic"),
        ({"level": "7"}, "level", "1 (intro)"),
        ({"prompt": "Checkpointing saves memory."}, "prompt", "ending with '?'"),
        ({"prompt": "Why " + "x" * 300 + "?"}, "prompt", "the limit is 300"),
        ({"choices": CHOICES[:1], "whys": WHYS[:1]}, "choices", "2 to 5 choices"),
        ({"choices": (CHOICES[0], "y" * 81, CHOICES[2])}, "choice_1", "the limit is 80"),
        ({"correct": "Q"}, "correct", "which choice is right"),
        ({"whys": (WHYS[0], WHYS[1], "")}, "why_2", "every choice needs a why"),
        ({"whys": (WHYS[0], WHYS[1], "w" * 401)}, "why_2", "the limit is 400"),
        ({"refs": ()}, "refs", "at least one reference"),
        ({"trap": ""}, "trap", "trap"),
        ({"choices": (LONG_RIGHT, *CHOICES[1:])}, "choice_0", "away"),
    ],
)
def test_a_bad_suggestion_is_refused_with_its_field(
    engine: StudyEngine, change: dict[str, object], field: str, words: str
) -> None:
    result = engine.practice.suggest(ANN, HERE, good_form(**change))
    assert isinstance(result, SuggestionRefused)
    fields = [p.field for p in result.problems]
    assert field in fields, result.problems
    assert any(words in p.reason for p in result.problems if p.field == field), result.problems


def test_a_suggestion_like_a_bank_question_is_refused(engine: StudyEngine, test_bank: Bank) -> None:
    shipped = test_bank.questions[0]
    form = good_form(prompt=shipped.prompt)
    result = engine.practice.suggest(ANN, HERE, form)
    assert isinstance(result, SuggestionRefused)
    assert [p.field for p in result.problems] == ["prompt"]
    # The member is shown the question they can recognise, never the bank's internal id.
    reason = result.problems[0].reason
    assert shipped.id not in reason
    assert shipped.prompt[:60] in reason and f"topic {shipped.topic}" in reason


def near_copy(shipped: Question) -> SuggestionForm:
    """A form asking nearly what `shipped` asks: its prompt a little reworded, its choices."""
    return good_form(
        topic=shipped.topic,
        prompt="In short: " + shipped.prompt,
        choices=tuple(c.text for c in shipped.choices),
        whys=tuple(c.why for c in shipped.choices),
        correct=chr(ord("A") + (shipped.answer_index or 0)),
    )


def test_a_near_duplicate_names_the_similar_questions_prompt_not_its_id(engine: StudyEngine, test_bank: Bank) -> None:
    shipped = next(q for q in test_bank.questions if len(q.prompt) < 200)
    result = engine.practice.suggest(ANN, HERE, near_copy(shipped))
    assert isinstance(result, SuggestionRefused)
    near = [p for p in result.problems if p.field == "prompt"]
    assert near and "nearly" in near[0].reason, result.problems
    assert shipped.id not in near[0].reason
    assert shipped.prompt[:60] in near[0].reason and f"topic {shipped.topic}" in near[0].reason


def test_console_checks_each_field_as_typed_and_keeps_the_rest(chat: Console, engine: StudyEngine) -> None:
    """Each bad field is answered with one sentence and asked again at once; the fields typed
    before it are kept, so the form sent carries every good value typed."""

    def bad_then_good(field: str, bad: str, good: str) -> str:
        answered = chat.handle(bad)
        refused = only(answered, "refused")
        assert refused.data["fields"] == [field], refused
        assert refused.text.count(".") >= 1 and "\n" not in refused.text
        assert only(answered, "prompt").data["field"] == field
        return only(chat.handle(good), "prompt").data["field"]

    chat.handle("/suggest")
    assert bad_then_good("topic", "cooking", "fundamentals") == "level"
    assert bad_then_good("level", "7", "1") == "prompt"
    assert bad_then_good("prompt", "Checkpointing saves memory.", PROMPT) == "choice_0"
    assert bad_then_good("choice_0", "y" * 81, CHOICES[0]) == "why_0"
    say(chat, [WHYS[0], CHOICES[1], WHYS[1], CHOICES[2], WHYS[2], "done"])
    assert bad_then_good("correct", "Z", "A") == "trap"
    assert only(chat.handle(TRAP), "prompt").data["field"] == "explain"
    assert only(chat.handle("-"), "prompt").data["field"] == "hint"
    assert bad_then_good("hint", "Think.", "Think about what the backward pass needs from the forward.") == "refs"
    received = only(chat.handle(REF), "suggestion")
    item = engine.practice.suggestion_queue(CLUB).items[0]
    assert item.suggestion_id == received.data["suggestion_id"]
    assert item.topic == "fundamentals" and item.difficulty == 1 and item.prompt == PROMPT
    assert item.choices == CHOICES and item.trap == TRAP


def test_a_refused_console_form_keeps_the_draft_and_asks_only_the_refused_field(
    chat: Console, engine: StudyEngine, test_bank: Bank
) -> None:
    # Refused when sent (a near-duplicate): the similar question is named by its prompt and
    # topic, and the prompt alone is asked again.
    shipped = next(q for q in test_bank.questions if len(q.prompt) < 200)
    copy = near_copy(shipped)
    lines = ["/suggest", copy.topic, "1", copy.prompt]
    for text, why in zip(copy.choices, copy.whys, strict=True):
        lines += [text, why]
    if len(copy.choices) < 5:
        lines.append("done")
    out = say(chat, [*lines, copy.correct, TRAP, "-", "-", REF])
    refused = only(out, "refused")
    assert "nearly" in refused.text and shipped.prompt[:60] in refused.text and shipped.id not in refused.text
    assert out[-1].kind == "prompt" and out[-1].data["field"] == "prompt"  # only the refused field, again
    assert out[-2].kind == "notice" and "kept" in out[-2].text
    assert engine.practice.suggestion_queue(CLUB).waiting == 0
    assert only(chat.handle("/cancel"), "notice").text == "Suggestion cancelled; nothing was sent."

    # Refused when sent (the right choice is the longest): choice A alone is asked again, and
    # once fixed the form goes with everything else that was typed.
    lines = guided()
    lines[lines.index(CHOICES[0])] = LONG_RIGHT
    out = say(chat, lines)
    refused = only(out, "refused")
    assert "choice A" in refused.text and "longest" in refused.text
    assert out[-1].kind == "prompt" and out[-1].data["field"] == "choice_0"
    assert engine.practice.suggestion_queue(CLUB).waiting == 0
    received = only(chat.handle(CHOICES[0]), "suggestion")
    item = engine.practice.suggestion_queue(CLUB).items[0]
    assert item.suggestion_id == received.data["suggestion_id"]
    assert item.prompt == PROMPT and item.choices == CHOICES and item.whys == WHYS and item.trap == TRAP


def test_pings_are_neutralised() -> None:
    text = "Ask @everyone and @here, <@123>, <@!45>, <@&9>, <#C1>, <!channel>, <!subteam^S1|devs>, <@U9>"
    clean = forms.defuse(text)
    for ping in ("@everyone", "@here", "<@", "<!", "<#"):
        assert ping not in clean
    assert "everyone" in clean and "a member" in clean and "a role" in clean


def test_a_suggestion_with_pings_is_stored_without_them(engine: StudyEngine) -> None:
    form = good_form(trap="Thinking @everyone <@123> knows that recomputation changes what the model learns.")
    received = engine.practice.suggest(ANN, HERE, form)
    assert isinstance(received, SuggestionReceived)
    queue = engine.practice.suggestion_queue(CLUB)
    assert queue.items[0].trap is not None
    assert "@everyone" not in queue.items[0].trap and "<@" not in queue.items[0].trap


def test_per_member_limits(database: Database, test_bank: Bank, clock: FakeClock) -> None:
    engine = StudyEngine(SqlStore(database), test_bank, clock=clock, suggestions=SuggestionPolicy(2, 3))
    prompts = [PROMPT.replace("laptop CPU", place) for place in ("laptop CPU", "cluster", "desktop GPU", "TPU pod")]
    assert isinstance(engine.practice.suggest(ANN, HERE, good_form(prompt=prompts[0])), SuggestionReceived)
    assert isinstance(engine.practice.suggest(ANN, HERE, good_form(prompt=prompts[1])), SuggestionReceived)
    with pytest.raises(InvalidInput, match="waiting for the admins; the limit is 2"):
        engine.practice.suggest(ANN, HERE, good_form(prompt=prompts[2]))
    engine.practice.decide_suggestion(CLUB, 1, "reject")
    assert isinstance(engine.practice.suggest(ANN, HERE, good_form(prompt=prompts[2])), SuggestionReceived)
    engine.practice.decide_suggestion(CLUB, 2, "reject")
    with pytest.raises(InvalidInput, match="3 questions in the last day"):
        engine.practice.suggest(ANN, HERE, good_form(prompt=prompts[3]))
    clock.advance(days=1, seconds=1)
    assert isinstance(engine.practice.suggest(ANN, HERE, good_form(prompt=prompts[3])), SuggestionReceived)


def test_note_and_reject_tell_the_author(engine: StudyEngine) -> None:
    engine.practice.suggest(ANN, HERE, good_form())
    with pytest.raises(InvalidInput, match="Write the note"):
        engine.practice.decide_suggestion(CLUB, 1, "note")
    decided = engine.practice.decide_button(CLUB, "sb1:sq:1:note", "Cite the docs page's section, please.")
    assert isinstance(decided, SuggestionDecided)
    assert decided.action == "returned" and decided.author == ANN
    assert engine.practice.suggestion_queue(CLUB).waiting == 0
    assert "already decided" in engine.practice.decide_suggestion(CLUB, 1, "approve").text  # type: ignore[union-attr]


def test_another_community_never_sees_the_question(engine: StudyEngine) -> None:
    engine.practice.suggest(ANN, HERE, good_form())
    other = CommunityRef("console", "other")
    with pytest.raises(Exception, match="not in this community's queue"):
        engine.practice.decide_suggestion(other, 1, "approve")  # the row id of another community's question
    with pytest.raises(Exception, match=r"There is no suggestion #1 in this community\."):
        engine.admin.configure(other, "approve", "1")  # the number an admin types: their own community's
    decided = engine.practice.decide_suggestion(CLUB, 1, "approve")
    assert isinstance(decided, SuggestionDecided)
    engine.admin.config(other, "channel", "console")
    card = engine.rounds.open_daily(ChannelRef("console", "other", "console"))
    assert card.question_id != decided.question_id  # type: ignore[union-attr]
    assert engine.practice.export_questions(CLUB) and not engine.practice.export_questions(other)


def test_removed_question_is_not_asked_and_its_answers_stay(engine: StudyEngine, clock: FakeClock) -> None:
    engine.practice.suggest(ANN, HERE, good_form())
    decided = engine.practice.decide_suggestion(CLUB, 1, "approve")
    assert isinstance(decided, SuggestionDecided) and decided.question_id
    engine.admin.config(CLUB, "channel", "console")
    card = engine.rounds.open_daily(HERE)
    assert card.question_id == decided.question_id  # type: ignore[union-attr]
    bob = UserRef("console", "club", "bob", "Bob")
    engine.rounds.answer(bob, card.round_id, card.choices.index(CHOICES[0]))  # type: ignore[union-attr]
    before = engine.boards.score(bob).total_points
    assert "removed" in engine.admin.configure(CLUB, "remove", decided.question_id).text  # type: ignore[union-attr]
    reveal = engine.rounds.close_round(card.round_id)  # type: ignore[union-attr]
    assert reveal.author == "Ann"  # type: ignore[union-attr]
    assert engine.boards.score(bob).total_points == before > 0
    for _ in range(5):
        clock.advance(days=1)
        assert engine.rounds.open_daily(HERE).question_id != decided.question_id  # type: ignore[union-attr]
    assert engine.practice.export_questions(CLUB) == {}


def test_queue_shows_the_oldest_with_buttons(engine: StudyEngine) -> None:
    engine.practice.suggest(ANN, HERE, good_form())
    queue = engine.practice.suggestion_queue(CLUB)
    assert isinstance(queue, SuggestionQueue) and queue.waiting == 1
    item = queue.items[0]
    assert (item.approve_id, item.note_id, item.reject_id) == ("sb1:sq:1:approve", "sb1:sq:1:note", "sb1:sq:1:reject")
    assert item.author == "Ann" and item.choices == CHOICES and item.answer == 0


def test_forgotten_author_shows_as_a_former_member(engine: StudyEngine) -> None:
    engine.practice.suggest(ANN, HERE, good_form())
    engine.practice.decide_suggestion(CLUB, 1, "approve")
    engine.admin.forget_me(ANN, confirm=True)
    engine.admin.config(CLUB, "channel", "console")
    card = engine.rounds.open_daily(HERE)
    reveal = engine.rounds.close_round(card.round_id)  # type: ignore[union-attr]
    assert reveal.author == "a former member"  # type: ignore[union-attr]
