"""A bad setting or a `.env` line that cannot be read: every CLI command says so in one sentence
naming the variable, the value and what is allowed, and exits 2; never a traceback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from bot.cli import app
from bot.settings_problems import SettingsError, allowed, load_settings
from tests.conftest import run_studybot

# Commands that report settings among their own checks instead of refusing to start.
REPORT_THEMSELVES = {("doctor",), ("health",)}


def command_paths(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every leaf command of the CLI (typer's groups are click groups: they have `commands`)."""
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):
            yield from command_paths(command, (*prefix, name))
        else:
            yield (*prefix, name)


ALL_COMMANDS = [path for path in command_paths(typer.main.get_command(app)) if path not in REPORT_THEMSELVES]


@pytest.fixture
def clean_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("STUDYBOT_DATABASE_URL", f"sqlite:///{tmp_path / 'bad.db'}")
    for name in ("DISCORD_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_the_walk_finds_the_commands_the_issue_names() -> None:
    named = {("run",), ("console",), ("leaderboard",), ("export",), ("jobs",), ("schedule", "show")}
    named |= {("questions", "stats"), ("db", "upgrade"), ("worker",), ("web",)}
    assert named <= set(ALL_COMMANDS)


@pytest.mark.parametrize("path", ALL_COMMANDS, ids=" ".join)
def test_every_command_refuses_an_out_of_range_setting_in_one_sentence(
    path: tuple[str, ...], clean_folder: Path
) -> None:
    done = CliRunner().invoke(app, list(path), env={"STUDYBOT_WINDOW_HOURS": "99"})
    assert done.exit_code == 2, done.output
    assert done.output == "STUDYBOT_WINDOW_HOURS=99 is not allowed: it must be a whole number from 1 to 48.\n"
    assert not (clean_folder / "bad.db").exists()  # refused before anything was opened


@pytest.mark.parametrize("path", [("leaderboard",), ("console",), ("db", "upgrade")], ids=" ".join)
def test_a_malformed_env_line_is_named_by_its_number(path: tuple[str, ...], clean_folder: Path) -> None:
    (clean_folder / ".env").write_text("STUDYBOT_TIMEZONE=UTC\n# a comment\n\nDISCORD_TOKEN abc.def.ghi\n")
    done = CliRunner().invoke(app, list(path))
    assert done.exit_code == 2
    assert done.output == ".env line 4 cannot be read: write it as NAME=value (or start it with # for a comment).\n"
    assert "abc.def" not in done.output  # the line may hold a token: it is never repeated


def test_a_blank_value_means_unset_and_overrides_are_checked_too(clean_folder: Path) -> None:
    (clean_folder / ".env").write_text("STUDYBOT_WEB_SECRET=\n")  # blank means unset: fine
    assert load_settings().web_secret is None
    with pytest.raises(SettingsError) as refused:
        load_settings(discord_shard_count=0)
    assert (
        refused.value.sentence
        == "STUDYBOT_DISCORD_SHARD_COUNT=0 is not allowed: it must be a whole number from 1 to 65536."
    )


@pytest.mark.parametrize(
    ("variable", "value", "sentence"),
    [
        ("STUDYBOT_WORKER", "gpu", "STUDYBOT_WORKER=gpu is not allowed: it must be one of local, celery."),
        (
            "STUDYBOT_PRACTICE_TARGET",
            "1",
            "STUDYBOT_PRACTICE_TARGET=1 is not allowed: it must be a number more than 0 and less than 1.",
        ),
        ("STUDYBOT_PORT", "http", "STUDYBOT_PORT=http is not allowed: it must be a whole number from 1 to 65535."),
        (
            "STUDYBOT_DISCORD_SHARD_IDS",
            "0,x",
            "STUDYBOT_DISCORD_SHARD_IDS=0,x is not valid: it must be a comma-separated list of shard numbers, "
            "such as 0,1.",
        ),
        (
            "STUDYBOT_DISCORD_SHARD_IDS",
            "3",
            "The settings do not fit together: STUDYBOT_DISCORD_SHARD_IDS needs STUDYBOT_DISCORD_SHARD_COUNT too.",
        ),
    ],
)
def test_each_kind_of_rule_is_worded(variable: str, value: str, sentence: str, clean_folder: Path) -> None:
    done = CliRunner().invoke(app, ["jobs"], env={variable: value})
    assert (done.exit_code, done.output) == (2, sentence + "\n")


def test_several_bad_settings_name_the_first_and_count_the_rest(clean_folder: Path) -> None:
    done = CliRunner().invoke(app, ["jobs"], env={"STUDYBOT_WINDOW_HOURS": "0", "STUDYBOT_BRIDGE_THREADS": "999"})
    assert done.exit_code == 2
    assert done.output.count("\n") == 1 and "(1 more setting is wrong too.)" in done.output


def test_allowed_words_every_bounded_setting() -> None:
    assert allowed("window_hours") == "a whole number from 1 to 48"
    assert allowed("post_retry_base_s") == "a number more than 0 and at most 3600"
    assert allowed("web_link_hours") == "a number more than 0 and at most 8784"


def test_a_real_process_prints_the_sentence_and_no_traceback(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("STUDYBOT_WINDOW_HOURS=99\n")
    done = run_studybot(tmp_path, ["run", "console"], stdin="/help\n")
    assert done.returncode == 2
    assert done.stderr.strip() == "STUDYBOT_WINDOW_HOURS=99 is not allowed: it must be a whole number from 1 to 48."
    assert "Traceback" not in done.stderr + done.stdout


def test_good_settings_still_start_the_command(clean_folder: Path) -> None:
    done = CliRunner().invoke(app, ["jobs"])
    assert done.exit_code == 0, done.output
