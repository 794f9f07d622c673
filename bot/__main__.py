"""`python -m bot`: the `studybot` command line (bot/cli)."""

from __future__ import annotations

from bot.cli import main

if __name__ == "__main__":
    main()
