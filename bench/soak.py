"""Two simulated weeks under faults: do posts get lost or doubled, are answers counted once?

    .venv/bin/python bench/soak.py                      # 14 days, 300 members, SQLite
    .venv/bin/python bench/soak.py --database-url postgresql+psycopg://...   # a test database
    .venv/bin/python bench/soak.py --days 3 --members 36   # the short version the tests run

The bot is a child process: the real engine, its SqlStore on a real database, one Runtime with
its bridge, the real scheduler's `tick()` (APScheduler only decides when to call it: here a
fake clock moves 10 minutes a step, so the soak calls it every step) and the Runtime's
deliverers. Three communities (the console, a Discord guild, a Slack workspace) post through
fake senders that fail as discord.py and slack_sdk fail (their exceptions, turned into
SendFailed by the adapters' own mappings), so a burst of 429s, of 5xx or a deleted channel
reaches the outbox as it would in production. Members answer by habit through
`runtime.call`, as the adapters do. Faults come at seeded moments: 429 and 5xx bursts, a
deleted channel (an admin sets a new one the next day), SIGKILL of the bot process (between
steps, in the middle of a send, between an answer's commit and its acknowledgement), and the
database taken away for seconds (SQLite: another connection holds the write lock;
PostgreSQL: every connection of the bot terminated with pg_terminate_backend for seconds,
since this user cannot restart the server). The parent process plans, injects the faults
that need an outside hand, restarts the bot, then checks the database against what the
fake platforms received and what the members were told, and prints the figures.

Demo jobs run as a phase of their own once the days are done (so the bot's SIGKILLs stay
apart from the Celery worker): on the same database and Runtime pieces, members of the three
communities ask for small demos at seeded moments of some of the simulated days, run through
the Celery back end by a real `studybot worker` on a real redis-server, and at seeded moments
Redis is killed (SIGKILL) and started again on the same port while jobs are queued or running.
The check then wants every job ended (its result, or one sentence said in its channel) and
each posted once through the outbox. `--no-demos` leaves the phase out (no redis-server)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import random
import shlex
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python bench/soak.py` from anywhere
    sys.path.insert(0, str(ROOT))

log = logging.getLogger("soak")

START = datetime(2026, 11, 23, 0, 0, tzinfo=timezone.utc)  # a Monday
STEP = timedelta(minutes=10)
WINDOW_HOURS = 12
QUIET_END = timedelta(hours=6)  # no faults in the last hours: what is pending must drain
BOT_APP_NAME = "studybot-soak-bot"  # the bot's PostgreSQL connections, the ones a fault drops


@dataclass(frozen=True)
class Place:
    """One community the soak runs: where its round is posted and when."""

    platform: str
    community: str
    channel: str
    daily_time: str
    timezone: str


PLACES = (
    Place("console", "soak-console", "lobby", "08:00", "UTC"),
    Place("discord", "900000000000000001", "900000000000000101", "09:00", "Europe/Berlin"),
    Place("slack", "T0SOAK", "C0SOAK", "07:30", "America/New_York"),
)
HABITS = ("daily", "daily", "daily", "rare", "rare", "double", "late", "practice")


@dataclass(frozen=True)
class Member:
    """A simulated member: where they study, their habit (daily, rare, late...) and their skill."""

    platform: str
    community: str
    user: str
    habit: str
    skill: float  # the chance they pick the right choice


@dataclass(frozen=True)
class Fault:
    """A fault at a simulated moment: `kind` is 429, 5xx, channel-deleted, kill or db;
    `until` ends a burst; `point` says where a kill lands; `seconds` how long (real time)
    the database is taken away."""

    at: datetime
    kind: str
    platform: str = ""
    until: datetime | None = None
    point: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class Plan:
    """The soak's whole run, drawn from its seed: the members, the faults and the admins' actions."""

    seed: int
    days: int
    members: tuple[Member, ...]
    faults: tuple[Fault, ...]
    forget: tuple[tuple[str, str, datetime], ...]  # (platform, user, when)
    suggest: tuple[tuple[str, str, datetime, str], ...] = ()  # (platform, user, when, the admins' decision)
    demos: tuple[tuple[datetime, tuple[tuple[str, str], ...]], ...] = ()  # (when, ((platform, user), ...))
    redis_outages: tuple[tuple[datetime, str, float], ...] = ()  # (at a demo moment, queued|running, seconds)

    @property
    def end(self) -> datetime:
        return START + timedelta(days=self.days)

    def kills(self) -> list[Fault]:
        return [f for f in self.faults if f.kind == "kill"]


def make_plan(seed: int, days: int, members: int, sqlite_db: bool) -> Plan:
    """Everything the soak will do, drawn from `seed` only (parent and child draw the same)."""
    rng = random.Random(seed)
    people = []
    for i in range(members):
        place = PLACES[i % len(PLACES)]
        people.append(
            Member(place.platform, place.community, f"u{i:04d}", rng.choice(HABITS), round(rng.uniform(0.35, 0.95), 2))
        )
    span = (START + timedelta(days=days) - QUIET_END - START).total_seconds()

    def moment() -> datetime:
        return START + timedelta(hours=2) + timedelta(seconds=int(rng.uniform(0, span - 7200)) // 600 * 600)

    scale = max(1, round(days / 14 * 6))  # six of each burst in two weeks, at least one
    faults: list[Fault] = []
    for _ in range(scale):
        for kind, lengths in (("429", (10, 60)), ("5xx", (10, 50))):
            at = moment()
            platform = rng.choice(("discord", "slack"))
            faults.append(Fault(at, kind, platform, at + timedelta(minutes=rng.randint(*lengths))))
    for platform in ("discord", "slack"):
        faults.append(Fault(moment(), "channel-deleted", platform))
    points = ("between", "in-send", "after-answer")
    for i in range(max(3, scale)):
        faults.append(Fault(moment(), "kill", point=points[i % len(points)]))
    for i in range(max(2, scale // 2 + 1)):  # between steps, or between a post and its record
        seconds = round(rng.uniform(1.0, 7.0 if sqlite_db else 3.0), 1)
        faults.append(Fault(moment(), "db", point=("between", "after-send")[i % 2], seconds=seconds))
    faults.sort(key=lambda f: (f.at, f.kind))
    forget = []
    for place in PLACES:
        regulars = [m for m in people if m.platform == place.platform and m.habit == "daily"]
        if regulars:
            forget.append((place.platform, rng.choice(regulars).user, START + timedelta(days=days // 2, hours=14)))
    suggest = []
    for _ in range(max(1, days // 5)):  # members' questions; an admin decides each a few hours later
        for place in PLACES:
            author = rng.choice([m for m in people if m.platform == place.platform])
            when = START + timedelta(days=rng.randint(0, max(0, days - 2)), hours=rng.randint(1, 20))
            suggest.append((place.platform, author.user, when, rng.choice(("approve", "reject", "note"))))
    demos, outages = plan_demos(seed, days, people)
    return Plan(seed, days, tuple(people), tuple(faults), tuple(forget), tuple(suggest), demos, outages)


DEMO_REQUEST = "checkpoint layers=2 tokens=16 width=8 repeat=1 strategies=none,block"  # a few seconds on a CPU
DEMO_TIMEOUT_S = 20.0  # the worker's limit; a job whose task Redis lost fails after it and a grace


def plan_demos(
    seed: int, days: int, people: list[Member]
) -> tuple[tuple[tuple[datetime, tuple[tuple[str, str], ...]], ...], tuple[tuple[datetime, str, float], ...]]:
    """Who asks for a demo when (two moments on a third of the days, one member of each of two
    communities each time), and at which of those moments Redis is taken away."""
    rng = random.Random(f"{seed}:demos")  # its own generator: the rest of the plan is unchanged
    moments = []
    for day in sorted(rng.sample(range(days), max(1, days // 3))):
        for hour in (10, 16):
            places = rng.sample(PLACES, 2)
            askers = tuple(
                (place.platform, rng.choice([m for m in people if m.platform == place.platform]).user)
                for place in places
            )
            moments.append((START + timedelta(days=day, hours=hour, minutes=rng.randint(0, 50)), askers))
    chosen = sorted(rng.sample(range(len(moments)), min(len(moments), max(1, days // 5))))
    outages = tuple(
        (moments[i][0], ("queued", "running")[n % 2], round(rng.uniform(1.0, 4.0), 1)) for n, i in enumerate(chosen)
    )
    return tuple(moments), outages


def suggestion_form(n: int) -> Any:
    """A member's question that passes the bank's rules (the n-th, worded apart from the others)."""
    from bot.core.values import SuggestionForm

    subjects = ("a laptop CPU", "one small GPU", "two old GPUs", "a cloud notebook", "a shared workstation")
    return SuggestionForm(
        topic="fundamentals",
        level=str(1 + n % 3),
        prompt=f"Group {n} trains a model on {subjects[n % len(subjects)]}. Does activation checkpointing change "
        "which answers the trained model gives?",
        choices=(
            "No: it changes memory and time, not what is learned",
            "Yes: recomputed layers learn slightly different weights",
            "Yes: the model skips the layers it recomputes",
        ),
        whys=(
            "Checkpointing only trades memory for recomputation; the same forward runs again, so the gradients "
            "and the trained weights are the same.",
            "Recomputed layers run the very same forward again, so their gradients and the learned weights "
            "match the run without checkpointing.",
            "No layer is skipped: checkpointed layers run twice, once in the forward and once again in backward.",
        ),
        correct="A",
        trap="Thinking recomputation is an approximation that changes what the model learns.",
        refs=("PyTorch docs: torch.utils.checkpoint",),
    )


def fault_key(fault: Fault) -> str:
    return json.dumps(asdict(fault), default=str)


def draw(*parts: object) -> random.Random:
    """A generator for one decision, the same in every run and after every restart."""
    return random.Random(hashlib.sha256(":".join(map(str, parts)).encode()).digest())


# --------------------------------------------------------------------------- the child (the bot)


class Clock:
    """The child's clock, moved by hand through the simulated days."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Journal:
    """Append-only JSON lines, written straight through (a SIGKILL loses nothing written)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def write(self, **record: Any) -> None:
        os.write(self.fd, (json.dumps(record, default=str) + "\n").encode())


def read_journal(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut by a SIGKILL: never acknowledged
            continue
    return rows


def pause(what: str) -> str:
    """Ask the parent for a fault it must inject itself; returns its answer (or never, killed)."""
    sys.stdout.write(f"PAUSE {what}\n")
    sys.stdout.flush()
    return sys.stdin.readline().strip()


class FakePlatforms:
    """The far side of the three senders: what reached each channel, and the faults that
    make a send fail the way discord.py or slack_sdk fails."""

    def __init__(
        self,
        plan: Plan,
        clock: Clock,
        journal: Journal,
        bank: Any,
        kills: list[Fault],
        done_db: set[str],
        save: Callable[[], None],
    ) -> None:
        self.plan = plan
        self.done_db = done_db
        self.save = save
        self.clock = clock
        self.journal = journal
        self.bank = bank
        self.kills = kills
        self.deleted: dict[str, set[str]] = defaultdict(set)
        self.refs = 0

    def burst(self, platform: str) -> str | None:
        now = self.clock.now
        for fault in self.plan.faults:
            if fault.kind in ("429", "5xx") and fault.platform == platform and fault.at <= now < (fault.until or now):
                return fault.kind
        return None

    def deleted_now(self, platform: str, channel: str) -> bool:
        now = self.clock.now
        return any(
            f.kind == "channel-deleted"
            and f.platform == platform
            and f.at <= now
            and channel == _place(platform).channel
            for f in self.plan.faults
        )

    def fail(self, platform: str, channel: str) -> None:
        """Raise what the platform's library raises now, if anything."""
        kind = self.burst(platform)
        gone = self.deleted_now(platform, channel)
        if platform == "discord":
            import discord

            response = SimpleNamespace(status=0, reason="", headers={})
            if gone:
                response.status, response.reason = 404, "Not Found"
                raise discord.NotFound(response, {"code": 10003, "message": "Unknown Channel"})  # type: ignore[arg-type]
            if kind == "429":  # discord.py waits out short limits itself; it raises past max_ratelimit_timeout
                raise discord.RateLimited(float(draw(self.clock.now, "ra").randint(31, 120)))
            if kind == "5xx":  # discord.py retries 5xx itself, then raises
                response.status, response.reason = 503, "Service Unavailable"
                raise discord.DiscordServerError(response, "upstream connect error")  # type: ignore[arg-type]
        elif platform == "slack":
            from slack_sdk.errors import SlackApiError
            from slack_sdk.web.slack_response import SlackResponse

            def error(status: int, body: dict[str, Any], headers: dict[str, str]) -> SlackApiError:
                response = SlackResponse(
                    client=None,
                    http_verb="POST",
                    api_url="https://slack.com/api/chat.postMessage",
                    req_args={},
                    data=body,
                    headers=headers,
                    status_code=status,
                )
                return SlackApiError(f"The request to the Slack API failed: {body}", response)

            if gone:
                raise error(200, {"ok": False, "error": "channel_not_found"}, {})
            if kind == "429":
                seconds = draw(self.clock.now, "ra").randint(20, 90)
                raise error(429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(seconds)})
            if kind == "5xx":
                raise error(503, {"ok": False, "error": "service_unavailable"}, {})

    def outage_after_send(self) -> None:
        """The database goes away once the platform has the post, before it is recorded."""
        for fault in self.plan.faults:
            key = fault_key(fault)
            if (
                fault.kind == "db"
                and fault.point == "after-send"
                and fault.at <= self.clock.now
                and key not in self.done_db
            ):
                self.done_db.add(key)
                self.save()
                pause(f"db {fault.seconds}")
                return

    def sender(self, platform: str) -> Any:
        async def send(channel: Any, card: Any) -> str:
            from bot.core.values import (
                DemoFailedCard,
                DemoResultCard,
                LeaderboardCard,
                QuestionCard,
                RevealCard,
                SuggestionDecided,
            )

            if due_kill(self.kills, "in-send", self.clock.now):
                pause("kill in-send")
            try:
                self.fail(platform, channel.channel_id)
            except Exception as exc:
                raise _as_send_failed(platform, exc) from exc
            self.refs += 1
            record: dict[str, Any] = {"p": platform, "c": channel.community_id, "ch": channel.channel_id}
            if isinstance(card, QuestionCard):
                question = self.bank.get(card.question_id)  # None for a member's approved question
                right = 0 if question is None else card.choices.index(question.choices[question.answer_index].text)
                record.update(kind="question", key=str(card.round_id), right=right)
                record.update(n=len(card.choices))
            elif isinstance(card, RevealCard):
                record.update(kind="reveal", key=str(card.round_id))
            elif isinstance(card, LeaderboardCard):
                record.update(kind="leaderboard", key=card.scope)
            elif isinstance(card, SuggestionDecided):  # to its author, privately
                record.update(kind="decision", key=str(card.suggestion_id))
            elif isinstance(card, DemoResultCard):
                record.update(kind="demo", key=str(card.job_id), demo="result")
            elif isinstance(card, DemoFailedCard):
                record.update(kind="demo", key=str(card.job_id), demo="failed", text=card.text)
            else:
                record.update(kind=type(card).__name__, key="")
            record["t"] = self.clock.now.isoformat()
            self.journal.write(**record)
            self.outage_after_send()
            return f"{channel.channel_id}:{self.refs}"

        return send


def due_kill(kills: list[Fault], point: str, now: datetime) -> bool:
    """Whether the next kill of the plan is due here (kills land in the plan's order: the
    parent counts them to restart the bot past the ones done)."""
    return bool(kills) and kills[0].point == point and kills[0].at <= now


def _as_send_failed(platform: str, exc: Exception) -> Exception:
    """The adapter's own mapping of its library's exception (what its `send` raises)."""
    if platform == "discord":
        from bot.platforms.discord.app import send_failure

        return send_failure(exc)
    if platform == "slack":
        from bot.platforms.slack.errors import send_failed

        return send_failed(exc)
    return exc


def _place(platform: str) -> Place:
    return next(p for p in PLACES if p.platform == platform)


def channel_now(plan: Plan, platform: str, now: datetime) -> str:
    """The channel an admin has set by `now`: a new one the day after theirs was deleted."""
    place = _place(platform)
    for fault in plan.faults:
        if fault.kind == "channel-deleted" and fault.platform == platform and fault.at + timedelta(hours=20) <= now:
            return place.channel + "7"
    return place.channel


async def child(args: argparse.Namespace) -> None:
    from bot.core.bank import load_bank
    from bot.core.engine import StudyEngine
    from bot.core.values import (
        AlreadyAnswered,
        AnswerFeedback,
        ChannelRef,
        CommunityRef,
        Problem,
        QuestionCard,
        RoundClosed,
        UserRef,
    )
    from bot.store.database import Database
    from bot.store.repository import SqlStore
    from bot.wiring import build_runtime

    work = Path(args.work)
    plan = make_plan(args.seed, args.days, args.members, args.database_url.startswith("sqlite"))
    state_path = work / "state.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {"step": 0}
    step = int(state["step"])
    kills = [k for i, k in enumerate(plan.kills()) if i >= args.skip_kills]
    done_db = {fault_key(f) for f in plan.faults if f.kind == "db"} & set(state.get("db", []))

    def save() -> None:
        state["db"] = sorted(done_db)
        state_path.write_text(json.dumps(state))

    clock = Clock(START + step * STEP)
    bank = load_bank(ROOT / "questions")
    database = Database(bot_url(args.database_url))
    engine = StudyEngine(SqlStore(database), bank, clock=clock, default_window_hours=WINDOW_HOURS)
    runtime = build_runtime(engine, tuple(p.platform for p in PLACES))
    posts = Journal(work / "posts.jsonl")
    acks = Journal(work / "acks.jsonl")
    actions = Journal(work / "actions.jsonl")
    fakes = FakePlatforms(plan, clock, posts, bank, kills, done_db, save)
    for place in PLACES:
        runtime.add_sender(place.platform, fakes.sender(place.platform))
    journal = read_journal(work / "actions.jsonl")
    done = {row["key"] for row in journal}
    suggested = {row["key"]: int(row["id"]) for row in journal if row["key"].startswith("suggest:") and row.get("id")}
    seen: list[dict[str, Any]] = [r for r in read_journal(work / "posts.jsonl") if r.get("kind") == "question"]
    by_user = {(m.platform, m.user): m for m in plan.members}

    if step == 0:
        for place in PLACES:
            ref = CommunityRef(place.platform, place.community)
            for key, value in (
                ("channel", place.channel),
                ("time", place.daily_time),
                ("timezone", place.timezone),
                ("window", str(WINDOW_HOURS)),
            ):
                result = await runtime.call(engine.admin.configure, ref, key, value)
                assert not isinstance(result, Problem), result

    def user_of(member: Member) -> UserRef:
        return UserRef(member.platform, member.community, member.user, f"Member {member.user}")

    async def answer(member: Member, round_id: int, choice: int, kind: str, tag: str) -> None:
        result = await runtime.call(engine.rounds.answer, user_of(member), round_id, choice)
        if isinstance(result, AnswerFeedback):
            if due_kill(kills, "after-answer", clock.now):
                pause("kill after-answer")
            acks.write(
                p=member.platform,
                c=member.community,
                u=member.user,
                r=round_id,
                points=result.points,
                correct=result.correct,
                kind=kind,
                t=clock.now.isoformat(),
            )
        outcome = type(result).__name__
        actions.write(key=tag, outcome=outcome, t=clock.now.isoformat())
        done.add(tag)

    def pick(member: Member, rng: random.Random, right: int, n: int) -> int:
        return right if rng.random() < member.skill else rng.choice([i for i in range(n) if i != right] or [right])

    async def members_act(now: datetime) -> None:
        jobs = []
        for post in seen:
            posted = datetime.fromisoformat(post["t"])
            if now - posted > timedelta(hours=WINDOW_HOURS + 4):
                continue
            for member in plan.members:
                if member.platform != post["p"]:
                    continue
                tag = f"a:{member.platform}:{member.user}:{post['key']}"
                if tag in done:
                    continue
                rng = draw(plan.seed, member.user, post["key"])
                chance = {"daily": 0.92, "rare": 0.2, "double": 0.8, "late": 0.75, "practice": 0.6}[member.habit]
                if rng.random() >= chance:
                    continue
                delay = rng.randint(2, 240) if member.habit != "late" else rng.randint(600, 900)
                if posted + timedelta(minutes=delay) > now:
                    continue
                choice = pick(member, rng, int(post["right"]), int(post["n"]))
                round_id = int(post["key"])
                jobs.append(answer(member, round_id, choice, "daily", tag))
                if member.habit == "double":  # two clicks at once: one is scored
                    jobs.append(answer(member, round_id, choice, "daily", tag + ":again"))
        for member in plan.members:
            if member.habit != "practice":
                continue
            place = _place(member.platform)
            day = (now - START).days
            for what in ("quiz", "review"):
                tag = f"{what}:{member.platform}:{member.user}:{day}"
                rng = draw(plan.seed, tag)
                if tag in done or rng.random() > 0.5 or START + timedelta(days=day, minutes=rng.randint(0, 1439)) > now:
                    continue
                jobs.append(practice(member, what, tag, ChannelRef(place.platform, place.community, member.user), rng))
        for platform, user, when in plan.forget:
            tag = f"forget:{platform}:{user}"
            if when <= now and tag not in done:
                jobs.append(forget(by_user[(platform, user)], tag))
        for n, (platform, user, when, decision) in enumerate(plan.suggest):
            tag, decided = f"suggest:{n}", f"decide:{n}"
            if when <= now and tag not in done:
                jobs.append(suggest(by_user[(platform, user)], n, tag))
            elif tag in suggested and when + timedelta(hours=3) <= now and decided not in done:
                jobs.append(decide(by_user[(platform, user)], suggested[tag], decision, decided))
        if jobs:
            await asyncio.gather(*jobs)

    async def practice(member: Member, what: str, tag: str, channel: ChannelRef, rng: random.Random) -> None:
        method = engine.practice.quiz if what == "quiz" else engine.practice.review
        card = await runtime.call(method, user_of(member), channel)
        if isinstance(card, QuestionCard):
            question = bank.get(card.question_id)  # None for a member's question approved in the soak
            right = 0 if question is None else card.choices.index(question.choices[question.answer_index].text)
            await answer(member, card.round_id, pick(member, rng, right, len(card.choices)), card.kind, tag + ":answer")
        actions.write(key=tag, outcome=type(card).__name__, t=clock.now.isoformat())
        done.add(tag)

    async def suggest(member: Member, n: int, tag: str) -> None:
        place = _place(member.platform)
        channel = ChannelRef(place.platform, place.community, channel_now(plan, place.platform, clock.now))
        result = await runtime.call(engine.practice.suggest, user_of(member), channel, suggestion_form(n))
        if isinstance(result, Problem):
            return  # the member tries again at the next step
        number = getattr(result, "suggestion_id", None)
        actions.write(key=tag, outcome=type(result).__name__, id=number, t=clock.now.isoformat())
        done.add(tag)
        if number is not None:
            suggested[tag] = int(number)

    async def decide(member: Member, number: int, decision: str, tag: str) -> None:
        community = CommunityRef(member.platform, member.community)
        note = "Say which PyTorch version the reference is about." if decision == "note" else None
        result = await runtime.call(engine.practice.decide_suggestion, community, number, decision, note)
        if not isinstance(result, Problem):
            actions.write(key=tag, outcome=type(result).__name__, t=clock.now.isoformat())
            done.add(tag)

    async def forget(member: Member, tag: str) -> None:
        result = await runtime.call(engine.admin.forget_me, user_of(member), True)
        if not isinstance(result, Problem):
            acks.write(p=member.platform, c=member.community, u=member.user, forgot=True, t=clock.now.isoformat())
            actions.write(key=tag, outcome=type(result).__name__, t=clock.now.isoformat())
            done.add(tag)

    total = int((plan.end - START) / STEP)
    while step < total:
        now = START + step * STEP
        clock.now = now
        if due_kill(kills, "between", now):
            pause("kill between")
        for fault in plan.faults:
            key = fault_key(fault)
            if fault.kind == "db" and fault.point == "between" and fault.at <= now and key not in done_db:
                done_db.add(key)
                save()
                pause(f"db {fault.seconds}")  # the parent takes the database away, then says go
        for place in PLACES:  # an admin sets a new channel the day after theirs was deleted
            wanted = channel_now(plan, place.platform, now)
            tag = f"channel:{place.platform}:{wanted}"
            if wanted != place.channel and tag not in done:
                result = await runtime.call(
                    engine.admin.configure, CommunityRef(place.platform, place.community), "channel", wanted
                )
                if not isinstance(result, Problem):
                    actions.write(key=tag, outcome="set", t=now.isoformat())
                    done.add(tag)
        try:  # as APScheduler runs a job: a failure is logged, and the next wake-up retries
            await runtime.bridge.run(runtime.scheduler.tick)
        except Exception:
            log.warning("the scheduler's tick failed; next step", exc_info=True)
        for place in PLACES:
            await deliver(runtime, place.platform)
        seen = [r for r in read_journal(work / "posts.jsonl") if r.get("kind") == "question"]
        await members_act(now)
        step += 1
        state["step"] = step
        save()
        if step % 144 == 0:
            log.info("day %s done", step // 144)
    # `kills` is consumed by the parent restarting us; anything left means a moment was missed
    _ = (AlreadyAnswered, RoundClosed)
    runtime.bridge.close()
    database.dispose()
    sys.stdout.write("DONE\n")
    sys.stdout.flush()


def bot_url(url: str) -> str:
    """The bot's database URL: on PostgreSQL its connections carry a name the faults look for."""
    if url.startswith("sqlite"):
        return url
    return url + ("&" if "?" in url else "?") + f"application_name={BOT_APP_NAME}"


async def deliver(runtime: Any, platform: str) -> None:
    """One delivery pass, as the Runtime's deliverer task runs it; a pass that fails (the
    database away) is logged and tried again at the next step, as the task does."""
    try:
        await runtime.deliver_now(platform)
    except Exception:
        log.warning("delivering %s posts failed; next step", platform, exc_info=True)


# --------------------------------------------------------------------------- the parent


class Outage:
    """Takes the database away for `seconds` of real time while the bot runs on."""

    def __init__(self, url: str, restart: str | None = None) -> None:
        self.url = url
        self.restart = restart  # PostgreSQL: a command that restarts the server (else connections are dropped)

    def start(self, seconds: float) -> threading.Thread:
        ready = threading.Event()
        thread = threading.Thread(target=self._hold, args=(seconds, ready), daemon=True)
        thread.start()
        ready.wait(30)
        return thread

    def _hold(self, seconds: float, ready: threading.Event) -> None:
        if self.url.startswith("sqlite"):
            path = self.url.split("///", 1)[1]
            conn = sqlite3.connect(path, timeout=30, isolation_level=None)
            conn.execute("BEGIN EXCLUSIVE")  # every writer waits; past its busy timeout, it fails
            ready.set()
            time.sleep(seconds)
            conn.execute("ROLLBACK")
            conn.close()
            return
        if self.restart is not None:  # the real thing: the server goes down and comes back
            ready.set()
            subprocess.run(shlex.split(self.restart), check=True, timeout=120, capture_output=True)
            return
        from sqlalchemy import create_engine, text

        engine = create_engine(self.url, isolation_level="AUTOCOMMIT")
        deadline = time.monotonic() + seconds
        with engine.connect() as conn:
            first = True
            while first or time.monotonic() < deadline:  # the server "restarting": every connection dropped
                conn.execute(
                    text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND application_name = :name"
                    ),
                    {"name": BOT_APP_NAME},
                )
                if first:
                    ready.set()
                    first = False
                time.sleep(0.05)
        engine.dispose()


@dataclass
class Tally:
    """What the parent counted while the run went: faults injected, restarts, demo answers, times."""

    kills: int = 0
    db: int = 0
    restarts: int = 0
    wall_s: float = 0.0
    redis: list[str] = field(default_factory=list)  # each Redis outage: queued or running
    demo_asks: list[str] = field(default_factory=list)  # each /demo's answer: DemoQueued or Problem
    demo_wall_s: float = 0.0


def run_child(args: argparse.Namespace, work: Path, tally: Tally) -> None:
    """Run the bot until it finishes, killing it with SIGKILL and starting it again where
    the plan says, taking the database away where the plan says."""
    outage = Outage(args.database_url, args.pg_restart)
    kills_done = 0
    holds: list[threading.Thread] = []
    while True:
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--work",
            str(work),
            "--seed",
            str(args.seed),
            "--days",
            str(args.days),
            "--members",
            str(args.members),
            "--database-url",
            args.database_url,
            "--skip-kills",
            str(kills_done),
        ]
        with (work / "bot.log").open("ab") as log_file:
            proc = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True, cwd=ROOT
            )
            assert proc.stdin is not None and proc.stdout is not None
            finished = killed = False
            for line in proc.stdout:
                if line.startswith("PAUSE kill"):
                    proc.send_signal(signal.SIGKILL)
                    proc.wait()
                    kills_done += 1
                    tally.kills += 1
                    killed = True
                    break
                if line.startswith("PAUSE db"):
                    holds.append(outage.start(float(line.split()[2])))
                    tally.db += 1
                    proc.stdin.write("go\n")
                    proc.stdin.flush()
                elif line.startswith("DONE"):
                    finished = True
            proc.wait()
        for hold in holds:
            hold.join()
        holds.clear()
        if finished:
            return
        if not killed:
            raise RuntimeError(f"the bot stopped with status {proc.returncode}; see {work / 'bot.log'}")
        tally.restarts += 1


async def demo_phase(args: argparse.Namespace, work: Path, tally: Tally) -> None:
    """Members' demos through Celery and a real Redis, Redis killed and started again at the
    plan's moments; returns once every job has ended and its post has left the outbox."""
    from sqlalchemy import create_engine, text

    from bot.background.demo_runner import CeleryBackend, DemoJobRunner
    from bot.core.bank import load_bank
    from bot.core.engine import StudyEngine
    from bot.core.values import ChannelRef, UserRef
    from bot.store.database import Database
    from bot.store.repository import SqlStore
    from bot.wiring import build_runtime
    from tests.services import RedisServer, kill_group, start_worker

    plan = make_plan(args.seed, args.days, args.members, args.database_url.startswith("sqlite"))
    clock = Clock(plan.demos[0][0] if plan.demos else plan.end)
    bank = load_bank(ROOT / "questions")
    database = Database(bot_url(args.database_url))
    engine = StudyEngine(SqlStore(database), bank, clock=clock, default_window_hours=WINDOW_HOURS)
    runtime = build_runtime(engine, tuple(p.platform for p in PLACES))
    no_kills: list[Fault] = []
    every_db = {fault_key(f) for f in plan.faults if f.kind == "db"}  # no database outage in this phase
    fakes = FakePlatforms(plan, clock, Journal(work / "posts.jsonl"), bank, no_kills, every_db, lambda: None)
    for place in PLACES:
        runtime.add_sender(place.platform, fakes.sender(place.platform))
    redis = RedisServer().start()
    worker = start_worker(redis.url, work, timeout_s=int(DEMO_TIMEOUT_S))
    backend = CeleryBackend(redis.url, "demos", timeout_s=DEMO_TIMEOUT_S, poll_s=0.2, grace_s=3.0)
    runtime.demo_runner = DemoJobRunner(
        engine, backend, work / "charts", on_progress=runtime.demo_progress, on_finished=runtime.wake, poll_s=0.2
    )
    sql = create_engine(args.database_url)

    def count(query: str) -> int:
        with sql.connect() as conn:
            return int(conn.execute(text(query)).scalar_one())

    async def until(query: str, seconds: float, none: bool = True) -> None:
        """Wait (real time, with a deadline) until `query` counts none, or some."""
        deadline = time.monotonic() + seconds
        while bool(await asyncio.to_thread(count, query)) == none and time.monotonic() < deadline:
            await asyncio.sleep(0.1)

    outages = {when: (point, seconds) for when, point, seconds in plan.redis_outages}
    started = time.monotonic()
    try:
        await runtime.start(schedule=False)
        for when, askers in plan.demos:
            clock.now = max(clock.now, when)
            for platform, user in askers:
                place = _place(platform)
                channel = ChannelRef(platform, place.community, channel_now(plan, platform, clock.now))
                asked = await runtime.call(
                    engine.demos.request_demo,
                    UserRef(platform, place.community, user, f"Member {user}"),
                    channel,
                    DEMO_REQUEST,
                )
                tally.demo_asks.append(type(asked).__name__)
            if when in outages:
                point, seconds = outages[when]
                if point == "running":  # once the worker has one
                    await until("SELECT COUNT(*) FROM demo_jobs WHERE state = 'running'", 60, none=False)
                assert redis.proc is not None
                redis.proc.send_signal(signal.SIGKILL)
                redis.proc.wait()
                redis.proc = None
                tally.redis.append(point)
                await asyncio.sleep(seconds)  # Redis away for this long (real time)
                redis.start()  # the same port, empty: what it held is gone
            await until("SELECT COUNT(*) FROM demo_jobs WHERE state IN ('queued', 'running')", 180)
            for _ in range(36):  # the posts drain, simulated time moving on (a burst's retries)
                for place in PLACES:
                    await deliver(runtime, place.platform)
                if not await asyncio.to_thread(
                    count, "SELECT COUNT(*) FROM outbox WHERE kind = 'demo' AND state NOT IN ('sent', 'failed')"
                ):
                    break
                clock.now += STEP
    finally:
        tally.demo_wall_s = time.monotonic() - started
        await runtime.stop()
        runtime.bridge.close()
        kill_group(worker)
        redis.stop()
        sql.dispose()
        database.dispose()


@dataclass
class Report:
    """What the soak found. `problems` lists every broken promise, one sentence each."""

    figures: dict[str, int | float | str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def print(self) -> None:
        width = max(len(k) for k in self.figures)
        for key, value in self.figures.items():
            print(f"{key:<{width}}  {value}")
        print("problems:", len(self.problems))
        for problem in self.problems[:40]:
            print("  -", problem)


def check(args: argparse.Namespace, work: Path, tally: Tally) -> Report:
    """Compare the database with what the platforms received and the members were told."""
    from sqlalchemy import create_engine, text

    from bot.core.bank import load_bank
    from bot.core.engine import StudyEngine
    from bot.core.rules import scoring, timing
    from bot.core.values import CommunityRef, UserRef
    from bot.store.database import Database
    from bot.store.repository import SqlStore

    plan = make_plan(args.seed, args.days, args.members, args.database_url.startswith("sqlite"))
    report = Report()
    problems = report.problems
    posts = read_journal(work / "posts.jsonl")
    acks = read_journal(work / "acks.jsonl")
    actions = read_journal(work / "actions.jsonl")
    sql = create_engine(args.database_url)
    with sql.connect() as conn:

        def rows(query: str, **params: Any) -> list[Any]:
            return list(conn.execute(text(query), params).all())

        communities = {
            (r.platform, r.external_id): r for r in rows("SELECT id, platform, external_id, timezone FROM communities")
        }
        outbox = rows("SELECT id, community_id, platform, channel_id, kind, key, state, attempts FROM outbox")
        rounds = rows("SELECT id, community_id, kind, local_date, closed_at, closes_at FROM rounds")
        answers = rows(
            "SELECT a.round_id, a.member_id, a.community_id, a.kind, a.correct, a.points, a.week, m.user_id "
            "FROM answers a JOIN members m ON m.id = a.member_id"
        )
        members = rows("SELECT id, community_id, user_id, points_total FROM members")
        weekly = rows("SELECT member_id, week, points FROM weekly_points")
        demos = rows("SELECT id, state, error FROM demo_jobs")
        repaired = {(r.member_id, r.round_id) for r in rows("SELECT member_id, round_id FROM streak_repairs")}
    sql.dispose()

    by_id = {c.id: c for c in communities.values()}
    received = Counter((p["p"], p["kind"], p["key"]) for p in posts)
    engine = StudyEngine(SqlStore(Database(args.database_url)), load_bank(ROOT / "questions"), clock=lambda: plan.end)
    lost = doubled = given_up = delivered = stuck = 0
    for row in outbox:
        community = by_id[row.community_id]
        got = received[(community.platform, row.kind, row.key)]
        if row.state == "sent":
            delivered += 1
            if got != 1:
                doubled += got > 1
                lost += got == 0
                problems.append(f"{row.kind} {row.key} on {community.platform}: sent, received {got} times")
        elif row.state == "failed":
            given_up += 1
            if got:
                problems.append(f"{row.kind} {row.key} on {community.platform}: given up, yet received {got} times")
        else:
            stuck += 1
            problems.append(f"{row.kind} {row.key} on {community.platform}: still {row.state} at the end")
    alerts = {
        c.platform: engine.outbox.undelivered(CommunityRef(c.platform, c.external_id)) for c in communities.values()
    }
    failed_per = Counter(by_id[r.community_id].platform for r in outbox if r.state == "failed")
    for platform, count in failed_per.items():
        gave_up_alerts = [a for a in alerts[platform] if "gave up" in a]
        if len(gave_up_alerts) != count:
            lost += abs(count - len(gave_up_alerts))
            problems.append(f"{platform}: {count} posts given up but admins see {len(gave_up_alerts)}")
    known = {(by_id[r.community_id].platform, r.kind, r.key) for r in outbox}
    for key, count in received.items():
        if key not in known:
            problems.append(f"{key} reached the platform without an outbox row ({count} times)")

    # each community's daily round: opened every local day, posted at most once a day, and a
    # day without its post only where the post was given up and admins see it
    question_state = {(r.community_id, r.key): r.state for r in outbox if r.kind == "question"}
    per_day: dict[tuple[int, str], list[str]] = defaultdict(list)
    for r in rounds:
        if r.kind == "daily":
            per_day[(r.community_id, r.local_date)].append(question_state.get((r.community_id, str(r.id)), "none"))
    for community in communities.values():
        days = {d: states for (c, d), states in per_day.items() if c == community.id}
        place = _place(community.platform)
        due = {
            timing.daily_due(START + i * STEP, place.daily_time, place.timezone)
            for i in range(int((plan.end - START) / STEP))
        }
        expected = {d.local_date for d in due if d is not None}
        if set(days) != expected:
            problems.append(f"{community.platform}: daily rounds on {sorted(days)}, due on {sorted(expected)}")
        for day, states in days.items():
            if states.count("sent") > 1:
                doubled += 1
                problems.append(f"{community.platform}: {states.count('sent')} rounds posted on {day}")
            if "sent" not in states and any(s != "failed" for s in states):
                problems.append(f"{community.platform}: the round of {day} is neither posted nor given up")
    kinds = Counter((r.kind, r.state) for r in outbox)
    reveals_expected = sum(1 for r in rounds if r.kind == "daily" and r.closed_at is not None)
    if kinds[("reveal", "sent")] + kinds[("reveal", "failed")] != reveals_expected:
        problems.append(f"{reveals_expected} rounds closed but {kinds[('reveal', 'sent')]} reveals sent")

    # every acknowledged answer stored exactly once, with the points the member was told
    stored = {(by_id[a.community_id].platform, a.user_id, a.round_id): a for a in answers}
    forgotten_at = {(a["p"], a["u"]): datetime.fromisoformat(a["t"]) for a in acks if a.get("forgot")}
    scored = Counter((a["p"], a["u"], a["r"]) for a in acks if not a.get("forgot"))
    for key, count in scored.items():
        if count > 1:
            doubled += 1
            problems.append(f"answer {key} scored {count} times")
    missing = 0
    for ack in acks:
        if ack.get("forgot"):
            continue
        key = (ack["p"], ack["u"], ack["r"])
        gone = forgotten_at.get((ack["p"], ack["u"]))
        if gone is not None and datetime.fromisoformat(ack["t"]) <= gone:
            continue  # forgotten on request, with everything else about them
        row = stored.get(key)
        if row is None or row.points != ack["points"] or bool(row.correct) != ack["correct"]:
            missing += 1
            problems.append(f"acknowledged answer {key} ({ack['points']} points) is stored as {row}")
    # points_total and weekly_points against a recount of the answers
    per_member = defaultdict(int)
    per_week = defaultdict(int)
    for a in answers:
        per_member[a.member_id] += a.points
        per_week[(a.member_id, a.week)] += a.points
    total_off = sum(1 for m in members if m.points_total != per_member[m.id])
    week_off = sum(1 for w in weekly if w.points != per_week[(w.member_id, w.week)])
    week_off += sum(1 for key, pts in per_week.items() if pts and key not in {(w.member_id, w.week) for w in weekly})
    if total_off or week_off:
        problems.append(f"points_total off for {total_off} members, weekly_points off for {week_off} rows")
    # streak bonuses and streaks against a recount from the rounds
    daily_rounds = defaultdict(list)
    for r in sorted(rounds, key=lambda r: r.id):
        if r.kind == "daily":
            daily_rounds[r.community_id].append(r)
    outcome = {(a.member_id, a.round_id): bool(a.correct) for a in answers}
    points_of = {(a.member_id, a.round_id): a.points for a in answers}
    bonus_off = streak_off = 0
    for m in members:
        history = daily_rounds[m.community_id]
        for i, r in enumerate(history):
            if (m.id, r.id) not in outcome:
                continue
            earlier = [outcome.get((m.id, e.id)) for e in reversed(history[max(0, i - scoring.MAX_STREAK_BONUS) : i])]
            expected = scoring.daily_points(outcome[(m.id, r.id)], scoring.leading_run(earlier))
            if points_of[(m.id, r.id)] != expected:
                bonus_off += 1
        # a day earned back by clearing the reviews counts in the streak (not in the bonus)
        mine = [True if (m.id, r.id) in repaired else outcome.get((m.id, r.id)) for r in reversed(history)]
        if history and history[-1].closed_at is None and mine and mine[0] is None:
            mine = mine[1:]
        run = 0
        for o in mine:
            if not o:
                break
            run += 1
        best = current = 0
        for o in reversed(mine):
            current = current + 1 if o else 0
            best = max(best, current)
        community = by_id[m.community_id]
        card = engine.boards.score(UserRef(community.platform, community.external_id, m.user_id, m.user_id))
        if (card.streak, card.best_streak) != (run, best):
            streak_off += 1
    if bonus_off or streak_off:
        problems.append(f"streak bonus off for {bonus_off} answers, streaks off for {streak_off} members")
    stuck_demos = sum(1 for d in demos if d.state in ("queued", "running"))
    # each demo: ended, its result or its failure's sentence posted exactly once (or given up
    # where admins see it), the sentence posted the one stored
    demo_rows = Counter(r.key for r in outbox if r.kind == "demo")
    demo_state = {r.key: r.state for r in outbox if r.kind == "demo"}
    demo_posts = defaultdict(list)
    for post in posts:
        if post.get("kind") == "demo":
            demo_posts[post["key"]].append(post)
    posted_once = demo_given_up = 0
    for d in demos:
        key = str(d.id)
        if d.state in ("queued", "running"):
            problems.append(f"demo {key} is still {d.state} at the end")
            continue
        got = demo_posts[key]
        if demo_rows[key] != 1:
            problems.append(f"demo {key} ({d.state}) has {demo_rows[key]} outbox rows")
        elif demo_state[key] == "failed" and not got:
            demo_given_up += 1
        elif len(got) != 1:
            problems.append(f"demo {key} ({d.state}) was posted {len(got)} times")
        elif (got[0]["demo"] == "result") != (d.state == "done"):
            problems.append(f"demo {key} is {d.state} but its channel got a {got[0]['demo']}")
        elif d.state == "failed" and not (d.error and d.error.strip().endswith(".") and got[0]["text"] == d.error):
            problems.append(f"demo {key} failed, saying {got[0].get('text')!r} for {d.error!r}")
        else:
            posted_once += 1
    if getattr(args, "demos", False):
        if len(tally.demo_asks) != sum(len(askers) for _, askers in plan.demos):
            problems.append(f"{len(tally.demo_asks)} demos asked of {sum(len(a) for _, a in plan.demos)} planned")
        if len(tally.redis) != len(plan.redis_outages):
            problems.append(f"Redis stopped {len(tally.redis)} times of {len(plan.redis_outages)} planned")
        if len(demos) != tally.demo_asks.count("DemoQueued"):
            problems.append(f"{tally.demo_asks.count('DemoQueued')} demos queued but {len(demos)} jobs stored")

    outcomes = Counter(a["outcome"] for a in actions)
    fault_kinds = Counter(f.kind + (f":{f.point}" if f.point else "") for f in plan.faults)
    figures = report.figures
    figures.update(
        {
            "seed": args.seed,
            "database": "SQLite" if args.database_url.startswith("sqlite") else "PostgreSQL",
            "simulated days": args.days,
            "communities": len(communities),
            "members": args.members,
            "daily rounds": sum(1 for r in rounds if r.kind == "daily"),
            "practice/review rounds": sum(1 for r in rounds if r.kind != "daily"),
            "answers acknowledged (scored)": sum(scored.values()),
            "answers stored": len(answers),
            "repeat clicks answered 'already'": outcomes["AlreadyAnswered"],
            "late answers refused (closed)": outcomes["RoundClosed"],
            "answers refused under faults": outcomes["Problem"],
            "forget-me": sum(1 for a in acks if a.get("forgot")),
            "members' questions (sent/refused)": "{}/{}".format(
                outcomes["SuggestionReceived"], outcomes["SuggestionRefused"]
            ),
            "decisions told to authors (sent/given up)": "{}/{}".format(
                kinds[("decision", "sent")], kinds[("decision", "failed")]
            ),
            "faults: 429 bursts": fault_kinds["429"],
            "faults: 5xx bursts": fault_kinds["5xx"],
            "faults: channel deleted": fault_kinds["channel-deleted"],
            "faults: SIGKILL (between/in-send/after-answer)": "{}/{}/{}".format(
                fault_kinds["kill:between"], fault_kinds["kill:in-send"], fault_kinds["kill:after-answer"]
            ),
            "faults: database "
            + (
                "locked"
                if args.database_url.startswith("sqlite")
                else "server restarted"
                if args.pg_restart
                else "connections dropped"
            ): tally.db,
            "restarts after SIGKILL": tally.restarts,
            "posts delivered": delivered,
            "posts given up, shown to admins": given_up,
            "leaderboards posted": kinds[("leaderboard", "sent")],
            "reveals posted": kinds[("reveal", "sent")],
            "lost": lost + missing,
            "doubled": doubled,
            "recounts off (points, weeks, bonus, streaks)": f"{total_off}/{week_off}/{bonus_off}/{streak_off}",
            "outbox rows stuck": stuck,
            "demos asked (queued/refused)": "{}/{}".format(
                tally.demo_asks.count("DemoQueued"), len(tally.demo_asks) - tally.demo_asks.count("DemoQueued")
            ),
            "demos finished": sum(1 for d in demos if d.state == "done"),
            "demos failed, said in their channel": sum(1 for d in demos if d.state == "failed"),
            "demo posts once (given up, shown to admins)": f"{posted_once} ({demo_given_up})",
            "faults: Redis killed and restarted (queued/running)": "{}/{}".format(
                tally.redis.count("queued"), tally.redis.count("running")
            ),
            "demo jobs stuck": stuck_demos,
            "demo phase wall seconds": round(tally.demo_wall_s, 1),
            "wall seconds": round(tally.wall_s, 1),
        }
    )
    return report


def soak(
    database_url: str,
    work: Path,
    seed: int = 20,
    days: int = 14,
    members: int = 300,
    demos: bool = True,
    pg_restart: str | None = None,
) -> Report:
    """Run the soak on a migrated, empty database and return what it found; `demos`: then
    the demo phase (it needs Debian's redis-server)."""
    args = argparse.Namespace(
        database_url=database_url, seed=seed, days=days, members=members, demos=demos, pg_restart=pg_restart
    )
    tally = Tally()
    started = time.monotonic()
    run_child(args, work, tally)
    if demos:
        asyncio.run(demo_phase(args, work, tally))
    tally.wall_s = time.monotonic() - started
    return check(args, work, tally)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=14)
    parser.add_argument("--members", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--database-url", default=None, help="a test database; default: a new SQLite file")
    parser.add_argument("--no-demos", action="store_true", help="leave out the demo phase (Celery and Redis)")
    parser.add_argument(
        "--pg-restart",
        default=None,
        help="PostgreSQL: a command that restarts the server (e.g. 'pg_ctlcluster 15 main restart'); "
        "without it the database fault drops every connection of the bot",
    )
    parser.add_argument("--work", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--skip-kills", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        asyncio.run(child(args))
        return
    logging.basicConfig(level=logging.WARNING)
    from bot.store.database import safe_url, upgrade

    with tempfile.TemporaryDirectory(prefix="studybot-soak-") as tmp:
        work = Path(tmp)
        url = args.database_url or f"sqlite:///{work / 'soak.db'}"
        upgrade(url)
        if _holds_communities(url):  # its checks count every row: leftovers would read as lost or doubled posts
            raise SystemExit(f"The soak needs an empty database, and {safe_url(url)} already holds communities.")
        report = soak(
            url, work, args.seed, args.days, args.members, demos=not args.no_demos, pg_restart=args.pg_restart
        )
        report.print()
        if report.problems:
            raise SystemExit(1)


def _holds_communities(url: str) -> bool:
    from sqlalchemy import create_engine, text

    sql = create_engine(url)
    try:
        with sql.connect() as conn:
            return bool(conn.execute(text("SELECT EXISTS (SELECT 1 FROM communities)")).scalar())
    finally:
        sql.dispose()


if __name__ == "__main__":
    main()
