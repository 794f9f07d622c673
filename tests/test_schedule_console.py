"""The console runs the same scheduler (posts appear on their own), and the
`studybot schedule` commands: show, and runs by hand that are idempotent."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from bot.core.engine import StudyEngine
from bot.core.values import CommunityRef
from bot.platforms.console.text import CONSOLE_BYE
from tests.conftest import FakeClock
from tests.console_chat import scripted
from tests.test_console import _cli


def test_console_posts_the_daily_round_on_its_own_and_follows_config(engine: StudyEngine, clock: FakeClock) -> None:
    clock.set(datetime(2026, 11, 24, 15, 0, tzinfo=UTC))  # Tuesday, after 09:00 UTC
    ref = CommunityRef("console", "club")
    engine.admin.config(ref, "paused", "on")
    out = scripted(engine, "/score\n/config paused off\n/daily\n/quit\n", community="club", user="Ann", jsonl=True)
    messages = [json.loads(line) for line in out.splitlines()]
    kinds = [m["kind"] for m in messages]
    # Paused at start: nothing; resuming posts today's round (late), delivered before the next line.
    assert kinds == ["score", "config", "question", "notice", "notice"], kinds
    questions = [m for m in messages if m["kind"] == "question"]
    assert len(questions) == 1 and questions[0]["to"] == "channel" and questions[0]["data"]["late"] is True
    assert "already open" in messages[3]["text"]  # /daily found it
    assert messages[4]["text"] == CONSOLE_BYE
    assert dict(engine.admin.config(ref).settings)["channel"] == "console"  # the console's own channel


def test_console_catches_up_before_the_first_prompt(engine: StudyEngine, clock: FakeClock) -> None:
    clock.set(datetime(2026, 11, 24, 15, 0, tzinfo=UTC))
    lines = scripted(engine, "/help\n", community="club", user="Ann").splitlines()
    assert lines[0].startswith("[#console] Daily question #1") and "posted late" in lines[0]
    assert any(line.startswith("[to you] Commands:") for line in lines)


def test_schedule_commands(tmp_path: Path) -> None:
    done = _cli(["schedule", "show"], tmp_path)
    assert done.returncode == 0 and "No communities yet" in done.stdout
    done = _cli(
        ["console", "--no-schedule", "--community", "club"],
        tmp_path,
        "/config channel console\n/config timezone Europe/Berlin\n/quit\n",
    )
    assert done.returncode == 0, done.stderr

    done = _cli(["schedule", "show"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert "console/club: active; daily_time 09:00 Europe/Berlin" in done.stdout
    assert "next daily round: " in done.stdout and "next leaderboard: " in done.stdout

    first = _cli(["schedule", "run", "daily", "--community", "club"], tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("[#console] Daily question #1")
    second = _cli(["schedule", "run", "daily", "--community", "club"], tmp_path)
    assert "already open" in second.stdout and "Daily question" not in second.stdout

    board = _cli(["schedule", "run", "leaderboard", "--community", "club"], tmp_path)
    assert board.stdout.startswith("[#console] Leaderboard for ")
    again = _cli(["schedule", "run", "leaderboard", "--community", "club"], tmp_path)
    assert "already posted" in again.stdout and "Leaderboard for" not in again.stdout

    reveal = _cli(["schedule", "run", "reveal", "--community", "club"], tmp_path)
    assert "nothing to reveal" in reveal.stdout

    bad = _cli(["schedule", "run", "weekly", "--community", "club"], tmp_path)
    assert bad.returncode == 2 and "jobs: daily, reveal, leaderboard" in bad.stderr
    elsewhere = _cli(["schedule", "run", "daily", "--community", "club", "--platform", "discord"], tmp_path)
    assert elsewhere.returncode == 2 and "No community 'club' on discord" in elsewhere.stderr  # unknown: exit 2
