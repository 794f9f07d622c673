"""Who and where: a member, a channel, a community, as each platform names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UserRef:
    """A member as a platform names them."""

    platform: str
    community_id: str
    user_id: str
    display_name: str


@dataclass(frozen=True)
class ChannelRef:
    """A channel as a platform names it."""

    platform: str
    community_id: str
    channel_id: str


@dataclass(frozen=True)
class CommunityRef:
    """A community (a Discord guild, a Slack workspace, the console) as a platform names it."""

    platform: str
    community_id: str
