"""What the scheduler plans: a community's next daily round, reveal and leaderboard post,
and the names of the three jobs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from bot.core.rules import timing
from bot.core.rules.community import CommunityConfig
from bot.core.values import CommunityRef

JobKind = Literal["daily", "reveal", "leaderboard"]
JOB_KINDS: tuple[JobKind, ...] = ("daily", "reveal", "leaderboard")


@dataclass(frozen=True)
class NextRuns:
    """A community's next scheduled moments (aware UTC); None when nothing is planned."""

    community: CommunityRef
    config: CommunityConfig
    daily: datetime | None
    reveal: datetime | None
    leaderboard: datetime | None

    def of(self, kind: JobKind) -> datetime | None:
        return {"daily": self.daily, "reveal": self.reveal, "leaderboard": self.leaderboard}[kind]

    def earliest(self) -> datetime | None:
        moments = [m for m in (self.daily, self.reveal, self.leaderboard) if m is not None]
        return min(moments) if moments else None


def plan_next(community: CommunityRef, config: CommunityConfig, now: datetime, next_close: datetime | None) -> NextRuns:
    """The next moments after `now`: a paused community or one without a channel gets no
    daily round and no leaderboard; an open round is always revealed when its window ends."""
    active = not config.paused and config.channel_id is not None
    return NextRuns(
        community=community,
        config=config,
        daily=timing.next_daily(now, config.daily_time, config.timezone) if active else None,
        reveal=next_close,
        leaderboard=timing.next_weekly(now, config.daily_time, config.timezone) if active else None,
    )


def job_name(kind: JobKind, ref: CommunityRef) -> str:
    return f"{kind}:{ref.platform}:{ref.community_id}"
