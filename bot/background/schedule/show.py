"""`studybot schedule show`: a community's schedule settings and next runs as lines."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from bot.core.rules import scoring

from .plans import NextRuns


def describe(runs: NextRuns, now: datetime) -> list[str]:
    """Lines for `studybot schedule show`: settings, then each next run in local time and UTC."""
    config = runs.config
    zone = config.timezone

    def when(moment: datetime | None) -> str:
        if moment is None:
            return "-"
        local = moment.astimezone(ZoneInfo(zone))
        return f"{local:%a %Y-%m-%d %H:%M %Z} ({moment:%Y-%m-%d %H:%M} UTC)"

    state = "paused" if config.paused else ("no channel set" if config.channel_id is None else "active")
    lines = [
        (
            f"{runs.community.platform}/{runs.community.community_id}: {state}; daily_time {config.daily_time} "
            f"{zone}, window {config.window_hours} h, channel {config.channel_id or '(not set)'}, "
            f"topics {','.join(config.topics) or 'all'}"
        ),
        f"  next daily round: {when(runs.daily)}",
        f"  next reveal:      {when(runs.reveal)}",
    ]
    board = ""
    if runs.leaderboard is not None:
        board = f" [week {scoring.previous_week(scoring.iso_week(runs.leaderboard, zone))}]"
    lines.append(f"  next leaderboard: {when(runs.leaderboard)}{board}")
    if runs.reveal is not None and runs.reveal <= now:
        lines.append("  (a round's window has ended: it is revealed at the next start or tick)")
    return lines
