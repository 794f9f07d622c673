"""The long-running commands: `studybot run` (the platforms whose tokens are set), `console`
(the terminal chat) and `web` (the study web page alone)."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
from typing import Annotated

import typer

from bot.config import Settings
from bot.core.wording import CONSOLE_OPERATOR

from .common import ascii_whole, engine_or_exit, fail, settings_of, setup_logging

log = logging.getLogger(__name__)


def console(
    ctx: typer.Context,
    user: Annotated[
        str, typer.Option(help="Who you are in the chat: the operator, who changes settings.")
    ] = CONSOLE_OPERATOR,
    community: Annotated[str, typer.Option(help="The community (like a Discord server).")] = "local",
    jsonl: Annotated[
        bool, typer.Option("--jsonl", help="Print every bot message as one JSON object per line.")
    ] = False,
    schedule: Annotated[
        bool, typer.Option(help="Run the scheduler: the daily round, reveal and leaderboard post on their own.")
    ] = True,
) -> None:
    """Chat with the bot in this terminal: no Discord or Slack account needed."""
    serve_console(settings_of(ctx), user, community, jsonl, schedule)


def serve_console(settings: Settings, user: str, community: str, jsonl: bool, schedule: bool) -> None:
    """The console chat on the Runtime, as `console` and a `run` without tokens start it."""
    from bot.platforms.console import ConsoleOptions
    from bot.platforms.launch import LaunchError, serve

    if "demo_cooldown_s" not in settings.model_fields_set:  # one person at a terminal: nobody to share with
        settings = settings.model_copy(update={"demo_cooldown_s": 0.0})
    setup_logging(settings, quiet=True)
    engine = engine_or_exit(settings)
    if isinstance(sys.stdin, io.TextIOWrapper):  # undecodable bytes become U+FFFD, not a crash
        sys.stdin.reconfigure(errors="replace")
    options = ConsoleOptions(
        user=user,
        community=community,
        jsonl=jsonl,
        demo_wait_s=settings.demo_timeout_s + 30,
        export_dir=settings.demo_out_dir,
    )
    try:  # the console is a platform like the others: on the Runtime, its scheduler and demo runner
        asyncio.run(serve(settings, engine, ("console",), schedule=schedule, console=options))
    except LaunchError as exc:  # the web page's port (STUDYBOT_WEB_PORT) taken
        raise fail(str(exc), 2) from None
    except KeyboardInterrupt:
        pass


def run(
    ctx: typer.Context,
    platform: Annotated[
        str | None, typer.Argument(help="console, discord, slack or all (default: those whose tokens are set).")
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            parser=ascii_whole(1),
            help="Slack over HTTP (no SLACK_APP_TOKEN): serve /slack/events on this port (STUDYBOT_PORT).",
        ),
    ] = None,
) -> None:
    """Start the platforms whose tokens are set (all in one process); with none, the console chat."""
    from bot.platforms.launch import LaunchError, choose_platforms, serve, unavailable
    from bot.platforms.preflight import PlatformRefused, check_reachable, shape_problem

    loaded = settings_of(ctx)
    settings = loaded if port is None else loaded.model_copy(update={"port": port})
    setup_logging(settings, quiet=True)  # the console chat, unless a platform starts
    try:
        chosen = choose_platforms(settings, platform)
    except LaunchError as exc:
        raise fail(str(exc), 2) from None
    problem = unavailable(chosen)
    if problem is not None:
        raise fail(problem, 2)
    if chosen != ("console",):
        problem = shape_problem(settings, chosen)  # a malformed token: before anything connects
        if problem is not None:
            raise fail(problem, 2)
        setup_logging(settings)
        engine = engine_or_exit(settings)
        try:  # the platform answers and takes the tokens, a few tries apart, or one sentence and exit 1
            check_reachable(settings, chosen)
        except PlatformRefused as exc:
            raise fail(exc.sentence, 1) from None
        log.info("starting %s", ", ".join(chosen))
        try:
            asyncio.run(serve(settings, engine, chosen))
        except LaunchError as exc:
            raise fail(str(exc), 2) from None
        except KeyboardInterrupt:
            pass
        return
    if platform is None:
        typer.echo(
            "No platform tokens are set: set DISCORD_TOKEN for Discord, or SLACK_BOT_TOKEN with "
            "SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP) for Slack (see .env.example). "
            "Starting the console chat.",
            err=True,
        )
    serve_console(loaded, user=CONSOLE_OPERATOR, community="local", jsonl=False, schedule=True)


def web(
    ctx: typer.Context,
    port: Annotated[
        int | None, typer.Option(parser=ascii_whole(1), help="The port (default STUDYBOT_WEB_PORT, else 8080).")
    ] = None,
) -> None:
    """Serve the study web page alone (`studybot run` serves it too when STUDYBOT_WEB_PORT is set)."""
    from bot.platforms.launch import LaunchError, port_problem
    from bot.web.app import start_web

    settings = settings_of(ctx)
    settings = settings.model_copy(update={"web_port": port or settings.web_port or 8080})
    setup_logging(settings)
    engine = engine_or_exit(settings)
    if engine.links is None:
        typer.echo("STUDYBOT_WEB_URL or STUDYBOT_WEB_SECRET is not set: only public communities' pages open.", err=True)

    async def serve_page() -> None:
        try:
            server = await start_web(engine, settings)
        except OSError as exc:
            raise port_problem(exc, settings.web_host, settings.web_port, "STUDYBOT_WEB_PORT or --port") from None
        typer.echo(f"Serving the web page on http://{settings.web_host}:{settings.web_port}/", err=True)
        try:
            await asyncio.Event().wait()
        finally:
            await server.close()

    try:
        asyncio.run(serve_page())
    except LaunchError as exc:
        raise fail(str(exc), 2) from None
    except KeyboardInterrupt:
        pass
