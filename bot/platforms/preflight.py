"""What `studybot run` checks before a platform library connects: each token's shape (the
doctor's own checks), then whether the platform answers and accepts the tokens, a few tries
apart. Each failure is one sentence: a malformed token exits 2 (a setting to fix), a platform
that refuses a token or cannot be reached exits 1 after a bounded retry. Without this,
discord.py's login prints a long traceback and Slack's Socket Mode client retries a refused
token forever."""

from __future__ import annotations

import logging
import time
import urllib.error
from collections.abc import Callable
from typing import Any

from bot.config import Settings
from bot.doctor.checks import JsonHttp, secret_value
from bot.errors import OperatorError

log = logging.getLogger(__name__)

# How often a platform that does not answer is asked, and the waits between (seconds).
TRIES = 3
WAITS_S = (1.0, 3.0)


class PlatformRefused(OperatorError):
    """A platform refused a token or could not be reached: one sentence, exit 1."""


def shape_problem(settings: Settings, platforms: tuple[str, ...]) -> str | None:
    """A chosen platform's malformed token as one sentence (doctor's checks), else None."""
    if "discord" in platforms:
        from bot.platforms.discord.doctor import token_problem

        token = secret_value(settings.discord_token)
        problem = token_problem(token) if token is not None else None
        if problem is not None:
            return (
                f"{problem}: copy the token again from the Developer Portal "
                "(your application -> Bot -> Reset Token) (`studybot doctor` checks it)."
            )
    if "slack" in platforms:
        from bot.platforms.slack.doctor import check_tokens

        check = check_tokens(settings)
        if check is not None and check.status == "fail":  # the first problem; doctor lists them all
            problems, fixes = check.message.split("; "), check.fix.split("; ")
            more = f" ({len(problems) - 1} more: `studybot doctor` lists them)" if len(problems) > 1 else ""
            return f"{problems[0]}: {fixes[0]}{more}."
    return None


Call = Callable[[], tuple[int, Any, dict[str, str]]]


def _post(http: JsonHttp, url: str, headers: dict[str, str]) -> Call:
    return lambda: http.call("POST", url, headers, b"")


def _ask(name: str, api: str, variable: str, call: Call, sleep: Callable[[float], None]) -> tuple[int, Any]:
    """The platform's answer, asked up to TRIES times while it cannot be reached."""
    reason = ""
    for attempt in range(TRIES):
        try:
            status, body, _ = call()
            return status, body
        except (urllib.error.URLError, OSError) as exc:
            reason = str(getattr(exc, "reason", exc))
            log.warning("%s at %s did not answer (try %s of %s): %s", name, api, attempt + 1, TRIES, reason)
        if attempt < TRIES - 1:
            sleep(WAITS_S[min(attempt, len(WAITS_S) - 1)])
    raise PlatformRefused(
        f"{name} cannot be reached at {api} after {TRIES} tries ({reason}): check the network, or {variable}."
    )


def check_reachable(
    settings: Settings,
    platforms: tuple[str, ...],
    http: JsonHttp | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Ask each chosen platform whether it accepts the tokens (Discord: GET /users/@me; Slack:
    auth.test with the bot token, apps.connections.open with the app token); PlatformRefused
    with one sentence when it refuses one or cannot be reached. A distributed Slack app (no
    bot token) is asked nothing: each workspace's token is in the database."""
    http = http or JsonHttp()
    if "discord" in platforms and settings.discord_token is not None:
        api = settings.discord_api_url.rstrip("/")
        auth = {"Authorization": f"Bot {settings.discord_token.get_secret_value()}"}
        status, _ = _ask(
            "Discord",
            api,
            "STUDYBOT_DISCORD_API_URL",
            lambda: http.call("GET", f"{api}/users/@me", auth),
            sleep,
        )
        if status == 401:
            raise PlatformRefused(
                "Discord refused DISCORD_TOKEN (401 Unauthorized): reset the token in the Developer Portal "
                "(Bot -> Reset Token) and set the new one."
            )
        if status >= 400:
            raise PlatformRefused(f"Discord answered {status} to the bot's login at {api}: try again later.")
    if "slack" in platforms:
        api = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
        tokens = [
            ("SLACK_BOT_TOKEN", "auth.test", secret_value(settings.slack_bot_token)),
            ("SLACK_APP_TOKEN", "apps.connections.open", secret_value(settings.slack_app_token)),
        ]
        for variable, method, token in tokens:
            if token is None:
                continue
            headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-www-form-urlencoded"}
            status, body = _ask("Slack", api, "STUDYBOT_SLACK_API_URL", _post(http, f"{api}{method}", headers), sleep)
            if isinstance(body, dict) and body.get("ok"):
                continue
            error = str(body.get("error"))[:40] if isinstance(body, dict) else f"HTTP {status}"
            raise PlatformRefused(
                f"Slack refused {variable} ({error}): copy it again from your app's page at api.slack.com/apps "
                "(`studybot doctor --online` checks every token)."
            )
