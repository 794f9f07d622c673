"""Block Kit layouts of the engine's cards: a question and its reveal, feedback, boards and
scores, settings, demos, App Home, and `render` for any card. Layout only: every sentence comes
from bot.core.wording; buttons carry the seam's codec ids. Block Kit's pieces are in blocks.py,
the members' questions' modals and queue in forms.py."""

from __future__ import annotations

import logging
from typing import Any, assert_never

from bot.core import wording
from bot.core.rules import choices as codec
from bot.core.rules.confidence_rules import encode_confidence
from bot.core.rules.demo_request import encode_demo_button
from bot.core.services.guesses import encode_guess
from bot.core.values import (
    AlreadyAnswered,
    AlreadyNoted,
    AlreadyOpen,
    AnkiDeck,
    AnswerFeedback,
    Card,
    ConfidenceNoted,
    ConfigCard,
    ConfirmForget,
    DemoFailedCard,
    DemoProgressCard,
    DemoQueued,
    DemoResultCard,
    Forgotten,
    HomeCard,
    LeaderboardCard,
    NothingDue,
    Notice,
    Problem,
    QuestionCard,
    RevealCard,
    RoundClosed,
    ScoreCard,
    SuggestionDecided,
    SuggestionDraft,
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
    letter,
)
from bot.platforms.slack import forms
from bot.platforms.slack.blocks import (
    Block,
    SlackMessage,
    bold,
    button,
    code,
    context,
    escape,
    message,
    plain,
    section,
    web_link,
)

log = logging.getLogger(__name__)

ACTION_REVIEW = "sb1:home:review"  # App Home: start a review


def answer_buttons(card: QuestionCard) -> Block:
    return {
        "type": "actions",
        "block_id": f"sb1:round:{card.round_id}",
        "elements": [
            {
                "type": "button",
                "action_id": codec.encode_answer(card.round_id, index),
                "value": codec.encode_answer(card.round_id, index),
                "text": {"type": "plain_text", "text": letter(index)},
            }
            for index in range(len(card.choices))
        ],
    }


def question(card: QuestionCard) -> SlackMessage:
    lines = "\n".join(escape(line) for line in wording.choice_lines(card.choices))
    blocks = [
        bold(wording.question_title(card)),
        section(card.prompt),
        section(lines, raw=True),
        answer_buttons(card),
        context(wording.BUTTON_HINT if card.kind == "daily" else wording.ANSWER_HINT),
        *(context(line) for line in filter(None, [wording.replaced_line(card)])),
    ]
    return message(f"{wording.question_title(card)}\n{card.prompt}", blocks)


def closed_question(card: RevealCard) -> SlackMessage:
    """The daily question once its round closed: no buttons, how many picked each choice."""
    lines = "\n".join(escape(wording.reveal_count(choice)) for choice in card.choices)
    blocks = [
        bold(wording.reveal_title(card)),
        section(card.prompt),
        section(lines, raw=True),
        context(f"{wording.reveal_summary(card)} {wording.ANSWERS_CLOSED}"),
    ]
    return message(wording.reveal_title(card), blocks)


def reveal(card: RevealCard) -> SlackMessage:
    """The reveal posted in the question's thread: every choice's why."""
    blocks = [bold(wording.reveal_title(card))]
    blocks.extend(section(wording.reveal_choice(choice)) for choice in card.choices)
    if card.explain:
        blocks.append(section(card.explain))
    if card.trap:
        blocks.append(section(wording.trap_line(card.trap)))
    if card.refs:
        blocks.append(context(wording.refs_line(card.refs)))
    if card.author:
        blocks.append(context(wording.author_line(card.author)))
    blocks.append(context(wording.reveal_summary(card)))
    if card.demo:
        blocks.append(demo_button(card.round_id))
    return message(wording.reveal_title(card), blocks)


def demo_button(round_id: int) -> Block:
    """The "see it run" button under a reveal: queues the question's demo for whoever clicks."""
    action_id = encode_demo_button(round_id)
    text = {"type": "plain_text", "text": wording.SEE_IT_RUN}
    button = {"type": "button", "action_id": action_id, "value": str(round_id), "text": text}
    return {"type": "actions", "block_id": f"sb1:demo:{round_id}", "elements": [button]}


def leaderboard(card: LeaderboardCard) -> SlackMessage:
    rows = wording.leaderboard_lines(card)
    title = wording.leaderboard_title(card)
    return message(f"{title}\n" + "\n".join(rows), [bold(title), section("\n".join(rows))])


def score(card: ScoreCard) -> SlackMessage:
    lines = wording.score_lines(card, with_link=False)
    blocks = [section(line) for line in lines] + web_link(wording.MEMBER_LINK, card.link)
    return message("\n".join(wording.score_lines(card)), blocks)


def config(card: ConfigCard) -> SlackMessage:
    title = wording.config_title(card)
    lines = wording.config_lines(card, with_link=False)
    blocks = [bold(title), section("\n".join(lines)), *web_link(wording.ADMIN_LINK, card.link)]
    return message(f"{title}\n" + "\n".join(wording.config_lines(card)), blocks)


def feedback(card: AnswerFeedback) -> SlackMessage:
    lines = wording.feedback_lines(card)
    blocks = [bold(lines[0]), *(section(line) for line in lines[1:])]
    if card.noted is None:  # how sure: asked under the feedback, once
        blocks += [context(wording.ASK_SURE), sure_buttons(card.round_id)]
    return message("\n".join(lines), blocks)


def sure_buttons(round_id: int) -> Block:
    """Sure / Unsure under an answer's private feedback (`sb1:cf:<round>:<s|u>`)."""
    return {
        "type": "actions",
        "block_id": f"sb1:sure:{round_id}",
        "elements": [
            {
                "type": "button",
                "action_id": encode_confidence(round_id, sure),
                "value": encode_confidence(round_id, sure),
                "text": {"type": "plain_text", "text": wording.SURE_LABEL if sure else wording.UNSURE_LABEL},
            }
            for sure in (True, False)
        ],
    }


def demo_table(card: DemoResultCard | DemoProgressCard) -> list[str]:
    return wording.table_lines(card.header, card.rows) if card.rows else []


def demo_result(card: DemoResultCard) -> SlackMessage:
    blocks = [bold(card.title)]
    if card.rows:
        blocks.append(code(demo_table(card)))
    blocks.extend(context(note) for note in card.notes)
    lines = wording.demo_lines(card)
    return message("\n".join(lines), blocks)


def demo_queued(card: DemoQueued) -> SlackMessage:
    """A queued demo in the channel; a checkpoint run of none and block invites guesses (buttons
    that its first progress edit takes away)."""
    text = wording.demo_queued(card)
    if not card.guesses:
        return plain(text)
    buttons = [button(encode_guess(card.job_id, band), label) for band, label in enumerate(wording.GUESS_BANDS)]
    actions = {"type": "actions", "block_id": f"sb1:guess:{card.job_id}", "elements": buttons}
    blocks = [section(text), section(wording.GUESS_INVITE), actions]
    return message(f"{text}\n{wording.GUESS_INVITE}", blocks)


def demo_progress(card: DemoProgressCard) -> SlackMessage:
    title = wording.demo_progress_title(card)
    blocks = [bold(title)]
    if card.rows:
        blocks.append(code(demo_table(card)))
    return message(title, blocks)


def home(card: HomeCard, reviews_button: bool = True) -> dict[str, Any]:
    """The App Home view: score, streak, reviews due (with a button), this week's board."""
    blocks: list[Block] = [section(line) for line in wording.score_lines(card.score, with_link=False)]
    blocks += web_link(wording.MEMBER_LINK, card.score.link)
    if reviews_button and card.score.reviews_due > 0:
        blocks.append(
            {
                "type": "actions",
                "block_id": "sb1:home",
                "elements": [
                    {
                        "type": "button",
                        "action_id": ACTION_REVIEW,
                        "value": "review",
                        "style": "primary",
                        "text": {"type": "plain_text", "text": wording.START_REVIEW},
                    }
                ],
            }
        )
    blocks.append({"type": "divider"})
    blocks.extend(leaderboard(card.board).blocks)
    return {"type": "home", "blocks": blocks[:100]}


def help_message(config_command: str) -> SlackMessage:
    lines = wording.help_lines(config_command)
    blocks = [bold(wording.HELP_TITLE), section(wording.HELP_ANSWERING), section("\n".join(lines))]
    return message("\n".join([wording.HELP_TITLE, *lines]), blocks)


def render(card: Card) -> SlackMessage:  # noqa: C901 - one flat `case` per kind of card
    """Any card a user is shown (in a channel, privately, or as a reply) as Block Kit."""
    match card:
        case QuestionCard():
            return question(card)
        case AnswerFeedback():
            return feedback(card)
        case ConfidenceNoted():
            return plain(wording.noted(card))
        case AlreadyNoted():
            return plain(wording.already_noted(card))
        case AlreadyAnswered():
            return plain(wording.already_answered(card))
        case RoundClosed():
            return plain(wording.round_closed(card))
        case RevealCard():
            return reveal(card)
        case AlreadyOpen():
            return plain(wording.already_open(card))
        case ScoreCard():
            return score(card)
        case LeaderboardCard():
            return leaderboard(card)
        case NothingDue():
            return plain(wording.nothing_due(card))
        case ConfirmForget():
            return plain(wording.confirm_forget(card))
        case Forgotten():
            return plain(wording.forgotten(card))
        case ConfigCard():
            return config(card)
        case Notice():
            return plain(card.text)
        case Problem():
            return plain(wording.problem(card))
        case DemoQueued():
            return demo_queued(card)
        case DemoResultCard():
            return demo_result(card)
        case DemoProgressCard():
            return demo_progress(card)
        case DemoFailedCard():
            return plain(wording.demo_failed(card))
        case HomeCard():
            return score(card.score)
        case AnkiDeck():  # the ephemeral answer; the listener uploads the package to the member's messages with the app
            return plain(wording.anki_sent(card.kind, len(card.notes)))
        case SuggestionReceived():
            return plain(wording.suggestion_received(card))
        case SuggestionRefused():
            return forms.refused(card)
        case SuggestionQueue():
            return forms.queue(card)
        case SuggestionDecided():
            return plain(wording.decided_admin(card))
        case SuggestionDraft():  # Slack's form is one modal (no draft step); shown as text if it comes
            return plain("\n".join([wording.suggestion_draft(card), *wording.choice_lines(card.choices)]))
    assert_never(card)
