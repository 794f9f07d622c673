"""The studybot CLI end to end, as a user runs it, on a real SQLite file: in this process
through Typer's runner, and as a real process (`python -m bot`) for one test of each command
group (the root's --version, db, demo; the others' groups keep theirs in their own files)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

from bot import __version__
from bot.config import ROOT
from bot.platforms.console.text import CONSOLE_HELP
from tests.conftest import TEST_BANK, run_studybot


def studybot(tmp_path: Path, *args: str, stdin: str = "", process: bool = False) -> subprocess.CompletedProcess[str]:
    return run_studybot(tmp_path, list(args), stdin, process=process)


def play_a_round(tmp_path: Path) -> None:
    script = "/config paused on\n/daily\ndaily a\n/as Bob\ndaily b\n/as Cy\ndaily c\n/close\n"
    done = studybot(
        tmp_path, "console", "--community", "club", "--user", "Ann", "--jsonl", "--no-schedule", stdin=script
    )
    assert done.returncode == 0, done.stderr


def test_version(tmp_path: Path) -> None:
    done = studybot(tmp_path, "--version", process=True)
    assert done.returncode == 0 and done.stdout.strip() == f"studybot {__version__}"


def test_db_upgrade_creates_the_schema_and_is_repeatable(tmp_path: Path) -> None:
    first, second = studybot(tmp_path, "db", "upgrade", process=True), studybot(tmp_path, "db", "upgrade")
    assert first.returncode == 0 and first.stdout.startswith("Created the schema in the database at sqlite:///")
    assert second.returncode == 0 and "is up to date" in second.stdout
    import sqlite3

    tables = {r[0] for r in sqlite3.connect(tmp_path / "cli.db").execute("SELECT name FROM sqlite_master")}
    assert {"communities", "members", "rounds", "answers", "reviews", "leaderboard_posts"} <= tables
    mode = sqlite3.connect(tmp_path / "cli.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_leaderboard_and_export_after_a_round(tmp_path: Path) -> None:
    play_a_round(tmp_path)
    board = studybot(tmp_path, "leaderboard", "--community", "club", "--all", "--json")
    assert board.returncode == 0, board.stderr
    rows = json.loads(board.stdout)["rows"]
    assert len(rows) == 1 and rows[0]["points"] == 10  # exactly one of a, b, c was right
    exported = studybot(tmp_path, "export", "--community", "club", "--format", "csv")
    assert exported.returncode == 0
    records = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert [r["user"] for r in records] == ["Ann", "Bob", "Cy"]
    assert sorted(r["correct"] for r in records) == ["False", "False", "True"]


def test_cli_bad_input_is_one_sentence_with_exit_2(tmp_path: Path) -> None:
    play_a_round(tmp_path)
    for args, words in [
        (("leaderboard", "--community", "club", "--week", "soon"), "ISO week"),
        (("export", "--community", "nobody"), "No community"),
        (("export", "--community", "club", "--format", "xml"), "only csv"),
    ]:
        done = studybot(tmp_path, *args)
        assert done.returncode == 2, (args, done.stderr)
        assert words in done.stderr and "Traceback" not in done.stderr


def test_demo_from_the_chat_runs_in_a_worker_and_posts_a_table_and_chart(tmp_path: Path) -> None:
    script = "/demo checkpoint layers=2 tokens=64 width=16 repeat=1 strategies=none,block\n"
    done = studybot(tmp_path, "console", "--jsonl", "--no-schedule", stdin=script)
    assert done.returncode == 0, done.stderr
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [m["kind"] for m in messages]
    # queued, then its progress as each strategy is measured (the first figure before the end), then the result
    assert kinds[0] == "demo_queued" and kinds[-1] == "demo" and set(kinds[1:-1]) == {"progress"}
    progress = [m["data"] for m in messages if m["kind"] == "progress"]
    assert [(p["done"], p["total"]) for p in progress] == [(0, 2), (1, 2), (2, 2)]
    assert "none" in messages[2]["text"] and "block" not in messages[2]["text"]  # one row, while block still runs
    demo = messages[-1]
    result = demo["data"]["result"]
    assert [r["strategy"] for r in result["results"]] == ["none", "block"]
    assert all(r["grads_identical"] for r in result["results"])
    assert Path(demo["data"]["chart"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "block" in demo["text"] and "identical" in demo["text"]


def test_demo_cli_passes_arguments_through(tmp_path: Path) -> None:
    done = studybot(tmp_path, "demo", "checkpoint", "--strategies", "none,warp")
    assert done.returncode == 2 and "warp" in done.stderr


def test_demo_plan_cli_passes_arguments_to_the_planner(tmp_path: Path) -> None:
    # a real process: the planner is a child that writes to the real stderr
    done = studybot(tmp_path, "demo", "plan", "--model", "resnet", process=True)
    assert done.returncode == 2 and "Unknown model 'resnet'" in done.stderr and "hf-gpt2" in done.stderr


def test_demo_cli_shows_each_strategy_as_it_is_measured(tmp_path: Path) -> None:
    done = studybot(
        tmp_path,
        "demo",
        "checkpoint",
        "--layers",
        "2",
        "--tokens",
        "64",
        "--width",
        "16",
        "--repeat",
        "1",
        "--strategies",
        "none,block",
        process=True,
    )
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("measured ")]
    assert progress == ["measured none (1 of 2)", "measured block (2 of 2)"]
    assert done.stdout.startswith("Checkpoint demo on cpu") and "identical" in done.stdout
    chart = next(line for line in done.stdout.splitlines() if line.startswith("chart: "))
    assert Path(chart.removeprefix("chart: ")).read_bytes()[:4] == b"\x89PNG"


# The arguments each --community command needs besides --community (a new one must be added here).
COMMUNITY_COMMANDS: dict[tuple[str, ...], list[str]] = {
    ("leaderboard",): [],
    ("export",): [],
    ("schedule", "run"): ["daily"],
    ("schedule", "show"): [],
    ("questions", "export"): [],
    ("questions", "analysis"): [],
    ("fsrs", "fit"): [],
}


def test_an_unknown_community_exits_2_with_one_sentence_on_every_command(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from bot.cli import app
    from tests.test_settings_problems import command_paths

    root = typer.main.get_command(app)

    def find(path: tuple[str, ...]) -> object:
        command: object = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        return command

    taking = {p for p in command_paths(root) if any(o.name == "community" for o in find(p).params)}  # type: ignore[attr-defined]
    assert taking == set(COMMUNITY_COMMANDS) | {("console",)}  # the console makes its community: not unknown
    play_a_round(tmp_path)  # one community, 'club', exists
    env = {"STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}", "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK)}
    for path, extra in COMMUNITY_COMMANDS.items():
        done = CliRunner().invoke(app, [*path, *extra, "--community", "nobody"], env=env)
        assert done.exit_code == 2, (path, done.output)
        assert done.output.startswith("No community 'nobody'") and done.output.count("\n") == 1, path
    known = CliRunner().invoke(app, ["leaderboard", "--community", "club"], env=env)
    assert known.exit_code == 0 and "in club" in known.output


def test_help_texts_show_the_demos_real_defaults_and_the_cli_takes_chats_bounds(tmp_path: Path) -> None:
    import yaml

    from bot.core import wording
    from bot.core.rules import demo_request
    from bot.platforms.commands import BY_NAME
    from bot.platforms.slack.doctor import MANIFEST
    from demos import checkpoint

    assert demo_request.MODEL_DEFAULTS == checkpoint.MODEL_DEFAULTS  # chat's copy of the demo's defaults
    config = checkpoint.DemoConfig()
    real = f"layers={config.layers} tokens={config.tokens}"
    manifest = yaml.safe_load(MANIFEST.read_text())
    demo_hint = next(c["usage_hint"] for c in manifest["features"]["slash_commands"] if c["command"] == "/demo")
    commands_doc = (ROOT / "docs" / "commands.md").read_text()
    texts = {
        "console /help": CONSOLE_HELP,
        "Discord and Slack /help": " ".join(usage for usage, _ in wording.COMMAND_HELP),
        "the text-command table": BY_NAME["demo"].usage,
        "the Slack manifest": demo_hint,
        "docs/commands.md": commands_doc,
        "the demo usage sentence": wording.DEMO_USAGE,
    }
    for where, text in texts.items():
        assert real in text or where == "the demo usage sentence", where
        if where != "docs/commands.md":  # the preset is optional (gpt2-small): no help shows it as needed
            assert "estimate preset=" not in text, where
    assert "| `/demo estimate [preset=gpt2-small " in commands_doc
    done = studybot(tmp_path, "demo", "checkpoint", "--help")
    assert done.returncode == 0 and "usage: python -m demos.checkpoint" not in done.stdout
    low, high = demo_request.INT_BOUNDS["checkpoint"]["layers"]
    assert f"--layers N  a whole number from {low} to {high}  [default: {config.layers}]" in done.stdout
    assert f"[default: {','.join(checkpoint.DEFAULT_STRATEGIES)}]" in done.stdout
    too_many = studybot(tmp_path, "demo", "checkpoint", "--layers", str(high + 1))
    assert too_many.returncode == 2
    assert too_many.stderr == f"--layers must be a whole number from {low} to {high}, not '{high + 1}'.\n"


def test_flags_show_as_flags_in_the_help(tmp_path: Path) -> None:
    done = studybot(tmp_path, "jobs", "--help")
    assert done.returncode == 0
    assert "<bool>" not in done.stdout
    assert any(line.split()[:1] == ["--json"] for line in done.stdout.splitlines())
