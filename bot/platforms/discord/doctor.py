"""`studybot doctor`'s Discord checks: the token's shape offline; with `--online`, what Discord
says of the token, the intents the application allows, each server's permissions and the
shard count it recommends."""

from __future__ import annotations

import base64
import binascii
import re
import urllib.error
from typing import Any

from bot.config import Settings
from bot.core.rules.numbers import ascii_int
from bot.doctor.checks import Check, JsonHttp, secret_value
from bot.platforms.discord import app as discord_app

# The permissions the README's invite link asks for (permissions=117760).
DISCORD_PERMISSIONS = {
    "View Channels": 1 << 10,
    "Send Messages": 1 << 11,
    "Embed Links": 1 << 14,
    "Attach Files": 1 << 15,
    "Read Message History": 1 << 16,
}
DISCORD_ADMINISTRATOR = 1 << 3
INVITE = (
    "https://discord.com/oauth2/authorize?client_id=APPLICATION_ID&scope=bot+applications.commands"
    f"&permissions={sum(DISCORD_PERMISSIONS.values())}"
)
# Privileged intents and the application flags that allow them (either the full or the limited flag).
PRIVILEGED_INTENTS = {
    "members": ("Server Members", (1 << 14) | (1 << 15)),
    "presences": ("Presence", (1 << 12) | (1 << 13)),
    "message_content": ("Message Content", (1 << 18) | (1 << 19)),
}


def token_problem(token: str) -> str | None:
    if token != token.strip() or token[:1] in "'\"":
        return "DISCORD_TOKEN has spaces or quotes around it"
    if token.lower().startswith("bot "):
        return "DISCORD_TOKEN starts with 'Bot ': the bot adds that itself"
    parts = token.split(".")
    if len(parts) != 3 or not all(re.fullmatch(r"[A-Za-z0-9_-]+", p) for p in parts):
        return "DISCORD_TOKEN is not shaped like a bot token (three dot-separated base64 parts)"
    try:
        user_id = base64.urlsafe_b64decode(parts[0] + "=" * (-len(parts[0]) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        user_id = ""
    if ascii_int(user_id, 20) is None or len(parts[2]) < 20:
        return "DISCORD_TOKEN is not shaped like a bot token (its first part is not a bot's id)"
    return None


def check_token(settings: Settings) -> Check | None:
    token = secret_value(settings.discord_token)
    if token is None:
        return None
    problem = token_problem(token)
    if problem is not None:
        return Check(
            "discord token",
            "fail",
            problem,
            "copy the token again from the Developer Portal (your application -> Bot -> Reset Token)",
        )
    return Check("discord token", "ok", "DISCORD_TOKEN is set and shaped like a bot token (not shown)")


def _asked_intents() -> list[str]:
    return [name for name, on in discord_app.bot_intents() if on]


def check_offline() -> list[Check]:
    asked = _asked_intents()
    privileged = [PRIVILEGED_INTENTS[n][0] for n in asked if n in PRIVILEGED_INTENTS]
    intents = Check(
        "discord intents",
        "ok",
        f"asks for {', '.join(asked)}"
        + (
            f"; turn on {', '.join(privileged)} in the Developer Portal (Bot -> Privileged Gateway Intents)"
            if privileged
            else " (none privileged: nothing to turn on in the Developer Portal)"
        ),
    )
    names = ", ".join(DISCORD_PERMISSIONS)
    permissions = Check(
        "discord permissions",
        "ok",
        f"the invite asks for {names} (permissions={sum(DISCORD_PERMISSIONS.values())}); "
        "`studybot doctor --online` checks each server",
    )
    return [intents, permissions]


def _intents_check(application: Any) -> Check:
    """Intents: each privileged one the bot asks for needs its flag on the application
    (`application`: Discord's answer to /oauth2/applications/@me)."""
    flags = int(application.get("flags") or 0) if isinstance(application, dict) else 0
    asked = _asked_intents()
    missing = [
        PRIVILEGED_INTENTS[n][0] for n in asked if n in PRIVILEGED_INTENTS and not flags & PRIVILEGED_INTENTS[n][1]
    ]
    if missing:
        return Check(
            "discord intents",
            "fail",
            f"the bot asks for {', '.join(missing)}, which the application does not allow",
            "turn it on in the Developer Portal (Bot -> Privileged Gateway Intents)",
        )
    return Check("discord intents", "ok", f"asks for {', '.join(asked)}; the application allows them")


def check_online(settings: Settings, http: JsonHttp) -> list[Check]:
    token = secret_value(settings.discord_token)
    assert token is not None
    api = settings.discord_api_url.rstrip("/")
    auth = {"Authorization": f"Bot {token}"}
    try:
        status, me, _ = http.call("GET", f"{api}/users/@me", auth)
    except (urllib.error.URLError, OSError) as exc:
        return [
            Check(
                "discord api",
                "fail",
                f"cannot reach {api}: {getattr(exc, 'reason', exc)}",
                "check the network, or STUDYBOT_DISCORD_API_URL",
            )
        ]
    if status == 401:
        return [
            Check(
                "discord api",
                "fail",
                "Discord refused DISCORD_TOKEN (401)",
                "reset the token in the Developer Portal (Bot -> Reset Token) and set the new one",
            )
        ]
    if status != 200 or not isinstance(me, dict):
        return [Check("discord api", "fail", f"{api}/users/@me answered {status}", "try again later")]
    checks = [Check("discord api", "ok", f"logged in as {str(me.get('username', '?'))[:40]} (id {me.get('id')})")]
    _, application, _ = http.call("GET", f"{api}/oauth2/applications/@me", auth)
    checks.append(_intents_check(application))
    # Permissions, server by server (the bot's server-wide permissions; channel overrides can still deny).
    status, guilds, _ = http.call("GET", f"{api}/users/@me/guilds", auth)
    if status != 200 or not isinstance(guilds, list):
        checks.append(Check("discord permissions", "warn", f"listing the servers answered {status}", "try again later"))
    elif not guilds:
        checks.append(Check("discord permissions", "warn", "the bot is in no server yet", f"invite it: {INVITE}"))
    else:
        short = []
        for guild in guilds:
            have = int(guild.get("permissions") or 0)
            if have & DISCORD_ADMINISTRATOR:
                continue
            lacking = [name for name, bit in DISCORD_PERMISSIONS.items() if not have & bit]
            if lacking:
                short.append(f"{str(guild.get('name'))[:40]} ({guild.get('id')}) lacks {', '.join(lacking)}")
        if short:
            checks.append(
                Check(
                    "discord permissions",
                    "fail",
                    f"{len(short)} of {len(guilds)} servers: " + "; ".join(short[:5]),
                    f"give the bot's role those permissions, or invite it again with {INVITE}",
                )
            )
        else:
            checks.append(Check("discord permissions", "ok", f"all {len(guilds)} servers grant what the bot needs"))
    # Shards: Discord says how many it wants.
    status, gateway, _ = http.call("GET", f"{api}/gateway/bot", auth)
    if status == 200 and isinstance(gateway, dict):
        wanted = int(gateway.get("shards") or 1)
        have = settings.discord_shard_count or 1
        if wanted > have:
            checks.append(
                Check(
                    "discord shards",
                    "warn",
                    f"Discord recommends {wanted} shards; this configuration runs {have}",
                    f"set STUDYBOT_DISCORD_SHARD_COUNT={wanted} on every process (docs/discord.md: many servers)",
                )
            )
        else:
            checks.append(Check("discord shards", "ok", f"{have} shard(s); Discord recommends {wanted}"))
    return checks


def check_platform(settings: Settings, online: bool, http: JsonHttp) -> list[Check]:
    """After the shared checks: Discord's answers with `--online` and a well-formed token,
    else what can be read here."""
    token = secret_value(settings.discord_token)
    if online and token is not None and token_problem(token) is None:
        return check_online(settings, http)
    return check_offline()
