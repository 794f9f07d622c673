"""A community's figures on standard output: `studybot leaderboard` (weekly or all time) and
`studybot export` (every answer as CSV)."""

from __future__ import annotations

import csv
import json
import sys
from typing import Annotated

import typer

from bot.core.errors import StudyBotError
from bot.core.values import CommunityRef

from .common import community_or_exit, engine_or_exit, fail, settings_of


def leaderboard(
    ctx: typer.Context,
    community: Annotated[str, typer.Option(help="The community id.")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
    week: Annotated[str | None, typer.Option(help="An ISO week such as 2026-W48 (default: this week).")] = None,
    all_time: Annotated[bool, typer.Option("--all", help="All-time points.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON output.")] = False,
) -> None:
    """Print a community's weekly or all-time leaderboard."""
    settings = settings_of(ctx)
    engine = engine_or_exit(settings)
    community_or_exit(engine, community, platform)
    try:
        card = engine.boards.leaderboard(CommunityRef(platform, community), week=week, all_time=all_time)
    except StudyBotError as exc:
        raise fail(exc.message, 2) from None
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "community": card.community,
                    "scope": card.scope,
                    "rows": [{"rank": r.rank, "user": r.user, "points": r.points} for r in card.rows],
                }
            )
        )
        return
    typer.echo(f"{'All time' if card.scope == 'all' else card.scope} in {card.community}")
    for r in card.rows:
        typer.echo(f"{r.rank:>4}. {r.user:<30} {r.points:>6}")
    if not card.rows:
        typer.echo("No points yet.")


def export(
    ctx: typer.Context,
    community: Annotated[str, typer.Option(help="The community id.")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
    format: Annotated[str, typer.Option(help="Only csv for now.")] = "csv",
) -> None:
    """Write every answer of a community as CSV on standard output."""
    if format != "csv":
        raise fail(f"Unknown format '{format}'; only csv is supported.", 2)
    engine = engine_or_exit(settings_of(ctx))
    community_or_exit(engine, community, platform)
    try:
        rows = engine.admin.export_rows(CommunityRef(platform, community))
    except StudyBotError as exc:
        raise fail(exc.message, 2) from None
    fields = ["answered_at", "week", "user_id", "user", "kind", "question", "choice", "correct", "points"]
    writer = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
