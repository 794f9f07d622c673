"""`studybot doctor [--online]`: what is wrong with this configuration, one line per check,
each with ok, warn or fail and, when not ok, the fix. Exit 0 (all ok), 1 (warnings) or 2
(failures). Secrets are never printed: a token is described by its shape, never shown.

The shared checks live here (settings, platforms, database, bank, time zones, worker, web
page); each platform's beside it (bot/platforms/discord/doctor.py, bot/platforms/slack/doctor.py),
loaded only when that platform is configured. Offline it reads the settings, the database, the
bank and the worker back end; `--online` also asks Discord (STUDYBOT_DISCORD_API_URL) and Slack
(STUDYBOT_SLACK_API_URL) what the tokens can do. `studybot health` asks the running bot's web
port (/healthz): the images' HEALTHCHECK."""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import httpx

from bot.config import Settings
from bot.doctor.checks import RANK, Check, JsonHttp, exit_code, secret_value
from bot.settings_problems import SettingsError, load_settings

__all__ = ["RANK", "Check", "JsonHttp", "exit_code", "guarded", "health", "run_checks"]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------- platforms


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
            why = "is a file, not a folder" if not folder.is_dir() else "is not writable"
            return Check(
                "database",
                "fail",
                f"{shown} cannot be created: {folder} {why}",
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


def check_demo_memory() -> Check:
    """Which memory limit holds a demo's child process here (DEMO-SEC, issue 27)."""
    from bot.worker.demo_process import memory_limit_kind, runs_on_cuda

    if memory_limit_kind() != "rlimit":
        return Check(
            "demo memory",
            "warn",
            "no RLIMIT_AS on this system: a demo child is held only by the demo's own estimate",
            "run the worker on Linux",
        )
    where = "GPU runs (a GPU is here) are held by the demo's estimate of GPU memory; " if runs_on_cuda(()) else ""
    return Check(
        "demo memory",
        "ok",
        "rlimit: each CPU demo child gets RLIMIT_AS of its share of the memory available (less what "
        f"running demos were promised) plus the interpreter's; {where}no cgroup is used",
    )


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
        return [
            Check("worker", "ok", "demos run in a child process here (STUDYBOT_WORKER=local; torch installed)"),
            check_demo_memory(),
        ]
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
    from bot.worker.celery_app import make_app

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
    if settings.web_url and secret_value(settings.web_secret) in (None, ""):
        return Check(
            "web page",
            "warn",
            "STUDYBOT_WEB_URL is set but STUDYBOT_WEB_SECRET is not: /score and /config carry no links",
            'set STUDYBOT_WEB_SECRET to python -c "import secrets; print(secrets.token_urlsafe(32))"\'s output',
        )
    links = "with signed links" if settings.web_url else "public pages only (no STUDYBOT_WEB_URL)"
    return Check("web page", "ok", f"served on port {settings.web_port}, {links}; /healthz for health checks")


# ---------------------------------------------------------------- all of them


def run_checks(settings: Settings | None = None, online: bool = False, http: JsonHttp | None = None) -> list[Check]:
    """Every check, in the order a person fixes things. A broken Settings stops here."""
    if settings is None:
        try:  # the same sentence every other command gives (a secret's value never shown)
            settings = load_settings()
        except SettingsError as exc:
            return [Check("settings", "fail", exc.sentence, "correct it in the environment or .env")]
    http = http or JsonHttp()
    discord = settings.discord_token is not None
    slack = any(
        value is not None
        for value in (
            settings.slack_bot_token,
            settings.slack_app_token,
            settings.slack_signing_secret,
            settings.slack_client_id,
            settings.slack_client_secret,
        )
    )
    checks: list[Check] = guarded("platforms", lambda: [check_platforms(settings)])
    if discord:
        from bot.platforms.discord import doctor as discord_doctor

        checks += guarded("discord token", lambda: [c for c in (discord_doctor.check_token(settings),) if c])
    if slack:
        from bot.platforms.slack import doctor as slack_doctor

        checks += guarded("slack tokens", lambda: [c for c in (slack_doctor.check_tokens(settings),) if c])
    found: list[list[tuple[str, str, str, str]] | None] = [None]

    def database() -> list[Check]:
        check, found[0] = check_database(settings)
        return [check]

    checks += guarded("database", database)
    checks += guarded("bank", lambda: [check_bank(settings)])
    checks += guarded("time zones", lambda: [check_timezones(settings, found[0])])
    checks += guarded("worker", lambda: check_worker(settings))
    checks += guarded("web page", lambda: [c for c in (check_web(settings),) if c])
    if discord:
        checks += guarded("discord", lambda: discord_doctor.check_platform(settings, online, http))
    if slack:
        checks += guarded("slack", lambda: slack_doctor.check_platform(settings, online, http))
    return checks


def guarded(name: str, check: Callable[[], list[Check]]) -> list[Check]:
    """A check's lines, or one failed line when the check itself broke: doctor never crashes
    on what it checks (the traceback goes to the log)."""
    try:
        return check()
    except Exception as exc:
        log.warning("the %s check broke", name, exc_info=True)
        reason = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        return [Check(name, "fail", f"the check could not finish: {reason}", "correct the setting it reads")]


def health(url: str, timeout_s: float = 5.0) -> tuple[bool, str]:
    """Whether the running bot answers GET url (its /healthz) with 200 ok, and what it answered
    ("200 ok", "404 Not Found", or why nothing answered)."""
    try:
        response = httpx.get(url, timeout=timeout_s, follow_redirects=True)
    except httpx.HTTPError as exc:
        return False, str(exc) or type(exc).__name__
    if response.status_code != 200:
        return False, f"{response.status_code} {response.reason_phrase}"
    body = response.content[:64].decode("utf-8", "replace").strip()
    return body == "ok", f"{response.status_code} {body}"
