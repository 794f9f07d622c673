"""Block Kit layouts of the engine's cards. Layout only: every sentence comes from
bot.core.wording; buttons carry the seam's codec ids."""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass, field
from typing import Any, assert_never

from bot.core import choices as codec
from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.confidence import encode_confidence
from bot.core.demo_request import encode_demo_button
from bot.core.guesses import encode_guess
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
    SuggestionQueue,
    SuggestionReceived,
    SuggestionRefused,
    letter,
)

log = logging.getLogger(__name__)

Block = dict[str, Any]
# Slack's limits: 3000 characters in a section's text, 150 in a header, 50 blocks a message,
# 100 blocks in a view, 75 characters on a button.
SECTION_MAX = 3000
TEXT_MAX = 3900
ACTION_REVIEW = "sb1:home:review"  # App Home: start a review
SUGGEST_VIEW = "sb1:suggest"  # /suggest's modal (callback_id); the note modal's is its button's id
INPUT = "value"  # the action_id of every input in our modals: the block id names the field
NOTE_BLOCK = "note"
VIEW_ID_PREFIX = "sb1v:"  # the external_id of every modal the bot opens
MAX_CHOICES = 5
# A modal's inputs by the engine's field keys (FieldProblem.field), so a refusal shows under its input.
SUGGEST_BLOCKS = (
    "topic",
    "level",
    "prompt",
    *(key for i in range(MAX_CHOICES) for key in (f"choice_{i}", f"why_{i}")),
    "correct",
    "trap",
    "refs",
)
# Fields the modal has no input of, shown under the nearest one.
FIELD_BLOCK = {"choices": "choice_0", "explain": "trap"}


@dataclass(frozen=True)
class SlackMessage:
    """What is sent: the notification/fallback text (escaped like the blocks: Slack reads it as
    mrkdwn too, so a member named `<!channel>` would notify the channel) and the blocks."""

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
    return SlackMessage(_cut(escape(text), TEXT_MAX), blocks[:50])


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
        *(context(line) for line in filter(None, [wording.replaced_line(card)])),
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
    if card.author:
        blocks.append(context(wording.author_line(card.author)))
    blocks.append(context(wording.reveal_summary(card)))
    if card.demo:
        blocks.append(demo_button(card.round_id))
    return _message(wording.reveal_title(card), blocks)


def demo_button(round_id: int) -> Block:
    """The "see it run" button under a reveal: queues the question's demo for whoever clicks."""
    action_id = encode_demo_button(round_id)
    text = {"type": "plain_text", "text": wording.SEE_IT_RUN}
    button = {"type": "button", "action_id": action_id, "value": str(round_id), "text": text}
    return {"type": "actions", "block_id": f"sb1:demo:{round_id}", "elements": [button]}


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
    if card.noted is None:  # how sure: asked under the feedback, once
        blocks += [context(wording.ASK_SURE), sure_buttons(card.round_id)]
    return _message("\n".join(lines), blocks)


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
    return _message("\n".join(lines), blocks)


def demo_queued(card: DemoQueued) -> SlackMessage:
    """A queued demo in the channel; a checkpoint run of none and block invites guesses (buttons
    that its first progress edit takes away)."""
    text = wording.demo_queued(card)
    if not card.guesses:
        return _plain(text)
    buttons = [_button(encode_guess(card.job_id, band), label) for band, label in enumerate(wording.GUESS_BANDS)]
    actions = {"type": "actions", "block_id": f"sb1:guess:{card.job_id}", "elements": buttons}
    blocks = [section(text), section(wording.GUESS_INVITE), actions]
    return _message(f"{text}\n{wording.GUESS_INVITE}", blocks)


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


def _option(value: str, text: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": _cut(text, 75)}, "value": value}


def _input(block_id: str, label: str, element: dict[str, Any], optional: bool = False) -> Block:
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": {"type": "plain_text", "text": _cut(label, 2000)},
        "element": {"action_id": INPUT, **element},
    }


def _text_input(multiline: bool, max_length: int) -> dict[str, Any]:
    return {"type": "plain_text_input", "multiline": multiline, "max_length": max_length}


def _select(options: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "static_select", "options": options}


def new_view_id() -> str:
    """The id the bot gives a modal it opens (Slack's external_id: unique in a workspace,
    sent back with its submission), noted before it is opened: unguessable."""
    return VIEW_ID_PREFIX + secrets.token_urlsafe(18)


def _modal(
    callback_id: str, title: str, blocks: list[Block], private_metadata: str = "", view_id: str = ""
) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": callback_id,
        **({"external_id": view_id} if view_id else {}),
        "title": {"type": "plain_text", "text": _cut(title, 24)},
        "submit": {"type": "plain_text", "text": wording.SUGGEST_SEND},
        "close": {"type": "plain_text", "text": wording.SUGGEST_CLOSE},
        "private_metadata": private_metadata,
        "blocks": blocks,
    }


def suggest_modal(channel_id: str, view_id: str = "") -> dict[str, Any]:
    """/suggest's form: one input per field, each block named by the engine's field key.
    Lengths are the engine's to check (a refusal says which rule); the inputs' maxima only
    bound what is sent. `private_metadata` keeps the channel the command was typed in."""
    labels = wording.SUGGEST_LABELS
    levels = labels["level"].partition(": ")[2].split(", ")  # "1 intro", "2 practitioner", "3 expert"
    if [level.split()[0] for level in levels if level.split()] != ["1", "2", "3"]:
        levels = ["1", "2", "3"]
    blocks = [
        _input("topic", labels["topic"], _select([_option(topic, topic) for topic in TOPICS])),
        _input("level", labels["level"], _select([_option(level.split()[0], level) for level in levels])),
        _input("prompt", labels["prompt"], _text_input(True, 1000)),
    ]
    for i in range(MAX_CHOICES):
        choice, why = wording.SUGGEST_CHOICE.format(letter=letter(i)), wording.SUGGEST_WHY.format(letter=letter(i))
        blocks.append(_input(f"choice_{i}", choice, _text_input(False, 200), optional=i >= 2))
        blocks.append(_input(f"why_{i}", why, _text_input(True, 1000), optional=i >= 2))
    blocks += [
        _input("correct", labels["correct"], _select([_option(letter(i), letter(i)) for i in range(MAX_CHOICES)])),
        _input("trap", labels["trap"], _text_input(True, 1000)),
        _input("refs", labels["refs"], _text_input(True, 1000)),
    ]
    return _modal(SUGGEST_VIEW, wording.SUGGEST_TITLE, blocks, channel_id, view_id)


def view_values(view: dict[str, Any]) -> dict[str, str]:
    """A submitted modal's inputs by block id: a text's value, a select's chosen value."""
    found: dict[str, str] = {}
    for block_id, actions in ((view.get("state") or {}).get("values") or {}).items():
        state = (actions or {}).get(INPUT) or {}
        value = state.get("value")
        if value is None:
            value = (state.get("selected_option") or {}).get("value")
        found[str(block_id)] = str(value or "")
    return found


def suggestion_form(view: dict[str, Any]) -> SuggestionForm:
    """The submitted /suggest modal as typed (the engine parses and checks it)."""
    values = view_values(view)
    return SuggestionForm(
        topic=values.get("topic", ""),
        level=values.get("level", ""),
        prompt=values.get("prompt", ""),
        choices=tuple(values.get(f"choice_{i}", "") for i in range(MAX_CHOICES)),
        whys=tuple(values.get(f"why_{i}", "") for i in range(MAX_CHOICES)),
        correct=values.get("correct", ""),
        trap=values.get("trap", ""),
        refs=tuple(line for line in values.get("refs", "").splitlines() if line.strip()),
    )


def field_errors(card: SuggestionRefused) -> dict[str, str]:
    """A refusal as view_submission's `errors`: each reason under its field's input."""
    errors: dict[str, list[str]] = {}
    for problem in card.problems:
        block = problem.field if problem.field in SUGGEST_BLOCKS else FIELD_BLOCK.get(problem.field, "prompt")
        reason = problem.reason if block == problem.field else f"{problem.label}: {problem.reason}"
        errors.setdefault(block, []).append(reason)
    return {block: _cut("; ".join(reasons), 1000) for block, reasons in errors.items()}


def note_modal(note_id: str, view_id: str = "") -> dict[str, Any]:
    """The queue's note button's form: one input; its callback_id is the button's id. The queue
    message's response_url (redrawn once the note is sent) is kept in the database with the
    view's id, never in the view (its private_metadata comes back as the sender wrote it)."""
    block = _input(NOTE_BLOCK, wording.NOTE_LABEL, _text_input(True, 500))
    return _modal(note_id, wording.NOTE_TITLE, [block], view_id=view_id)


def decided_queue(card: SuggestionDecided) -> SlackMessage:
    """The queue's message once a button decided: the decision, then the queue as it is now
    (the decided suggestion and its buttons gone)."""
    decided = wording.decided_admin(card)
    if card.queue is None:
        return _plain(decided)
    rest = queue(card.queue)
    return _message(f"{decided}\n{rest.text}", [section(decided), *rest.blocks])


def answer_view(title: str, message: SlackMessage) -> dict[str, Any]:
    """A modal replaced by the answer to its submit (response_action "update")."""
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": _cut(title, 24)},
        "close": {"type": "plain_text", "text": wording.SUGGEST_CLOSE},
        "blocks": message.blocks or [section(message.text)],
    }


def _button(action_id: str, text: str, style: str | None = None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action_id,
        "value": action_id,
        "text": {"type": "plain_text", "text": _cut(text, 75)},
    }
    if style:
        button["style"] = style
    return button


def queue(card: SuggestionQueue) -> SlackMessage:
    """The admins' queue: each waiting suggestion with approve, note and reject buttons."""
    title = wording.queue_title(card)
    names = wording.SUGGEST_BUTTONS
    blocks: list[Block] = [bold(title)]
    text = [title]
    for item in card.items:
        lines = wording.queue_item_lines(item)
        text += lines
        blocks.append(section("\n".join(lines)))
        blocks.append(
            {
                "type": "actions",
                "block_id": f"sb1:sq:{item.suggestion_id}",
                "elements": [
                    _button(item.approve_id, names["approve"], "primary"),
                    _button(item.note_id, names["note"]),
                    _button(item.reject_id, names["reject"], "danger"),
                ],
            }
        )
    return _message("\n".join(text), blocks)


def author_notice(card: SuggestionDecided) -> SlackMessage:
    """What the author of a decided suggestion is told in their messages with the app."""
    return _plain(wording.decided_author(card))


def help_message(config_command: str) -> SlackMessage:
    lines = wording.help_lines(config_command)
    blocks = [bold(wording.HELP_TITLE), section(wording.HELP_ANSWERING), section("\n".join(lines))]
    return _message("\n".join([wording.HELP_TITLE, *lines]), blocks)


def render(card: Card) -> SlackMessage:
    """Any card a user is shown (in a channel, privately, or as a reply) as Block Kit."""
    match card:
        case QuestionCard():
            return question(card)
        case AnswerFeedback():
            return feedback(card)
        case ConfidenceNoted():
            return _plain(wording.noted(card))
        case AlreadyNoted():
            return _plain(wording.already_noted(card))
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
        case DemoQueued():
            return demo_queued(card)
        case DemoResultCard():
            return demo_result(card)
        case DemoProgressCard():
            return demo_progress(card)
        case DemoFailedCard():
            return _plain(wording.demo_failed(card))
        case HomeCard():
            return score(card.score)
        case AnkiDeck():  # the ephemeral answer; the listener uploads the package to the member's messages with the app
            return _plain(wording.anki_sent(card.kind, len(card.notes)))
        case SuggestionReceived():
            return _plain(wording.suggestion_received(card))
        case SuggestionRefused():
            lines = wording.suggestion_refused(card.problems)
            return _message("\n".join(lines), [bold(lines[0]), section("\n".join(lines[1:]))])
        case SuggestionQueue():
            return queue(card)
        case SuggestionDecided():
            return _plain(wording.decided_admin(card))
        case SuggestionDraft():  # Slack's form is one modal (no draft step); shown as text if it comes
            return _plain("\n".join([wording.suggestion_draft(card), *wording.choice_lines(card.choices)]))
    assert_never(card)
