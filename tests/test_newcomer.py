"""The newcomer's first hour as one scripted run (issue 28): the README's commands are the
Makefile's, `make run` installs only what running needs while `make test` adds the dev extras,
a fresh SQLite console started as `studybot console` answers /help, /daily and an answer, and
a bad setting is one sentence with exit 2. Real processes throughout; the install itself is
shown by make's dry run (a real install takes minutes and a network)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from bot.config import ROOT
from tests.conftest import run_studybot


def make_dry_run(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "--no-print-directory", "-n", target, f"VENV={venv}"],  # under `make test` too: no "make[1]:" lines
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def test_the_newcomers_path_from_the_readme_to_a_first_answer(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    # 1. every `make X` the README tells a newcomer to type is a Makefile target
    targets = set(re.findall(r"^make (\w+)", readme, flags=re.MULTILINE)) | set(re.findall(r"`make (\w+)", readme))
    assert {"run", "test"} <= targets
    for target in targets:
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), target
    # 2. from a fresh clone (no venv yet), make run installs .[demo] only, pip's progress shown;
    #    make test adds the dev extras on top
    fresh = tmp_path / "fresh-venv"
    run_steps = make_dry_run("run", fresh)
    installs = [line for line in run_steps if "pip install" in line and "--upgrade pip" not in line]
    assert any(re.search(r"pip install +(--no-compile +)?-e '\.\[demo\]'$", line) for line in installs), run_steps
    assert all(" -q" not in line for line in installs)  # the big installs show their progress
    assert not any("dev" in line for line in run_steps)
    assert run_steps[-1].endswith("studybot run")
    test_steps = make_dry_run("test", fresh)
    assert any(re.search(r"pip install +(--no-compile +)?-e '\.\[demo,dev\]'$", line) for line in test_steps)
    # 3. a fresh SQLite console, as `studybot console`: /help, /daily, an answer
    done = run_studybot(tmp_path, ["console"], stdin="/help\n/daily\ndaily a\n", process=True)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    out = done.stdout
    assert "/daily " in out and "/quiz [topic]" in out  # the help
    assert "Daily question #1" in out and "  A) " in out  # the round, posted in the channel
    assert "This answered daily round #1; a daily answer is final." in out  # the answer scored
    assert (tmp_path / "cli.db").is_file()
    # 4. a bad setting: one sentence, exit 2, nothing started
    (tmp_path / ".env").write_text("STUDYBOT_TIMEZONE=Mars/Base\n")
    bad = run_studybot(tmp_path, ["console"], stdin="/help\n")
    assert bad.returncode == 2
    assert bad.stderr == (
        "STUDYBOT_TIMEZONE=Mars/Base is not valid: it must be an IANA time zone such as UTC or Europe/Berlin.\n"
    )
    assert bad.stdout == ""


TINY_DEMO = "/demo checkpoint layers=1 tokens=8 width=8 repeat=1 strategies=none"
COOLDOWN = "one per member every"


def test_the_one_person_console_has_no_demo_cooldown_unless_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two demos in a row in the console both run (nobody shares its worker); an operator who
    sets STUDYBOT_DEMO_COOLDOWN_S gets it, and a bad request inside the cooldown still gets its
    own sentence, not the cooldown's."""
    monkeypatch.delenv("STUDYBOT_DEMO_COOLDOWN_S", raising=False)
    (tmp_path / "free").mkdir()
    (tmp_path / "held").mkdir()
    free = run_studybot(tmp_path / "free", ["console", "--no-schedule"], stdin=f"{TINY_DEMO}\n{TINY_DEMO}\n")
    assert free.returncode == 0, free.stderr
    assert COOLDOWN not in free.stdout and free.stdout.count("Checkpoint demo on") == 2, free.stdout
    monkeypatch.setenv("STUDYBOT_DEMO_COOLDOWN_S", "600")
    script = f"{TINY_DEMO}\n{TINY_DEMO}\n/demo checkpoint layers=abc\n"
    held = run_studybot(tmp_path / "held", ["console", "--no-schedule"], stdin=script)
    assert held.returncode == 0, held.stderr
    assert held.stdout.count(COOLDOWN) == 1, held.stdout
    assert "layers must be a whole number" in held.stdout, held.stdout


def test_the_example_settings_and_the_deploy_docs_agree_with_the_code() -> None:
    """.env.example leaves STUDYBOT_LOG_LEVEL unset (INFO floods the console chat) and names the
    web page's and the Discord guild's variables; compose.yaml and docs/deploy.md write the
    compose database URL one way; every README picture names the command that makes it."""
    example = (ROOT / ".env.example").read_text()
    assigned = dict(
        line.split("=", 1) for line in example.splitlines() if "=" in line and not line.lstrip().startswith("#")
    )
    assert assigned["STUDYBOT_LOG_LEVEL"] == ""
    assert {"STUDYBOT_WEB_URL", "STUDYBOT_WEB_SECRET", "STUDYBOT_DISCORD_GUILD"} <= set(assigned)
    compose = (ROOT / "compose.yaml").read_text()
    deploy = (ROOT / "docs" / "deploy.md").read_text()
    [compose_url] = re.findall(r"STUDYBOT_COMPOSE_DATABASE_URL=(\S+)", compose)
    assert re.findall(r"STUDYBOT_COMPOSE_DATABASE_URL=([^`\s]+)", deploy) == [compose_url]
    readme = (ROOT / "README.md").read_text()
    demo_doc = (ROOT / "docs" / "demo.md").read_text()
    pictures = re.findall(r"\]\((docs/images/[^)]+\.png)\)", readme)
    assert pictures
    for picture in pictures:
        name = Path(picture).name
        if name.startswith("web-"):  # the browser tests write them
            assert "STUDYBOT_UPDATE_DOCS_IMAGES=1" in readme and "docs/images/web-*.png" in readme, picture
        else:  # the demo's charts: docs/demo.md's command writes the chart and its -budget twin
            stem = name.removesuffix(".png").removesuffix("-budget")
            assert f"--chart docs/images/{stem}.png" in demo_doc, picture
