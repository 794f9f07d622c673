"""Which platforms `studybot run [console|discord|slack|all]` starts, from the tokens set.

Without an argument: every platform whose tokens are set (in one process, on one event loop,
with one scheduler for all their communities), else the console. A platform asked for by
name must have its tokens; a half-set platform (a Slack bot token with neither an app token
nor a signing secret) is named with the variable that is missing."""

from __future__ import annotations

import asyncio
import errno
import importlib
import importlib.util
import logging
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bot.config import Settings
from bot.core.engine import StudyEngine
from bot.errors import OperatorError

if TYPE_CHECKING:
    from aiohttp import web

    from bot.platforms.console import ConsoleOptions
    from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

TARGETS = ("console", "discord", "slack", "all")


class PlatformApp(Protocol):
    """What an adapter package's `attach(settings, runtime)` returns."""

    async def run(self) -> None:
        """Connect and serve until closed."""

    async def close(self) -> None: ...


@runtime_checkable
class ServesHttp(Protocol):
    """An adapter whose HTTP endpoints the web page's server can serve (Slack over HTTP)."""

    def http_routes(self) -> list[web.RouteDef]:
        """Its routes; once taken, the adapter starts no server of its own."""


def adapters() -> tuple[str, ...]:
    """The platform adapters in this installation: bot.platforms.<name> with an `attach`."""
    found = []
    for name in ("discord", "slack"):
        if importlib.util.find_spec(f"bot.platforms.{name}") is not None:
            module = importlib.import_module(f"bot.platforms.{name}")
            if hasattr(module, "attach"):
                found.append(name)
    return tuple(found)


class LaunchError(OperatorError):
    """One sentence for the person starting the bot; the process exits with status 2."""


def port_problem(exc: OSError, host: str, port: int | None, variable: str) -> LaunchError:
    """A port the bot cannot listen on (in use, or not ours to open) as one sentence."""
    where = f"port {port} on {host}"
    if exc.errno == errno.EADDRINUSE:
        return LaunchError(
            f"Cannot serve on {where} ({variable}): it is already in use; stop what uses it or choose another port."
        )
    return LaunchError(f"Cannot serve on {where} ({variable}): {exc.strerror or exc}; choose another port.")


def _slack_oauth(settings: Settings) -> bool:
    """Whether Slack is set up as a distributed app (OAuth installs, one token per workspace)."""
    return settings.slack_client_id is not None and settings.slack_client_secret is not None


def _slack_problem(settings: Settings) -> str | None:
    if _slack_oauth(settings) and settings.slack_signing_secret is None:
        return (
            "SLACK_CLIENT_ID and SLACK_CLIENT_SECRET are set (OAuth installs arrive over HTTP) but "
            "SLACK_SIGNING_SECRET is not: set it."
        )
    has_bot = settings.slack_bot_token is not None or _slack_oauth(settings)
    has_transport = settings.slack_app_token is not None or settings.slack_signing_secret is not None
    if has_bot and not has_transport:
        return (
            "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode) nor SLACK_SIGNING_SECRET "
            "(HTTP) is: set one of them."
        )
    if has_transport and not has_bot:
        which = "SLACK_APP_TOKEN" if settings.slack_app_token is not None else "SLACK_SIGNING_SECRET"
        return f"{which} is set but SLACK_BOT_TOKEN is not: set SLACK_BOT_TOKEN too."
    return None


def choose_platforms(settings: Settings, target: str | None) -> tuple[str, ...]:
    """The platforms to start, or a LaunchError saying what is missing."""
    if target is not None and target not in TARGETS:
        raise LaunchError(f"Unknown platform '{target[:30]}'; choose one of {', '.join(TARGETS)}.")
    slack_problem = _slack_problem(settings)
    discord_ready = settings.discord_token is not None
    slack_ready = (settings.slack_bot_token is not None or _slack_oauth(settings)) and slack_problem is None
    if target == "console":
        return ("console",)
    if target == "discord":
        if not discord_ready:
            raise LaunchError("DISCORD_TOKEN is not set: set it to the bot token from the Developer Portal.")
        return ("discord",)
    if target == "slack":
        if not slack_ready:
            raise LaunchError(
                slack_problem or "SLACK_BOT_TOKEN is not set: set it with SLACK_APP_TOKEN or SLACK_SIGNING_SECRET."
            )
        return ("slack",)
    if slack_problem is not None:  # a half-set Slack is a mistake, not a reason to skip Slack quietly
        raise LaunchError(slack_problem)
    chosen = tuple(name for name, ready in (("discord", discord_ready), ("slack", slack_ready)) if ready)
    if target == "all":
        if not chosen:
            raise LaunchError(
                "No platform tokens are set: set DISCORD_TOKEN, or SLACK_BOT_TOKEN with "
                "SLACK_APP_TOKEN or SLACK_SIGNING_SECRET."
            )
        return chosen
    return chosen or ("console",)


def unavailable(platforms: tuple[str, ...]) -> str | None:
    """A sentence when a chosen platform's adapter is not in this release, else None."""
    built = adapters()
    missing = [name for name in platforms if name != "console" and name not in built]
    if not missing:
        return None
    names = " and ".join(name.capitalize() for name in missing)
    return (
        f"The {names} adapter is not part of this release yet; `studybot run console` starts the "
        "console chat on the same database."
    )


def _attach(name: str, settings: Settings, runtime: Runtime, console: ConsoleOptions | None) -> PlatformApp:
    module = importlib.import_module(f"bot.platforms.{name}")
    app: PlatformApp = (
        module.attach(settings, runtime, console) if name == "console" else module.attach(settings, runtime)
    )
    return app


async def serve(
    settings: Settings,
    engine: StudyEngine,
    platforms: tuple[str, ...],
    schedule: bool = True,
    console: ConsoleOptions | None = None,
) -> None:
    """Run the chat platforms on one event loop with one Runtime until one of them stops (the
    console at the end of its input). `schedule`: run the scheduler (`console --no-schedule`
    does not); `console`: the console's options (its user, community, output)."""
    from bot.wiring import build_runtime

    runtime = build_runtime(engine, platforms, settings)
    apps = [_attach(name, settings, runtime, console) for name in platforms]
    await runtime.start(schedule=schedule)
    web_server = None
    tasks: list[asyncio.Task[None]] = []
    try:
        if settings.web_port is not None:  # the study web page, on this loop, engine calls through the bridge
            from bot.web.app import start_web

            # a platform's HTTP endpoints (Slack's /slack/events) on the page's port: one port to expose
            routes = [route for app in apps for route in (app.http_routes() if isinstance(app, ServesHttp) else [])]
            try:
                web_server = await start_web(engine, settings, runtime.bridge.run, routes)
            except OSError as exc:
                raise port_problem(exc, settings.web_host, settings.web_port, "STUDYBOT_WEB_PORT") from None
        tasks = [asyncio.create_task(app.run(), name=f"run-{name}") for app, name in zip(apps, platforms, strict=True)]
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            try:
                task.result()  # a platform that failed to start stops the process with its error
            except OSError as exc:
                if exc.errno not in (errno.EADDRINUSE, errno.EACCES, errno.EADDRNOTAVAIL):
                    raise
                # only Slack over HTTP listens on a port of its own (STUDYBOT_PORT, `run --port`)
                raise port_problem(exc, settings.host, settings.port, "STUDYBOT_PORT or --port") from None
    finally:
        for app in apps:
            try:
                await app.close()
            except Exception:
                log.exception("closing a platform failed")
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if web_server is not None:
            await web_server.close()
        await runtime.stop()
