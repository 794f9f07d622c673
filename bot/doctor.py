"""`studybot doctor [--online]`: what is wrong with this configuration, one line per check,
each with ok, warn or fail and, when not ok, the fix. Exit 0 (all ok), 1 (warnings) or 2
(failures). Secrets are never printed: a token is described by its shape, never shown.

Offline it reads the settings, the database, the bank and the worker back end; `--online`
also asks Discord (STUDYBOT_DISCORD_API_URL) and Slack (STUDYBOT_SLACK_API_URL) what the
tokens can do. `studybot health` asks the running bot's web port (/healthz): the images'
HEALTHCHECK."""

from __future__ import annotations

import base64
import binascii
import importlib.util
import json
import re
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import SecretStr, ValidationError

from bot.config import Settings

Status = Literal["ok", "warn", "fail"]
RANK: dict[str, int] = {"ok": 0, "warn": 1, "fail": 2}

# The permissions the README's invite link asks for (permissions=117760).
DISCORD_PERMISSIONS = {
    "View Channels": 1 << 10,
    "Send Messages": 1 << 11,
    "Embed Links": 1 << 14,
    "Attach Files": 1 << 15,
    "Read Message History": 1 << 16,
}
DISCORD_ADMINISTRATOR = 1 << 3
INVITE = (
    "https://discord.com/oauth2/authorize?client_id=APPLICATION_ID&scope=bot+applications.commands"
    f"&permissions={sum(DISCORD_PERMISSIONS.values())}"
)
# Privileged intents and the application flags that allow them (either the full or the limited flag).
PRIVILEGED_INTENTS = {
    "members": ("Server Members", (1 << 14) | (1 << 15)),
    "presences": ("Presence", (1 << 12) | (1 << 13)),
    "message_content": ("Message Content", (1 << 18) | (1 << 19)),
}
HTTP_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    message: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.status:<4} {self.name}: {self.message}"
        return text + (f" -> fix: {self.fix}" if self.fix and self.status != "ok" else "")


def exit_code(checks: list[Check]) -> int:
    return max((RANK[c.status] for c in checks), default=0)


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def _settings_error(exc: ValidationError) -> Check:
    """Which variables are wrong and why, without their values (one may be a token)."""
    aliases: dict[str, str] = {}
    for name, info in Settings.model_fields.items():
        alias = info.validation_alias
        if alias is not None and hasattr(alias, "choices"):
            aliases[name] = str(alias.choices[0])
    parts = []
    for error in exc.errors():
        where = str(error["loc"][0]) if error["loc"] else ""
        variable = aliases.get(where, f"STUDYBOT_{where.upper()}" if where else "settings")
        parts.append(f"{variable}: {error['msg']}")
    return Check("settings", "fail", "; ".join(parts), "correct these variables in the environment or .env")


# ---------------------------------------------------------------- tokens


def check_platforms(settings: Settings) -> Check:
    from bot.platforms.launch import LaunchError, choose_platforms

    try:
        chosen = choose_platforms(settings, None)
    except LaunchError as exc:
        return Check("platforms", "fail", str(exc), "set the missing variable, or unset the half-set platform's")
    if chosen == ("console",):
        return Check(
            "platforms",
            "warn",
            "no platform tokens are set: `studybot run` starts the console chat only",
            "set DISCORD_TOKEN, or SLACK_BOT_TOKEN with SLACK_APP_TOKEN or SLACK_SIGNING_SECRET (README: Run on "
            "Discord, Run on Slack)",
        )
    return Check("platforms", "ok", f"`studybot run` starts {' and '.join(chosen)}")


def _discord_token_problem(token: str) -> str | None:
    if token != token.strip() or token[:1] in "'\"":
        return "DISCORD_TOKEN has spaces or quotes around it"
    if token.lower().startswith("bot "):
        return "DISCORD_TOKEN starts with 'Bot ': the bot adds that itself"
    parts = token.split(".")
    if len(parts) != 3 or not all(re.fullmatch(r"[A-Za-z0-9_-]+", p) for p in parts):
        return "DISCORD_TOKEN is not shaped like a bot token (three dot-separated base64 parts)"
    try:
        user_id = base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        user_id = ""
    if not user_id.isdigit() or len(parts[2]) < 20:
        return "DISCORD_TOKEN is not shaped like a bot token (its first part is not a bot's id)"
    return None


def check_discord_token(settings: Settings) -> Check | None:
    token = _secret(settings.discord_token)
    if token is None:
        return None
    problem = _discord_token_problem(token)
    if problem is not None:
        return Check(
            "discord token",
            "fail",
            problem,
            "copy the token again from the Developer Portal (your application -> Bot -> Reset Token)",
        )
    return Check("discord token", "ok", "DISCORD_TOKEN is set and shaped like a bot token (not shown)")


def check_slack_tokens(settings: Settings) -> Check | None:
    bot, app, secret = (
        _secret(settings.slack_bot_token),
        _secret(settings.slack_app_token),
        _secret(settings.slack_signing_secret),
    )
    client_id, client_secret = settings.slack_client_id, _secret(settings.slack_client_secret)
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
    if client_id is not None and not re.fullmatch(r"\d+\.\d+", client_id):
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


# ---------------------------------------------------------------- database, bank, time zones


def _sqlite_path(url: str) -> Path | None:
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return Path(url.removeprefix("sqlite:///").split("?", 1)[0]).expanduser()
    return None


def check_database(settings: Settings) -> tuple[Check, list[tuple[str, str, str, str]] | None]:
    """Reachable and at Alembic's head; with it, every community's (platform, id, name, zone)."""
    from alembic.migration import MigrationContext
    from alembic.script import ScriptDirectory
    from sqlalchemy import create_engine, inspect, text
    from sqlalchemy.exc import SQLAlchemyError

    from bot.store.database import migrations_dir, safe_url

    url = settings.database_url
    shown = safe_url(url)
    upgrade_fix = "run `studybot db upgrade` (the bot also upgrades the schema at every start)"
    path = _sqlite_path(url)
    if path is not None and not path.exists():
        folder = next((p for p in path.parents if p.exists()), Path("."))
        if not folder.is_dir() or not _writable(folder):
            return Check(
                "database",
                "fail",
                f"{shown} cannot be created: {folder} is not writable",
                "fix the path or its permissions",
            ), None
        return Check("database", "warn", f"{shown} does not exist yet", upgrade_fix), None
    connect_args: dict[str, Any] = {"connect_timeout": 5} if url.startswith("postgresql") else {}
    engine = create_engine(url, connect_args=connect_args)
    try:
        with engine.connect() as conn:
            current = set(MigrationContext.configure(conn).get_current_heads())
            communities = None
            if inspect(conn).has_table("communities"):
                rows = conn.execute(text("SELECT platform, external_id, name, timezone FROM communities")).all()
                communities = [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in rows]
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        return (
            Check(
                "database",
                "fail",
                f"cannot read {shown}: {reason}",
                "start the database server, or correct STUDYBOT_DATABASE_URL",
            ),
            None,
        )
    finally:
        engine.dispose()
    script = ScriptDirectory(str(migrations_dir()))
    heads = set(script.get_heads())
    known = {rev.revision for rev in script.walk_revisions()}
    if current == heads:
        return Check(
            "database", "ok", f"{shown} is reachable and migrated (revision {', '.join(sorted(heads))})"
        ), communities
    unknown = sorted(current - known)
    if unknown:
        return (
            Check(
                "database",
                "fail",
                f"{shown} is at revision {', '.join(unknown)}, which this version of studybot does not know",
                "run the newer studybot that migrated it, or restore a backup",
            ),
            communities,
        )
    where = ", ".join(sorted(current)) or "no revision (empty)"
    return (
        Check("database", "warn", f"{shown} is at {where}, not at {', '.join(sorted(heads))}", upgrade_fix),
        communities,
    )


def _writable(folder: Path) -> bool:
    import os

    return os.access(folder, os.W_OK | os.X_OK)


def check_bank(settings: Settings) -> Check:
    from bot.core.bank import load_bank
    from bot.core.errors import BankError

    try:
        bank = load_bank(settings.questions_dir)
    except BankError as exc:
        shown = exc.problems[:3]
        more = f" (and {len(exc.problems) - 3} more)" if len(exc.problems) > 3 else ""
        return Check(
            "bank",
            "fail",
            f"{len(exc.problems)} problem(s): " + " | ".join(shown) + more,
            "`studybot questions lint` lists them all; fix them or correct STUDYBOT_QUESTIONS_DIR",
        )
    topics = len({q.topic for q in bank.questions})
    return Check("bank", "ok", f"{len(bank.questions)} questions in {topics} topics at {settings.questions_dir}")


def _zone_ok(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def check_timezones(settings: Settings, communities: list[tuple[str, str, str, str]] | None) -> Check:
    if not _zone_ok(settings.timezone):
        return Check(
            "time zones",
            "fail",
            f"STUDYBOT_TIMEZONE '{settings.timezone[:64]}' is not an IANA time zone",
            "set it to a zone such as Europe/Berlin or UTC",
        )
    if communities is None:
        return Check("time zones", "ok", f"STUDYBOT_TIMEZONE {settings.timezone} is valid (no communities to check)")
    bad = [c for c in communities if not _zone_ok(c[3])]
    if bad:
        named = ", ".join(f"{p}/{i} ({n[:40]}): '{z[:64]}'" for p, i, n, z in bad[:5])
        return Check(
            "time zones",
            "fail",
            f"{len(bad)} communit{'y has' if len(bad) == 1 else 'ies have'} an unknown time zone: {named}",
            "in each, an admin sets `/config timezone Europe/Berlin` (Slack: /studybot-config timezone ...)",
        )
    return Check(
        "time zones", "ok", f"STUDYBOT_TIMEZONE {settings.timezone} and {len(communities)} communities' zones are valid"
    )


# ---------------------------------------------------------------- worker back end


def check_worker(settings: Settings) -> list[Check]:
    if settings.worker == "local":
        if importlib.util.find_spec("torch") is None:
            return [
                Check(
                    "worker",
                    "warn",
                    "STUDYBOT_WORKER=local but torch is not installed here: /demo fails",
                    "pip install '.[demo]', or STUDYBOT_WORKER=celery with `studybot worker` on a host with torch",
                )
            ]
        return [Check("worker", "ok", "demos run in a child process here (STUDYBOT_WORKER=local; torch installed)")]
    import redis

    from bot.store.database import safe_url

    shown = safe_url(settings.redis_url)
    client = redis.Redis.from_url(settings.redis_url, socket_connect_timeout=3, socket_timeout=3)
    try:
        client.ping()
    except (redis.RedisError, OSError, ValueError) as exc:
        return [
            Check(
                "redis",
                "fail",
                f"no answer from {shown}: {str(exc)[:160]}",
                "start Redis, or correct STUDYBOT_REDIS_URL",
            )
        ]
    finally:
        client.close()
    checks = [Check("redis", "ok", f"{shown} answers PING")]
    from bot.worker import make_app

    app = make_app(settings.redis_url, settings.demo_timeout_s)
    try:
        replies = app.control.ping(timeout=2.0) or []
        queues: dict[str, Any] = {}
        if replies:
            queues = app.control.inspect(timeout=2.0).active_queues() or {}
    finally:
        app.close()
    if not replies:
        checks.append(
            Check(
                "celery worker",
                "warn",
                "no Celery worker answered a ping: demos wait in the queue",
                f"start one where torch is: `studybot worker --queues {settings.celery_queue}` with this "
                "STUDYBOT_REDIS_URL",
            )
        )
        return checks
    taking = sorted(
        worker for worker, consumed in queues.items() if any(q.get("name") == settings.celery_queue for q in consumed)
    )
    if not taking:
        checks.append(
            Check(
                "celery worker",
                "warn",
                f"{len(replies)} worker(s) answered, none takes queue '{settings.celery_queue}'",
                f"start one with `studybot worker --queues {settings.celery_queue}`",
            )
        )
    else:
        checks.append(Check("celery worker", "ok", f"{len(taking)} worker(s) take queue '{settings.celery_queue}'"))
    return checks


# ---------------------------------------------------------------- the platforms' side


class _Http:
    """Small JSON calls with urllib (no event loop): status, body and headers, never raising
    for an HTTP status."""

    def __init__(self, opener: Callable[..., Any] = urllib.request.urlopen) -> None:
        self.open = opener

    def call(
        self, method: str, url: str, headers: dict[str, str], data: bytes | None = None
    ) -> tuple[int, Any, dict[str, str]]:
        request = urllib.request.Request(
            url, data=data, method=method, headers={"User-Agent": "studybot-doctor", **headers}
        )
        try:
            with self.open(request, timeout=HTTP_TIMEOUT_S) as response:
                status, raw, found = response.status, response.read(), dict(response.headers)
        except urllib.error.HTTPError as exc:
            status, raw, found = exc.code, exc.read(), dict(exc.headers)
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        return status, body, {k.lower(): v for k, v in found.items()}


def _asked_intents() -> list[str]:
    from bot.platforms.discord.app import bot_intents

    return [name for name, on in bot_intents() if on]


def check_discord_offline() -> list[Check]:
    asked = _asked_intents()
    privileged = [PRIVILEGED_INTENTS[n][0] for n in asked if n in PRIVILEGED_INTENTS]
    intents = Check(
        "discord intents",
        "ok",
        f"asks for {', '.join(asked)}"
        + (
            f"; turn on {', '.join(privileged)} in the Developer Portal (Bot -> Privileged Gateway Intents)"
            if privileged
            else " (none privileged: nothing to turn on in the Developer Portal)"
        ),
    )
    names = ", ".join(DISCORD_PERMISSIONS)
    permissions = Check(
        "discord permissions",
        "ok",
        f"the invite asks for {names} (permissions={sum(DISCORD_PERMISSIONS.values())}); "
        "`studybot doctor --online` checks each server",
    )
    return [intents, permissions]


def check_discord_online(settings: Settings, http: _Http) -> list[Check]:
    token = _secret(settings.discord_token)
    assert token is not None
    api = settings.discord_api_url.rstrip("/")
    auth = {"Authorization": f"Bot {token}"}
    try:
        status, me, _ = http.call("GET", f"{api}/users/@me", auth)
    except (urllib.error.URLError, OSError) as exc:
        return [
            Check(
                "discord api",
                "fail",
                f"cannot reach {api}: {getattr(exc, 'reason', exc)}",
                "check the network, or STUDYBOT_DISCORD_API_URL",
            )
        ]
    if status == 401:
        return [
            Check(
                "discord api",
                "fail",
                "Discord refused DISCORD_TOKEN (401)",
                "reset the token in the Developer Portal (Bot -> Reset Token) and set the new one",
            )
        ]
    if status != 200 or not isinstance(me, dict):
        return [Check("discord api", "fail", f"{api}/users/@me answered {status}", "try again later")]
    checks = [Check("discord api", "ok", f"logged in as {str(me.get('username', '?'))[:40]} (id {me.get('id')})")]
    # Intents: each privileged one the bot asks for needs its flag on the application.
    _, application, _ = http.call("GET", f"{api}/oauth2/applications/@me", auth)
    flags = int(application.get("flags") or 0) if isinstance(application, dict) else 0
    asked = _asked_intents()
    missing = [
        PRIVILEGED_INTENTS[n][0] for n in asked if n in PRIVILEGED_INTENTS and not flags & PRIVILEGED_INTENTS[n][1]
    ]
    if missing:
        checks.append(
            Check(
                "discord intents",
                "fail",
                f"the bot asks for {', '.join(missing)}, which the application does not allow",
                "turn it on in the Developer Portal (Bot -> Privileged Gateway Intents)",
            )
        )
    else:
        checks.append(Check("discord intents", "ok", f"asks for {', '.join(asked)}; the application allows them"))
    # Permissions, server by server (the bot's server-wide permissions; channel overrides can still deny).
    status, guilds, _ = http.call("GET", f"{api}/users/@me/guilds", auth)
    if status != 200 or not isinstance(guilds, list):
        checks.append(Check("discord permissions", "warn", f"listing the servers answered {status}", "try again later"))
    elif not guilds:
        checks.append(Check("discord permissions", "warn", "the bot is in no server yet", f"invite it: {INVITE}"))
    else:
        short = []
        for guild in guilds:
            have = int(guild.get("permissions") or 0)
            if have & DISCORD_ADMINISTRATOR:
                continue
            lacking = [name for name, bit in DISCORD_PERMISSIONS.items() if not have & bit]
            if lacking:
                short.append(f"{str(guild.get('name'))[:40]} ({guild.get('id')}) lacks {', '.join(lacking)}")
        if short:
            checks.append(
                Check(
                    "discord permissions",
                    "fail",
                    f"{len(short)} of {len(guilds)} servers: " + "; ".join(short[:5]),
                    f"give the bot's role those permissions, or invite it again with {INVITE}",
                )
            )
        else:
            checks.append(Check("discord permissions", "ok", f"all {len(guilds)} servers grant what the bot needs"))
    # Shards: Discord says how many it wants.
    status, gateway, _ = http.call("GET", f"{api}/gateway/bot", auth)
    if status == 200 and isinstance(gateway, dict):
        wanted = int(gateway.get("shards") or 1)
        have = settings.discord_shard_count or 1
        if wanted > have:
            checks.append(
                Check(
                    "discord shards",
                    "warn",
                    f"Discord recommends {wanted} shards; this configuration runs {have}",
                    f"set STUDYBOT_DISCORD_SHARD_COUNT={wanted} on every process (README: many servers)",
                )
            )
        else:
            checks.append(Check("discord shards", "ok", f"{have} shard(s); Discord recommends {wanted}"))
    return checks


def _manifest_scopes() -> list[str]:
    import yaml

    manifest = Path(__file__).parent / "platforms" / "slack" / "manifest.yml"
    data = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    return [str(s) for s in data["oauth_config"]["scopes"]["bot"]]


def check_slack_offline(settings: Settings) -> list[Check]:
    from bot.platforms.slack.oauth import BOT_SCOPES

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


def check_slack_online(settings: Settings, http: _Http) -> list[Check]:
    from bot.platforms.slack.oauth import BOT_SCOPES

    api = settings.slack_api_url if settings.slack_api_url.endswith("/") else settings.slack_api_url + "/"
    checks: list[Check] = []
    bot = _secret(settings.slack_bot_token)
    if bot is None:  # a distributed app: each workspace's token is in the database
        return check_slack_offline(settings)
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
    app = _secret(settings.slack_app_token)
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


def check_web(settings: Settings) -> Check | None:
    if settings.web_port is None:
        if settings.web_url:
            return Check(
                "web page",
                "warn",
                "STUDYBOT_WEB_URL is set but STUDYBOT_WEB_PORT is not: the bot serves no page",
                "set STUDYBOT_WEB_PORT (8080 in the images)",
            )
        return None
    if settings.web_url and _secret(settings.web_secret) in (None, ""):
        return Check(
            "web page",
            "warn",
            "STUDYBOT_WEB_URL is set but STUDYBOT_WEB_SECRET is not: /score and /config carry no links",
            "set STUDYBOT_WEB_SECRET to a long random string",
        )
    links = "with signed links" if settings.web_url else "public pages only (no STUDYBOT_WEB_URL)"
    return Check("web page", "ok", f"served on port {settings.web_port}, {links}; /healthz for health checks")


# ---------------------------------------------------------------- all of them


def run_checks(settings: Settings | None = None, online: bool = False, http: _Http | None = None) -> list[Check]:
    """Every check, in the order a person fixes things. A broken Settings stops here."""
    if settings is None:
        try:
            settings = Settings()
        except ValidationError as exc:
            return [_settings_error(exc)]
    http = http or _Http()
    checks: list[Check] = [check_platforms(settings)]
    for optional in (check_discord_token(settings), check_slack_tokens(settings)):
        if optional is not None:
            checks.append(optional)
    database, communities = check_database(settings)
    checks += [database, check_bank(settings), check_timezones(settings, communities)]
    checks += check_worker(settings)
    web = check_web(settings)
    if web is not None:
        checks.append(web)
    discord_ok = (
        settings.discord_token is not None and _discord_token_problem(_secret(settings.discord_token) or "") is None
    )
    if settings.discord_token is not None:
        checks += check_discord_online(settings, http) if online and discord_ok else check_discord_offline()
    slack_bot = _secret(settings.slack_bot_token)
    if slack_bot is not None or settings.slack_client_id is not None:
        slack_ok = slack_bot is None or slack_bot.startswith("xoxb-")
        checks += check_slack_online(settings, http) if online and slack_ok else check_slack_offline(settings)
    return checks


def health(url: str, timeout_s: float = 5.0) -> tuple[bool, str]:
    """Whether the running bot answers GET url (its /healthz) with 200 ok."""
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            body = response.read(64).decode("utf-8", "replace").strip()
            return response.status == 200 and body == "ok", f"{response.status} {body}"
    except urllib.error.HTTPError as exc:
        return False, f"{exc.code} {exc.reason}"
    except (urllib.error.URLError, OSError) as exc:
        return False, str(getattr(exc, "reason", exc))
