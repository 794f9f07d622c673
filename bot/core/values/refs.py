"""Who and where: a member, a channel, a community, as each platform names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UserRef:
    platform: str
    community_id: str
    user_id: str
    display_name: str


@dataclass(frozen=True)
class ChannelRef:
    platform: str
    community_id: str
    channel_id: str


@dataclass(frozen=True)
class CommunityRef:
    platform: str
    community_id: str
