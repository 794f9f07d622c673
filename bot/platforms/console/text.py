"""The console's own text: its greeting (Rich markup), /help, /as, the guided /suggest prompts
and the hints that say what to type where a chat platform shows a button. The sentences
every platform shares are in bot/core/wording."""

from __future__ import annotations

from bot.core.wording.learning import CONSOLE_GUESS_USAGE, GUESS_INVITE

# ------------------------------------------------------------- answering

# The console's daily round: no buttons and no replies there, so `daily b` answers it.
DAILY_TEXT_HINT = "Answer with daily and a letter (daily b) or daily and the choice's text; a daily answer is final."


CONSOLE_ASK_SURE = (
    "How sure were you? Type sure or unsure (it changes no points; it tunes your reviews); "
    "this stays asked until you do or a new question is shown."
)


CONSOLE_SURE_WHEN = "Say sure or unsure right after an answer, or with it: b sure."


# --------------------------------------------- /suggest's guided prompts

# Each field /suggest asks for in turn; `{done}` is SUGGEST_DONE_HINT once two choices are in.
SUGGEST_STEPS = {
    "topic": "Topic? One of: {topics}.",
    "level": "Level? 1 intro, 2 practitioner, 3 expert.",
    "prompt": "The question (at most 300 characters, ending with ?):",
    "choice": "Choice {letter} (at most 80 characters){done}:",
    "why": "Why is {letter} right or wrong (at least 40 characters)?",
    "correct": "Which choice is right? A letter.",
    "trap": "The trap, the misconception that makes people pick wrong (- to skip):",
    "explain": "A general explanation for the reveal (- to skip):",
    "hint": "A hint shown before an answer, 20 to 200 characters, that does not give the answer away (- to skip):",
    "refs": "A reference a reader can open (a document's name or a link):",
}
# The console asks a refused form's fields again, one by one; the rest of what was typed is kept.
SUGGEST_FIX = "The rest of what you typed is kept: answer again for {fields} and it is sent again (/cancel stops)."
SUGGEST_DONE_HINT = ", or done"
SUGGEST_STARTED = "Suggesting a question: answer each prompt (/cancel stops)."
SUGGEST_CANCELLED = "Suggestion cancelled; nothing was sent."


# -------------------------------------------------------------- the chat

# Rich markup: only a terminal is greeted, through Rich (JSON lines and plain output are not).
CONSOLE_GREETING = "[bold]Checkpoint Study Bot[/bold]: console chat. Type /help, or /daily to start."
CONSOLE_HELP = """Commands:
  /daily                 open today's daily round in this channel
  /close                 close the open daily round and reveal the answer
  /quiz [topic]          a private practice question
  /review [export]       your missed questions, when they are due; export: as an Anki deck file
  /score                 your points, rank, accuracy, streaks and reviews due
  /leaderboard [week|all|2026-W48]
  /as NAME               play another member (only the operator, who started the console, changes settings)
  /config [KEY VALUE]    show or change settings (channel, time, timezone, window, topics, web), pause, resume, post-now
  /demo checkpoint [layers=9 tokens=512 width=128 strategies=none,block,sqrt,selective ...]
  /demo estimate [preset=gpt2-small batch=8 seq=1024 gpu-gib=24]
  /demo plan [model=hf-gpt2 gpu-gib=12 batch=8 seq=1024 dtype=fp32 optimizer=adamw shards=1]
  /suggest               write a question for this community's bank (guided prompts; /cancel stops)
  /config suggestions    the questions waiting; /config approve N, note N TEXT, reject N, remove QUESTION-ID
  /forget-me [confirm]   delete your data in this community
  /help, /quit
A bare line answers your pending practice question (a letter such as b, B) or b., or
the choice's text); the daily round takes only daily and a letter (daily b), so a line
meant for one never spends the other. Add how sure you were (b sure, daily b unsure),
or type sure or unsure on the next line. While a queued /demo checkpoint
invites guesses, guess 1-4 guesses its saving (under 25%, 25-50%, 50-75%, over 75%)."""
CONSOLE_SAY_WHO = "Say who: /as NAME."


def console_operator_only(operator: str) -> str:
    """A member played with /as asked to change a setting or decide a question."""
    return (
        f"Only the console's operator, {operator}, changes settings and decides members' questions: "
        f"/as {operator} to be them again."
    )


def console_one_channel(asked: str, own: str) -> str:
    """The console refuses a channel it does not have (a made-up one would get rounds nobody sees)."""
    return f"The console has one channel, #{own}; there is no #{asked} here, so the setting is unchanged."


CONSOLE_BYE = "Bye."
CONSOLE_DEMOS_OFF = "Demos are not enabled in this session."


def console_line_too_long(length: int, limit: int) -> str:
    return f"That line is {length:,} characters long; the limit is {limit:,}."


def console_now_you(name: str) -> str:
    return f"You are now {name}."


def unknown_command(command: str) -> str:
    return f"Unknown command {command[:30]}; type /help for the list."


def guess_invite_console() -> str:
    """The guess invitation with what to type (the console has no buttons to pick a band)."""
    return f"{GUESS_INVITE} {CONSOLE_GUESS_USAGE}."
