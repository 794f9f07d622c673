"""Members' questions (/suggest): the form's labels, the admins' queue, the decisions, and the
limits and refusals."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from bot.core.values import letter
from bot.core.wording.common import count, refs_line, trap_line

# -------------------------------------------------------------- the form

# Discord's and Slack's /suggest (modals) and the admins' queue buttons use these; /help lists
# /suggest (COMMAND_HELP here, Discord's own COMMANDS in bot/platforms/discord/text.py).
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


FORM_EXPIRED = "That form has expired; start again with /suggest."


# ------------------------------------------------- sent, queued, decided


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


# ----------------------------------------- sending and deciding, refused


def too_many_pending(pending: int, limit: int) -> str:
    return (
        f"You have {pending} questions waiting for the admins; the limit is {limit}. "
        "Suggest another once one has been decided."
    )


def too_many_today(today: int, limit: int) -> str:
    return f"You sent {today} questions in the last day; the limit is {limit} a day."


DECIDE_HOW = "Decide with approve, note or reject."
WRITE_THE_NOTE = "Write the note for the author: what should they change?"
NOT_IN_QUEUE = "That suggestion is not in this community's queue."
NOT_A_QUEUE_BUTTON = "That button is not one of this bot's queue buttons."
SAY_WHICH_QUESTION = "Say which question: /config remove QUESTION-ID."


def say_which_suggestion(word: str) -> str:
    """`/config approve` (or note, reject) without a number."""
    return f"Say which suggestion: /config {word} NUMBER{' NOTE' if word == 'note' else ''}."


def no_such_suggestion(number: int) -> str:
    return f"There is no suggestion #{number} in this community."


def already_decided(number: int, state: str) -> str:
    return f"Suggestion #{number} was already decided ({state})."


def suggestion_gone(number: int) -> str:
    """The outbox rebuilds a decision to send, and the suggestion changed since."""
    return f"Suggestion #{number} is gone or no longer decided as it was."


def author_forgotten(number: int) -> str:
    return f"The author of suggestion #{number} asked to be forgotten."


def no_member_question(question_id: str) -> str:
    return f"There is no member's question '{question_id[:60]}' in this community."


def question_removed(question_id: str) -> str:
    return f"Question {question_id} is removed: it is no longer asked here; the answers it had stay counted."


def question_already_removed(question_id: str) -> str:
    return f"Question {question_id} was already removed."
