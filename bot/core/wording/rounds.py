"""Rounds and answers: a question as posted, the feedback on an answer, the reveal, and why an
answer or a close was refused."""

from __future__ import annotations

from collections.abc import Iterable

from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ChoiceReveal,
    QuestionCard,
    RevealCard,
    RoundClosed,
    letter,
)
from bot.core.wording.common import KIND_LABELS, count, counted, trap_line
from bot.core.wording.learning import noted, streak_repaired

# ------------------------------------------------------------- answering

ANSWER_HINT = "Reply with a letter or the choice's text."
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


# ------------------------------------------------ questions and feedback


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


def feedback_headline(card: AnswerFeedback) -> str:
    head = "Correct!" if card.correct else f"Not quite: the answer is {card.answer}) {card.answer_text}."
    points = f" +{counted(card.points, 'point')}" if card.points else ""
    bonus = f" (streak bonus +{card.streak_bonus})" if card.streak_bonus else ""
    return f"{head}{points}{bonus}"


def feedback_why(card: AnswerFeedback) -> str:
    return f"You chose {card.chosen}) {card.chosen_text}: {card.why}"


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


# ------------------------------------------------ answered, closed, open


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


# ---------------------------------------------------------------- reveal


def reveal_title(card: RevealCard) -> str:
    return f"Answer to #{card.number}: {card.answer}) {card.answer_text}"


def reveal_choice(choice: ChoiceReveal) -> str:
    mark = "right" if choice.correct else "wrong"
    return f"{choice.letter}) {choice.text} [{choice.count} picked, {mark}]: {choice.why}"


def reveal_summary(card: RevealCard) -> str:
    return f"{count(card.answered, 'answer')} in all."


ANSWERS_CLOSED = "Answers are closed: the answer and every choice's why are in the thread."


def daily_opened(card: QuestionCard) -> str:
    return f"Today's round #{card.number} is open; its question is being posted in the channel."


def reveal_count(choice: ChoiceReveal) -> str:
    """A choice with how many picked it, for the question once its round is closed."""
    mark = " (the answer)" if choice.correct else ""
    return f"{choice.letter}) {choice.text}: {choice.count} picked{mark}"


# ------------------------------------------------------- answers refused

QUESTION_GONE = "That question is no longer in the bank, so it cannot be answered."
NOT_AN_ANSWER_BUTTON = "That button is not one of this bot's answer buttons."


def someone_elses_practice(number: int) -> str:
    return f"Question #{number} was someone else's practice question."


def choose_one_of(choices: int) -> str:
    """An answer's choice out of range: the letters the question has."""
    return f"Choose one of {', '.join(letter(i) for i in range(choices))}."


def message_too_long(length: int, limit: int) -> str:
    return f"That message is {length:,} characters long; the limit is {limit:,}."


# ------------------------------------------------------- closing a round

NO_SUCH_DAILY_ROUND = "There is no such daily round."
NO_OPEN_DAILY_TO_CLOSE = "There is no open daily round in this channel to close."


def already_revealed(number: int) -> str:
    return f"Round #{number} was already closed and revealed."


def low_bank(unasked_left: int) -> str:
    """The admins' note on a daily round when few questions are left unasked."""
    return (
        f"Questions not yet asked in this community: {unasked_left}. After that the least "
        "recently asked come back; add questions to the bank to keep rounds fresh."
    )
