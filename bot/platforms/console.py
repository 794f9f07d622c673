"""The console chat: the same engine and database as Discord and Slack, in a terminal.

Each line is one event: a slash command or a bare answer. It makes one engine call and
renders the card that comes back as messages, plain text, rich text or JSON lines."""

from __future__ import annotations

import asyncio
import json
import logging
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from bot.core import wording
from bot.core.bank import TOPICS
from bot.core.demo_request import parse_demo
from bot.core.engine import StudyEngine
from bot.core.text import MAX_TEXT, clean_name
from bot.core.values import (
    AlreadyAnswered,
    AlreadyOpen,
    AnswerFeedback,
    ChannelRef,
    CommunityRef,
    ConfigCard,
    ConfirmForget,
    DemoFailedCard,
    DemoProgressCard,
    DemoQueued,
    DemoResultCard,
    Forgotten,
    LeaderboardCard,
    NothingDue,
    Notice,
    Posted,
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
    UserRef,
)
from bot.delivery import Deliverer
from bot.jobs import Backend, DemoJobRunner
from bot.bridge import guarded

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
  /config [KEY VALUE]    show or change settings (channel, timezone, daily_time, window_hours, topics, paused, web)
  /demo checkpoint [layers=16 tokens=2048 width=128 strategies=none,block ...]
  /demo estimate preset=gpt2-small [batch=8 seq=1024 gpu-gib=24]
  /suggest               write a question for this community's bank (guided prompts; /cancel stops)
  /config suggestions    the questions waiting; /config approve N, note N TEXT, reject N, remove QUESTION-ID
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


def _indent(lines: Iterable[str]) -> str:
    return "\n".join(f"  {line}" for line in lines)


def _indent_lines(lines: Iterable[str]) -> list[str]:
    return [f"  {line}" for line in lines]


def render(card: object) -> list[Message]:
    """Lay an engine card out as console messages; the words come from bot.core.wording."""
    match card:
        case QuestionCard():
            text = "\n".join(
                [
                    wording.question_title(card),
                    card.prompt,
                    _indent(wording.choice_lines(card.choices)),
                    wording.ANSWER_HINT,
                ]
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
            data = {
                "correct": card.correct,
                "points": card.points,
                "chosen": card.chosen,
                "answer": card.answer,
                "round_id": card.round_id,
            }
            return [Message("user", "feedback", "\n".join(wording.feedback_lines(card)), data)]
        case AlreadyAnswered():
            data = {"chosen": card.chosen, "round_id": card.round_id}
            return [Message("user", "already_answered", wording.already_answered(card), data)]
        case RoundClosed():
            data = {"answer": card.answer, "round_id": card.round_id}
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
            counts = {c.letter: c.count for c in card.choices}
            data = {
                "answer": card.answer,
                "counts": counts,
                "round_id": card.round_id,
                "question_ref": card.question_ref,
                "question_id": card.question_id,
                "author": card.author,
            }
            return [Message("channel", "reveal", "\n".join(lines), data)]
        case AlreadyOpen():
            return [Message("user", "notice", wording.already_open(card), {"round_id": card.round_id})]
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
            data = {"suggestion_id": card.suggestion_id, "pending": card.pending}
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
            data = {"waiting": card.waiting, "items": [item.suggestion_id for item in card.items]}
            return [Message("user", "queue", "\n".join(lines), data)]
        case SuggestionDecided():
            data = {"suggestion_id": card.suggestion_id, "action": card.action, "question_id": card.question_id}
            messages = [Message("user", "decided", wording.decided_admin(card), data)]
            if card.author is not None:
                author = {"author": card.author.display_name, "action": card.action}
                messages.append(Message("user", "author_notice", wording.decided_author(card), author))
            return messages
        case Problem():
            problem_data: dict[str, Any] = {"message": card.text}
            if card.incident:
                problem_data["incident"] = card.incident
            return [Message("user", "error", card.text, problem_data)]
        case DemoQueued():
            data = {"job_id": card.job_id, "position": card.position, "module": card.module}
            return [Message("channel", "demo_queued", wording.demo_queued(card), data)]
        case DemoProgressCard():
            width = 20
            filled = round(width * card.done / max(card.total, 1))
            bar = "[" + "#" * filled + "-" * (width - filled) + "]"
            lines = [
                f"{wording.demo_progress_title(card)} {bar}",
                *_indent_lines(wording.table_lines(card.header, card.rows)),
            ]
            data = {"job_id": card.job_id, "done": card.done, "total": card.total}
            return [Message("channel", "progress", "\n".join(lines), data)]
        case DemoFailedCard():
            return [Message("channel", "demo_failed", wording.demo_failed(card), {"job_id": card.job_id})]
        case DemoResultCard():
            return [
                Message(
                    "channel",
                    "demo",
                    "\n".join(wording.demo_lines(card)),
                    {"result": card.data, "chart": card.chart, "wall_s": card.wall_s},
                )
            ]
    raise TypeError(f"no console rendering for {type(card).__name__}")


class Console:
    """A chat session over the engine: one community, one channel, a current user.

    Channel posts (the daily round, reveals, leaderboards) reach the console the way they
    reach Discord and Slack: through the outbox and a deliverer. After each line the console
    delivers what is due, so a scripted chat reads in order; a background thread delivers
    what the scheduler claims between lines."""

    def __init__(
        self,
        engine: StudyEngine,
        community: str = "local",
        user: str = "you",
        demos: DemoJobRunner | None = None,
        on_progress: Callable[[Message], None] | None = None,
    ) -> None:
        self.engine = engine
        self.community = community
        self.channel = ChannelRef(PLATFORM, community, CHANNEL)
        self.user = self._user(user)
        self.demos = demos  # runs the queued /demo jobs (started by run_console's background)
        self.on_progress = on_progress
        self.on_config: Callable[[], None] | None = None  # the scheduler's rebuild, when one runs
        self.deliverer = Deliverer(engine, PLATFORM, community)
        self._deliver_lock = threading.Lock()
        self._posted = 0  # channel messages so far: a post's reference is its number
        self.done = False
        self.form: _SuggestForm | None = None  # /suggest's guided prompts, while they run

    def _user(self, name: str) -> UserRef:
        display = clean_name(name)
        return UserRef(PLATFORM, self.community, display.casefold(), display)

    def handle(self, line: str) -> list[Message]:
        """One line in, the messages the bot sends out (then any channel posts now due).
        Never raises for bad input."""
        if len(line) > MAX_TEXT:
            text = f"That line is {len(line):,} characters long; the limit is {MAX_TEXT:,}."
            return [Message("user", "error", text, {"message": "too long"})]
        text = line.strip()
        if not text:
            return []
        result = guarded(self._dispatch, text)
        messages = render(result) if isinstance(result, Problem) else result
        posts = guarded(self.deliver)  # a busy database only delays posts to the next pass
        return messages + ([] if isinstance(posts, Problem) else posts)

    def deliver(self, emit: Callable[[Message], None] | None = None) -> list[Message]:
        """Send the channel posts now due; returns them (or hands each to `emit`)."""
        out: list[Message] = []

        def send(_channel: ChannelRef, card: Posted) -> str:
            messages = render(card)
            for message in messages:
                (emit or out.append)(message)
            self._posted += 1
            return f"console:{self._posted}"

        with self._deliver_lock:
            self.deliverer.deliver_due(send)
        return out

    def _dispatch(self, text: str) -> list[Message]:
        if self.form is not None and text.lower() not in ("/quit", "/exit"):
            return self._suggest_step(text)
        if not text.startswith("/"):
            card = self.engine.answer_text(self.user, self.channel, text)
            if card is None:
                return [Message("user", "notice", wording.NOT_AN_ANSWER, {})]
            return render(card)
        command, _, rest = text.partition(" ")
        command, rest = command.lower(), rest.strip()
        community = CommunityRef(PLATFORM, self.community)
        match command:
            case "/daily":
                opened = self.engine.open_daily(self.channel)
                # the question itself is a channel post: it comes through the outbox
                return [m for m in render(opened) if m.kind != "question"]
            case "/close":
                closed = self.engine.close_open_in(self.channel)
                return [] if isinstance(closed, RevealCard) else render(closed)
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
                    return render(Problem("Say who: /as NAME."))
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
                if words[0].lower() in ("suggestions", "approve", "reject", "note", "remove"):
                    return render(self.engine.configure(community, words[0], rest.partition(" ")[2].strip()))
                changed = render(self.engine.config(community, words[0], " ".join(words[1:])))
                if self.on_config is not None:
                    self.on_config()  # jobs follow the new settings at once
                return changed
            case "/forget-me":
                return render(self.engine.forget_me(self.user, confirm=rest.lower() == "confirm"))
            case "/suggest":
                self.form = _SuggestForm()
                return [
                    Message("user", "notice", wording.SUGGEST_STARTED, {}),
                    Message("user", "prompt", self.form.ask(), {"field": self.form.field}),
                ]
            case "/demo":
                return self._demo(rest)
            case "/help":
                return [Message("user", "help", HELP, {})]
            case "/quit" | "/exit":
                self.done = True
                return [Message("user", "notice", "Bye.", {})]
        return render(Problem(f"Unknown command {command[:30]}; type /help for the list."))

    def _suggest_step(self, text: str) -> list[Message]:
        """One answer to /suggest's guided prompts; the last one sends the form (one engine call)."""
        form = self.form
        assert form is not None
        if text.lower() == "/cancel":
            self.form = None
            return [Message("user", "notice", wording.SUGGEST_CANCELLED, {})]
        if not form.take(text):
            return [Message("user", "prompt", form.ask(), {"field": form.field})]
        self.form = None
        return render(self.engine.suggest(self.user, self.channel, form.value()))

    def _demo(self, rest: str) -> list[Message]:
        if self.demos is None:
            parse_demo(rest)  # bad input still gets its own sentence
            return render(Problem("Demos are not enabled in this session."))
        queued = self.engine.request_demo(self.user, self.channel, rest)
        self.demos.wake()
        return render(queued)

    def pending_demos(self) -> int:
        """Demo jobs of this console's community still queued or running."""
        return sum(
            1
            for job in self.engine.demo_jobs(50)
            if job.platform == PLATFORM and job.community == self.community and job.state in ("queued", "running")
        )


class _SuggestForm:
    """/suggest's guided prompts: topic, level, prompt, choices with their whys (2 to 5),
    the right one, the trap, an explanation, a reference. Lives in the console (a modal's
    state lives in the chat client); the engine sees one complete form."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}
        self.choices: list[str] = []
        self.whys: list[str] = []
        self.field = "topic"

    def ask(self) -> str:
        steps = wording.SUGGEST_STEPS
        if self.field == "topic":
            return steps["topic"].format(topics=", ".join(TOPICS))
        if self.field == "choice":
            done = wording.SUGGEST_DONE_HINT if len(self.choices) >= 2 else ""
            return steps["choice"].format(letter=chr(ord("A") + len(self.choices)), done=done)
        if self.field == "why":
            return steps["why"].format(letter=chr(ord("A") + len(self.choices) - 1))
        return steps[self.field]

    def take(self, text: str) -> bool:
        """Keep one answer; True when the form is complete."""
        order = ["topic", "level", "prompt"]
        if self.field in order:
            self.values[self.field] = text
            self.field = order[order.index(self.field) + 1] if self.field != "prompt" else "choice"
        elif self.field == "choice":
            if text.lower() == "done" and len(self.choices) >= 2:
                self.field = "correct"
            else:
                self.choices.append(text)
                self.field = "why"
        elif self.field == "why":
            self.whys.append(text)
            self.field = "choice" if len(self.choices) < 5 else "correct"
        elif self.field in ("correct", "trap", "explain"):
            self.values[self.field] = "" if text == "-" else text
            self.field = {"correct": "trap", "trap": "explain", "explain": "refs"}[self.field]
        else:
            self.values["refs"] = text
            return True
        return False

    def value(self) -> SuggestionForm:
        return SuggestionForm(
            topic=self.values.get("topic", ""),
            level=self.values.get("level", ""),
            prompt=self.values.get("prompt", ""),
            choices=tuple(self.choices),
            whys=tuple(self.whys),
            correct=self.values.get("correct", ""),
            trap=self.values.get("trap", ""),
            explain=self.values.get("explain", ""),
            refs=(self.values["refs"],) if self.values.get("refs") else (),
        )


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

    emit_lock = threading.Lock()  # the deliverer thread prints too

    def emit(message: Message) -> None:
        with emit_lock:
            _emit(message)

    def _emit(message: Message) -> None:
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


def console_background(
    chat: Console, paused: bool = False
) -> Callable[[Callable[[Message], None]], Callable[[], None]]:
    """For run_console: once it can print, start the scheduler (catch-up first, so its posts
    come before the first prompt) and a deliverer thread that prints what it claims; the
    scheduler is rebuilt after /config. `paused`: jobs armed but never fired (tests)."""
    from bot.schedule import StudyScheduler

    def begin(emit: Callable[[Message], None]) -> Callable[[], None]:
        ref = CommunityRef(PLATFORM, chat.community)
        config = next((c for r, c in chat.engine.communities() if r == ref), None)
        if config is None or config.channel_id is None:
            chat.engine.config(ref, "channel", CHANNEL)
        wake = threading.Event()
        scheduler = StudyScheduler(chat.engine, platforms=(PLATFORM,), community=chat.community, on_claimed=wake.set)
        scheduler.start(paused=paused)
        chat.deliver(emit)  # the catch-up's posts, before the first prompt
        stop = threading.Event()

        def deliver_loop() -> None:
            while not stop.is_set():
                wake.wait(timeout=5.0)
                wake.clear()
                if stop.is_set():
                    break
                try:
                    chat.deliver(emit)
                except Exception:
                    log.exception("delivering console posts failed; trying again shortly")

        thread = threading.Thread(target=deliver_loop, name="deliver-console", daemon=True)
        thread.start()

        def rebuild() -> None:
            scheduler.rebuild(ref)

        chat.on_config = rebuild

        def halt() -> None:
            scheduler.shutdown()
            stop.set()
            wake.set()
            thread.join(timeout=5)

        return halt

    return begin


def demo_background(
    chat: Console, backend: Backend, out_dir: Path, wait_s: float = 600.0
) -> Callable[[Callable[[Message], None]], Callable[[], None]]:
    """For run_console: run the chat's demo jobs on an event loop in a thread, printing
    progress as each strategy finishes and the result once it is posted. Its stop waits for
    the demos still running (a scripted chat ends only after its demos have answered)."""

    def begin(emit: Callable[[Message], None]) -> Callable[[], None]:
        async def show(card: DemoProgressCard) -> None:
            for message in render(card):
                emit(message)

        def finished() -> None:
            chat.deliver(emit)

        runner = DemoJobRunner(chat.engine, backend, out_dir, on_progress=show, on_finished=finished, poll_s=0.5)
        chat.demos = runner
        loop = asyncio.new_event_loop()
        ready = threading.Event()

        def main() -> None:
            asyncio.set_event_loop(loop)

            async def go() -> None:
                await runner.start()
                ready.set()
                await runner.run_forever()

            try:
                loop.run_until_complete(go())
            except asyncio.CancelledError:
                pass

        thread = threading.Thread(target=main, name="console-demos", daemon=True)
        thread.start()
        ready.wait(timeout=30)

        def halt() -> None:
            deadline = time.monotonic() + wait_s
            while chat.pending_demos() and time.monotonic() < deadline:
                time.sleep(0.2)
            chat.deliver(emit)
            for task in asyncio.all_tasks(loop) if not loop.is_closed() else ():
                loop.call_soon_threadsafe(task.cancel)
            thread.join(timeout=5)

        return halt

    return begin


def combine(
    *starts: Callable[[Callable[[Message], None]], Callable[[], None]] | None,
) -> Callable[[Callable[[Message], None]], Callable[[], None]]:
    """Several background starters as one (the scheduler, the demo jobs)."""

    def begin(emit: Callable[[Message], None]) -> Callable[[], None]:
        stops = [start(emit) for start in starts if start is not None]

        def halt() -> None:
            for stop in stops:
                stop()

        return halt

    return begin
