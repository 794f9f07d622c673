"""Which platforms `studybot run [console|discord|slack|all]` starts, from the tokens set.

Without an argument: every platform whose tokens are set (in one process, on one event loop,
with one scheduler for all their communities), else the console. A platform asked for by
name must have its tokens; a half-set platform (a Slack bot token with neither an app token
nor a signing secret) is named with the variable that is missing."""

from __future__ import annotations

from bot.config import Settings

TARGETS = ("console", "discord", "slack", "all")
ADAPTERS: tuple[str, ...] = ()  # platform adapters built into this release


class LaunchError(ValueError):
    """One sentence for the person starting the bot; the process exits with status 2."""


def _slack_problem(settings: Settings) -> str | None:
    has_bot = settings.slack_bot_token is not None
    has_transport = settings.slack_app_token is not None or settings.slack_signing_secret is not None
    if has_bot and not has_transport:
        return (
            "SLACK_BOT_TOKEN is set but neither SLACK_APP_TOKEN (Socket Mode) nor SLACK_SIGNING_SECRET "
            "(HTTP) is: set one of them."
        )
    if has_transport and not has_bot:
        which = "SLACK_APP_TOKEN" if settings.slack_app_token is not None else "SLACK_SIGNING_SECRET"
        return f"{which} is set but SLACK_BOT_TOKEN is not: set SLACK_BOT_TOKEN too."
    return None


def choose_platforms(settings: Settings, target: str | None) -> tuple[str, ...]:
    """The platforms to start, or a LaunchError saying what is missing."""
    if target is not None and target not in TARGETS:
        raise LaunchError(f"Unknown platform '{target[:30]}'; choose one of {', '.join(TARGETS)}.")
    slack_problem = _slack_problem(settings)
    discord_ready = settings.discord_token is not None
    slack_ready = settings.slack_bot_token is not None and slack_problem is None
    if target == "console":
        return ("console",)
    if target == "discord":
        if not discord_ready:
            raise LaunchError("DISCORD_TOKEN is not set: set it to the bot token from the Developer Portal.")
        return ("discord",)
    if target == "slack":
        if not slack_ready:
            raise LaunchError(
                slack_problem or "SLACK_BOT_TOKEN is not set: set it with SLACK_APP_TOKEN or SLACK_SIGNING_SECRET."
            )
        return ("slack",)
    if slack_problem is not None:  # a half-set Slack is a mistake, not a reason to skip Slack quietly
        raise LaunchError(slack_problem)
    chosen = tuple(name for name, ready in (("discord", discord_ready), ("slack", slack_ready)) if ready)
    if target == "all":
        if not chosen:
            raise LaunchError(
                "No platform tokens are set: set DISCORD_TOKEN, or SLACK_BOT_TOKEN with "
                "SLACK_APP_TOKEN or SLACK_SIGNING_SECRET."
            )
        return chosen
    return chosen or ("console",)


def unavailable(platforms: tuple[str, ...]) -> str | None:
    """A sentence when a chosen platform's adapter is not in this release, else None."""
    missing = [name for name in platforms if name != "console" and name not in ADAPTERS]
    if not missing:
        return None
    names = " and ".join(name.capitalize() for name in missing)
    return (
        f"The {names} adapter is not part of this release yet; `studybot run console` starts the "
        "console chat on the same database."
    )
