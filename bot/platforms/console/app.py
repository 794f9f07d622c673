"""The console platform: a chat in a terminal on the same Runtime, engine and database as
Discord and Slack.

Each line is one event: a slash command (parsed by the shared text-command table) or a bare
answer, making one `runtime.call(engine.method, ...)`. Stdin is read in a thread, one line
when the chat is ready for it, so the event loop keeps delivering posts and running demos.
Channel posts (the daily round, reveals, leaderboards, demo results) come from the outbox
through `send`, registered with the Runtime's deliverer like any platform's; after each line
the posts it caused are delivered before the next line is read, so a scripted chat reads in
order. At the end of its input the console waits (bounded) for its demos still to answer."""

from __future__ import annotations

import asyncio
import logging
import queue
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from bot import anki
from bot.background.bridge import report_incident
from bot.core import wording
from bot.core.rules import confidence_rules
from bot.core.rules.demo_request import parse_demo
from bot.core.rules.text import MAX_TEXT, clean_name
from bot.core.scope import OnlyIds
from bot.core.services.anki_export import file_name
from bot.core.values import (
    AnkiDeck,
    AnswerFeedback,
    Card,
    ChannelRef,
    CommunityRef,
    DemoProgressCard,
    Forgotten,
    Posted,
    Problem,
    QuestionCard,
    RevealCard,
    SuggestionDecided,
    SuggestionRefused,
    UserRef,
)
from bot.platforms import commands
from bot.platforms.console.form import SuggestForm
from bot.platforms.console.render import Message, anki_saved, author_notice, render
from bot.platforms.console.text import (
    CONSOLE_ASK_SURE,
    CONSOLE_BYE,
    CONSOLE_DEMOS_OFF,
    CONSOLE_GREETING,
    CONSOLE_HELP,
    CONSOLE_SAY_WHO,
    CONSOLE_SURE_WHEN,
    SUGGEST_CANCELLED,
    SUGGEST_FIX,
    SUGGEST_STARTED,
    console_line_too_long,
    console_now_you,
    console_one_channel,
    console_operator_only,
    unknown_command,
)
from bot.platforms.runtime import Runtime

log = logging.getLogger(__name__)

PLATFORM = "console"
CHANNEL = "console"
POLL_S = 0.2  # how often the end of a chat looks whether its demos have answered


@dataclass(frozen=True)
class ConsoleOptions:
    """`studybot console`'s flags, and where the chat reads and writes (tests pass their own)."""

    user: str = wording.CONSOLE_OPERATOR  # the operator: only they change settings and decide
    community: str = "local"
    jsonl: bool = False
    stdin: TextIO | None = None  # None: sys.stdin
    stdout: TextIO | None = None  # None: sys.stdout
    demo_wait_s: float = 630.0  # at the end of input, how long to wait for demos still running
    # where `/review export` writes its Anki deck (`studybot console`: STUDYBOT_DEMO_OUT_DIR)
    export_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "studybot-anki")


class Screen:
    """Where the console's messages go: JSON lines, rich text on a terminal, or plain text."""

    def __init__(self, stdin: TextIO, stdout: TextIO, jsonl: bool) -> None:
        self.stdin, self.stdout, self.jsonl = stdin, stdout, jsonl
        self.rich: Any = None
        if stdin.isatty() and stdout.isatty() and not jsonl:
            from rich.console import Console as RichConsole

            self.rich = RichConsole()

    def greet(self) -> None:
        if self.rich is not None:
            self.rich.print(CONSOLE_GREETING)

    def show(self, message: Message) -> None:
        if self.jsonl:
            self.stdout.write(message.as_json() + "\n")
        elif self.rich is not None:
            from rich.text import Text

            style = {"channel": "cyan", "user": "green"}[message.to]
            label = Text("#" + CHANNEL if message.to == "channel" else "bot → you", style=style)
            self.rich.print(label, Text(message.text))
        else:
            prefix = f"[#{CHANNEL}]" if message.to == "channel" else "[to you]"
            self.stdout.write(f"{prefix} {message.text}\n")
        self.stdout.flush()

    def read(self, who: str) -> str | None:
        """One line (blocking; called in the reader thread), None at the end of input."""
        if self.rich is not None:
            try:
                return str(self.rich.input(f"[bold]{who}>[/bold] "))
            except (EOFError, KeyboardInterrupt):
                return None
        line = self.stdin.readline()
        return line.rstrip("\n") if line else None


class LineReader:
    """Lines from a blocking `read`, one per `next()`, read in a daemon thread so the event
    loop never waits on stdin (and a process stopping is never held by a pending read)."""

    def __init__(self, read: Callable[[], str | None]) -> None:
        self._read = read
        self._asks: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, asyncio.Future[str | None]]] = (
            queue.SimpleQueue()
        )
        self._thread: threading.Thread | None = None

    async def next(self) -> str | None:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[str | None] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._work, name="console-stdin", daemon=True)
            self._thread.start()
        self._asks.put((loop, future))
        return await future

    def _work(self) -> None:
        while True:
            loop, future = self._asks.get()
            try:
                line: str | None = self._read()
            except Exception:  # an unreadable stdin ends the chat like its end would
                log.warning("reading the console's input failed", exc_info=True)
                line = None
            try:
                loop.call_soon_threadsafe(_settle, future, line)
            except RuntimeError:  # the loop closed meanwhile
                return


def _settle(future: asyncio.Future[str | None], line: str | None) -> None:
    if not future.done():
        future.set_result(line)


def own_channel_refused(name: str, rest: str) -> str | None:
    """The channel a `/config channel X` line asks for when it is not the console's own
    (the console has one channel), else None."""
    words = rest.split()
    if name != "config" or len(words) != 2 or words[0].lower() != "channel":
        return None
    asked = words[1].lstrip("#")
    return None if asked == CHANNEL else asked[:40]


class ConsoleApp:
    """One console chat on the Runtime: one community, one channel, a current user."""

    def __init__(
        self, runtime: Runtime, options: ConsoleOptions, emit: Callable[[Message], None] | None = None
    ) -> None:
        self.runtime = runtime
        self.engine = runtime.engine
        self.options = options
        self.community = options.community
        self.channel = ChannelRef(PLATFORM, self.community, CHANNEL)
        self.operator = self._user(options.user)  # who started the console: the one who configures
        self.user = self.operator
        self.form: SuggestForm | None = None  # /suggest's guided prompts, while they run
        self.sure_for: int | None = None  # the round whose answer the last line asked "how sure" of
        self.done = False
        self._posted = 0  # channel messages so far: a post's reference is its number
        # Held from a line's engine call until its answer is printed: a post the line caused
        # (a round resumed by /config, say) is printed after the answer, never before it.
        self._turn = asyncio.Lock()
        self.screen = Screen(options.stdin or sys.stdin, options.stdout or sys.stdout, options.jsonl)
        self.emit = emit or self.screen.show
        self.reader = LineReader(lambda: self.screen.read(self.user.display_name))
        community = self.community
        runtime.add_sender(PLATFORM, self.send, serves=OnlyIds((community,)))
        runtime.add_progress(PLATFORM, self.show_progress)

    def _user(self, name: str) -> UserRef:
        display = clean_name(name)
        return UserRef(PLATFORM, self.community, display.casefold(), display)

    # ------------------------------------------------------------------ posting

    async def send(self, _channel: ChannelRef, card: Posted) -> str:
        """A channel post from the outbox (or a decision to its author), printed; its reference
        is its number."""
        async with self._turn:  # after the answer of the line being handled, if any
            for message in author_notice(card) if isinstance(card, SuggestionDecided) else render(card):
                self.emit(message)
            self._posted += 1
            return f"console:{self._posted}"

    async def show_progress(self, card: DemoProgressCard) -> None:
        for message in render(card):
            self.emit(message)

    # ------------------------------------------------------------------ running

    async def run(self) -> None:
        """Read lines until the end of input or /quit; then wait for this chat's demos."""
        self.screen.greet()
        await self._own_channel()
        await self._deliver()  # the catch-up's posts, before the first prompt
        while not self.done:
            line = await self.reader.next()
            if line is None:
                break
            await self.handle(line)
        await self.finish_demos()

    async def close(self) -> None:
        self.done = True

    async def _own_channel(self) -> None:
        """With the scheduler running, the community's channel is the console's own (set once)."""
        if not self.runtime.scheduling:
            return
        ref = CommunityRef(PLATFORM, self.community)
        known = await self.runtime.call(self.engine.admin.communities)
        config = None if isinstance(known, Problem) else next((c for r, c in known if r == ref), None)
        if config is None or config.channel_id is None:
            await self.runtime.call(self.engine.admin.configure, ref, "channel", CHANNEL)

    async def handle(self, line: str) -> None:
        """One line in: the messages it answers with, then the channel posts it caused."""
        async with self._turn:
            try:
                messages = await self._answer(line)
            # Broad by design: a bug in the console itself is logged (report_incident) and the chat goes on.
            except Exception:  # noqa: BLE001
                incident = report_incident("console line")
                messages = render(Problem(wording.BUG.format(incident=incident), incident=incident))
            for message in messages:
                self.emit(message)
        await self._deliver()

    async def _deliver(self) -> None:
        try:
            await self.runtime.deliver_now(PLATFORM)
        except Exception:  # a busy database only delays posts to the next pass
            log.warning("delivering console posts failed; the next pass tries again", exc_info=True)

    async def finish_demos(self) -> None:
        """Wait, at most `demo_wait_s`, for this chat's queued and running demos to answer."""
        if self.runtime.demo_runner is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.options.demo_wait_s
        while loop.time() < deadline:
            pending = await self.runtime.call(self.pending_demos)
            if isinstance(pending, Problem) or pending == 0:
                break
            await asyncio.sleep(POLL_S)
        await self._deliver()

    def pending_demos(self) -> int:
        """Demo jobs of this console's community still queued or running (an engine read)."""
        return sum(
            1
            for job in self.engine.demos.demo_jobs(50)
            if job.platform == PLATFORM and job.community == self.community and job.state in ("queued", "running")
        )

    # ------------------------------------------------------------------ one line

    async def _answer(self, line: str) -> list[Message]:  # noqa: C901 - one branch per kind of line typed
        if len(line) > MAX_TEXT:
            return [
                Message("user", "error", console_line_too_long(len(line), MAX_TEXT), {"message": "too long"})
            ]
        text = line.strip()
        if not text:
            return []
        if self.form is not None and text.lower() not in ("/quit", "/exit"):
            return await self._suggest_step(text)
        # "How sure" stays asked until it is answered, another answer asks it, a new question is
        # shown or the user changes (CONSOLE_ASK_SURE says so); a second "sure" is told the first stands.
        last_answer = self.sure_for
        if text.lower() in confidence_rules.WORDS:
            if last_answer is None:
                return [Message("user", "notice", CONSOLE_SURE_WHEN, {})]
            sure = confidence_rules.WORDS[text.lower()]
            return render(await self.runtime.call(self.engine.confidence.confide, self.user, last_answer, sure))
        if text.split(maxsplit=1)[0].lower() == "guess":  # a guess on the channel's queued checkpoint demo
            return render(await self.runtime.call(self.engine.guesses.guess_text, self.user, self.channel, text))
        if not text.startswith("/"):
            card = await self.runtime.call(self.engine.answers.line, self.user, self.channel, text)
            if card is None:
                return [Message("user", "notice", wording.NOT_AN_ANSWER, {})]
            messages = render(card)
            if isinstance(card, AnswerFeedback):
                self.sure_for = None
            if isinstance(card, AnswerFeedback) and card.noted is None:
                self.sure_for = card.round_id
                messages.append(Message("user", "ask_sure", CONSOLE_ASK_SURE, {"round_id": card.round_id}))
            return messages
        name, rest = commands.split(text)
        asked_channel = own_channel_refused(name, rest)
        if asked_channel is not None:
            return render(Problem(console_one_channel(asked_channel, CHANNEL)))
        match name:
            case "as":
                if not rest:
                    return render(Problem(CONSOLE_SAY_WHO))
                self.user = self._user(rest)
                self.sure_for = None  # the question was put to the user before
                name = self.user.display_name
                return [Message("user", "notice", console_now_you(name), {"user": name})]
            case "help":
                return [Message("user", "help", CONSOLE_HELP, {})]
            case "quit" | "exit":
                self.done = True
                return [Message("user", "notice", CONSOLE_BYE, {})]
            case "suggest":
                self.form = SuggestForm()
                return [
                    Message("user", "notice", SUGGEST_STARTED, {}),
                    Message("user", "prompt", self.form.ask(), {"field": self.form.field}),
                ]
            case "demo" if self.runtime.demo_runner is None:
                refused = await self.runtime.call(parse_demo, rest)  # bad input still gets its own sentence
                return render(refused if isinstance(refused, Problem) else Problem(CONSOLE_DEMOS_OFF))
        # the console's operator (who started it) configures; a member played with /as does not
        admin = self.user.user_id == self.operator.user_id
        if name == "config" and not admin and rest.partition(" ")[0].lower() not in ("", "show"):
            refusal = console_operator_only(self.operator.display_name)
            return render(await self.runtime.call(self.engine.admin.config_refused, self.user, refusal))
        asked = commands.ask(name, commands.Where(self.user, self.channel, admin=admin), rest)
        if asked is None:
            return render(Problem(unknown_command("/" + name)))
        result: Card = await self.runtime.call(asked.bound(self.engine), *asked.args)
        if isinstance(result, QuestionCard):  # a new question: "how sure" of the last answer is dropped
            self.sure_for = None
        if isinstance(result, AnkiDeck):  # /review export: the package written to a file, its path shown
            saved = await self.runtime.call(anki.save, result, self.options.export_dir)
            return render(saved) if isinstance(saved, Problem) else anki_saved(result, str(saved))
        if isinstance(result, Forgotten):  # the member's exported deck goes with the rest of them
            deck = file_name("misses", self.user.display_name)
            await self.runtime.call(anki.remove_saved, self.options.export_dir, deck)
        if isinstance(result, RevealCard):  # /close: the reveal itself is a channel post
            return []
        # /daily, /config post-now: the question itself is a channel post, through the outbox
        daily = isinstance(result, QuestionCard) and result.kind == "daily"
        return [m for m in render(result) if not (daily and m.kind == "question")]

    async def _suggest_step(self, text: str) -> list[Message]:
        """One answer to /suggest's guided prompts; the last one sends the form (one engine call)."""
        form = self.form
        assert form is not None
        if text.lower() == "/cancel":
            self.form = None
            return [Message("user", "notice", SUGGEST_CANCELLED, {})]
        field = form.take(text)
        if field is not None:  # checked as typed: a bad field is asked again, the rest kept
            problems = await self.runtime.call(self.engine.practice.suggestion_field, self.user, form.value(), field)
            if isinstance(problems, Problem):
                return [*render(problems), Message("user", "prompt", form.ask(), {"field": form.field})]
            if problems:
                refused = wording.suggestion_field_refused(problems)
                return [
                    Message("user", "refused", refused, {"fields": [p.field for p in problems]}),
                    Message("user", "prompt", form.ask(), {"field": form.field}),
                ]
        if not form.advance(field):
            return [Message("user", "prompt", form.ask(), {"field": form.field})]
        result = await self.runtime.call(self.engine.practice.suggest, self.user, self.channel, form.value())
        if not isinstance(result, SuggestionRefused):
            self.form = None
            return render(result)
        fields = form.refused(result.problems)  # the draft is kept: only the refused fields again
        return [
            *render(result),
            Message("user", "notice", SUGGEST_FIX.format(fields=", ".join(fields)), {}),
            Message("user", "prompt", form.ask(), {"field": form.field}),
        ]
