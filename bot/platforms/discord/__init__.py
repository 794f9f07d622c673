"""The Discord adapter: `build_bot(settings)` for tests and tools, `attach(settings, runtime)`
for `studybot run discord`."""

from __future__ import annotations

from bot.platforms.discord.app import DiscordApp, StudyBot, attach, build_bot

__all__ = ["DiscordApp", "StudyBot", "attach", "build_bot"]
