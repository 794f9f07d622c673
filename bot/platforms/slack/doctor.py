"""`studybot doctor`'s Slack checks: the tokens' shapes and the manifest's scopes offline; with
`--online`, what Slack says of the bot token, its scopes and the Socket Mode token."""

from __future__ import annotations

import re
import urllib.error
from pathlib import Path

import yaml

from bot.config import Settings
from bot.doctor.checks import Check, JsonHttp, secret_value
from bot.platforms.slack.oauth import BOT_SCOPES

MANIFEST = Path(__file__).parent / "manifest.yml"


def check_tokens(settings: Settings) -> Check | None:
    bot, app, secret = (
        secret_value(settings.slack_bot_token),
        secret_value(settings.slack_app_token),
        secret_value(settings.slack_signing_secret),
    )
    client_id, client_secret = settings.slack_client_id, secret_value(settings.slack_client_secret)
    if not any((bot, app, secret, client_id, client_secret)):
        return None
    fails: list[tuple[str, str]] = []
    warns: list[tuple[str, str]] = []
    if bot is not None and not bot.startswith("xoxb-"):
        if bot.startswith("xapp-"):
            fails.append(("SLACK_BOT_TOKEN is an app-level token (xapp-)", "put it in SLACK_APP_TOKEN"))
        elif bot.startswith("xoxp-"):
            fails.append(("SLACK_BOT_TOKEN is a user token (xoxp-)", "use the Bot User OAuth Token (xoxb-)"))
        else:
            fails.append(("SLACK_BOT_TOKEN does not start with xoxb-", "Install App -> Bot User OAuth Token"))
    if app is not None and not app.startswith("xapp-"):
        if app.startswith("xoxb-"):
            fails.append(("SLACK_APP_TOKEN is a bot token (xoxb-)", "put it in SLACK_BOT_TOKEN"))
        else:
            fails.append(
                (
                    "SLACK_APP_TOKEN does not start with xapp-",
                    "Basic Information -> App-Level Tokens (connections:write)",
                )
            )
    if secret is not None and not re.fullmatch(r"[0-9a-f]{32}", secret):
        warns.append(
            (
                "SLACK_SIGNING_SECRET is not 32 hexadecimal digits",
                "copy it again from Basic Information -> Signing Secret",
            )
        )
    if client_id is not None and not re.fullmatch(r"[0-9]+\.[0-9]+", client_id):
        warns.append(
            ("SLACK_CLIENT_ID is not shaped like 123.456", "copy it from Basic Information -> App Credentials")
        )
    if fails or warns:
        problems = fails + warns
        return Check(
            "slack tokens",
            "fail" if fails else "warn",
            "; ".join(p for p, _ in problems),
            "; ".join(f for _, f in problems),
        )
    names = [
        name
        for name, value in (
            ("SLACK_BOT_TOKEN", bot),
            ("SLACK_APP_TOKEN", app),
            ("SLACK_SIGNING_SECRET", secret),
            ("SLACK_CLIENT_ID", client_id),
            ("SLACK_CLIENT_SECRET", client_secret),
        )
        if value is not None
    ]
    return Check("slack tokens", "ok", f"{', '.join(names)} set and well-formed (not shown)")


def _manifest_scopes() -> list[str]:
    data = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    return [str(s) for s in data["oauth_config"]["scopes"]["bot"]]


def check_offline() -> list[Check]:
    manifest = _manifest_scopes()
    if sorted(manifest) != sorted(BOT_SCOPES):
        return [
            Check(
                "slack scopes",
                "warn",
                "manifest.yml's bot scopes differ from what the app asks for when installed",
                "reinstall this version of studybot",
            )
        ]
    how = "the token's scopes are checked by `studybot doctor --online`"
    return [Check("slack scopes", "ok", f"the app needs {', '.join(BOT_SCOPES)}; {how}")]


def check_online(settings: Settings, http: JsonHttp) -> list[Check]:
    api = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
    checks: list[Check] = []
    bot = secret_value(settings.slack_bot_token)
    if bot is None:  # a distributed app: each workspace's token is in the database
        return check_offline()
    try:
        status, body, headers = http.call("POST", f"{api}auth.test", {"Authorization": f"Bearer {bot}"}, b"")
    except (urllib.error.URLError, OSError) as exc:
        return [
            Check(
                "slack api",
                "fail",
                f"cannot reach {api}: {getattr(exc, 'reason', exc)}",
                "check the network, or STUDYBOT_SLACK_API_URL",
            )
        ]
    if not isinstance(body, dict) or not body.get("ok"):
        error = body.get("error") if isinstance(body, dict) else f"HTTP {status}"
        return [
            Check(
                "slack api",
                "fail",
                f"Slack refused SLACK_BOT_TOKEN ({error})",
                "reinstall the app (Install App) and copy the new Bot User OAuth Token",
            )
        ]
    checks.append(
        Check("slack api", "ok", f"bot of workspace {str(body.get('team', '?'))[:40]} ({body.get('team_id')})")
    )
    granted = {s.strip() for s in headers.get("x-oauth-scopes", "").split(",") if s.strip()}
    missing = [s for s in BOT_SCOPES if s not in granted]
    if missing:
        checks.append(
            Check(
                "slack scopes",
                "fail",
                f"the bot token lacks {', '.join(missing)}",
                "add them under OAuth & Permissions (or paste manifest.yml again) and reinstall the app",
            )
        )
    else:
        checks.append(Check("slack scopes", "ok", f"the bot token has {', '.join(BOT_SCOPES)}"))
    app = secret_value(settings.slack_app_token)
    if app is not None:
        status, body, _ = http.call("POST", f"{api}apps.connections.open", {"Authorization": f"Bearer {app}"}, b"")
        if isinstance(body, dict) and body.get("ok"):
            checks.append(Check("slack socket mode", "ok", "SLACK_APP_TOKEN opens a Socket Mode connection"))
        else:
            error = body.get("error") if isinstance(body, dict) else f"HTTP {status}"
            checks.append(
                Check(
                    "slack socket mode",
                    "fail",
                    f"Slack refused SLACK_APP_TOKEN ({error})",
                    "generate an app-level token with connections:write (Basic Information -> App-Level Tokens) "
                    "and turn Socket Mode on",
                )
            )
    return checks


def check_platform(settings: Settings, online: bool, http: JsonHttp) -> list[Check]:
    """After the shared checks, when a bot token or an OAuth client is set: Slack's answers with
    `--online` and a bot token of the right kind, else what can be read here."""
    bot = secret_value(settings.slack_bot_token)
    if bot is None and settings.slack_client_id is None:
        return []
    if online and (bot is None or bot.startswith("xoxb-")):
        return check_online(settings, http)
    return check_offline()
