"""The console's layout: an engine card as messages, to the channel or privately to the
current user; the words come from bot.core.wording."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, assert_never

from bot.core import wording
from bot.core.values import (
    AlreadyAnswered,
    AlreadyNoted,
    AlreadyOpen,
    AnkiDeck,
    AnswerFeedback,
    Calibration,
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
)
from bot.platforms.console.text import DAILY_TEXT_HINT, guess_invite_console


@dataclass(frozen=True)
class Message:
    """One message the bot sends: to the channel, or privately to the current user."""

    to: str  # "channel" | "user"
    kind: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps({"to": self.to, "kind": self.kind, "text": self.text, "data": self.data}, default=str)


def _indent(lines: Iterable[str]) -> str:
    return "\n".join(f"  {line}" for line in lines)


def _indent_lines(lines: Iterable[str]) -> list[str]:
    return [f"  {line}" for line in lines]


def author_notice(card: SuggestionDecided) -> list[Message]:
    """The decision as its author is told it (delivered through the outbox)."""
    author = {"author": card.author.display_name if card.author else None, "action": card.action}
    return [Message("user", "author_notice", wording.decided_author(card), author)]


def _calibration_data(card: Calibration) -> dict[str, Any]:
    return {
        "sure": [card.sure.correct, card.sure.answered],
        "unsure": [card.unsure.correct, card.unsure.answered],
        "brier": card.brier,
        "needed": card.needed,
    }


def _noted_data(card: ConfidenceNoted) -> dict[str, Any]:
    return {"round_id": card.round_id, "number": card.number, "sure": card.sure, "grade": card.grade, "due": card.due}


def anki_saved(card: AnkiDeck, path: str) -> list[Message]:
    """An Anki deck the console wrote to a file: where it is."""
    data = {"path": path, "notes": len(card.notes), "question_ids": [n.question_id for n in card.notes]}
    return [Message("user", "anki", wording.anki_saved(card.kind, len(card.notes), path), data)]


def render(card: Card) -> list[Message]:  # noqa: C901 - one flat `case` per kind of card
    """Lay an engine card out as console messages; the words come from bot.core.wording."""
    match card:
        case QuestionCard():
            text = "\n".join(
                [
                    wording.question_title(card),
                    card.prompt,
                    _indent(wording.choice_lines(card.choices)),
                    DAILY_TEXT_HINT if card.kind == "daily" else wording.ANSWER_HINT,
                    *filter(None, [wording.replaced_line(card)]),
                ]
            )
            data = {
                "round_id": card.round_id,
                "number": card.number,
                "question_id": card.question_id,
                "choices": list(card.choices),
                "round_kind": card.kind,
                "late": card.late,
            }
            messages = [Message("channel" if card.kind == "daily" else "user", "question", text, data)]
            if card.admin_note:
                messages.append(Message("user", "admin", card.admin_note, {}))
            return messages
        case AnswerFeedback():
            data = {
                "correct": card.correct,
                "points": card.points,
                "chosen": card.chosen,
                "answer": card.answer,
                "round_id": card.round_id,
                "number": card.number,
            }
            if card.noted is not None:
                data["confidence"] = _noted_data(card.noted)
            if card.streak_repaired:
                data["streak_repaired"] = card.streak_repaired
            return [Message("user", "feedback", "\n".join(wording.feedback_lines(card)), data)]
        case ConfidenceNoted():
            return [Message("user", "confidence", wording.noted(card), _noted_data(card))]
        case AlreadyNoted():
            data = {"round_id": card.round_id, "number": card.number, "sure": card.sure}
            return [Message("user", "already_noted", wording.already_noted(card), data)]
        case AlreadyAnswered():
            data = {"chosen": card.chosen, "round_id": card.round_id, "number": card.number}
            return [Message("user", "already_answered", wording.already_answered(card), data)]
        case RoundClosed():
            data = {"answer": card.answer, "round_id": card.round_id, "number": card.number}
            return [Message("user", "closed", wording.round_closed(card), data)]
        case RevealCard():
            lines = [wording.reveal_title(card), card.prompt, _indent(wording.reveal_choice(c) for c in card.choices)]
            if card.explain:
                lines.append(card.explain)
            if card.trap:
                lines.append(wording.trap_line(card.trap))
            lines.append(wording.refs_line(card.refs))
            if card.author:
                lines.append(wording.author_line(card.author))
            if card.demo:  # the console's "see it run": the command to type
                lines.append(wording.see_it_run_hint(card.demo))
            counts = {c.letter: c.count for c in card.choices}
            data = {
                "answer": card.answer,
                "counts": counts,
                "round_id": card.round_id,
                "number": card.number,
                "question_ref": card.question_ref,
                "question_id": card.question_id,
                "author": card.author,
                "demo": card.demo,
            }
            return [Message("channel", "reveal", "\n".join(lines), data)]
        case AlreadyOpen():
            return [
                Message(
                    "user", "notice", wording.already_open(card), {"round_id": card.round_id, "number": card.number}
                )
            ]
        case ScoreCard():
            data = {
                "week_points": card.week_points,
                "total_points": card.total_points,
                "week_rank": card.week_rank,
                "streak": card.streak,
                "best_streak": card.best_streak,
                "reviews_due": card.reviews_due,
                "daily_answered": card.daily.answered,
                "daily_correct": card.daily.correct,
                "practice_answered": card.practice.answered,
                "practice_correct": card.practice.correct,
                "levels": {level.topic: round(level.rating, 3) for level in card.levels},
                "repaired": list(card.repaired),
                "repair_open": None if card.repair is None else card.repair.missed,
                "calibration": None if card.calibration is None else _calibration_data(card.calibration),
            }
            return [Message("user", "score", "\n".join(wording.score_lines(card)), data)]
        case LeaderboardCard():
            body = _indent(wording.leaderboard_lines(card))
            rows = [{"rank": r.rank, "user": r.user, "points": r.points} for r in card.rows]
            return [
                Message(
                    "channel",
                    "leaderboard",
                    f"{wording.leaderboard_title(card)}\n{body}",
                    {"scope": card.scope, "rows": rows, "flagged": list(card.flagged)},
                )
            ]
        case NothingDue():
            return [Message("user", "notice", wording.nothing_due(card), {"next_due": card.next_due})]
        case ConfirmForget():
            return [Message("user", "confirm", wording.confirm_forget(card), {"answers": card.answers})]
        case Forgotten():
            return [Message("user", "notice", wording.forgotten(card), {"answers_deleted": card.answers_deleted})]
        case ConfigCard():
            text = f"{wording.config_title(card)}\n{_indent(wording.config_lines(card))}"
            return [Message("user", "config", text, {"settings": dict(card.settings), "alerts": list(card.alerts)})]
        case Notice():
            return [Message("user", "notice", card.text, {})]
        case SuggestionReceived():
            data = {"number": card.number, "suggestion_id": card.suggestion_id, "pending": card.pending}
            return [Message("user", "suggestion", wording.suggestion_received(card), data)]
        case SuggestionRefused():
            data = {"fields": [p.field for p in card.problems], "problems": [p.reason for p in card.problems]}
            return [Message("user", "refused", "\n".join(wording.suggestion_refused(card.problems)), data)]
        case SuggestionDraft():
            return [Message("user", "notice", wording.suggestion_draft(card), {"draft_id": card.draft_id})]
        case SuggestionQueue():
            lines = [wording.queue_title(card)]
            for item in card.items:
                lines.append(_indent(wording.queue_item_lines(item)))
            if card.items:
                lines.append(wording.QUEUE_COMMANDS)
            data = {
                "waiting": card.waiting,
                "items": [item.number for item in card.items],
            }  # what /config approve N takes
            return [Message("user", "queue", "\n".join(lines), data)]
        case SuggestionDecided():
            data = {
                "number": card.number,
                "suggestion_id": card.suggestion_id,
                "action": card.action,
                "question_id": card.question_id,
            }
            return [Message("user", "decided", wording.decided_admin(card), data)]
        case Problem():
            problem_data: dict[str, Any] = {"message": card.text}
            if card.incident:
                problem_data["incident"] = card.incident
            return [Message("user", "error", card.text, problem_data)]
        case DemoQueued():
            data = {
                "job_id": card.job_id,
                "number": card.number,
                "position": card.position,
                "module": card.module,
                "guesses": card.guesses,
            }
            queued = wording.demo_queued(card)
            if card.guesses:
                queued += "\n" + guess_invite_console()
            return [Message("channel", "demo_queued", queued, data)]
        case DemoProgressCard():
            width = 20
            filled = round(width * card.done / max(card.total, 1))
            bar = "[" + "#" * filled + "-" * (width - filled) + "]"
            lines = [
                f"{wording.demo_progress_title(card)} {bar}",
                *_indent_lines(wording.table_lines(card.header, card.rows)),
            ]
            data = {"job_id": card.job_id, "number": card.number, "done": card.done, "total": card.total}
            return [Message("channel", "progress", "\n".join(lines), data)]
        case DemoFailedCard():
            return [
                Message(
                    "channel", "demo_failed", wording.demo_failed(card), {"job_id": card.job_id, "number": card.number}
                )
            ]
        case DemoResultCard():
            return [
                Message(
                    "channel",
                    "demo",
                    "\n".join(wording.demo_lines(card)),
                    {
                        "result": card.data,
                        "chart": card.chart,
                        "charts": [{"kind": c.kind, "path": c.path} for c in card.pictures()],
                        "wall_s": card.wall_s,
                    },
                )
            ]
        case HomeCard():  # Slack's App Home; the console shows what /score shows
            return render(card.score)
        case AnkiDeck():  # the app writes the file first (anki_saved); this is the deck without its path
            data = {"notes": len(card.notes), "question_ids": [n.question_id for n in card.notes]}
            return [Message("user", "anki", wording.anki_deck_line(card.kind, len(card.notes)), data)]
    assert_never(card)
