"""Every sentence a user reads, written once for every platform. Platforms only lay these
out (an embed, Block Kit, console lines); none of them words a message of its own."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from bot.core.rating import MIN_LEVEL_ANSWERS
from bot.core.values import (
    AlreadyAnswered,
    AlreadyNoted,
    AlreadyOpen,
    AnswerFeedback,
    Calibration,
    ChoiceReveal,
    ConfidenceNoted,
    ConfigCard,
    ConfirmForget,
    DemoFailedCard,
    DemoProgressCard,
    DemoQueued,
    DemoResultCard,
    Forgotten,
    LeaderboardCard,
    LeaderboardRow,
    NothingDue,
    Problem,
    QuestionCard,
    RepairOffer,
    RevealCard,
    RoundClosed,
    ScoreCard,
    StatsLine,
    letter,
)

KIND_LABELS = {"daily": "Daily question", "practice": "Practice question", "review": "Review"}
ANSWER_HINT = "Reply with a letter or the choice's text."
# The console's daily round: no buttons and no replies there, so `daily b` answers it.
DAILY_TEXT_HINT = "Answer with daily and a letter (daily b) or daily and the choice's text; a daily answer is final."
BUTTON_HINT = "Pick an answer below, or reply with a letter or the choice's text."
NOT_AN_ANSWER = "That is not an answer to anything open: reply with a letter or a choice's text, or type /help."
NOTHING_OPEN = "There is no open question here right now; a new one comes with the next daily round."
NO_OPEN_DAILY = "There is no open daily round in this channel to answer; a new one comes with the next daily round."


NOT_THIS_COMMUNITYS_QUESTION = "That question is not one of this community's; ask for a new one with /quiz."


def daily_needs_word(number: int, platform: str) -> str:
    """A bare letter with no practice question pending: it never spends a daily answer."""
    if platform == "console":
        how = "type daily and your letter (daily b)"
    else:
        how = "use its buttons, reply to its post, or write daily and your letter (daily b)"
    return (
        f"A bare letter answers only a practice question you asked for, and you have none pending. "
        f"To answer daily round #{number}, {how}; a daily answer is final."
    )


def not_a_choice(number: int, choices: int) -> str:
    """A letter the round does not show (`z`, or `e` with A-D open): its own letters."""
    return (
        f"#{number} has choices {letter(0)} to {letter(choices - 1)}: "
        "reply with one of those letters or a choice's text."
    )


def answered_which(card: AnswerFeedback) -> str:
    """Which round took a text answer (a daily answer is final, a practice one is not scored)."""
    if card.kind == "daily":
        return f"This answered daily round #{card.number}; a daily answer is final."
    return f"This answered your {KIND_LABELS[card.kind].lower()} #{card.number}."


# A click or select whose id the bot cannot decode (an older release's message, a hand-made id).
STALE_BUTTON = "This button is from an older question and no longer works."
# A form submitted that the bot did not open for this member (or opened more than a day ago).
FORM_NOT_OURS = "This form was not opened by the bot for you, or it has expired: open it again to send it."
BUG = "Sorry, something went wrong on our side (incident {incident}); nothing you stored was lost."


def count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


# ------------------------------------------------------------------ questions


def question_title(card: QuestionCard) -> str:
    late = " (posted late: its usual time had already passed)" if card.late else ""
    return f"{KIND_LABELS[card.kind]} #{card.number} [{card.topic}, level {card.difficulty}]{late}"


def replaced_line(card: QuestionCard) -> str | None:
    """A private question that replaces the member's unanswered one (it takes no answer now)."""
    if card.replaced is None:
        return None
    return f"This replaces your unanswered question #{card.replaced}, which no longer takes an answer."


def choice_lines(choices: Iterable[str]) -> list[str]:
    return [f"{letter(i)}) {text}" for i, text in enumerate(choices)]


# -------------------------------------------------------------------- answers


def feedback_headline(card: AnswerFeedback) -> str:
    head = "Correct!" if card.correct else f"Not quite: the answer is {card.answer}) {card.answer_text}."
    points = f" +{counted(card.points, 'point')}" if card.points else ""
    bonus = f" (streak bonus +{card.streak_bonus})" if card.streak_bonus else ""
    return f"{head}{points}{bonus}"


def feedback_why(card: AnswerFeedback) -> str:
    return f"You chose {card.chosen}) {card.chosen_text}: {card.why}"


def trap_line(trap: str) -> str:
    return f"Common trap: {trap}"


def feedback_lines(card: AnswerFeedback) -> list[str]:
    lines = [feedback_headline(card), feedback_why(card)]
    if card.trap:
        lines.append(trap_line(card.trap))
    if card.noted is not None:
        lines.append(noted(card.noted))
    if card.streak_repaired:
        lines.append(streak_repaired(card.streak_repaired))
    lines.append(answered_which(card))
    return lines


# ------------------------------------------------------------- how sure

SURE_LABEL = "Sure"
UNSURE_LABEL = "Unsure"
ASK_SURE = "How sure were you? (It changes no points; it tunes your reviews.)"
CONSOLE_ASK_SURE = (
    "How sure were you? Type sure or unsure (it changes no points; it tunes your reviews); "
    "this stays asked until you do or a new question is shown."
)
SURE_WRONG = "You were sure: this one comes back tomorrow."
NO_ANSWER_TO_RATE = "You have no answer to that question, so there is nothing to say how sure you were of."
CONSOLE_SURE_WHEN = "Say sure or unsure right after an answer, or with it: b sure."


def noted(card: ConfidenceNoted) -> str:
    """The reply to "how sure": a confident wrong answer says when it comes back."""
    if card.sure and not card.correct:
        return SURE_WRONG
    how = "sure" if card.sure else "unsure"
    outcome = "" if not card.correct else (", and right" if card.sure else ", and right this time")
    text = f"Noted: you were {how}{outcome}."
    if card.grade is not None and card.due is not None:
        text += f" Your review was graded {card.grade}; it comes back {card.due:%Y-%m-%d %H:%M} UTC."
    return text


def already_noted(card: AlreadyNoted) -> str:
    how = "sure" if card.sure else "unsure"
    return f"Already recorded: you said you were {how} of your answer to #{card.number}, and that stands."


def calibration_lines(card: Calibration | None) -> list[str]:
    """/score's and the web pages' lines on calibration (none before any confidence was given)."""
    if card is None:
        return []

    def right(line: StatsLine) -> str:
        return f"{percent(line)} right" if line.answered else "none yet"

    lines = [f"When sure: {right(card.sure)}; when unsure: {right(card.unsure)}."]
    if card.brier is None:
        lines.append(f"Calibration shows after {count(card.needed, 'more answer')} with sure or unsure.")
    else:
        lines.append(f"Calibration (Brier score; 0 is perfect, 0.25 a coin toss): {card.brier:.3f}.")
    return lines


# The web pages' calibration section (bot/web/templates/calibration.html).
CALIBRATION_NOTE = (
    "Sure counts as a 90% chance of being right and unsure as 50%; the Brier score is the mean squared gap "
    "between that chance and what happened: 0 is perfect, 0.25 is a coin toss."
)
CALIBRATION_NONE = "No answer with sure or unsure yet: say how sure you were after an answer."


def already_answered(card: AlreadyAnswered) -> str:
    if card.chosen is None:
        return "You answered this round before you asked to be forgotten; that first answer stays final."
    return f"You already answered {card.chosen}; your first answer is the one that counts."


def round_closed(card: RoundClosed) -> str:
    return f"Round #{card.number} is closed, so this answer was not scored. The answer was {card.answer}."


def already_open(card: AlreadyOpen) -> str:
    which = f"#{card.number}, {card.local_date}" if card.number else card.local_date  # 0: opened elsewhere just now
    if card.closed:
        return f"Today's round ({which}) is closed; the next one opens {card.next_opens}."
    return f"Today's round ({which}) is already open here."


# --------------------------------------------------------------------- reveal


def reveal_title(card: RevealCard) -> str:
    return f"Answer to #{card.number}: {card.answer}) {card.answer_text}"


def reveal_choice(choice: ChoiceReveal) -> str:
    mark = "right" if choice.correct else "wrong"
    return f"{choice.letter}) {choice.text} [{choice.count} picked, {mark}]: {choice.why}"


def reveal_summary(card: RevealCard) -> str:
    return f"{count(card.answered, 'answer')} in all."


def refs_line(refs: Iterable[str]) -> str:
    return "Read more: " + "; ".join(refs)


# ---------------------------------------------------------------- score, board


def percent(line: StatsLine) -> str:
    return f"{line.correct}/{line.answered} ({line.accuracy:.0%})" if line.answered else "none yet"


def score_lines(card: ScoreCard, with_link: bool = True) -> list[str]:
    rank = f"rank {card.week_rank}" if card.week_rank else "unranked"
    lines = [
        f"{card.user}: {counted(card.week_points, 'point')} in {card.week} ({rank}), {card.total_points} all time.",
        f"Daily accuracy {percent(card.daily)}; practice {percent(card.practice)}.",
        f"Streak {card.streak} (best {card.best_streak}). Reviews due: {card.reviews_due}.",
        *levels_lines(card.levels),
        *calibration_lines(card.calibration),
        *streak_repair_lines(card),
    ]
    if card.link and with_link:
        lines.append(f"{MEMBER_LINK}: {card.link}")
    return lines


# The signed web links /score and /config carry (the page behind them is bot/web).
MEMBER_LINK = "Your progress on the web (a private link that expires)"
ADMIN_LINK = "Admin page on the web (a private link that expires)"


def leaderboard_title(card: LeaderboardCard) -> str:
    return "All-time leaderboard" if card.scope == "all" else f"Leaderboard for {card.scope}"


def leaderboard_row(row: LeaderboardRow) -> str:
    return f"{row.rank}. {row.user}: {row.points}"


EMPTY_BOARD = "No points yet."


def leaderboard_lines(card: LeaderboardCard) -> list[str]:
    """The ranked rows (or that nobody scored), then a line for admins when questions are flagged."""
    lines = [leaderboard_row(row) for row in card.rows] or [EMPTY_BOARD]
    if card.flagged:
        shown = ", ".join(card.flagged[:5]) + (f" and {len(card.flagged) - 5} more" if len(card.flagged) > 5 else "")
        lines.append(
            f"For admins: the answers suggest {count(len(card.flagged), 'question')} need a look ({shown}); "
            "/config shows why."
        )
    return lines


# -------------------------------------------------------------- the rest


def nothing_due(card: NothingDue) -> str:
    when = f" The next one is due {card.next_due:%Y-%m-%d %H:%M} UTC." if card.next_due else ""
    return f"No reviews are due.{when}"


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


def problem(card: Problem) -> str:
    return card.text


def demo_queued(card: DemoQueued) -> str:
    what = card.module.removeprefix("demos.")
    if card.position <= 1:
        return f"Demo #{card.number} ({what}) for {card.user}: starting; results appear here as each strategy finishes."
    return f"Demo #{card.number} ({what}) for {card.user}: queued, {card.position - 1} ahead of it."


def demo_progress_title(card: DemoProgressCard) -> str:
    return f"Demo #{card.number}: {card.done} of {card.total} measured so far. {card.title}"


def demo_failed(card: DemoFailedCard) -> str:
    return f"Demo #{card.number} did not finish: {card.text}"


def table_lines(header: tuple[str, ...], rows: tuple[tuple[str, ...], ...]) -> list[str]:
    """A header and rows as aligned text lines (first column left, the rest right)."""
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=False)]

    def row(cells: tuple[str, ...]) -> str:
        return "  ".join(
            cell.ljust(width) if index == 0 else cell.rjust(width)
            for index, (cell, width) in enumerate(zip(cells, widths, strict=False))
        ).rstrip()

    return [row(header), *(row(r) for r in rows)]


def demo_lines(card: DemoResultCard) -> list[str]:
    """The demo's table as aligned text lines (title, header, rows, notes), then every chart's
    path, the memory timeline first."""
    lines = [card.title, *table_lines(card.header, card.rows), *card.notes]
    if card.where:
        lines.append(f"Ran on {card.where}.")
    lines.extend(chart_line(chart.path) for chart in card.pictures())
    return lines


def counted(number: int, noun: str) -> str:
    """'1 layer', '4 layers', '1,200 reviews': a count a member reads, in the right number."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {noun}s"


def demo_shape(data: dict[str, Any]) -> str:
    """', transformer, 4 layers, batch 4 x 256 tokens, width 128, 4 heads' from a checkpoint result."""
    model, layers = data.get("model"), data.get("layers")
    if not model:
        return ""
    if data.get("heads"):
        batch, tokens, width = data.get("batch", 1), data.get("tokens"), data.get("width")
        size = f"batch {batch} x {tokens} tokens, width {width}, {data['heads']} heads"
    else:
        size = f"{data.get('tokens')} tokens x width {data.get('width')}"
    return f", {model}, {counted(layers, 'layer') if isinstance(layers, int) else f'{layers} layers'}, {size}"


def demo_estimate_note(kernels: str) -> str:
    note = (
        f"est: the fake-tensor estimate of the same step (nothing allocated), attention traced as "
        f"{kernels.upper()} kernels allocate; err: the estimate against the measured peak."
    )
    if kernels == "cpu":
        note += (
            " On the CPU the estimate and the meter count the same tensors through the same kernels, so an "
            "err near 0% says they agree, not how close the estimate comes to a GPU's peak."
        )
    return note


DEMO_CPU_TIMES_NOTE = "CPU step times do not carry over to GPUs: read them as this machine's, not checkpointing's cost."


def demo_spread_note(wide: bool) -> str:
    """What the step time columns mean; `wide` when a row is marked unsettled."""
    note = "step ms: the median of the timed steps; spread: their interquartile range (under 4 repeats, min-max)."
    if wide:
        note += " ! marks a spread over a quarter of the median: that time is not settled."
    return note


DEMO_BUDGET_NOTE = (
    "budget: torch.compile with an activation memory budget (not estimated: compiled code is traced "
    "eagerly); compiled code may reorder float sums, so its gradients are compared by their largest difference."
)


def estimate_notes(data: dict[str, Any]) -> list[str]:
    """The estimate's verdict, the kernels it assumed and a published figure to hold it to."""
    notes = [str(data["verdict"])] if data.get("verdict") else []
    if data.get("kernels"):
        notes.append(f"Attention traced as {str(data['kernels']).upper()} kernels allocate.")
    ref = data.get("reference")
    if isinstance(ref, dict) and ref.get("source"):
        notes.append(
            f"{ref['source']}: {ref.get('without_gib')} and {ref.get('with_gib')} GiB (optimizer state plus "
            f"step peak); this estimate: {ref.get('estimate_without_gib')} and {ref.get('estimate_with_gib')} GiB."
        )
    return notes


CHART_PREFIX = "chart: "
# Each chart's title where a platform names a file (Slack's upload, the web page).
CHART_TITLES = {
    "timeline": "Memory through one training step, every strategy on the same axes",
    "budget": "The memory budget's trade-off: peak memory against step time",
    "memory": "Peak memory and step time per strategy",
    "sweep": "Peak memory against depth",
    "chart": "Peak memory chart",
}


def chart_line(path: str) -> str:
    return f"{CHART_PREFIX}{path}"


def chart_title(kind: str) -> str:
    return CHART_TITLES.get(kind, CHART_TITLES["chart"])


# ------------------------------------------------------------- /demo requests

DEMO_USAGE = "Say /demo checkpoint [key=value ...] or /demo estimate [preset=gpt2-small ...]."


def demo_not_key_value(word: str) -> str:
    return f"'{word}' is not key=value (for example layers=16)."


def demo_twice(key: str) -> str:
    return f"{key} is given twice; say it once."


def demo_whole_number(key: str, low: int, high: int, value: str) -> str:
    return f"{key} must be a whole number from {low} to {high}, not '{value}'."


def demo_number(key: str, low: float, high: float, value: str) -> str:
    return f"{key} must be a number from {low:g} to {high:g}, not '{value}'."


def demo_one_of(key: str, options: Iterable[str], value: str) -> str:
    return f"{key} must be one of {', '.join(options)}, not '{value}'."


def demo_unknown_strategy(name: str, strategies: Iterable[str]) -> str:
    return f"Unknown strategy '{name}'; choose from {', '.join(strategies)}."


def demo_budgets(value: str, most: int) -> str:
    return f"budgets are up to {most} numbers from 0 to 1, comma-separated (budgets=1,0.5,0), not '{value}'."


def demo_unknown_setting(key: str, known: Iterable[str]) -> str:
    return f"Unknown demo setting '{key}'; use {', '.join(known)}."


def demo_heads_divide(width: int, heads: int, model: str) -> str:
    return f"width ({width}) must be a multiple of heads ({heads}) for the {model} model."


def demo_hf_strategies(strategy: str, allowed: Iterable[str]) -> str:
    return f"The hf-gpt2 model runs {', '.join(allowed)}; {strategy} needs a plain layer stack."


QUESTION_DEMO_CUDA = "a question's demo must run on any worker: no device=cuda and no offload (CUDA only)."
QUESTION_DEMO_HF = "a question's demo must run on any worker: hf-gpt2 needs the transformers package."


def question_demo_too_slow(seconds: float, limit: float) -> str:
    return (
        f"a question's demo must run in seconds; this one's cost is about {seconds:,.0f} s by the demo's "
        f"CPU cost model, over {limit:g} s (fewer layers, tokens, strategies or repeats)."
    )


# ------------------------------------------------------- "see it run" (a reveal's demo)

SEE_IT_RUN = "See it run"
NO_QUESTION_DEMO = "This question has no demo to run."
QUESTION_DEMO_NOT_REVEALED = "This question's demo can be run once its answer is revealed."


def see_it_run_hint(demo: str) -> str:
    """Under a reveal: what the button queues (the console prints it as the command to type)."""
    return f"See it run: /demo {demo}"


# ------------------------------------------------- chat platforms (Slack, Discord)

# What each slash command does, for /help on a chat platform; `{config}` is that platform's
# name for the settings command (Slack: /studybot-config, whose /config may be taken).
COMMAND_HELP = (
    ("/quiz [topic]", "a private practice question"),
    ("/review [export]", "your missed questions, when they are due; export: all of them as an Anki deck"),
    ("/score", "your points, rank, accuracy, streaks and reviews due"),
    ("/leaderboard [week|all|2026-W48]", "the weekly or all-time leaderboard"),
    ("/demo checkpoint [layers=9 tokens=512 ...]", "measure peak memory with and without checkpointing"),
    ("/demo estimate [preset=gpt2-small batch=8 seq=1024]", "estimate a large model's peak memory"),
    ("/forget-me [confirm]", "delete your data in this workspace"),
    ("/suggest", "write a question for this community's bank; the admins approve it"),
    ("{config} [show|pause|resume|post-now|KEY VALUE]", "admins: settings (channel, time, timezone, window, topics)"),
    ("{config} suggestions", "admins: the members' questions waiting, to approve, send back or reject"),
)
HELP_TITLE = "Checkpoint Study Bot: a daily question on gradient checkpointing, with points and reviews."
HELP_ANSWERING_DISCORD = (
    "Answer the daily question with its buttons, or reply to it mentioning the bot with a letter or a choice's text."
)
HELP_ANSWERING = "Answer the daily question with its buttons, or reply in its thread with a letter or a choice's text."
CONFIG_ADMINS_ONLY = (
    "Only workspace admins and owners (and the members the bot's operator allowed) can change settings; "
    "anyone can see them with {config} show."
)
PLATFORM_BUSY = "The chat service is busy right now, so this could not be shown; please try again in a minute."
ANSWERS_CLOSED = "Answers are closed: the answer and every choice's why are in the thread."
START_REVIEW = "Start a review"
HOME_BOARD_TITLE = "This week"
DEMO_CHART_TITLE = "Peak memory chart"  # a chart of unknown kind (see CHART_TITLES)


def help_lines(config_command: str = "/config") -> list[str]:
    return [f"{usage.format(config=config_command)}: {what}" for usage, what in COMMAND_HELP]


def config_admins_only(config_command: str = "/config") -> str:
    return CONFIG_ADMINS_ONLY.format(config=config_command)


def daily_opened(card: QuestionCard) -> str:
    return f"Today's round #{card.number} is open; its question is being posted in the channel."


def reveal_count(choice: ChoiceReveal) -> str:
    """A choice with how many picked it, for the question once its round is closed."""
    mark = " (the answer)" if choice.correct else ""
    return f"{choice.letter}) {choice.text}: {choice.count} picked{mark}"


# ------------------------------------------------------------- chat platforms

# Slash command and option descriptions as Discord shows them (at most 100 characters each).
COMMANDS = {
    "quiz": "A private practice question (optionally on one topic).",
    "review": "Your missed questions, when they are due again.",
    "score": "Your points, rank, accuracy, streaks and reviews due.",
    "leaderboard": "This week's board, all time, or an ISO week such as 2026-W48.",
    "demo": "Measure activation checkpointing: peak memory with and without it.",
    "forget-me": "Delete everything stored about you in this server.",
    "config": "Show or change the daily round's settings, or decide suggested questions (Manage Server).",
    "suggest": "Write a question for this server's bank; the admins approve it.",
    "help": "What this bot does and its commands.",
}
OPTIONS = {
    "topic": "Only questions on this topic.",
    "scope": "week (default), all, or an ISO week such as 2026-W48.",
    "confirm": "True deletes at once; without it you are told what would be deleted.",
    "setting": "What to show or change.",
    "value": "The new value (a channel defaults to this one).",
    "layers": "Blocks in the model (1-512).",
    "tokens": "Tokens per batch (1-65536).",
    "width": "Hidden width (8-4096).",
    "repeat": "Timed runs per strategy (1-20).",
    "strategies": "Comma-separated: none, block, sqrt, selective, selective-attn, offload, budget.",
    "model": "blocks, chain, transformer (GPT-style) or hf-gpt2 (Hugging Face's GPT-2).",
    "heads": "Attention heads of the transformer models (1-64; divides the width).",
    "demo_batch": "Sequences per batch for the transformer models (1-256).",
    "budgets": "Memory budgets for the budget strategy, 0 to 1, comma-separated (default 1,0.5,0.2,0).",
    "kernels": "Whose attention kernels the estimate traces: cuda (default) or cpu.",
    "preset": "A published model shape.",
    "batch": "Batch size (1-512).",
    "seq": "Sequence length (1-131072).",
    "gpu_gib": "GPU memory to fit in, GiB.",
}
DEMO_COMMANDS = {
    "checkpoint": "Run a small model with and without checkpointing and measure peak memory.",
    "estimate": "Estimate peak memory of a large model without allocating it.",
}
GUILD_ONLY = "Use this command in a server channel: scores and settings belong to a server."
NEEDS_MANAGE_SERVER = "Only members with the Manage Server permission can use /config."
FEEDBACK_DMS_CLOSED = (
    "Your answer is recorded. I could not send you the feedback privately because your direct messages "
    "are closed; the buttons on the question answer privately."
)
# An interaction's answer Discord refused: said privately where the member still waits.
ANSWER_FORBIDDEN = (
    "I could not show my answer here: the bot may not post in this channel. An admin can give it "
    "View Channels, Send Messages, Embed Links and Attach Files here."
)
ANSWER_FAILED = "Discord did not take my answer just now; please try again in a moment."


def closes_line(when: str) -> str:
    """`when`: the platform's own rendering of the closing time (a Discord timestamp)."""
    return f"Closes {when}."


# ------------------------------------------------- members' questions, levels

# Discord's and Slack's /suggest (modals) and the admins' queue buttons use these; /help lists
# /suggest (COMMAND_HELP, COMMANDS).
SUGGEST_BUTTONS = {"approve": "Approve", "note": "Send back with a note", "reject": "Reject"}
SUGGEST_CONTINUE = "Continue: explain each choice"
SUGGEST_RETRY = "Try again (what you typed is kept)"
SUGGEST_TITLE = "Suggest a question"
SUGGEST_TITLE_2 = "Suggest a question (2 of 2)"
NOTE_TITLE = "A note for the author"
NOTE_LABEL = "What should they change?"
# Slack's modal: one input a choice and one a why, a send and a close button.
SUGGEST_CHOICE = "Choice {letter}"
SUGGEST_WHY = "Why {letter} is right or wrong"
SUGGEST_SEND = "Send"
SUGGEST_CLOSE = "Close"
# The form's fields as members read them (modals, guided prompts); at most 45 characters each,
# Discord's limit for a modal input's label.
SUGGEST_LABELS = {
    "topic": "Topic",
    "level": "Level: 1 intro, 2 practitioner, 3 expert",
    "prompt": "The question (ends with ?)",
    "choices": "Choices, one per line (2 to 5)",
    "correct": "Which choice is right (A-E)",
    "whys": "Why each is right or wrong, a line per choice",
    "trap": "Trap: the misconception behind wrong picks",
    "explain": "Explanation for the reveal (optional)",
    "hint": "Hint (optional, 20 to 200 characters)",
    "refs": "A reference a reader can open (doc or link)",
}
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
FORM_EXPIRED = "That form has expired; start again with /suggest."
SUGGEST_CANCELLED = "Suggestion cancelled; nothing was sent."


def suggestion_refused(problems: Iterable[Any]) -> list[str]:
    return ["Your question was not sent. Please fix:"] + [f"{p.label}: {p.reason}" for p in problems]


def suggestion_field_refused(problems: Iterable[Any]) -> str:
    """One field typed into /suggest's guided prompts, refused: one sentence, then it is asked again."""
    found = list(problems)
    return f"{found[0].label[:1].upper()}{found[0].label[1:]}: " + "; ".join(p.reason.rstrip(".") for p in found) + "."


def suggestion_received(card: Any) -> str:
    return (
        f"Thanks! Your question #{card.number} is waiting for the admins "
        f"({count(card.pending, 'question')} of yours waiting). You will be told what they decide."
    )


def suggestion_draft(card: Any) -> str:
    return f"First part kept. Now explain each of the {len(card.choices)} choices, the trap and a reference."


def queue_title(card: Any) -> str:
    if not card.waiting:
        return "No suggested questions are waiting."
    return f"Suggested questions waiting: {card.waiting} (oldest first)"


def queue_item_lines(item: Any) -> list[str]:
    lines = [f"#{item.number} by {item.author} [{item.topic}, level {item.difficulty}]: {item.prompt}"]
    for i, (text, why) in enumerate(zip(item.choices, item.whys, strict=True)):
        mark = "right" if i == item.answer else "wrong"
        lines.append(f"{letter(i)}) {text} [{mark}]: {why}")
    if item.trap:
        lines.append(trap_line(item.trap))
    if item.explain:
        lines.append(item.explain)
    lines.append(refs_line(item.refs))
    return lines


QUEUE_COMMANDS = "Decide with /config approve N, /config note N TEXT or /config reject N."


def decided_admin(card: Any) -> str:
    if card.action == "approved":
        return f"Suggestion #{card.number} approved: it is question {card.question_id} of this community's bank."
    if card.action == "returned":
        return f"Suggestion #{card.number} sent back to its author with your note."
    return f"Suggestion #{card.number} rejected."


def decided_author(card: Any) -> str:
    head = f'Your question "{card.prompt[:80]}"'
    if card.action == "approved":
        return f"{head} was approved: it joins the daily rounds and practice. Thank you!"
    if card.action == "returned":
        return f"{head} was sent back by the admins: {card.note} Send it again with /suggest when it is ready."
    note = f" Their note: {card.note}" if card.note else ""
    return f"{head} was not accepted by the admins.{note}"


def author_line(author: str) -> str:
    return f"Question written by {author}, a member here."


def level_line(level: Any) -> str:
    if level.name is None or level.chance is None:
        return f"{level.topic}: {count(level.answers, 'answer')} so far; a level shows after {MIN_LEVEL_ANSWERS}."
    return (
        f"{level.topic}: {level.name} (rating {level.rating:+.1f}, about {level.chance:.0%} right on a level-2 "
        f"question; {count(level.answers, 'answer')})"
    )


def levels_lines(levels: Iterable[Any]) -> list[str]:
    found = [level_line(level) for level in levels]
    return ["Your level by topic:", *found] if found else []


# ------------------------------------------------------------------ the console

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
CONSOLE_OPERATOR = "Operator"  # the console's own user (`studybot console --user NAME`)


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


def unknown_option(command: str, text: str, allowed: Iterable[str]) -> str:
    """`/review foo`: the command's own options, or that it takes none."""
    options = [f"/{command} {option}" for option in allowed]
    takes = f"type /{command}" + (f", or {' or '.join(options)}" if options else " alone")
    return f"/{command} takes no '{text[:30]}': {takes}."


def unknown_command(command: str) -> str:
    return f"Unknown command {command[:30]}; type /help for the list."


# ------------------------------------------------------------------ Anki export

ANKI_NOTHING_MISSED = "You have not missed a question here yet, so there is nothing to put in an Anki deck."
ANKI_HOW = "In Anki: File > Import. Importing a newer export updates these cards instead of adding copies."
ANKI_EXPORT_OPTION = "export: your missed questions as an Anki deck (.apkg)"


def anki_deck_line(kind: str, notes: int) -> str:
    """What an Anki deck holds: `kind` "misses" (a member's) or "bank" (a community's revealed questions)."""
    what = count(notes, "missed question" if kind == "misses" else "revealed question")
    return f"Your Anki deck: {what}, each with every choice's why and its references."


def anki_attached(kind: str, notes: int) -> str:
    return f"{anki_deck_line(kind, notes)} {ANKI_HOW}"


def anki_saved(kind: str, notes: int, path: str) -> str:
    return f"{anki_deck_line(kind, notes)} Saved to {path}\n{ANKI_HOW}"


def anki_sent(kind: str, notes: int) -> str:
    """Slack: the deck went to the member's messages with the app (a file cannot be ephemeral)."""
    what = count(notes, "missed question" if kind == "misses" else "revealed question")
    return f"Your Anki deck ({what}) is in your messages with me. {ANKI_HOW}"


# ----------------------------------------------------------- streak repair


def _local(moment: datetime, tz: str) -> str:
    """'Thu 3 Dec 09:00 Europe/Paris': a moment in the community's time zone."""
    local = moment.astimezone(ZoneInfo(tz))
    return f"{local:%a} {local.day} {local:%b %H:%M} {tz}"


def streak_repaired(missed: str) -> str:
    """A review answer that cleared the member's last due review earned their missed day back."""
    return (
        f"Your reviews are clear: the daily round of {missed} you missed counts for your streak again "
        "(one repair a week)."
    )


def repair_offer(offer: RepairOffer) -> str:
    """/score and the member's page: how the missed day that broke the streak can be earned back."""
    if offer.blocked_until is not None:
        return (
            f"You missed the daily round of {offer.missed}, which broke your streak. A streak can be "
            f"repaired once a week; the next repair is possible from {_local(offer.blocked_until, offer.timezone)}."
        )
    deadline = _local(offer.deadline, offer.timezone)
    if offer.due == 0:
        how = f"no review is due now; if one comes due before {deadline}, clearing it earns the day back."
    else:
        how = f"clear your {count(offer.due, 'due review')} (/review) by {deadline} to earn it back."
    return f"You missed the daily round of {offer.missed}, which broke your streak: {how}"


def repaired_days(days: tuple[str, ...]) -> str:
    return f"Repaired {count(len(days), 'day')} of your streak: {', '.join(days)}."


def streak_repair_lines(card: ScoreCard) -> list[str]:
    lines = [repair_offer(card.repair)] if card.repair is not None else []
    if card.repaired:
        lines.append(repaired_days(card.repaired[:5]))
    return lines


# --------------------------------------------------------- guess, then run

GUESS_BANDS = ("under 25%", "25-50%", "50-75%", "over 75%")
GUESS_INVITE = "Guess first: how much less peak memory will block checkpointing need than none?"
GUESS_COUNTED = "Your guess is in: {band}. The result names who guessed right."
GUESS_STANDS = "You guessed {band} already; your first guess stands."
GUESS_CLOSED = "Guesses closed when the first figure arrived; watch the result."
GUESS_NONE_OPEN = "No checkpoint demo here is taking guesses now; guesses open when /demo checkpoint is queued."
CONSOLE_GUESS_USAGE = "Guess with a number: " + ", ".join(f"guess {i + 1} ({b})" for i, b in enumerate(GUESS_BANDS))


def guess_invite_console() -> str:
    return f"{GUESS_INVITE} {CONSOLE_GUESS_USAGE}."


def guess_counted(band: int) -> str:
    return GUESS_COUNTED.format(band=GUESS_BANDS[band])


def guess_stands(band: int) -> str:
    return GUESS_STANDS.format(band=GUESS_BANDS[band])


def guess_result(saving: float | None, band: int, winners: tuple[str, ...], guesses: int) -> str:
    """The result card's line on the guesses (the saving: 1 - block peak / none peak, in `band`)."""
    made = f"{guesses} guess" if guesses == 1 else f"{guesses} guesses"
    if saving is None:
        return f"{made} made, but this run measured no none and block peaks to judge them by."
    measured = f"Block checkpointing needed {saving:.0%} less peak memory than none ({GUESS_BANDS[band]})"
    if not winners:
        return f"{measured}: nobody guessed right ({made})."
    names = ", ".join(winners[:20]) + (f" and {len(winners) - 20} more" if len(winners) > 20 else "")
    return f"{measured}: guessed right by {names} ({len(winners)} of {made})."


# FSRS fitted to the community (bot/core/fsrs_community.py, `studybot fsrs fit`, /config).
FSRS_DEFAULTS = "defaults"
FSRS_FITTED_ON = "fitted on {date} from {reviews:,} reviews"
FSRS_TOO_FEW = (
    "Not enough reviews to fit FSRS yet: {counted:,} of the {minimum:,} the fit needs (a review counts "
    "when it comes a day or more after the card's previous one); {more:,} more needed. "
    "The community keeps the default parameters."
)
FSRS_KEPT = (
    "The fit kept the default parameters ({reviews:,} reviews were not enough for the optimizer); "
    "the community keeps the parameters it had."
)
FSRS_FITTED = (
    "Fitted FSRS to {reviews:,} reviews of {community} in {seconds:.1f} s on the worker: its reviews "
    "are scheduled with these parameters from now on."
)
FSRS_FIT_FAILED = "The fit did not run, so {community} keeps its parameters: {reason}"


def fsrs_in_use(parameters: bool, fitted_at: datetime | None, reviews: int) -> str:
    """What /config says about the FSRS parameters a community uses."""
    if not parameters or fitted_at is None:
        return FSRS_DEFAULTS
    return FSRS_FITTED_ON.format(date=f"{fitted_at:%Y-%m-%d}", reviews=reviews)
