"""Issue 27: every number a member types is read as ASCII digits only. `"²".isdigit()` is true
and `int("²")` raises, so `/demo checkpoint repeat=²` was an incident on Slack and the console;
`int("٣")` is 3, so other scripts' digits slipped through as numbers. Each entry point below
answers such input with its own one sentence (or reads it as no number) and keeps running."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.core import wording
from bot.core.engine import StudyEngine
from bot.core.errors import InvalidInput
from bot.core.rules.community import parse_setting
from bot.core.rules.demo_request import parse_demo
from bot.core.rules.numbers import ascii_int
from bot.core.rules.suggestion_buttons import decode_decision, decode_draft
from bot.core.rules.timing import parse_daily_time
from bot.core.scope import ShardsOf
from bot.core.services.guesses import parse_console_guess
from bot.core.values import CommunityRef
from tests.conftest import run_studybot

NOT_ASCII = ("²", "٣", "１２", "3²", "½", "𝟗")


@pytest.mark.parametrize("text", NOT_ASCII)
def test_the_one_parser_reads_ascii_digits_only(text: str) -> None:
    assert ascii_int(text) is None
    assert ascii_int("12") == 12 and ascii_int("007") == 7
    assert ascii_int("") is None and ascii_int("-1") is None and ascii_int(" 1") is None and ascii_int("1" * 19) is None


@pytest.mark.parametrize("text", NOT_ASCII)
def test_a_demo_setting_in_another_script_gets_the_whole_number_sentence(text: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_demo(f"checkpoint repeat={text}")
    assert refused.value.message == wording.demo_whole_number("repeat", 1, 20, text)


@pytest.mark.parametrize("text", NOT_ASCII)
def test_config_numbers_in_another_script_are_refused_with_a_sentence(engine: StudyEngine, text: str) -> None:
    with pytest.raises(InvalidInput, match="window_hours must be a whole number of hours from 1 to 48"):
        parse_setting("window_hours", text)
    community = CommunityRef("console", "local")
    with pytest.raises(InvalidInput, match=r"Say which suggestion: /config approve NUMBER\."):
        engine.admin.configure(community, "approve", text)


@pytest.mark.parametrize("text", NOT_ASCII)
def test_ids_guesses_and_times_in_another_script_are_no_number(text: str) -> None:
    assert parse_console_guess(f"guess {text}") is None
    assert decode_decision(f"sb1:sq:{text}:approve") is None
    assert decode_draft(f"sb1:sg:{text}") is None
    assert ShardsOf(count=1, ids=(0,))(text) is False  # a Discord guild id
    with pytest.raises(ValueError):
        parse_daily_time(f"0{text}:00" if len(text) == 1 else f"{text}:00")


def test_the_console_answers_a_superscript_repeat_with_a_sentence(tmp_path: Path) -> None:
    done = run_studybot(tmp_path, ["console", "--jsonl", "--no-schedule"], stdin="/demo checkpoint repeat=²\n/score\n")
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    texts = [m.get("text", "") for m in messages]
    assert wording.demo_whole_number("repeat", 1, 20, "²") in texts
    assert not any("incident" in t.lower() for t in texts)
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("text", NOT_ASCII)
def test_discord_ids_in_another_script_are_no_channel(text: str) -> None:
    """A stored channel or message id is read as ASCII digits: `int("٣")` would post to channel 3."""
    from bot.platforms.discord import admin, mentions
    from bot.platforms.discord.posts import snowflake

    assert snowflake(text) is None and snowflake("123456789012345678") == 123456789012345678
    assert admin._CHANNEL.match(f"<#{text}>") is None  # noqa: SLF001 - the pattern /config channel reads
    assert mentions._MENTION.search(f"<@{text}>") is None  # noqa: SLF001


@pytest.mark.parametrize("text", ["٣", "²", "0,٣"])
def test_a_shard_list_in_another_script_is_one_sentence_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    monkeypatch.setenv("STUDYBOT_DISCORD_SHARD_IDS", text)
    monkeypatch.setenv("STUDYBOT_DISCORD_SHARD_COUNT", "4")
    done = run_studybot(tmp_path, ["jobs"])
    assert done.returncode == 2, done.stderr
    assert "STUDYBOT_DISCORD_SHARD_IDS" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [["jobs", "--limit", "٣"], ["jobs", "--limit", "²"], ["jobs", "--limit", "0"]])
def test_cli_number_options_take_ascii_digits_only(tmp_path: Path, args: list[str]) -> None:
    done = run_studybot(tmp_path, args)
    assert done.returncode == 2 and "is not a whole number of at least 1 in digits 0-9" in done.stderr
    assert run_studybot(tmp_path, ["jobs", "--limit", "3"]).returncode == 0
