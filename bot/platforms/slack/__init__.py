"""Slack: Bolt's AsyncApp over Socket Mode or HTTP, one workspace or many (OAuth)."""

from bot.platforms.slack.app import SlackBot, attach, build_app
from bot.platforms.slack.listeners import EVENTS
from bot.platforms.slack.slash import COMMANDS, CONFIG_COMMAND

__all__ = ["COMMANDS", "CONFIG_COMMAND", "EVENTS", "SlackBot", "attach", "build_app"]
