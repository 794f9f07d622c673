"""The members' questions in Block Kit: /suggest's modal and what its submission holds, a
refusal shown under the inputs it is about, the admins' queue with its buttons, the note form,
and the messages a decision redraws or sends to the author."""

from __future__ import annotations

import secrets
from typing import Any

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.values import SuggestionDecided, SuggestionForm, SuggestionQueue, SuggestionRefused, letter
from bot.platforms.slack.blocks import Block, SlackMessage, bold, button, cut, message, plain, section

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


def _option(value: str, text: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": cut(text, 75)}, "value": value}


def _input(block_id: str, label: str, element: dict[str, Any], optional: bool = False) -> Block:
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": {"type": "plain_text", "text": cut(label, 2000)},
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
        "title": {"type": "plain_text", "text": cut(title, 24)},
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
    return {block: cut("; ".join(reasons), 1000) for block, reasons in errors.items()}


def note_modal(note_id: str, view_id: str = "") -> dict[str, Any]:
    """The queue's note button's form: one input; its callback_id is the button's id. The queue
    message's response_url (redrawn once the note is sent) is kept in the database with the
    view's id, never in the view (its private_metadata comes back as the sender wrote it)."""
    block = _input(NOTE_BLOCK, wording.NOTE_LABEL, _text_input(True, 500))
    return _modal(note_id, wording.NOTE_TITLE, [block], view_id=view_id)


def answer_view(title: str, answer: SlackMessage) -> dict[str, Any]:
    """A modal replaced by the answer to its submit (response_action "update")."""
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": cut(title, 24)},
        "close": {"type": "plain_text", "text": wording.SUGGEST_CLOSE},
        "blocks": answer.blocks or [section(answer.text)],
    }


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
                    button(item.approve_id, names["approve"], "primary"),
                    button(item.note_id, names["note"]),
                    button(item.reject_id, names["reject"], "danger"),
                ],
            }
        )
    return message("\n".join(text), blocks)


def decided_queue(card: SuggestionDecided) -> SlackMessage:
    """The queue's message once a button decided: the decision, then the queue as it is now
    (the decided suggestion and its buttons gone)."""
    decided = wording.decided_admin(card)
    if card.queue is None:
        return plain(decided)
    rest = queue(card.queue)
    return message(f"{decided}\n{rest.text}", [section(decided), *rest.blocks])


def author_notice(card: SuggestionDecided) -> SlackMessage:
    """What the author of a decided suggestion is told in their messages with the app."""
    return plain(wording.decided_author(card))


def refused(card: SuggestionRefused) -> SlackMessage:
    """A refused suggestion as a message (the modal shows it under its inputs instead)."""
    lines = wording.suggestion_refused(card.problems)
    return message("\n".join(lines), [bold(lines[0]), section("\n".join(lines[1:]))])
