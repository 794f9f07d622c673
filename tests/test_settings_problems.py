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
from tests.conftest import TEST_BANK, invoke_studybot, run_studybot

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
@pytest.mark.usefixtures("clean_folder")
def test_each_kind_of_rule_is_worded(variable: str, value: str, sentence: str) -> None:
    done = CliRunner().invoke(app, ["jobs"], env={variable: value})
    assert (done.exit_code, done.output) == (2, sentence + "\n")


@pytest.mark.usefixtures("clean_folder")
def test_several_bad_settings_name_the_first_and_count_the_rest() -> None:
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
    done = run_studybot(tmp_path, ["run", "console"], stdin="/help\n", process=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "STUDYBOT_WINDOW_HOURS=99 is not allowed: it must be a whole number from 1 to 48."
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.usefixtures("clean_folder")
def test_good_settings_still_start_the_command() -> None:
    done = CliRunner().invoke(app, ["jobs"])
    assert done.exit_code == 0, done.output


def free_port() -> int:
    """A port nothing listens on (bound once by us, then closed)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("variable", "value", "sentence"),
    [
        (
            "STUDYBOT_TIMEZONE",
            "Mars/Base",
            "STUDYBOT_TIMEZONE=Mars/Base is not valid: it must be an IANA time zone such as UTC or Europe/Berlin.",
        ),
        (
            "STUDYBOT_LOG_LEVEL",
            "LOUD",
            "STUDYBOT_LOG_LEVEL=LOUD is not valid: it must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL.",
        ),
        (
            "STUDYBOT_DATABASE_URL",
            "garbage",
            "STUDYBOT_DATABASE_URL=garbage is not valid: it must be a database URL such as sqlite:///studybot.db "
            "or postgresql+psycopg://user:password@host/dbname.",
        ),
        (
            "STUDYBOT_DATABASE_URL",
            "mysql://x",
            "STUDYBOT_DATABASE_URL=mysql://x is not valid: the bot stores its data in SQLite or PostgreSQL, such as "
            "sqlite:///studybot.db or postgresql+psycopg://user:password@host/dbname.",
        ),
        (
            "STUDYBOT_DEMO_THREADS",
            "abc",
            "STUDYBOT_DEMO_THREADS=abc is not allowed: it must be a whole number from 1 to 1024.",
        ),
    ],
)
@pytest.mark.usefixtures("clean_folder")
def test_the_bad_settings_a_newcomer_met_are_one_sentence_and_exit_2_and_doctor_says_the_same(
    variable: str, value: str, sentence: str
) -> None:
    for command in (["jobs"], ["schedule", "show"], ["db", "upgrade"]):
        done = CliRunner().invoke(app, command, env={variable: value})
        assert (done.exit_code, done.output) == (2, sentence + "\n"), command
    doctor = CliRunner().invoke(app, ["doctor"], env={variable: value})
    assert doctor.exit_code == 2 and doctor.output.startswith(f"fail settings: {sentence}")
    assert "Traceback" not in doctor.output


def test_a_sqlite_file_under_a_file_is_named_as_a_file_not_a_folder(clean_folder: Path) -> None:
    blocker = clean_folder / "passwd"
    blocker.write_text("root:x:0:0\n")
    url = f"sqlite:///{blocker}/x.db"
    done = CliRunner().invoke(app, ["db", "upgrade"], env={"STUDYBOT_DATABASE_URL": url})
    assert done.exit_code == 2
    assert done.output.startswith("STUDYBOT_DATABASE_URL=sqlite:///")  # a long value is cut
    assert done.output.endswith(
        f" is not valid: {blocker} is a file, not a folder, so the database file cannot be made under it.\n"
    )
    assert done.output.count("\n") == 1
    charts = CliRunner().invoke(app, ["jobs"], env={"STUDYBOT_DEMO_OUT_DIR": str(blocker)})
    assert charts.exit_code == 2 and f"{blocker} is a file, not a folder" in charts.output
    bank = CliRunner().invoke(app, ["questions", "stats"], env={"STUDYBOT_QUESTIONS_DIR": str(clean_folder / "no")})
    assert bank.exit_code == 2 and bank.output.startswith("STUDYBOT_QUESTIONS_DIR=")


@pytest.mark.usefixtures("clean_folder")
def test_a_database_url_password_is_never_shown_in_the_sentence() -> None:
    done = CliRunner().invoke(app, ["jobs"], env={"STUDYBOT_DATABASE_URL": "mysql://ann:hunter2@db/x"})
    assert done.exit_code == 2 and "mysql://ann:***@db/x" in done.output and "hunter2" not in done.output


@pytest.mark.usefixtures("clean_folder")
def test_log_level_is_read_in_any_case() -> None:
    assert load_settings(log_level="debug").log_level == "DEBUG"


def test_a_refused_postgresql_server_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    url = f"postgresql+psycopg://studybot:pw@127.0.0.1:{free_port()}/studybot"
    env: dict[str, str | None] = {"STUDYBOT_DATABASE_URL": url, "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK)}
    for args in (["jobs"], ["db", "upgrade"], ["run", "console"]):  # in this process: the same exit code and output
        done = invoke_studybot(args, tmp_path, env, stdin="/help\n")
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "Connection refused" in done.stderr and "correct STUDYBOT_DATABASE_URL" in done.stderr
        assert ":pw@" not in done.stderr


@pytest.mark.usefixtures("clean_folder")
def test_doctor_reports_a_check_that_breaks_instead_of_crashing() -> None:
    from bot.config import Settings
    from bot.doctor.report import run_checks

    # a Settings built around validation (as a test or a caller could): the database check meets
    # a URL whose driver is not installed
    broken = Settings.model_construct(**{**Settings().model_dump(), "database_url": "mysql://x"})
    checks = {c.name: c for c in run_checks(broken)}
    assert checks["database"].status == "fail"
    assert checks["database"].message.startswith("the check could not finish")
    assert checks["bank"].status == "ok"  # the checks after it still ran


def test_a_malformed_env_line_is_found_when_the_process_logs_only_errors(tmp_path: Path) -> None:
    """The `.env` check hears python-dotenv's warning even in a process set to log errors only
    (STUDYBOT_LOG_LEVEL=ERROR), and prints nothing of its own."""
    import logging

    from bot.settings_problems import env_file_problem

    env = tmp_path / ".env"
    env.write_text("STUDYBOT_TIMEZONE=UTC\n\nthis line is not a setting\n")
    root = logging.getLogger()
    before = root.level
    root.setLevel(logging.ERROR)
    try:
        assert env_file_problem(env) == (
            f"{env} line 3 cannot be read: write it as NAME=value (or start it with # for a comment)."
        )
    finally:
        root.setLevel(before)
    assert logging.getLogger("dotenv.main").level == logging.NOTSET  # left as it was found
