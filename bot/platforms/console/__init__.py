"""The console adapter: `attach(settings, runtime, options)` for `studybot console` and
`studybot run console`; `render` and `Message` for tools that print cards."""

from __future__ import annotations

from bot.config import Settings
from bot.platforms.console.app import CHANNEL, PLATFORM, ConsoleApp, ConsoleOptions
from bot.platforms.console.render import Message, render
from bot.platforms.runtime import Runtime

__all__ = ["CHANNEL", "PLATFORM", "ConsoleApp", "ConsoleOptions", "Message", "attach", "render"]


def attach(settings: Settings, runtime: Runtime, options: ConsoleOptions | None = None) -> ConsoleApp:
    """The adapter for bot.platforms.launch.serve: reads stdin, prints to stdout."""
    fallback = ConsoleOptions(demo_wait_s=settings.demo_timeout_s + 30, export_dir=settings.demo_out_dir)
    return ConsoleApp(runtime, options or fallback)
