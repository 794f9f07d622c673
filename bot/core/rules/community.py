"""A community's settings (a Discord guild, a Slack workspace, a console community) and the
rules for changing them from chat."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.errors import InvalidInput
from bot.core.records import SettingChange
from bot.core.rules import timing
from bot.core.rules.numbers import ascii_int

CONFIG_KEYS = ("channel", "timezone", "daily_time", "window_hours", "topics", "paused", "web")
# What chat commands may say instead (Discord's and Slack's /config use the short names).
CONFIG_ALIASES = {"time": "daily_time", "window": "window_hours", "tz": "timezone", "zone": "timezone"}


@dataclass(frozen=True)
class CommunityConfig:
    """A community's settings as the rules read them: its schedule, channel, topics, pause and web page."""

    id: int
    name: str
    timezone: str
    daily_time: str
    window_hours: int
    channel_id: str | None
    topics: tuple[str, ...]
    paused: bool
    web_public: bool = False  # its web pages: public, or private (signed links only)

    def as_pairs(self) -> tuple[tuple[str, str], ...]:
        return (
            ("channel", self.channel_id or "(not set)"),
            ("timezone", self.timezone),
            ("daily_time", self.daily_time),
            ("window_hours", str(self.window_hours)),
            ("topics", ",".join(self.topics) or "all"),
            ("paused", "on" if self.paused else "off"),
            ("web", "public" if self.web_public else "private"),
        )


def parse_setting(key: str, value: str | None) -> SettingChange:
    """`/config KEY VALUE` -> the setting to store; a sentence for anything else."""
    key = key.strip().lower().replace("-", "_")
    key = CONFIG_ALIASES.get(key, key)
    if key not in CONFIG_KEYS:
        raise InvalidInput(wording.unknown_setting(key, CONFIG_KEYS))
    text = (value or "").strip()
    if not text:
        raise InvalidInput(wording.give_a_value(key))
    return _PARSERS[key](text)


def _channel(text: str) -> SettingChange:
    channel = text.lstrip("#").strip()  # "#study" names the channel study: the '#' is how chat writes it
    if not channel:
        raise InvalidInput(wording.give_a_channel("channel"))
    return SettingChange("channel_id", channel[:64])


def _timezone(text: str) -> SettingChange:
    try:
        ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput(wording.not_a_time_zone(text)) from None
    return SettingChange("timezone", text)


def _daily_time(text: str) -> SettingChange:
    try:
        return SettingChange("daily_time", timing.parse_daily_time(text).strftime("%H:%M"))
    except ValueError:
        raise InvalidInput(wording.not_a_time_of_day(text)) from None


def _window_hours(text: str) -> SettingChange:
    hours = ascii_int(text)
    if hours is None or not 1 <= hours <= 48:
        raise InvalidInput(wording.WINDOW_HOURS_RANGE)
    return SettingChange("window_hours", hours)


def _topics(text: str) -> SettingChange:
    if text.lower() == "all":
        return SettingChange("topics", "")
    topics = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in topics if t not in TOPICS]
    if unknown:
        raise InvalidInput(wording.unknown_topic(unknown[0], TOPICS))
    return SettingChange("topics", ",".join(dict.fromkeys(topics)))


def _web(text: str) -> SettingChange:
    if text.lower() in ("public", "private"):
        return SettingChange("web_public", text.lower() == "public")
    raise InvalidInput(wording.WEB_PUBLIC_OR_PRIVATE)


def _paused(text: str) -> SettingChange:
    if text.lower() in ("on", "true", "yes", "1"):
        return SettingChange("paused", True)
    if text.lower() in ("off", "false", "no", "0"):
        return SettingChange("paused", False)
    raise InvalidInput(wording.PAUSED_ON_OR_OFF)


# One parser per key of CONFIG_KEYS: the value's text (stripped, not empty) -> the change to store.
_PARSERS: dict[str, Callable[[str], SettingChange]] = {
    "channel": _channel,
    "timezone": _timezone,
    "daily_time": _daily_time,
    "window_hours": _window_hours,
    "topics": _topics,
    "web": _web,
    "paused": _paused,
}
