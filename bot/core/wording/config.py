"""/config: the settings card, the admin link, link rotation, and every refused setting."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.records import OutboxRecord
from bot.core.values import ConfigCard

ADMIN_LINK = "Admin page on the web (a private link that expires)"


# `/config web rotate` (ConfigCard.changed "web_links"): every link signed before is revoked.
LINKS_ROTATED = "Every link to this community's web pages is revoked: members ask /score for a new one, admins /config."


def config_title(card: ConfigCard) -> str:
    if card.changed == "web_links":
        return LINKS_ROTATED
    return f"Set {card.changed}." if card.changed else f"Settings of {card.community}:"


def config_lines(card: ConfigCard, with_link: bool = True) -> list[str]:
    lines = [f"{key}: {value}" for key, value in card.settings]
    if card.alerts:
        lines.append(f"Needs attention ({len(card.alerts)}):")
        lines.extend(card.alerts)
    if card.link and with_link:
        lines.append(f"{ADMIN_LINK}: {card.link}")
    return lines


CONFIG_ADMINS_ONLY = (
    "Only workspace admins and owners (and the members the bot's operator allowed) can change settings; "
    "anyone can see them with {config} show."
)


def config_admins_only(config_command: str = "/config") -> str:
    return CONFIG_ADMINS_ONLY.format(config=config_command)


# ------------------------------------------------------- /config refused

WINDOW_HOURS_RANGE = "window_hours must be a whole number of hours from 1 to 48."
WEB_PUBLIC_OR_PRIVATE = "web must be public or private."
PAUSED_ON_OR_OFF = "paused must be on or off."
NO_CHANNEL_SET = "No channel is set for this community: set one with /config channel first."


def unknown_setting(key: str, keys: Iterable[str]) -> str:
    return f"Unknown setting '{key[:40]}'. Settings: {', '.join(keys)}."


def give_a_value(key: str) -> str:
    return f"Give a value: /config {key} VALUE."


def give_a_channel(key: str) -> str:
    return f"Give a channel's name: /config {key} NAME."


def not_a_time_zone(text: str) -> str:
    return f"'{text[:60]}' is not an IANA time zone such as Europe/Berlin."


def not_a_time_of_day(text: str) -> str:
    return f"'{text[:20]}' is not a time of day like 09:00."


def no_community_on(platform: str, community_id: str) -> str:
    return f"No community '{community_id}' on {platform}."


def delivery_alert(row: OutboxRecord, number: str) -> str:
    """/config's "Needs attention" line on a post the outbox could not deliver (`number`: the
    round's, demo's or suggestion's number as members know it)."""
    what = {
        "question": f"daily round #{number}",
        "reveal": f"reveal of round #{number}",
        "demo": f"result of demo #{number}",
        "decision": f"decision on suggestion #{number} (to its author's messages)",
    }.get(row.kind, f"leaderboard {row.key}")
    tries = f"{row.attempts} tr{'y' if row.attempts == 1 else 'ies'}"
    if row.state == "failed":
        return f"Could not post the {what} in channel {row.channel_id} ({tries}, gave up): {row.last_error}"
    return (
        f"Posting the {what} in channel {row.channel_id} failed ({tries}; next try "
        f"{row.next_try:%Y-%m-%d %H:%M} UTC): {row.last_error}"
    )
