"""What every feature's sentences share: counts and percentages, the kinds of question, a stale
button or form, the bug reply, forget-me, /help on a chat platform, and what is not here."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.values import ConfirmForget, Forgotten, Problem, StatsLine

# ---------------------------------------------------------------- shared

KIND_LABELS = {"daily": "Daily question", "practice": "Practice question", "review": "Review"}


# A click or select whose id the bot cannot decode (an older release's message, a hand-made id).
STALE_BUTTON = "This button is from an older question and no longer works."
# A form submitted that the bot did not open for this member (or opened more than a day ago).
FORM_NOT_OURS = "This form was not opened by the bot for you, or it has expired: open it again to send it."
BUG = "Sorry, something went wrong on our side (incident {incident}); nothing you stored was lost."


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def trap_line(trap: str) -> str:
    return f"Common trap: {trap}"


def refs_line(refs: Iterable[str]) -> str:
    return "Read more: " + "; ".join(refs)


def percent(line: StatsLine) -> str:
    return f"{line.correct}/{line.answered} ({line.accuracy:.0%})" if line.answered else "none yet"


# ------------------------------------------------------------- forget-me


def confirm_forget(card: ConfirmForget, command: str = "/forget-me confirm") -> str:
    return (
        f"This deletes everything stored about {card.user} here ({count(card.answers, 'answer')}). "
        f"Type {command} to go ahead."
    )


def forgotten(card: Forgotten) -> str:
    return f"Done: {count(card.answers_deleted, 'answer')} and your reviews are deleted."


# Who asked for a demo, once they asked to be forgotten (the web demos page, the admin page,
# `studybot jobs`, a demo still queued or running): the job stays, their id and name do not.
FORGOTTEN_MEMBER = "a forgotten member"


def problem(card: Problem) -> str:
    return card.text


def table_lines(header: tuple[str, ...], rows: tuple[tuple[str, ...], ...]) -> list[str]:
    """A header and rows as aligned text lines (first column left, the rest right)."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=False)]

    def row(cells: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) if index == 0 else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=False))
        ).rstrip()

    return [row(header), *(row(r) for r in rows)]


def counted(number: int, noun: str) -> str:
    """'1 layer', '4 layers', '1,200 reviews': a count a member reads, in the right number."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


# ---------------------------------------------- /help on a chat platform

# What each slash command does, for /help on a chat platform; `{config}` is that platform's
# name for the settings command (Slack: /studybot-config, whose /config may be taken).
COMMAND_HELP = (
    ("/quiz [topic]", "a private practice question"),
    ("/review [export]", "your missed questions, when they are due; export: all of them as an Anki deck"),
    ("/score", "your points, rank, accuracy, streaks and reviews due"),
    ("/leaderboard [week|all|2026-W48]", "the weekly or all-time leaderboard"),
    ("/demo checkpoint [layers=9 tokens=512 ...]", "measure peak memory with and without checkpointing"),
    ("/demo estimate [preset=gpt2-small batch=8 seq=1024]", "estimate a large model's peak memory"),
    ("/demo plan [model=hf-gpt2 gpu-gib=12 ...]", "what to checkpoint so a training step fits in N GiB"),
    ("/forget-me [confirm]", "delete your data in this workspace"),
    ("/suggest", "write a question for this community's bank; the admins approve it"),
    ("{config} [show|pause|resume|post-now|KEY VALUE]", "admins: settings (channel, time, timezone, window, topics)"),
    ("{config} suggestions", "admins: the members' questions waiting, to approve, send back or reject"),
)
HELP_TITLE = "Checkpoint Study Bot: a daily question on gradient checkpointing, with points and reviews."
HELP_ANSWERING = "Answer the daily question with its buttons, or reply in its thread with a letter or a choice's text."
PLATFORM_BUSY = "The chat service is busy right now, so this could not be shown; please try again in a minute."


def help_lines(config_command: str = "/config") -> list[str]:
    return [f"{usage.format(config=config_command)}: {what}" for usage, what in COMMAND_HELP]


# The console's own user (`studybot console --user NAME`): here rather than in the console's
# text because the CLI reads it as a default without loading the console.
CONSOLE_OPERATOR = "Operator"


def unknown_option(command: str, text: str, allowed: Iterable[str]) -> str:
    """`/review foo`: the command's own options, or that it takes none."""
    options = [f"/{command} {option}" for option in allowed]
    takes = f"type /{command}" + (f", or {' or '.join(options)}" if options else " alone")
    return f"/{command} takes no '{text[:30]}': {takes}."


# -------------------------------------------- asked for what is not here

NO_SUCH_COMMUNITY = "There is no such community."
NOTHING_ANSWERED_YET = "This member has not answered anything here yet."


def unknown_topic(topic: str, topics: Iterable[str]) -> str:
    """A topic the bank does not have (/quiz TOPIC, /config topics)."""
    return f"Unknown topic '{topic[:40]}'. Topics: {', '.join(topics)}."
