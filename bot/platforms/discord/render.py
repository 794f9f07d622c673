"""Engine cards as Discord messages: embeds, buttons, attachments. Layout only: every
sentence comes from bot.core.wording, and every message fits Discord's limits (2,000
characters of content, 4,096 of an embed description, 256 of a title, 80 of a button label,
25 components)."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import discord

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
)
from bot.platforms.discord.views import AnswerButton

log = logging.getLogger(__name__)

MAX_CONTENT = 2000
MAX_DESCRIPTION = 4096
MAX_TITLE = 256
MAX_LABEL = 80
BLUE = discord.Colour(0x3B82F6)
GREEN = discord.Colour(0x16A34A)
RED = discord.Colour(0xDC2626)
GREY = discord.Colour(0x6B7280)


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def safe(text: str) -> str:
    """A name or someone's input, shown as typed: no markdown, no mention syntax."""
    return discord.utils.escape_mentions(discord.utils.escape_markdown(text))


def code_block(lines: list[str], limit: int) -> str:
    body = "\n".join(line.replace("```", "'''") for line in lines)
    return "```\n" + clip(body, limit - 8) + "\n```"


@dataclass
class Reply:
    """One Discord message: what `send`, `send_message`, `followup.send` and `edit` take."""

    content: str | None = None
    embed: discord.Embed | None = None
    view: discord.ui.View | None = None
    file: str | None = None  # a PNG on this machine, attached as the embed's image
    public: bool = False  # posted in the channel (else ephemeral where the platform allows)
    extra: list[Reply] = field(default_factory=list)

    def kwargs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"allowed_mentions": discord.AllowedMentions.none()}
        if self.content is not None:
            out["content"] = clip(self.content, MAX_CONTENT)
        if self.embed is not None:
            out["embed"] = self.embed
        if self.view is not None:
            out["view"] = self.view
        if self.file is not None:
            out["file"] = discord.File(self.file, filename=os.path.basename(self.file))
        return out


def embed(title: str | None, description: str, colour: discord.Colour = BLUE) -> discord.Embed:
    return discord.Embed(
        title=clip(title, MAX_TITLE) if title else None, description=clip(description, MAX_DESCRIPTION), colour=colour
    )


def timestamp(moment: datetime | None) -> str | None:
    return None if moment is None else discord.utils.format_dt(moment, "R")


def answer_view(round_id: int, count: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for index in range(min(count, 5)):
        view.add_item(AnswerButton(codec.encode_answer(round_id, index), label=chr(ord("A") + index)))
    return view


def question(card: QuestionCard) -> Reply:
    parts = [card.prompt, "\n".join(wording.choice_lines(card.choices))]
    when = timestamp(card.closes_at) if card.kind == "daily" else None
    if when:
        parts.append(wording.closes_line(when))
    parts.append(wording.BUTTON_HINT)
    body = embed(wording.question_title(card), "\n\n".join(parts))
    return Reply(embed=body, view=answer_view(card.round_id, len(card.choices)), public=card.kind == "daily")


def revealed_question(card: RevealCard) -> Reply:
    """The question message once its round closed: choices with counts, buttons disabled, the
    right one marked."""
    lines = [card.prompt, "", *(wording.reveal_count(c) for c in card.choices), "", wording.reveal_summary(card)]
    view = discord.ui.View(timeout=None)
    for index, choice in enumerate(card.choices[:5]):
        label = clip(f"{choice.letter} · {choice.count}", MAX_LABEL)
        style = discord.ButtonStyle.success if choice.correct else discord.ButtonStyle.secondary
        view.add_item(AnswerButton(codec.encode_answer(card.round_id, index), label=label, style=style, disabled=True))
    return Reply(embed=embed(wording.reveal_title(card), "\n".join(lines), GREY), view=view, public=True)


def reveal(card: RevealCard) -> Reply:
    lines = [card.prompt, "", *(wording.reveal_choice(c) for c in card.choices)]
    if card.explain:
        lines += ["", card.explain]
    if card.trap:
        lines += ["", wording.trap_line(card.trap)]
    if card.refs:
        lines += ["", wording.refs_line(card.refs)]
    lines += ["", wording.reveal_summary(card)]
    return Reply(embed=embed(wording.reveal_title(card), "\n".join(lines), GREEN), public=True)


def leaderboard(card: LeaderboardCard, public: bool = False) -> Reply:
    rows = [safe(line) for line in wording.leaderboard_lines(replace(card, rows=card.rows[:50]))]
    body = "\n".join(rows)
    return Reply(embed=embed(wording.leaderboard_title(card), body), public=public)


def demo_result(card: DemoResultCard) -> Reply:
    lines = wording.demo_lines(card)
    chart = card.chart if card.chart and os.path.isfile(card.chart) else None
    if chart:
        lines = [line for line in lines if not line.startswith("chart: ")]
    body = embed(clip(card.title, MAX_TITLE), code_block(lines[1:], MAX_DESCRIPTION), GREEN)
    if chart:
        body.set_image(url=f"attachment://{os.path.basename(chart)}")
    return Reply(embed=body, file=chart, public=True)


def demo_progress(card: DemoProgressCard) -> Reply:
    table = code_block(wording.table_lines(card.header, card.rows), MAX_CONTENT - 300)
    return Reply(content=f"{safe(wording.demo_progress_title(card))}\n{table}", public=True)


def render(card: object) -> Reply:
    """The Discord message for a card."""
    match card:
        case QuestionCard():
            if card.kind == "daily":  # from /config post-now: the outbox posts it in the channel
                text = wording.daily_opened(card)
                return Reply(content=f"{text}\n{card.admin_note}" if card.admin_note else text)
            return question(card)
        case AnswerFeedback():
            lines = [wording.feedback_why(card)]
            if card.trap:
                lines.append(wording.trap_line(card.trap))
            colour = GREEN if card.correct else RED
            return Reply(embed=embed(wording.feedback_headline(card), "\n\n".join(lines), colour))
        case AlreadyAnswered():
            return Reply(content=wording.already_answered(card))
        case RoundClosed():
            return Reply(content=wording.round_closed(card))
        case AlreadyOpen():
            return Reply(content=wording.already_open(card))
        case RevealCard():
            return reveal(card)
        case ScoreCard():
            return Reply(embed=embed(None, safe("\n".join(wording.score_lines(card)))))
        case HomeCard():
            return Reply(embed=embed(None, safe("\n".join(wording.score_lines(card.score)))))
        case LeaderboardCard():
            return leaderboard(card)
        case NothingDue():
            return Reply(content=wording.nothing_due(card))
        case ConfirmForget():
            return Reply(content=safe(wording.confirm_forget(card, "/forget-me confirm:True")))
        case Forgotten():
            return Reply(content=wording.forgotten(card))
        case ConfigCard():
            lines = [safe(line) for line in wording.config_lines(card)]
            colour = RED if card.alerts else BLUE
            return Reply(embed=embed(safe(wording.config_title(card)), "\n".join(lines), colour))
        case Notice():
            return Reply(content=safe(card.text))
        case Problem():
            return Reply(content=safe(wording.problem(card)))
        case DemoAccepted():
            return Reply(content=safe(wording.demo_accepted(card)), public=True)
        case DemoQueued():
            return Reply(content=safe(wording.demo_queued(card)), public=True)
        case DemoProgressCard():
            return demo_progress(card)
        case DemoResultCard():
            return demo_result(card)
        case DemoFailedCard():
            return Reply(content=safe(wording.demo_failed(card)), public=True)
    log.error("no Discord layout for %s", type(card).__name__)
    return Reply(content=wording.describe_any(card))


def daily_post(card: QuestionCard) -> Reply:
    """The daily round as the outbox posts it in the channel."""
    return question(card)
