"""Issue 27, files the bot writes: `studybot questions export` refuses to replace a file without
--force and never writes through a symbolic link; a mistyped SQLite URL creates no folders
(only the documented default path's folder is created). Real CLI processes, real files."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.errors import StoreUnavailable
from bot.store import database
from bot.store.database import upgrade
from tests.conftest import invoke_studybot, run_studybot
from tests.test_suggestions import guided


@pytest.fixture
def club(tmp_path: Path) -> Path:
    """A console community `club` with one approved member's question (the CLI's SQLite file)."""
    script = "\n".join(["/as Ann", *guided(), "/as Operator", "/config approve 1", "/quit"]) + "\n"
    chat = run_studybot(tmp_path, ["console", "--community", "club"], stdin=script)
    assert chat.returncode == 0, chat.stderr
    return tmp_path


def export(tmp_path: Path, out: Path, *more: str) -> tuple[int, str]:
    done = run_studybot(tmp_path, ["questions", "export", "--community", "club", "--out", str(out), *more])
    return done.returncode, done.stdout + done.stderr


def test_export_refuses_to_overwrite_without_force(club: Path) -> None:
    out = club / "out"
    out.mkdir()
    mine = out / "fundamentals.yaml"
    mine.write_text("my own notes\n")
    code, said = export(club, out)
    assert code == 2 and f"{mine} exists: add --force to replace it, or choose another --out." in said
    assert "Traceback" not in said and mine.read_text() == "my own notes\n"
    code, said = export(club, out, "--force")
    assert code == 0, said
    assert mine.read_text() != "my own notes\n" and "prompt" in mine.read_text()


def test_export_never_follows_a_symlink(club: Path) -> None:
    victim = club / "victim.txt"
    victim.write_text("precious\n")
    out = club / "out"
    out.mkdir()
    (out / "fundamentals.yaml").symlink_to(victim)
    for more in ((), ("--force",)):
        code, said = export(club, out, *more)
        assert code == 2 and "is a symbolic link: the export never writes through one" in said
        assert victim.read_text() == "precious\n"
    # a folder that is a link is refused too
    real = club / "real"
    real.mkdir()
    linked = club / "linked"
    linked.symlink_to(real, target_is_directory=True)
    code, said = export(club, linked)
    assert code == 2 and f"{linked} is a symbolic link" in said and not list(real.iterdir())


def test_a_mistyped_sqlite_url_creates_no_folders(tmp_path: Path) -> None:
    typo = tmp_path / "dta" / "deeper" / "studybot.db"
    with pytest.raises(StoreUnavailable, match=r"does not exist: create it, or correct STUDYBOT_DATABASE_URL"):
        upgrade(f"sqlite:///{typo}")
    assert not (tmp_path / "dta").exists()
    # the CLI says it in one sentence, exit 2, and creates nothing either
    env: dict[str, str | None] = {"STUDYBOT_DATABASE_URL": f"sqlite:///{typo}"}
    for args in (["db", "upgrade"], ["jobs"], ["run", "console"]):  # in this process: the same exit code and output
        done = invoke_studybot(args, tmp_path, env)
        assert done.returncode == 2, (args, done.stderr)
        assert "does not exist: create it, or correct STUDYBOT_DATABASE_URL" in done.stderr, args
        assert "Traceback" not in done.stderr and not (tmp_path / "dta").exists(), args


def test_the_default_sqlite_path_gets_its_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    upgrade("sqlite:///studybot.db")  # the documented default: the working folder
    assert (tmp_path / "studybot.db").is_file()
    existing = tmp_path / "data"
    existing.mkdir()
    upgrade(f"sqlite:///{existing / 'other.db'}")  # an existing folder is used as it is
    assert (existing / "other.db").is_file()
    # a documented default whose folder is missing (the image's /data, here under tmp_path) gets it
    image_default = tmp_path / "volume" / "studybot.db"
    monkeypatch.setattr(database, "DEFAULT_SQLITE_PATHS", ("studybot.db", str(image_default)))
    upgrade(f"sqlite:///{image_default}")
    assert image_default.is_file()
