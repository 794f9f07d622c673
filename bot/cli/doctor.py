"""`studybot doctor` (this configuration's checks, one line each with the fix) and `studybot
health` (whether the running bot answers on its web port)."""

from __future__ import annotations

from typing import Annotated

import typer

from bot.settings_problems import SettingsError

from .common import settings_of


def doctor(
    online: Annotated[
        bool, typer.Option("--online", help="Also ask Discord and Slack what the tokens can do.")
    ] = False,
) -> None:
    """Check this configuration, one line per check with the fix; exit 0, 1 (warnings) or 2 (failures)."""
    from bot.doctor.report import exit_code, run_checks

    checks = run_checks(online=online)
    for check in checks:
        typer.echo(check.line())
    warns, fails = (sum(1 for c in checks if c.status == s) for s in ("warn", "fail"))
    typer.echo(f"{len(checks)} checks: {len(checks) - warns - fails} ok, {warns} warnings, {fails} failures")
    raise typer.Exit(exit_code(checks))


def health(
    ctx: typer.Context,
    url: Annotated[
        str | None, typer.Option(help="Default: http://127.0.0.1:STUDYBOT_WEB_PORT/healthz (8080 when unset).")
    ] = None,
) -> None:
    """Ask the running bot whether it is up (its web port's /healthz); exit 0 or 1. The images' HEALTHCHECK."""
    from bot.doctor.report import health as ask

    if url is None:
        try:
            port = settings_of(ctx).web_port or 8080
        except SettingsError:  # a bad setting: the default port (doctor says what is wrong)
            port = 8080
        url = f"http://127.0.0.1:{port}/healthz"
    healthy, answer = ask(url)
    typer.echo(f"{'ok' if healthy else 'unhealthy'}: {url} answered {answer}", err=not healthy)
    raise typer.Exit(0 if healthy else 1)
