"""The text commands: how a line typed in the console, or a Slack slash command's text, becomes
one engine call, the same call Discord's slash commands make from their typed options.

A table, not a parser per platform: each command names the engine method it asks and how its
text becomes that method's arguments. It is also the list of documented commands and options
(`documented`): README's command list and tests/test_command_parity.py walk it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.core.engine import StudyEngine
from bot.core.values import ChannelRef, CommunityRef, UserRef

EVERYWHERE = ("console", "discord", "slack")


@dataclass(frozen=True)
class Where:
    """Who typed the command, and in which channel; `admin`: the platform's word that they may
    configure the community (only then does a /config answer carry the admin page's link)."""

    user: UserRef
    channel: ChannelRef
    admin: bool = False

    @property
    def community(self) -> CommunityRef:
        return CommunityRef(self.user.platform, self.user.community_id)


@dataclass(frozen=True)
class Ask:
    """One engine call: which service method answers (`method(engine)` gives it, bound, so a
    typo is a type error, not a lookup that fails at run time) and its positional arguments."""

    method: Callable[[StudyEngine], Callable[..., Any]]
    args: tuple[object, ...]

    def bound(self, engine: StudyEngine) -> Callable[..., Any]:
        return self.method(engine)


@dataclass(frozen=True)
class TextCommand:
    """A command as typed: `/NAME TEXT`. `ask` is None where the platform answers it itself
    (a form that ends in one engine call, the help)."""

    name: str
    usage: str
    ask: Callable[[Where, str], Ask] | None
    documented: tuple[str, ...] = ("",)  # the option texts README documents ("" = none)
    platforms: tuple[str, ...] = EVERYWHERE


def _refused(name: str, text: str, allowed: tuple[str, ...]) -> Ask:
    """A command given an option it does not take: refused in one sentence (an engine call that
    raises it), never read as the command without it (`/review foo` is not `/review`)."""
    return Ask(lambda e: e.refuse_option, (name, text, allowed))


def _quiz(where: Where, text: str) -> Ask:
    return Ask(lambda e: e.practice.quiz, (where.user, where.channel, text or None))


def _review(where: Where, text: str) -> Ask:
    """`review`: the next due review; `review export`: your missed questions as an Anki deck."""
    if text.lower() == "export":
        return Ask(lambda e: e.anki.review_export, (where.user,))
    if text:
        return _refused("review", text, ("export",))
    return Ask(lambda e: e.practice.review, (where.user, where.channel))


def _score(where: Where, text: str) -> Ask:
    if text:
        return _refused("score", text, ())
    return Ask(lambda e: e.boards.score, (where.user,))


def _leaderboard(where: Where, text: str) -> Ask:
    return Ask(lambda e: e.boards.leaderboard_for, (where.community, text or None))


def _forget_me(where: Where, text: str) -> Ask:
    if text and text.lower() != "confirm":
        return _refused("forget-me", text, ("confirm",))
    return Ask(lambda e: e.admin.forget_me, (where.user, text.lower() == "confirm"))


def _config(where: Where, text: str) -> Ask:
    """`config [SETTING [VALUE]]`: a channel without a value (or "here") is this channel."""
    key, _, value = text.partition(" ")
    key, value = (key or "show").lower(), value.strip()
    if key == "channel" and value.lower() in ("", "here", "this"):
        value = where.channel.channel_id
    admin = where.user if where.admin else None  # their link names them; a refused asker's is revoked
    return Ask(lambda e: e.admin.configure, (where.community, key, value or None, admin, where.user))


def _demo(where: Where, text: str) -> Ask:
    return Ask(lambda e: e.demos.request_demo, (where.user, where.channel, text))


def _daily(where: Where, text: str) -> Ask:
    if text:
        return _refused("daily", text, ())
    return Ask(lambda e: e.rounds.open_daily, (where.channel,))


def _close(where: Where, text: str) -> Ask:
    if text:
        return _refused("close", text, ())
    return Ask(lambda e: e.rounds.close_open_in, (where.channel,))


TABLE: tuple[TextCommand, ...] = (
    TextCommand("quiz", "[topic]", _quiz, ("", "fundamentals", "schedules")),
    TextCommand("review", "[export]", _review, ("", "export")),
    TextCommand("score", "", _score),
    TextCommand("leaderboard", "[week|all|2026-W48]", _leaderboard, ("", "week", "this-week", "all", "2026-W48")),
    TextCommand(
        "config",
        "[show|pause|resume|post-now|KEY VALUE]",
        _config,
        (
            "",
            "show",
            "channel",
            "time 18:30",
            "timezone Europe/Berlin",
            "window 8",
            "topics fundamentals,schedules",
            "web public",
            "web rotate",
            "pause",
            "resume",
            "post-now",
            "suggestions",
            "approve 1",
            "note 1 say why",
            "reject 1",
            "remove Q-404",
        ),
    ),
    TextCommand(
        "demo",
        "checkpoint [layers=9 tokens=512 ...] | estimate [preset=gpt2-small batch=8 seq=1024 gpu-gib=24] "
        "| plan [model=hf-gpt2 gpu-gib=12 batch=8 seq=1024 ...]",
        _demo,
        (
            "checkpoint layers=4 tokens=64",
            "estimate preset=gpt2-small batch=8 seq=1024",
            "plan model=transformer batch=2 seq=64",
        ),
    ),
    TextCommand("forget-me", "[confirm]", _forget_me, ("", "confirm")),
    TextCommand("suggest", "", None),
    TextCommand("help", "", None),
    TextCommand("daily", "", _daily, platforms=("console",)),
    TextCommand("close", "", _close, platforms=("console",)),
)
BY_NAME = {command.name: command for command in TABLE}


def split(line: str) -> tuple[str, str]:
    """`/Leaderboard  all ` -> ("leaderboard", "all")."""
    command, _, rest = line.strip().partition(" ")
    return command.lstrip("/").lower(), rest.strip()


def lookup(name: str, platform: str) -> TextCommand | None:
    """The table's command of that name on that platform, else None."""
    command = BY_NAME.get(name)
    return command if command is not None and platform in command.platforms else None


def ask(name: str, where: Where, text: str) -> Ask | None:
    """The engine call a command's text makes, or None where the platform answers it itself
    (or the command is not one of the table's on this platform)."""
    command = lookup(name, where.channel.platform)
    if command is None or command.ask is None:
        return None
    return command.ask(where, text.strip())


def documented(platform: str) -> list[tuple[str, str]]:
    """Every documented (command, option text) on a platform, in the table's order."""
    return [(c.name, option) for c in TABLE if platform in c.platforms for option in c.documented]
