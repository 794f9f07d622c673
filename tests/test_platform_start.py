"""`studybot run` as a person starts it with a wrong token, no network or a taken port: real
processes against the fake Discord and Slack servers (or nothing listening). A malformed token
is refused before anything connects (exit 2); a platform that refuses a token, or cannot be
reached after a few tries, is one sentence and exit 1; a taken port is one sentence and exit 2.
Never a traceback, never a retry that goes on forever."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.conftest import TEST_BANK
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.slack_api import FakeSlack

# Shaped like a bot token (base64 of a bot id, a timestamp part, an HMAC part); not a real one.
DISCORD_TOKEN = base64.b64encode(b"1234567890123456789").decode().rstrip("=") + ".GhIjKl.Zm9vYmFyYmF6cXV4cXV1eGNvcmdl"
SIGNING_SECRET = "0123456789abcdef0123456789abcdef"


def free_port() -> int:
    """A port nothing listens on (bound once by us, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def base_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "STUDYBOT_QUESTIONS_DIR": str(TEST_BANK),
        "STUDYBOT_DATABASE_URL": f"sqlite:///{tmp_path / 'start.db'}",
        "STUDYBOT_HOST": "127.0.0.1",
        "STUDYBOT_WEB_HOST": "127.0.0.1",
    }
    for name in ("DISCORD_TOKEN", "SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "STUDYBOT_WEB_PORT"):
        env.pop(name, None)
    return {**env, **extra}


async def studybot(tmp_path: Path, env: dict[str, str], *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run `python -m bot ARGS` to its end while this loop keeps serving the fakes."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *args,
        env=env,
        cwd=tmp_path,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


@pytest.fixture
async def discord_fake() -> AsyncIterator[FakeDiscord]:
    fake = await FakeDiscord().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def slack_fake() -> AsyncIterator[FakeSlack]:
    fake = await FakeSlack().start()
    yield fake
    await fake.stop()


# ------------------------------------------------------------------ Discord


async def test_a_malformed_discord_token_is_refused_before_connecting(
    tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    env = base_env(tmp_path, DISCORD_TOKEN="bogus", STUDYBOT_DISCORD_API_URL=discord_fake.api)
    code, out, err = await studybot(tmp_path, env, "run")
    assert code == 2, err
    assert err == (
        "DISCORD_TOKEN is not shaped like a bot token (three dot-separated base64 parts): copy the token again "
        "from the Developer Portal (your application -> Bot -> Reset Token) (`studybot doctor` checks it).\n"
    )
    assert discord_fake.calls == []  # nothing was asked of Discord
    assert not (tmp_path / "start.db").exists()


async def test_a_discord_token_the_server_refuses_is_one_sentence_and_exit_1(
    tmp_path: Path, discord_fake: FakeDiscord
) -> None:
    discord_fake.token = "another-token"  # the fake answers 401 to every other token
    env = base_env(tmp_path, DISCORD_TOKEN=DISCORD_TOKEN, STUDYBOT_DISCORD_API_URL=discord_fake.api)
    code, _, err = await studybot(tmp_path, env, "run", "discord")
    assert code == 1, err
    assert last_line(err) == (
        "Discord refused DISCORD_TOKEN (401 Unauthorized): reset the token in the Developer Portal "
        "(Bot -> Reset Token) and set the new one."
    )
    assert "Traceback" not in err and DISCORD_TOKEN not in err
    assert len(discord_fake.calls) == 1  # a refusal is final: asked once, no retry
    assert discord_fake.identifies == []  # never reached the gateway


async def test_an_unreachable_discord_is_asked_three_times_then_one_sentence(tmp_path: Path) -> None:
    api = f"http://127.0.0.1:{free_port()}/api/v10"
    env = base_env(tmp_path, DISCORD_TOKEN=DISCORD_TOKEN, STUDYBOT_DISCORD_API_URL=api)
    code, _, err = await studybot(tmp_path, env, "run", "discord")
    assert code == 1, err
    assert last_line(err).startswith(f"Discord cannot be reached at {api} after 3 tries (")
    assert last_line(err).endswith("): check the network, or STUDYBOT_DISCORD_API_URL.")
    assert err.count("did not answer (try ") == 3 and "Traceback" not in err


# ------------------------------------------------------------------ Slack


async def test_malformed_slack_tokens_are_refused_before_connecting(tmp_path: Path, slack_fake: FakeSlack) -> None:
    env = base_env(
        tmp_path, SLACK_BOT_TOKEN="bogus", SLACK_APP_TOKEN="bogus", STUDYBOT_SLACK_API_URL=slack_fake.api_url
    )
    code, _, err = await studybot(tmp_path, env, "run")
    assert code == 2, err
    assert err == (
        "SLACK_BOT_TOKEN does not start with xoxb-: Install App -> Bot User OAuth Token "
        "(1 more: `studybot doctor` lists them).\n"
    )
    assert slack_fake.calls == []


@pytest.mark.parametrize(
    ("bot", "app", "refused"),
    [("xoxb-unknown", "xapp-one", "SLACK_BOT_TOKEN (invalid_auth)"), ("xoxb-one", "xapp-old", "SLACK_APP_TOKEN")],
)
async def test_a_slack_token_the_server_refuses_is_one_sentence_and_exit_1(
    tmp_path: Path, slack_fake: FakeSlack, bot: str, app: str, refused: str
) -> None:
    env = base_env(tmp_path, SLACK_BOT_TOKEN=bot, SLACK_APP_TOKEN=app, STUDYBOT_SLACK_API_URL=slack_fake.api_url)
    code, _, err = await studybot(tmp_path, env, "run", "slack")
    assert code == 1, err
    assert last_line(err).startswith(f"Slack refused {refused}")
    assert "Traceback" not in err and bot not in err and app not in err
    assert slack_fake.connections == 0  # no Socket Mode connection, so nothing to retry forever


async def test_an_unreachable_slack_is_asked_three_times_then_one_sentence(tmp_path: Path) -> None:
    api = f"http://127.0.0.1:{free_port()}/api/"
    env = base_env(tmp_path, SLACK_BOT_TOKEN="xoxb-one", SLACK_APP_TOKEN="xapp-one", STUDYBOT_SLACK_API_URL=api)
    code, _, err = await studybot(tmp_path, env, "run", "slack")
    assert code == 1, err
    assert last_line(err).startswith(f"Slack cannot be reached at {api} after 3 tries (")
    assert "Traceback" not in err


# ------------------------------------------------------------------ ports


async def test_a_taken_port_is_one_sentence_and_exit_2_for_the_page_slack_and_the_console(
    tmp_path: Path, slack_fake: FakeSlack
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        page = base_env(tmp_path)
        code, _, err = await studybot(tmp_path, page, "web", "--port", str(port))
        assert code == 2, err
        assert last_line(err) == (
            f"Cannot serve on port {port} on 127.0.0.1 (STUDYBOT_WEB_PORT or --port): it is already in use; "
            "stop what uses it or choose another port."
        )
        assert "Serving the web page" not in err and "Traceback" not in err
        console = base_env(tmp_path, STUDYBOT_WEB_PORT=str(port))
        code, out, err = await studybot(tmp_path, console, "run", "console", stdin="/help\n")
        assert (code, last_line(err)) == (
            2,
            f"Cannot serve on port {port} on 127.0.0.1 (STUDYBOT_WEB_PORT): it is already in use; "
            "stop what uses it or choose another port.",
        )
        slack = base_env(
            tmp_path,
            SLACK_BOT_TOKEN="xoxb-one",
            SLACK_SIGNING_SECRET=SIGNING_SECRET,
            STUDYBOT_SLACK_API_URL=slack_fake.api_url,
        )
        code, _, err = await studybot(tmp_path, slack, "run", "slack", "--port", str(port))
        assert code == 2, err
        assert last_line(err).startswith(f"Cannot serve on port {port} on 127.0.0.1 (STUDYBOT_PORT or --port)")
        assert "Traceback" not in err
