"""Which communities a process serves, as a value the store can turn into SQL: the
platforms, and for a platform narrowed further, a Discord shard set or a list of ids."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.rules.community import CommunityConfig
from bot.core.values import CommunityRef


@dataclass(frozen=True)
class ShardsOf:
    """The guilds of Discord shards `ids` of `count`: (guild_id >> 22) % count in ids."""

    count: int
    ids: tuple[int, ...]

    def __call__(self, community_id: str) -> bool:
        # ASCII digits only (bot/core/rules/numbers.py says why; the store's values import nothing more)
        digits = community_id.isascii() and community_id.isdigit() and len(community_id) <= 20
        return digits and (int(community_id) >> 22) % self.count in self.ids


@dataclass(frozen=True)
class OnlyIds:
    """Exactly these community ids (the console's one community)."""

    ids: tuple[str, ...]

    def __call__(self, community_id: str) -> bool:
        return community_id in self.ids


Narrowing = ShardsOf | OnlyIds


@dataclass(frozen=True)
class Scope:
    """`platforms` (None: all), each of `narrow`'s platforms only where its narrowing says."""

    platforms: tuple[str, ...] | None = None
    narrow: tuple[tuple[str, Narrowing], ...] = ()

    def serves(self, ref: CommunityRef) -> bool:
        if self.platforms is not None and ref.platform not in self.platforms:
            return False
        return all(ref.platform != platform or rule(ref.community_id) for platform, rule in self.narrow)


@dataclass(frozen=True)
class Scheduled:
    """A community as the scheduler reads it: its settings and its settings' version."""

    ref: CommunityRef
    config: CommunityConfig
    version: int
