"""The console chat: the same engine and database as Discord and Slack, in a terminal.

Each line is one event: a slash command or a bare answer. It makes one engine call and
renders the card that comes back as messages, plain text, rich text or JSON lines."""

from __future__ import annotations

import json
import logging
import shlex
import sys
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TextIO

from bot.core.demo_request import parse_demo
from bot.core.engine import MAX_TEXT, StudyEngine, clean_name
from bot.core.errors import StudyBotError
from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ChannelRef,
    CommunityRef,
    ConfigCard,
    ConfirmForget,
    Forgotten,
    LeaderboardCard,
    NothingDue,
    Notice,
    QuestionCard,
    RevealCard,
    RoundClosed,
    ScoreCard,
    UserRef,
    letter,
)
from bot.jobs import DemoResult, DemoRunner

log = logging.getLogger(__name__)

PLATFORM = "console"
CHANNEL = "console"
HELP = """Commands:
  /daily                 open today's daily round in this channel
  /close                 close the open daily round and reveal the answer
  /quiz [topic]          a private practice question
  /review                your missed questions, when they are due
  /score                 your points, rank, accuracy, streaks and reviews due
  /leaderboard [week|all|2026-W48]
  /as NAME               switch to another user
  /config [KEY VALUE]    show or change settings (channel, timezone, daily_time, window_hours, topics, paused)
  /demo checkpoint [layers=16 tokens=2048 width=128 strategies=none,block ...]
  /demo estimate preset=gpt2-small [batch=8 seq=1024 gpu-gib=24]
  /forget-me [confirm]   delete your data in this community
  /help, /quit
A bare line answers your pending practice question, else the open daily round
(a letter such as b, B) or b., or the choice's text)."""


@dataclass(frozen=True)
class Message:
    """One message the bot sends: to the channel, or privately to the current user."""

    to: str  # "channel" | "user"
    kind: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> str:
        return json.dumps({"to": self.to, "kind": self.kind, "text": self.text, "data": self.data}, default=str)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _choices_text(choices: Iterable[str]) -> str:
    return "\n".join(f"  {letter(i)}) {text}" for i, text in enumerate(choices))


def render(card: object) -> list[Message]:
    """Turn an engine card into console messages."""
    match card:
        case QuestionCard():
            label = {"daily": "Daily question", "practice": "Practice question", "review": "Review"}[card.kind]
            late = " (posted late: its usual time had already passed)" if card.late else ""
            text = (
                f"{label} #{card.round_id} [{card.topic}, level {card.difficulty}]{late}\n{card.prompt}\n"
                f"{_choices_text(card.choices)}\nReply with a letter or the choice's text."
            )
            data = {
                "round_id": card.round_id,
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
            head = "Correct!" if card.correct else f"Not quite: the answer is {card.answer}) {card.answer_text}."
            points = f" +{card.points} points" if card.points else ""
            bonus = f" (streak bonus +{card.streak_bonus})" if card.streak_bonus else ""
            lines = [f"{head}{points}{bonus}", f"You chose {card.chosen}) {card.chosen_text}: {card.why}"]
            if card.trap:
                lines.append(f"Common trap: {card.trap}")
            return [
                Message(
                    "user",
                    "feedback",
                    "\n".join(lines),
                    {
                        "correct": card.correct,
                        "points": card.points,
                        "chosen": card.chosen,
                        "answer": card.answer,
                        "round_id": card.round_id,
                    },
                )
            ]
        case AlreadyAnswered():
            return [
                Message(
                    "user",
                    "already_answered",
                    f"You already answered {card.chosen}; your first answer is the one that counts.",
                    {"chosen": card.chosen, "round_id": card.round_id},
                )
            ]
        case RoundClosed():
            return [
                Message(
                    "user",
                    "closed",
                    f"Round #{card.round_id} is closed, so this answer was not scored. The answer was {card.answer}.",
                    {"answer": card.answer, "round_id": card.round_id},
                )
            ]
        case RevealCard():
            lines = [f"Answer to #{card.round_id}: {card.answer}) {card.answer_text}", card.prompt]
            for c in card.choices:
                mark = "right" if c.correct else "wrong"
                lines.append(f"  {c.letter}) {c.text} [{c.count} picked, {mark}]: {c.why}")
            if card.explain:
                lines.append(card.explain)
            if card.trap:
                lines.append(f"Common trap: {card.trap}")
            lines.append("Read more: " + "; ".join(card.refs))
            counts = {c.letter: c.count for c in card.choices}
            return [
                Message(
                    "channel",
                    "reveal",
                    "\n".join(lines),
                    {"answer": card.answer, "counts": counts, "round_id": card.round_id},
                )
            ]
        case AlreadyOpen():
            return [
                Message(
                    "user",
                    "notice",
                    f"Today's round (#{card.round_id}, {card.local_date}) is already open here.",
                    {"round_id": card.round_id},
                )
            ]
        case ScoreCard():

            def pct(line: Any) -> str:
                return f"{line.correct}/{line.answered} ({line.accuracy:.0%})" if line.answered else "none yet"

            rank = f"rank {card.week_rank}" if card.week_rank else "unranked"
            text = (
                f"{card.user}: {card.week_points} points in {card.week} ({rank}), {card.total_points} all time.\n"
                f"Daily accuracy {pct(card.daily)}; practice {pct(card.practice)}.\n"
                f"Streak {card.streak} (best {card.best_streak}). Reviews due: {card.reviews_due}."
            )
            return [
                Message(
                    "user",
                    "score",
                    text,
                    {
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
                    },
                )
            ]
        case LeaderboardCard():
            title = "All-time leaderboard" if card.scope == "all" else f"Leaderboard for {card.scope}"
            body = "\n".join(f"  {r.rank}. {r.user}: {r.points}" for r in card.rows) or "  No points yet."
            return [
                Message(
                    "channel",
                    "leaderboard",
                    f"{title}\n{body}",
                    {
                        "scope": card.scope,
                        "rows": [{"rank": r.rank, "user": r.user, "points": r.points} for r in card.rows],
                    },
                )
            ]
        case NothingDue():
            when = f" The next one is due {card.next_due:%Y-%m-%d %H:%M} UTC." if card.next_due else ""
            return [Message("user", "notice", f"No reviews are due.{when}", {"next_due": card.next_due})]
        case ConfirmForget():
            return [
                Message(
                    "user",
                    "confirm",
                    f"This deletes everything stored about {card.user} here ({_count(card.answers, 'answer')}). "
                    "Type /forget-me confirm to go ahead.",
                    {"answers": card.answers},
                )
            ]
        case Forgotten():
            return [
                Message(
                    "user",
                    "notice",
                    f"Done: {_count(card.answers_deleted, 'answer')} and your reviews are deleted.",
                    {"answers_deleted": card.answers_deleted},
                )
            ]
        case ConfigCard():
            settings = "\n".join(f"  {k}: {v}" for k, v in card.settings)
            head = f"Set {card.changed}." if card.changed else f"Settings of {card.community}:"
            return [Message("user", "config", f"{head}\n{settings}", {"settings": dict(card.settings)})]
        case Notice():
            return [Message("user", "notice", card.text, {})]
        case DemoResult():
            return [
                Message(
                    "channel",
                    "demo",
                    demo_text(card),
                    {"result": card.result, "chart": str(card.chart) if card.chart else None},
                )
            ]
    raise TypeError(f"no console rendering for {type(card).__name__}")


def demo_text(result: DemoResult) -> str:
    """A plain table of a demo's JSON result."""
    data = result.result
    if result.module == "demos.checkpoint" and "results" in data:
        lines = [
            f"Checkpoint demo on {data.get('device', '?')} (torch {data.get('torch', '?')}):",
            f"  {'strategy':<10} {'peak MiB':>9} {'check MiB':>9} {'saved MiB':>9} {'step ms':>8}  grads",
        ]
        for row in data["results"]:
            lines.append(
                f"  {row['strategy']:<10} {row['peak_bytes'] / 2**20:>9.2f} {row['peak_check_bytes'] / 2**20:>9.2f} "
                f"{row['saved_bytes'] / 2**20:>9.2f} {row['step_ms']:>8.1f}  "
                f"{'identical' if row['grads_identical'] else 'DIFFER'}"
            )
        theory = data.get("theory")
        if theory:
            lines.append(f"  {theory.get('text', '') if isinstance(theory, dict) else theory}")
        if result.chart:
            lines.append(f"  chart: {result.chart}")
        return "\n".join(lines)
    if result.module == "demos.estimate" and "without" in data:
        parts = ("parameters", "gradients", "optimizer_state", "activations", "temporaries", "total")
        lines = [
            f"Estimated peak of one training step: {data.get('preset')} batch {data.get('batch')} x "
            f"{data.get('seq')} tokens, {data.get('dtype')} (fake tensors, nothing allocated):",
            f"  {'':<16}{'without GiB':>12}{'with GiB':>10}",
        ]
        for part in parts:
            without = data["without"].get(f"{part}_bytes", 0) / 2**30
            with_ckpt = data["with_checkpointing"].get(f"{part}_bytes", 0) / 2**30
            lines.append(f"  {part.replace('_', ' '):<16}{without:>12.2f}{with_ckpt:>10.2f}")
        lines.append(f"  {data.get('verdict', '')}")
        return "\n".join(lines)
    return json.dumps(data, indent=2, default=str)


class Console:
    """A chat session over the engine: one community, one channel, a current user."""

    def __init__(
        self,
        engine: StudyEngine,
        community: str = "local",
        user: str = "you",
        demo_runner: DemoRunner | None = None,
        on_progress: Callable[[Message], None] | None = None,
    ) -> None:
        self.engine = engine
        self.community = community
        self.channel = ChannelRef(PLATFORM, community, CHANNEL)
        self.user = self._user(user)
        self.demo_runner = demo_runner
        self.on_progress = on_progress
        self.on_config: Callable[[], None] | None = None  # the scheduler's rebuild, when one runs
        self.done = False

    def _user(self, name: str) -> UserRef:
        display = clean_name(name)
        return UserRef(PLATFORM, self.community, display.casefold(), display)

    def handle(self, line: str) -> list[Message]:
        """One line in, the messages the bot sends out. Never raises for bad input."""
        if len(line) > MAX_TEXT:
            return [
                Message(
                    "user",
                    "error",
                    f"That line is {len(line):,} characters long; the limit is {MAX_TEXT:,}.",
                    {"message": "too long"},
                )
            ]
        text = line.strip()
        if not text:
            return []
        try:
            return self._dispatch(text)
        except StudyBotError as exc:
            return [Message("user", "error", exc.message, {"message": exc.message})]
        except Exception:  # a bug: log it whole, tell the user briefly
            incident = uuid.uuid4().hex[:8]
            log.exception("console command failed (incident %s): %r", incident, text[:200])
            message = f"Sorry, something went wrong on our side (incident {incident}); nothing you stored was lost."
            return [Message("user", "error", message, {"message": message, "incident": incident})]

    def _dispatch(self, text: str) -> list[Message]:
        if not text.startswith("/"):
            card = self.engine.answer_text(self.user, self.channel, text)
            if card is None:
                return [
                    Message(
                        "user",
                        "notice",
                        "That is not an answer to anything open: reply with a letter (a-e) or a "
                        "choice's text, or type /help.",
                        {},
                    )
                ]
            return render(card)
        command, _, rest = text.partition(" ")
        command, rest = command.lower(), rest.strip()
        community = CommunityRef(PLATFORM, self.community)
        match command:
            case "/daily":
                return render(self.engine.open_daily(self.channel))
            case "/close":
                return render(self.engine.close_open_in(self.channel))
            case "/quiz":
                return render(self.engine.quiz(self.user, self.channel, rest or None))
            case "/review":
                return render(self.engine.review(self.user, self.channel))
            case "/score":
                return render(self.engine.score(self.user))
            case "/leaderboard":
                scope = rest.lower()
                if scope in ("", "week"):
                    return render(self.engine.leaderboard(community))
                if scope == "all":
                    return render(self.engine.leaderboard(community, all_time=True))
                return render(self.engine.leaderboard(community, week=rest))
            case "/as":
                if not rest:
                    return [Message("user", "error", "Say who: /as NAME.", {"message": "Say who: /as NAME."})]
                self.user = self._user(rest)
                return [
                    Message(
                        "user", "notice", f"You are now {self.user.display_name}.", {"user": self.user.display_name}
                    )
                ]
            case "/config":
                try:
                    words = shlex.split(rest)
                except ValueError:
                    words = rest.split()
                if not words:
                    return render(self.engine.config(community))
                changed = render(self.engine.config(community, words[0], " ".join(words[1:])))
                if self.on_config is not None:
                    self.on_config()  # jobs follow the new settings at once
                return changed
            case "/forget-me":
                return render(self.engine.forget_me(self.user, confirm=rest.lower() == "confirm"))
            case "/demo":
                return self._demo(rest)
            case "/help":
                return [Message("user", "help", HELP, {})]
            case "/quit" | "/exit":
                self.done = True
                return [Message("user", "notice", "Bye.", {})]
        return [
            Message(
                "user",
                "error",
                f"Unknown command {command[:30]}; type /help for the list.",
                {"message": f"unknown command {command[:30]}"},
            )
        ]

    def _demo(self, rest: str) -> list[Message]:
        request = parse_demo(rest)
        if self.demo_runner is None:
            return [Message("user", "error", "Demos are not enabled in this session.", {"message": "no demo runner"})]
        if self.on_progress:
            self.on_progress(Message("user", "progress", f"Running {request.module} in a worker process...", {}))
        return render(self.demo_runner.run(request))


def run_console(
    console: Console,
    stdin: TextIO = sys.stdin,
    stdout: TextIO = sys.stdout,
    jsonl: bool = False,
    background: Callable[[Callable[[Message], None]], Callable[[], None]] | None = None,
) -> int:
    """Read lines until EOF or /quit; print every message (rich on a terminal).
    `background(emit)` starts work that posts on its own (the scheduler) and returns its stop."""
    interactive = stdin.isatty() and stdout.isatty() and not jsonl
    rich_console = None
    if interactive:
        from rich.console import Console as RichConsole
        from rich.text import Text

        rich_console = RichConsole()
        rich_console.print("[bold]Checkpoint Study Bot[/bold]: console chat. Type /help, or /daily to start.")

    def emit(message: Message) -> None:
        if jsonl:
            stdout.write(message.as_json() + "\n")
        elif rich_console is not None:
            style = {"channel": "cyan", "user": "green"}[message.to]
            label = Text("#" + CHANNEL if message.to == "channel" else "bot → you", style=style)
            rich_console.print(label, Text(message.text))
        else:
            prefix = f"[#{CHANNEL}]" if message.to == "channel" else "[to you]"
            stdout.write(f"{prefix} {message.text}\n")
        stdout.flush()

    console.on_progress = emit
    stop = background(emit) if background is not None else None
    while not console.done:
        if rich_console is not None:
            try:
                line = rich_console.input(f"[bold]{console.user.display_name}>[/bold] ")
            except (EOFError, KeyboardInterrupt):
                break
        else:
            line = stdin.readline()
            if not line:
                break
            line = line.rstrip("\n")
        for message in console.handle(line):
            emit(message)
    if stop is not None:
        stop()
    return 0
