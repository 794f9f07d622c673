"""Engine cards as Discord messages: embeds, buttons, attachments. Layout only: every
sentence comes from bot.core.wording, and every message fits Discord's limits (2,000
characters of content, 4,096 of an embed description, 256 of a title, 80 of a button label,
25 components)."""

from __future__ import annotations

import io
import logging
import os
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, assert_never

import discord

from bot import anki
from bot.core import wording
from bot.core.rules import choices as codec
from bot.core.rules.confidence_rules import encode_confidence
from bot.core.rules.demo_request import encode_demo_button
from bot.core.rules.suggestion_buttons import QUEUE_PREFIX
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
    SuggestionForm,
    SuggestionItem,
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
)
from bot.platforms.discord.text import closes_line
from bot.platforms.discord.views import AnswerButton

log = logging.getLogger(__name__)

PLATFORM = "discord"  # the platform of every UserRef and ChannelRef this adapter makes
MAX_CONTENT = 2000
MAX_DESCRIPTION = 4096
MAX_TITLE = 256
MAX_LABEL = 80
MAX_MODAL_TITLE = 45  # a modal's title and each input's label
MAX_INPUT = 4000  # a text input's value
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
    files: tuple[str, ...] = ()  # PNGs on this machine, in order (a demo's first is the embed's image)
    uploads: tuple[tuple[str, bytes], ...] = ()  # files made for this message: (file name, bytes), after `files`
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
        if self.files or self.uploads:
            out["files"] = [discord.File(path, filename=os.path.basename(path)) for path in self.files] + [
                discord.File(io.BytesIO(data), filename=name) for name, data in self.uploads
            ]
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
        parts.append(closes_line(when))
    parts.append(wording.BUTTON_HINT)
    parts += filter(None, [wording.replaced_line(card)])
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
    if card.author:
        lines += ["", safe(wording.author_line(card.author))]
    lines += ["", wording.reveal_summary(card)]
    view = demo_view(card.round_id) if card.demo else None
    return Reply(embed=embed(wording.reveal_title(card), "\n".join(lines), GREEN), view=view, public=True)


def sure_view(round_id: int) -> discord.ui.View:
    """Sure / Unsure under an answer's private feedback (`sb1:cf:<round>:<s|u>`)."""
    view = discord.ui.View(timeout=None)
    view.add_item(AnswerButton(encode_confidence(round_id, True), label=wording.SURE_LABEL))
    view.add_item(
        AnswerButton(
            encode_confidence(round_id, False), label=wording.UNSURE_LABEL, style=discord.ButtonStyle.secondary
        )
    )
    return view


def demo_view(round_id: int) -> discord.ui.View:
    """The "see it run" button under a reveal: queues the question's demo for whoever clicks."""
    view = discord.ui.View(timeout=None)
    button = AnswerButton(encode_demo_button(round_id), label=wording.SEE_IT_RUN, style=discord.ButtonStyle.secondary)
    view.add_item(button)
    return view


def leaderboard(card: LeaderboardCard, public: bool = False) -> Reply:
    rows = [safe(line) for line in wording.leaderboard_lines(replace(card, rows=card.rows[:50]))]
    body = "\n".join(rows)
    return Reply(embed=embed(wording.leaderboard_title(card), body), public=public)


MAX_FILES = 10  # attachments on one message


def demo_result(card: DemoResultCard) -> Reply:
    """The table in an embed, every chart attached: the memory timeline first, as the embed's image."""
    files = tuple(c.path for c in card.pictures() if os.path.isfile(c.path))[:MAX_FILES]
    lines = wording.demo_lines(card)
    if files:
        lines = [line for line in lines if not line.startswith(wording.CHART_PREFIX)]
    body = embed(clip(card.title, MAX_TITLE), code_block(lines[1:], MAX_DESCRIPTION), GREEN)
    if files:
        body.set_image(url=f"attachment://{os.path.basename(files[0])}")
    return Reply(embed=body, files=files, public=True)


def demo_progress(card: DemoProgressCard) -> Reply:
    """The queued message edited with the rows so far; an empty view takes its guess buttons away."""
    table = code_block(wording.table_lines(card.header, card.rows), MAX_CONTENT - 300)
    content = f"{safe(wording.demo_progress_title(card))}\n{table}"
    return Reply(content=content, view=discord.ui.View(timeout=None), public=True)


def demo_queued(card: DemoQueued) -> Reply:
    """A queued demo in the channel; a checkpoint run of none and block invites guesses (buttons)."""
    if not card.guesses:
        return Reply(content=safe(wording.demo_queued(card)), public=True)
    view = discord.ui.View(timeout=None)
    for band, label in enumerate(wording.GUESS_BANDS):
        view.add_item(AnswerButton(encode_guess(card.job_id, band), label=label, style=discord.ButtonStyle.secondary))
    return Reply(content=safe(f"{wording.demo_queued(card)}\n{wording.GUESS_INVITE}"), view=view, public=True)


# ------------------------------------------------------------ members' questions

# The first form's id; the second's is the id of the button that opens it (`sb1:sg:<draft>`) and
# the note's that of its queue button (`sb1:sq:<n>:note`), so each submit carries what it is for.
FIRST_FORM = "sb1:sg:new"
FIRST_FIELDS = ("topic", "level", "prompt", "choices", "correct")
SECOND_FIELDS = ("whys", "trap", "explain", "hint", "refs")
OPTIONAL_FIELDS = ("explain", "hint")  # may be left empty (the bank's optional fields)
NOTE_FIELD = "note"
_LIMITS = {"topic": 40, "level": 20, "prompt": 1000, "choices": 1200, "correct": 200, "note": 500}
_PARAGRAPHS = ("prompt", "choices", "whys", "trap", "explain", "hint", "refs", "note")


def form(
    title: str, custom_id: str, fields: tuple[tuple[str, str], ...], values: dict[str, str] | None = None
) -> discord.ui.Modal:
    """A modal of text inputs (Discord shows at most 5): `fields` are (custom_id, label),
    `values` what each input opens with (a refused form, again). Its submit is handled from
    the raw interaction (`Suggestions.submitted`, after a restart too), so it is stopped
    before it is sent and discord.py's view store does not keep it."""
    modal = discord.ui.Modal(title=clip(title, MAX_MODAL_TITLE), custom_id=custom_id)
    for key, label in fields:
        style = discord.TextStyle.paragraph if key in _PARAGRAPHS else discord.TextStyle.short
        limit = _LIMITS.get(key, MAX_INPUT)
        typed = (values or {}).get(key, "")
        modal.add_item(
            discord.ui.TextInput(
                label=clip(label, MAX_MODAL_TITLE),
                custom_id=key,
                style=style,
                max_length=limit,
                default=typed[:limit] or None,
                required=key not in OPTIONAL_FIELDS,
            )
        )
    modal.stop()
    return modal


def typed_values(typed: SuggestionForm | None) -> dict[str, str]:
    """A form's inputs as the member typed them (multi-line inputs one entry a line)."""
    if typed is None:
        return {}
    return {
        "topic": typed.topic,
        "level": typed.level,
        "prompt": typed.prompt,
        "choices": "\n".join(typed.choices),
        "correct": typed.correct,
        "whys": "\n".join(typed.whys),
        "trap": typed.trap,
        "explain": typed.explain,
        "hint": typed.hint,
        "refs": "\n".join(typed.refs),
    }


def suggest_form(typed: SuggestionForm | None = None, custom_id: str = FIRST_FORM) -> discord.ui.Modal:
    """The first /suggest form; `typed`: a refused one's values, to open it again filled in
    (`custom_id`: then the refusal's retry id, so its submit keeps the second form's part)."""
    labels = wording.SUGGEST_LABELS
    fields = tuple((key, labels[key]) for key in FIRST_FIELDS)
    return form(wording.SUGGEST_TITLE, custom_id, fields, typed_values(typed))


def explain_form(custom_id: str, typed: SuggestionForm | None = None) -> discord.ui.Modal:
    """The second form (whys, trap, explanation, hint, references), filled in with `typed` when it was refused."""
    labels = wording.SUGGEST_LABELS
    fields = tuple((key, labels[key]) for key in SECOND_FIELDS)
    return form(wording.SUGGEST_TITLE_2, custom_id, fields, typed_values(typed))


def note_form(custom_id: str) -> discord.ui.Modal:
    return form(wording.NOTE_TITLE, custom_id, ((NOTE_FIELD, wording.NOTE_LABEL),))


def button_view(*buttons: tuple[str, str, discord.ButtonStyle]) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for custom_id, label, style in buttons:
        view.add_item(AnswerButton(custom_id, label=clip(label, MAX_LABEL), style=style))
    return view


def continue_view(custom_id: str) -> discord.ui.View:
    """The button that opens the second form (a modal cannot open another modal)."""
    return button_view((custom_id, wording.SUGGEST_CONTINUE, discord.ButtonStyle.primary))


def retry_view(custom_id: str) -> discord.ui.View:
    """Under a refused form: the button that opens it again with what was typed."""
    return button_view((custom_id, wording.SUGGEST_RETRY, discord.ButtonStyle.primary))


def queue_item(item: SuggestionItem, head: str | None = None) -> Reply:
    """One waiting suggestion, whole (Discord allows 6,000 characters of embeds in a message),
    with its approve, note and reject buttons."""
    names = wording.SUGGEST_BUTTONS
    view = button_view(
        (item.approve_id, names["approve"], discord.ButtonStyle.success),
        (item.note_id, names["note"], discord.ButtonStyle.secondary),
        (item.reject_id, names["reject"], discord.ButtonStyle.danger),
    )
    body = embed(None, safe("\n".join(wording.queue_item_lines(item))))
    return Reply(content=head, embed=body, view=view)


def decided_item(text: str, suggestion_id: int) -> Reply:
    """A queue item's own message once decided: the decision above the suggestion (its embed
    stays as it was) and its three buttons disabled."""
    names = wording.SUGGEST_BUTTONS
    view = discord.ui.View(timeout=None)
    for action, style in (
        ("approve", discord.ButtonStyle.success),
        ("note", discord.ButtonStyle.secondary),
        ("reject", discord.ButtonStyle.danger),
    ):
        custom_id = f"{QUEUE_PREFIX}{suggestion_id}:{action}"
        view.add_item(AnswerButton(custom_id, label=clip(names[action], MAX_LABEL), style=style, disabled=True))
    return Reply(content=safe(text), view=view)


def queue(card: SuggestionQueue) -> Reply:
    """The queue's title with its first item, then each further item as a message of its own."""
    head = safe(wording.queue_title(card))
    if not card.items:
        return Reply(content=head)
    first = queue_item(card.items[0], head)
    first.extra = [queue_item(item) for item in card.items[1:]]
    return first


def author_notice(card: SuggestionDecided) -> Reply:
    """What the author of a decided suggestion is told by direct message."""
    return Reply(content=safe(wording.decided_author(card)))


def render(card: Card) -> Reply:  # noqa: C901 - one flat `case` per kind of card
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
            if card.noted is not None:
                lines.append(wording.noted(card.noted))
            lines.append(wording.answered_which(card))
            colour = GREEN if card.correct else RED
            reply = Reply(embed=embed(wording.feedback_headline(card), "\n\n".join(lines), colour))
            if card.noted is None:  # how sure: asked under the feedback, once
                if reply.embed is not None:
                    reply.embed.set_footer(text=wording.ASK_SURE)
                reply.view = sure_view(card.round_id)
            return reply
        case ConfidenceNoted():
            return Reply(content=safe(wording.noted(card)))
        case AlreadyNoted():
            return Reply(content=safe(wording.already_noted(card)))
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
        case SuggestionRefused():
            return Reply(content=safe("\n".join(wording.suggestion_refused(card.problems))))
        case SuggestionDraft():
            lines = [wording.suggestion_draft(card), *wording.choice_lines(card.choices)]
            return Reply(content=safe("\n".join(lines)), view=continue_view(card.custom_id))
        case SuggestionReceived():
            return Reply(content=safe(wording.suggestion_received(card)))
        case SuggestionQueue():
            return queue(card)
        case SuggestionDecided():
            return Reply(content=safe(wording.decided_admin(card)))
        case Problem():
            return Reply(content=safe(wording.problem(card)))
        case DemoQueued():
            return demo_queued(card)
        case DemoProgressCard():
            return demo_progress(card)
        case DemoResultCard():
            return demo_result(card)
        case DemoFailedCard():
            return Reply(content=safe(wording.demo_failed(card)), public=True)
        case AnkiDeck():  # the package attached to the private answer
            text = wording.anki_attached(card.kind, len(card.notes))
            return Reply(content=text, uploads=((card.filename, anki.package(card)),))
    assert_never(card)


def daily_post(card: QuestionCard) -> Reply:
    """The daily round as the outbox posts it in the channel."""
    return question(card)
