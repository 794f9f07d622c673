"""`studybot schedule ...`: each community's schedule and next runs, and one job run by hand."""

from __future__ import annotations

from typing import Annotated

import typer

from bot.core.errors import StudyBotError
from bot.core.values import ChannelRef, CommunityRef, LeaderboardCard, Posted, QuestionCard, RevealCard
from bot.wiring import build_deliverer, build_scheduler

from .common import community_or_exit, engine_or_exit, fail, known_platform_or_exit, settings_of, setup_logging


def schedule_show(
    ctx: typer.Context,
    platform: Annotated[str | None, typer.Option(help="Only this platform (console, discord, slack).")] = None,
    community: Annotated[str | None, typer.Option(help="Only this community id.")] = None,
) -> None:
    """List each community's schedule settings and next runs (local time and UTC)."""
    from bot.background.schedule import describe

    engine = engine_or_exit(settings_of(ctx))
    if community is not None:
        community_or_exit(engine, community, platform)
    scheduler = build_scheduler(engine, (platform,) if platform else None, community)
    runs = scheduler.all_next_runs()
    for item in runs:
        for line in describe(item, engine.now()):
            typer.echo(line)
        for alert in engine.outbox.undelivered(item.community):
            typer.echo(f"  undelivered: {alert}")
    if not runs:
        typer.echo("No communities yet: one appears with its first command (for example /daily or /config).")


def schedule_run(
    ctx: typer.Context,
    job: Annotated[str, typer.Argument(help="daily, reveal or leaderboard.")],
    community: Annotated[str, typer.Option(help="The community id.")],
    platform: Annotated[str, typer.Option(help="console, discord or slack.")] = "console",
) -> None:
    """Run one job now, by hand; idempotent like the scheduled run (a second run posts nothing).
    Console posts print here; a Discord or Slack post is queued for that running bot to send."""
    from bot.background.schedule import JOB_KINDS
    from bot.platforms.console.render import render

    if job not in JOB_KINDS:
        raise fail(f"Unknown job '{job[:30]}'; jobs: {', '.join(JOB_KINDS)}.", 2)
    known_platform_or_exit(platform)
    settings = settings_of(ctx)
    setup_logging(settings, quiet=True)
    engine = engine_or_exit(settings)
    community_or_exit(engine, community, platform)
    scheduler = build_scheduler(engine, (platform,), community)
    try:
        results = scheduler.run_job(job, CommunityRef(platform, community))
    except StudyBotError as exc:
        raise fail(exc.message) from None
    for card in results:
        if not isinstance(card, (QuestionCard, RevealCard, LeaderboardCard)):  # nothing claimed: say why
            for message in render(card):
                typer.echo(message.text)
    if platform != "console":
        if any(isinstance(card, (QuestionCard, RevealCard, LeaderboardCard)) for card in results):
            typer.echo(f"Queued: the running {platform} bot posts it (see `studybot schedule show`).")
        return

    def show(channel: ChannelRef, card: Posted) -> None:
        for message in render(card):
            where = channel.channel_id.lstrip("#")  # a channel stored as "#study" before it was normalised
            typer.echo(f"[#{where}] {message.text}" if message.to == "channel" else message.text)

    build_deliverer(engine, platform, community).deliver_due(show)
