"""Slack: Bolt's AsyncApp over Socket Mode or HTTP, one workspace or many (OAuth)."""

from bot.platforms.slack.app import COMMANDS, EVENTS, SlackBot, attach, build_app

__all__ = ["COMMANDS", "EVENTS", "SlackBot", "attach", "build_app"]
