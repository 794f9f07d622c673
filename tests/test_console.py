"""The console chat: a scripted session end to end, and bad input that must not hurt."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.bank import Bank
from bot.core.engine import StudyEngine
from bot.core.values import AlreadyOpen, ChannelRef, CommunityRef, ConfigCard
from bot.platforms.console import Message
from bot.store.database import Database
from bot.store.repository import SqlStore
from tests.conftest import ROOT, TEST_BANK, FakeClock, migrated_sqlite, run_studybot
from tests.console_chat import Console


def kinds(messages: list[Message]) -> list[str]:
    return [m.kind for m in messages]


def only(messages: list[Message], kind: str) -> Message:
    found = [m for m in messages if m.kind == kind]
    assert len(found) == 1, messages
    return found[0]


@pytest.fixture
def chat(engine: StudyEngine) -> Iterator[Console]:
    # closed before the database is disposed: a deliverer left running reads a closed SQLite
    # connection (a segfault in CI)
    console = Console(engine, community="club", user="Ann")
    yield console
    console.close()


def test_scripted_session_two_users(chat: Console, test_bank: Bank) -> None:
    question = only(chat.handle("/daily"), "question")
    assert question.to == "channel"
    q = test_bank.get(question.data["question_id"])
    assert q is not None
    shown = question.data["choices"]  # the order this round shows, drawn when it opened
    right_at = shown.index(q.choices[q.answer_index].text)
    wrong_at = (right_at + 1) % len(shown)
    right, wrong = "abcde"[right_at], "abcde"[wrong_at]
    wrong_choice = next(c for c in q.choices if c.text == shown[wrong_at])

    ann = only(chat.handle("daily " + right.upper() + ")"), "feedback")
    assert ann.to == "user" and ann.data == {
        "correct": True,
        "points": 10,
        "chosen": right.upper(),
        "answer": right.upper(),
        "round_id": question.data["round_id"],
        "number": question.data["number"],
    }
    double = only(chat.handle("daily " + wrong), "already_answered")
    assert double.data["chosen"] == right.upper() and f"already answered {right.upper()}" in double.text

    chat.handle("/as Bob")
    bob = only(chat.handle("daily " + wrong), "feedback")
    assert bob.data["correct"] is False and bob.data["points"] == 0
    assert wrong_choice.why in bob.text
    if q.trap:
        assert q.trap in bob.text

    reveal = only(chat.handle("/close"), "reveal")
    assert reveal.to == "channel" and reveal.data["answer"] == right.upper()
    assert reveal.data["counts"][right.upper()] == 1 and reveal.data["counts"][wrong.upper()] == 1
    assert sum(reveal.data["counts"].values()) == 2
    closed = only(chat.handle("daily " + right), "notice")  # nothing open any more: not an answer
    assert "no open daily round" in closed.text

    bob_score = only(chat.handle("/score"), "score")
    assert bob_score.data["week_points"] == 0 and bob_score.data["total_points"] == 0
    assert bob_score.data["week_rank"] is None and bob_score.data["streak"] == 0
    chat.handle("/as Ann")
    ann_score = only(chat.handle("/score"), "score")
    assert (ann_score.data["week_points"], ann_score.data["week_rank"], ann_score.data["streak"]) == (10, 1, 1)

    board = only(chat.handle("/leaderboard"), "leaderboard")
    assert board.data["rows"] == [{"rank": 1, "user": "Ann", "points": 10}]
    assert only(chat.handle("/leaderboard all"), "leaderboard").data["rows"][0]["points"] == 10


def test_a_closed_round_says_so(chat: Console, engine: StudyEngine, clock: FakeClock) -> None:
    card = only(chat.handle("/daily"), "question")
    clock.advance(hours=13)  # past the 12-hour window, not yet revealed
    from bot.core.values import UserRef

    reply = engine.rounds.answer(UserRef("console", "club", "ann", "Ann"), card.data["round_id"], 0)
    from bot.platforms.console import render

    message = only(render(reply), "closed")
    assert "not scored" in message.text


def test_daily_quiz_a_a_never_spends_the_daily_answer(chat: Console, engine: StudyEngine) -> None:
    daily = only(chat.handle("/daily"), "question")
    assert "daily b" in daily.text  # the console's daily round says how it takes an answer
    practice = only(chat.handle("/quiz fundamentals"), "question")
    assert practice.to == "user" and practice.data["round_kind"] == "practice"
    feedback = only(chat.handle("a"), "feedback")
    assert feedback.data["round_id"] == practice.data["round_id"] and feedback.data["points"] == 0
    assert f"This answered your practice question #{practice.data['round_id']}." in feedback.text
    second = only(chat.handle("a"), "notice")  # the daily round is not answered by a bare letter
    assert f"To answer daily round #{daily.data['round_id']}, type daily and your letter" in second.text
    with engine.store.read() as tx:
        assert tx.answers.choice_counts(daily.data["round_id"]) == {}
    taken = only(chat.handle("daily a"), "feedback")
    assert taken.data["round_id"] == daily.data["round_id"]
    assert f"This answered daily round #{daily.data['round_id']}; a daily answer is final." in taken.text


def test_daily_after_close_says_the_round_is_closed_and_when_the_next_opens(chat: Console) -> None:
    first = only(chat.handle("/daily"), "question")
    assert "already open" in only(chat.handle("/daily"), "notice").text
    chat.handle("/close")
    again = only(chat.handle("/daily"), "notice")
    assert "already open" not in again.text
    assert again.text.startswith(f"Today's round (#{first.data['round_id']}, ")
    assert re.search(r"is closed; the next one opens \d{4}-\d\d-\d\d \d\d:\d\d \(UTC\)\.$", again.text), again.text


def test_how_sure_stays_asked_until_answered_or_a_new_question_is_shown(chat: Console) -> None:
    practice = only(chat.handle("/quiz fundamentals"), "question")
    asked = only(chat.handle("a"), "ask_sure")
    assert "stays asked until you do or a new question is shown" in asked.text
    chat.handle("/score")  # another line between: the question still stands
    chat.handle("hello")
    noted = only(chat.handle("unsure"), "confidence")
    assert noted.data["round_id"] == practice.data["round_id"] and noted.data["sure"] is False
    only(chat.handle("/quiz fundamentals"), "question")
    chat.handle("b")
    replaced = only(chat.handle("/quiz fundamentals"), "question")  # a new question drops it
    assert "right after an answer" in only(chat.handle("sure"), "notice").text
    assert "replaces" not in replaced.text  # the one before was answered
    again = only(chat.handle("/quiz fundamentals"), "question")  # a second /quiz says what it replaces
    assert f"This replaces your unanswered question #{replaced.data['round_id']}" in again.text


def test_a_letter_the_round_does_not_show_names_its_own_letters(chat: Console) -> None:
    practice = only(chat.handle("/quiz fundamentals"), "question")
    last = "ABCDE"[len(practice.data["choices"]) - 1]
    for line in ("z", "E" if last != "E" else "z"):
        reply = only(chat.handle(line), "notice")
        assert reply.text == (
            f"#{practice.data['round_id']} has choices A to {last}: reply with one of those letters or a choice's text."
        )
    assert "a-e" not in only(chat.handle("hello there"), "notice").text


@pytest.mark.parametrize(
    "line, kind, words",
    [
        ("/frobnicate", "error", "Unknown command"),
        ("x" * 100_000, "error", "limit is 2,000"),
        ("\u202e\u0301" * 999, "notice", "not an answer"),
        ("🙂" * 1999, "notice", "not an answer"),
        ("b", "notice", "no open question"),
        ("/quiz astrology", "error", "Unknown topic"),
        ("/leaderboard yesterday", "error", "ISO week"),
        ("/config window_hours 99", "error", "1 to 48"),
        ("/demo explode", "error", "/demo checkpoint"),
        ("/demo checkpoint layers=lots", "error", "whole number"),
        ("/demo checkpoint strategies=none,magic", "error", "Unknown strategy"),
        ("/as", "error", "Say who"),
        ("/review foo", "error", "/review takes no 'foo': type /review, or /review export."),
        ("/forget-me please", "error", "/forget-me takes no 'please'"),
        ("/score now", "error", "/score takes no 'now': type /score alone."),
    ],
)
def test_bad_input_gets_one_sentence_and_the_chat_goes_on(chat: Console, line: str, kind: str, words: str) -> None:
    chat.handle("/as Ann")
    reply = chat.handle(line)
    assert kinds(reply) == [kind] and words in reply[0].text
    assert "\n" not in reply[0].text
    score = only(chat.handle("/score"), "score")  # still alive, and nothing was scored
    assert score.text.startswith("Ann:") and score.data["total_points"] == 0


def test_every_command_refuses_an_option_it_does_not_take(chat: Console) -> None:
    from bot.platforms import commands

    chat.handle("/daily")
    for command in commands.TABLE:
        if command.ask is None or "console" not in command.platforms:
            continue
        reply = chat.handle(f"/{command.name} zzz-nonsense")
        assert kinds(reply) == ["error"], (command.name, reply)
    assert only(chat.handle("/score"), "score").data["total_points"] == 0  # nothing was done on the way


def test_unicode_names_are_cleaned(chat: Console) -> None:
    reply = only(chat.handle("/as \u202eEve\u0000  the\tgreat" + "!" * 300), "notice")
    assert reply.data["user"].startswith("Eve the great") and len(reply.data["user"]) <= 80


def test_a_locked_database_is_reported_and_nothing_is_lost(
    sqlite_url: str, test_bank: Bank, clock: FakeClock
) -> None:
    db = Database(sqlite_url, busy_timeout_ms=200)  # give up fast on another process's lock
    chat = Console(StudyEngine(SqlStore(db), test_bank, clock=clock), community="club", user="Ann")
    card = only(chat.handle("/daily"), "question")
    ann = only(chat.handle("daily a"), "feedback")
    assert ann.data["chosen"] == "A" and ann.data["round_id"] == card.data["round_id"]

    path = sqlite_url.removeprefix("sqlite:///")
    blocker = sqlite3.connect(path, timeout=0)
    blocker.execute("BEGIN EXCLUSIVE")
    try:
        chat.handle("/as Bob")
        reply = chat.handle("daily b")
        assert kinds(reply) == ["error"] and "busy or read-only" in reply[0].text
    finally:
        blocker.rollback()
        blocker.close()
    db.dispose()
    retry = only(chat.handle("daily b"), "feedback")  # Bob's retry works once the lock is gone
    assert retry.data["round_id"] == card.data["round_id"]
    reveal = only(chat.handle("/close"), "reveal")
    assert sum(reveal.data["counts"].values()) == 2  # Ann's answer survived


def test_a_read_only_database_is_reported_and_nothing_is_lost(
    tmp_path: Path, test_bank: Bank, clock: FakeClock
) -> None:
    url = migrated_sqlite(tmp_path / "ro.db")
    chat = Console(StudyEngine(SqlStore(Database(url)), test_bank, clock=clock), community="club", user="Ann")
    card = only(chat.handle("/daily"), "question")
    ann = only(chat.handle("daily a"), "feedback")
    assert ann.data["chosen"] == "A" and ann.data["round_id"] == card.data["round_id"]
    # Reopen the same file read-only, as a mount or a permission change would.
    ro = Database(f"sqlite:///file:{tmp_path / 'ro.db'}?mode=ro&uri=true")
    ro_chat = Console(StudyEngine(SqlStore(ro), test_bank, clock=clock), community="club", user="Bob")
    reply = ro_chat.handle("daily b")
    assert kinds(reply) == ["error"] and "busy or read-only" in reply[0].text
    board = only(ro_chat.handle("/leaderboard all"), "leaderboard")  # reads still work, and see Ann's answer
    assert board.data == only(chat.handle("/leaderboard all"), "leaderboard").data
    assert sum(row["points"] for row in board.data["rows"]) == ann.data["points"]
    reveal = only(chat.handle("/close"), "reveal")
    assert sum(reveal.data["counts"].values()) == 1


@pytest.mark.usefixtures("engine")
def test_config_pause_resume_and_post_now_do_what_they_do_on_discord(chat: Console) -> None:
    paused = only(chat.handle("/config pause"), "config")
    assert paused.text.startswith("Set paused.") and paused.data["settings"]["paused"] == "on"
    nowhere = only(chat.handle("/config post-now"), "notice")  # no channel yet: says how to set one
    assert nowhere.text == "No channel is set for this community: set one with /config channel first."
    channel = only(chat.handle("/config channel"), "config")  # no value: this channel
    assert channel.data["settings"]["channel"] == "console"
    resumed = only(chat.handle("/config resume"), "config")
    assert resumed.data["settings"]["paused"] == "off"
    posted = chat.handle("/config post-now")  # today's round, posted in the channel through the outbox
    questions = [m for m in posted if m.kind == "question"]
    assert len(questions) == 1 and questions[0].to == "channel" and questions[0].data["round_kind"] == "daily"
    again = only(chat.handle("/config post-now"), "notice")
    assert "already open" in again.text
    assert [m.kind for m in chat.handle("/config show")] == ["config"]


def test_leaderboard_scopes_as_on_discord(chat: Console, clock: FakeClock, test_bank: Bank) -> None:
    question = only(chat.handle("/daily"), "question")
    q = test_bank.get(question.data["question_id"])
    assert q is not None
    right = "abcde"[question.data["choices"].index(q.choices[q.answer_index].text)]
    assert only(chat.handle("daily " + right), "feedback").data["points"] > 0
    week = f"{clock.now.isocalendar().year}-W{clock.now.isocalendar().week:02d}"
    for scope in ("", " week", " this-week", f" {week}", " all"):
        board = only(chat.handle("/leaderboard" + scope), "leaderboard")
        assert [row["user"] for row in board.data["rows"]] == ["Ann"], scope
        assert board.data["scope"] == ("all" if scope == " all" else week), scope


def test_forget_me_asks_first_then_deletes(chat: Console) -> None:
    chat.handle("/daily")
    points = only(chat.handle("daily a"), "feedback").data["points"]
    confirm = only(chat.handle("/forget-me"), "confirm")
    assert confirm.data["answers"] == 1 and "/forget-me confirm" in confirm.text
    assert only(chat.handle("/score"), "score").data["total_points"] == points  # asking deleted nothing
    done = only(chat.handle("/forget-me confirm"), "notice")
    assert done.data["answers_deleted"] == 1 and done.text.startswith("Done: 1 answer")
    assert only(chat.handle("/score"), "score").data["total_points"] == 0


def test_a_demo_is_queued_then_answers_in_the_channel(engine: StudyEngine, tmp_path: Path) -> None:
    chat = Console(engine, community="club", user="Ann", demos=tmp_path / "charts")
    try:
        queued = only(chat.handle("/demo estimate preset=gpt2-small batch=2 seq=128"), "demo_queued")
        assert queued.to == "channel" and queued.data["module"] == "demos.estimate"
        seen = chat.wait_for(lambda seen: any(m.kind in ("demo", "demo_failed") for m in seen))
        results = [m for m in seen if m.kind in ("demo", "demo_failed")]
        assert [m.kind for m in results] == ["demo"], results
        assert results[0].to == "channel" and results[0].data["result"]
    finally:
        chat.close()


def _cli(args: list[str], tmp_path: Path, stdin: str = "", bank: Path = TEST_BANK) -> subprocess.CompletedProcess[str]:
    return run_studybot(tmp_path, args, stdin, bank=bank)


def test_jsonl_console_session_over_stdin(tmp_path: Path) -> None:
    script = "/daily\n/as Bob\n/score\n/quit\n/score\n"
    done = _cli(["console", "--jsonl", "--user", "Ann"], tmp_path, script)
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    for message in messages:
        assert set(message) >= {"to", "kind", "text", "data"}
    questions = [m for m in messages if m["kind"] == "question"]
    assert questions and set(questions[0]["data"]) >= {"round_id", "question_id", "choices"}
    assert [m["kind"] for m in messages].count("score") == 1  # nothing after /quit
    assert "import torch" not in done.stderr


def test_console_refuses_a_broken_bank_with_every_problem(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    bank.mkdir()
    (bank / "fundamentals.yaml").write_text("topic: fundamentals\nquestions:\n  - id: X\n    difficulty: 9\n")
    done = _cli(["console"], tmp_path, "", bank=bank)
    assert done.returncode == 1
    assert f"{bank / 'fundamentals.yaml'}:3: id 'X' must be" in done.stderr
    assert f"{bank / 'fundamentals.yaml'}:4: difficulty must be 1, 2 or 3" in done.stderr
    assert "Traceback" not in done.stderr


def test_plain_text_when_stdin_is_not_a_terminal(tmp_path: Path) -> None:
    done = _cli(["console"], tmp_path, "/help\n/daily\n")
    assert done.returncode == 0
    assert "[to you] Commands:" in done.stdout and "[#console] Daily question #1" in done.stdout
    assert "\x1b[" not in done.stdout  # no terminal colour codes in a pipe


def test_invalid_utf8_on_stdin_is_survivable(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK),
        "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}",
    }
    done = subprocess.run(
        [sys.executable, "-m", "bot", "console", "--jsonl"],
        input=b"\xff\xfe\n/score\n",
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0
    assert b'"kind": "score"' in done.stdout


def test_run_without_tokens_names_the_variables_and_starts_the_console(tmp_path: Path) -> None:
    done = _cli(["run"], tmp_path, "/help\n")
    assert done.returncode == 0
    assert "DISCORD_TOKEN" in done.stderr and "SLACK_BOT_TOKEN" in done.stderr
    assert "Commands:" in done.stdout


def test_bot_process_never_imports_torch() -> None:
    code = (
        "import sys, bot.cli, bot.platforms.console, bot.core.engine, bot.background.demo_runner; "
        "bad = [m for m in ('torch', 'discord', 'slack_bolt', 'apscheduler') if m in sys.modules]; "
        "print(bad)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.stdout.strip() == "[]"


def test_core_imports_no_platform_library() -> None:
    forbidden = ("discord", "slack_bolt", "apscheduler", "torch")
    for path in (ROOT / "bot" / "core").glob("*.py"):
        for line in path.read_text().splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")):
                module = stripped.split()[1].split(".")[0]
                assert module not in forbidden, f"{path.name} imports {module}"


def test_a_made_up_channel_is_refused_and_a_community_gets_one_daily_round_a_day(
    chat: Console, tmp_path: Path, test_bank: Bank
) -> None:
    first = only(chat.handle("/daily"), "question")
    refused = only(chat.handle("/config channel chan2"), "error")
    assert (
        refused.text == "The console has one channel, #console; there is no #chan2 here, so the setting is unchanged."
    )
    config = chat.handle("/config")
    assert config and not any("chan2" in m.text for m in config)
    assert chat.handle("/config channel #console")  # its own channel, written the chat's way, is fine
    # Discord and Slack set any channel: a '#' is never doubled, and moving the channel the
    # same day opens no second round (the community's round of the day stands).
    engine = chat.engine
    community = CommunityRef("console", "club")
    card = engine.admin.configure(community, "channel", "#study")
    assert isinstance(card, ConfigCard) and dict(card.settings)["channel"] == "study"
    again = engine.rounds.open_daily(ChannelRef("console", "club", "study"))
    assert isinstance(again, AlreadyOpen) and again.round_id == first.data["round_id"]
    assert "already open" in only(chat.handle("/daily"), "notice").text

    # The CLI: an unknown community is one sentence and exit 2; a '#' stored by an older
    # version is shown once, and a second `schedule run daily` the same day posts nothing new.
    url = migrated_sqlite(tmp_path / "cli.db")
    database = Database(url)
    try:
        StudyEngine(SqlStore(database), test_bank).admin.configure(CommunityRef("console", "lab"), "channel", "study")
    finally:
        database.dispose()
    with sqlite3.connect(tmp_path / "cli.db") as db:
        db.execute("UPDATE communities SET channel_id = '#study' WHERE external_id = 'lab'")
    unknown = run_studybot(tmp_path, ["schedule", "run", "daily", "--community", "chan2"])
    assert unknown.returncode == 2 and "No community 'chan2'" in unknown.stderr + unknown.stdout
    posted = run_studybot(tmp_path, ["schedule", "run", "daily", "--community", "lab"], process=True)
    assert posted.returncode == 0, posted.stderr
    assert "[#study] Daily question #" in posted.stdout and "##" not in posted.stdout
    twice = run_studybot(tmp_path, ["schedule", "run", "daily", "--community", "lab"])
    assert "Daily question" not in twice.stdout and "already open" in twice.stdout
