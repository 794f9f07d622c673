"""Block Kit layouts of the engine's cards. Layout only: every sentence comes from
bot.core.wording; buttons carry the seam's codec ids."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from bot.core import choices as codec
from bot.core import wording
from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ConfigCard,
    ConfirmForget,
    DemoAccepted,
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
    letter,
)

log = logging.getLogger(__name__)

Block = dict[str, Any]
# Slack's limits: 3000 characters in a section's text, 150 in a header, 50 blocks a message,
# 100 blocks in a view, 75 characters on a button.
SECTION_MAX = 3000
TEXT_MAX = 3900
ACTION_REVIEW = "sb1:home:review"  # App Home: start a review


@dataclass(frozen=True)
class SlackMessage:
    """What is sent: the notification/fallback text and the blocks."""

    text: str
    blocks: list[Block] = field(default_factory=list)


def escape(text: str) -> str:
    """Slack's three control characters in mrkdwn (user and bank text never becomes a link
    or a mention by accident)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def section(text: str, raw: bool = False) -> Block:
    body = text if raw else escape(text)
    return {"type": "section", "text": {"type": "mrkdwn", "text": _cut(body, SECTION_MAX)}}


def bold(text: str) -> Block:
    return section(f"*{escape(text)}*", raw=True)


def context(text: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _cut(escape(text), SECTION_MAX)}]}


def code(lines: list[str]) -> Block:
    body = "\n".join(lines).replace("```", "'''")
    return section(f"```{escape(body)}```", raw=True)


def _message(text: str, blocks: list[Block]) -> SlackMessage:
    return SlackMessage(_cut(text, TEXT_MAX), blocks[:50])


def _plain(text: str) -> SlackMessage:
    return _message(text, [section(text)])


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
    ]
    return _message(f"{wording.question_title(card)}\n{card.prompt}", blocks)


def closed_question(card: RevealCard) -> SlackMessage:
    """The daily question once its round closed: no buttons, how many picked each choice."""
    lines = "\n".join(escape(wording.reveal_count(choice)) for choice in card.choices)
    blocks = [
        bold(wording.reveal_title(card)),
        section(card.prompt),
        section(lines, raw=True),
        context(f"{wording.reveal_summary(card)} {wording.ANSWERS_CLOSED}"),
    ]
    return _message(wording.reveal_title(card), blocks)


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
    blocks.append(context(wording.reveal_summary(card)))
    return _message(wording.reveal_title(card), blocks)


def leaderboard(card: LeaderboardCard) -> SlackMessage:
    rows = wording.leaderboard_lines(card)
    title = wording.leaderboard_title(card)
    return _message(f"{title}\n" + "\n".join(rows), [bold(title), section("\n".join(rows))])


def web_link(label: str, link: str | None) -> list[Block]:
    """The signed web link as a Slack link (its token is never read as mrkdwn)."""
    return [section(f"<{link}|{escape(label)}>", raw=True)] if link else []


def score(card: ScoreCard) -> SlackMessage:
    lines = wording.score_lines(card, with_link=False)
    blocks = [section(line) for line in lines] + web_link(wording.MEMBER_LINK, card.link)
    return _message("\n".join(wording.score_lines(card)), blocks)


def config(card: ConfigCard) -> SlackMessage:
    title = wording.config_title(card)
    lines = wording.config_lines(card, with_link=False)
    blocks = [bold(title), section("\n".join(lines)), *web_link(wording.ADMIN_LINK, card.link)]
    return _message(f"{title}\n" + "\n".join(wording.config_lines(card)), blocks)


def feedback(card: AnswerFeedback) -> SlackMessage:
    lines = wording.feedback_lines(card)
    blocks = [bold(lines[0]), *(section(line) for line in lines[1:])]
    return _message("\n".join(lines), blocks)


def demo_table(card: DemoResultCard | DemoProgressCard) -> list[str]:
    return wording.table_lines(card.header, card.rows) if card.rows else []


def demo_result(card: DemoResultCard) -> SlackMessage:
    blocks = [bold(card.title)]
    if card.rows:
        blocks.append(code(demo_table(card)))
    blocks.extend(context(note) for note in card.notes)
    lines = wording.demo_lines(card)
    return _message("\n".join(lines), blocks)


def demo_progress(card: DemoProgressCard) -> SlackMessage:
    title = wording.demo_progress_title(card)
    blocks = [bold(title)]
    if card.rows:
        blocks.append(code(demo_table(card)))
    return _message(title, blocks)


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
    return _message("\n".join([wording.HELP_TITLE, *lines]), blocks)


def render(card: object) -> SlackMessage:
    """Any card a user is shown (in a channel, privately, or as a reply) as Block Kit."""
    match card:
        case QuestionCard():
            return question(card)
        case AnswerFeedback():
            return feedback(card)
        case AlreadyAnswered():
            return _plain(wording.already_answered(card))
        case RoundClosed():
            return _plain(wording.round_closed(card))
        case RevealCard():
            return reveal(card)
        case AlreadyOpen():
            return _plain(wording.already_open(card))
        case ScoreCard():
            return score(card)
        case LeaderboardCard():
            return leaderboard(card)
        case NothingDue():
            return _plain(wording.nothing_due(card))
        case ConfirmForget():
            return _plain(wording.confirm_forget(card))
        case Forgotten():
            return _plain(wording.forgotten(card))
        case ConfigCard():
            return config(card)
        case Notice():
            return _plain(card.text)
        case Problem():
            return _plain(wording.problem(card))
        case DemoAccepted():
            return _plain(wording.demo_accepted(card))
        case DemoQueued():
            return _plain(wording.demo_queued(card))
        case DemoResultCard():
            return demo_result(card)
        case DemoProgressCard():
            return demo_progress(card)
        case DemoFailedCard():
            return _plain(wording.demo_failed(card))
        case HomeCard():
            return score(card.score)
    log.error("no Slack layout for %s", type(card).__name__)
    return _plain(wording.describe_any(card))
